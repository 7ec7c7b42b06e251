"""What request handlers may ask for, typed, in one place.

The app's lifespan builds one `Services` and keeps it on the app; handlers
never reach into `app.state` themselves, they name what they need:

    def vote(battle_id: str, session: SessionDep, settings: SettingsDep): ...
"""

from __future__ import annotations

import asyncio
import hmac
import random
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Annotated

import httpx
from fastapi import Depends, Request
from fastapi.templating import Jinja2Templates
from sqlalchemy.orm import Session

from arena.battles.ballots import VoteWriter
from arena.battles.runner import BattleRuns
from arena.config import PoolConfig, Settings
from arena.contenders.base import Contender
from arena.db.session import Database
from arena.errors import ClientError
from arena.gatekeeper import Gatekeeper
from arena.images.store import ImageStore
from arena.pool import PoolPolicy
from arena.pool.policy import Draw


@dataclass
class Services:
    """Everything with a lifetime, built once by the app's lifespan."""

    settings: Settings
    templates: Jinja2Templates
    database: Database
    http: httpx.AsyncClient
    images: ImageStore
    pool_config: PoolConfig
    pool: dict[str, Contender]
    policy: PoolPolicy
    draw_pair: Callable[[random.Random], Draw]
    gatekeeper: Gatekeeper
    battle_runs: BattleRuns
    decode_slots: asyncio.Semaphore  # bounds the memory of photo decodes running at once
    votes: VoteWriter  # the replica's one writer of votes (group commit)
    # set once the place-name index is built (the start-up warm-up; at once where none runs)
    place_names: threading.Event


# The getters are `async`, though they never wait: FastAPI runs a plain function in its
# thread pool, a hop for every request (500 streams opened at once queued 500 of them).
async def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]


async def get_settings(services: ServicesDep) -> Settings:
    return services.settings


async def get_database(services: ServicesDep) -> Database:
    return services.database


def get_session(services: ServicesDep) -> Iterator[Session]:
    yield from services.database.session()


async def get_templates(services: ServicesDep) -> Jinja2Templates:
    return services.templates


async def get_images(services: ServicesDep) -> ImageStore:
    return services.images


async def get_gatekeeper(services: ServicesDep) -> Gatekeeper:
    return services.gatekeeper


async def get_battle_runs(services: ServicesDep) -> BattleRuns:
    return services.battle_runs


def require_admin(request: Request, settings: Annotated[Settings, Depends(get_settings)]) -> None:
    """Admin routes need `Authorization: Bearer $ARENA_ADMIN_TOKEN`."""
    token = settings.admin_token
    if not token:
        raise ClientError(
            503, "admin_disabled", "The admin API is off: set ARENA_ADMIN_TOKEN on the server to enable it."
        )
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    # compare_digest on bytes of both: constant time whatever the input
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token.encode()):
        raise ClientError(
            401,
            "unauthorised",
            "Send the admin token as `Authorization: Bearer <token>`.",
            headers={"WWW-Authenticate": 'Bearer realm="geoarena-admin"'},
        )


SettingsDep = Annotated[Settings, Depends(get_settings)]
DatabaseDep = Annotated[Database, Depends(get_database)]
# scope="function": the session commits when the handler returns, before the response is sent
SessionDep = Annotated[Session, Depends(get_session, scope="function")]
TemplatesDep = Annotated[Jinja2Templates, Depends(get_templates)]
ImagesDep = Annotated[ImageStore, Depends(get_images)]
GatekeeperDep = Annotated[Gatekeeper, Depends(get_gatekeeper)]
BattleRunsDep = Annotated[BattleRuns, Depends(get_battle_runs)]
AdminDep = Depends(require_admin)
