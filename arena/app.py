"""The FastAPI application factory.

Everything with a lifetime (engine, HTTP client, image store, contender pool,
running battles) is built in the lifespan, never at import time, so tests
can build as many apps as they like against different databases.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from arena.battles.ballots import VoteWriter
from arena.battles.relay import relay_for
from arena.battles.runner import BattleHooks, BattleRuns
from arena.config import Settings
from arena.contenders.compose import build_pool
from arena.contenders.deps import ProviderDeps
from arena.contenders.upstream import UpstreamClients
from arena.db.session import Database, make_engine
from arena.deps import Services
from arena.errors import ClientError
from arena.gatekeeper import build_gatekeeper
from arena.geo.gazetteer import country_display_name, load_gazetteer
from arena.geo.reverse import warm_towns
from arena.images.store import store_for
from arena.pool import PoolPolicy, find_identity_leaks
from arena.pool.cooldowns import SharedCooldowns
from arena.pool.counts import EvidenceCache, VoteCountCache
from arena.web import (
    admin,
    battles,
    bench,
    figures,
    health,
    images,
    leaderboard,
    metrics,
    outages,
    pages,
    review,
    terms,
)
from arena.web.headers import SECURITY_HEADERS, SecurityHeaders
from arena.web.origin import SameOriginWrites
from arena.web.requestlog import RequestIds, configure_logging
from arena.web.worldmap import world_map_svg

if TYPE_CHECKING:
    from arena.ratings.background import BackgroundRanker

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "templates"
STATIC = ROOT / "static"

WORKER_THREADS = 32  # about the database pool's 30 connections (ARENA_DATABASE_CONNECTIONS)
GC_THRESHOLDS = (50000, 20, 10)  # gen0 allocations, gen0 runs, gen1 runs (see `_settle_heap`)

ROUTERS = (
    health.router,
    metrics.router,
    battles.router,
    images.router,
    pages.router,
    leaderboard.router,
    admin.router,
    review.router,
    bench.router,
    terms.router,
)


def create_served_app() -> FastAPI:
    """The app of `arena serve` (uvicorn's factory, in each worker): its log configured, and
    SIGTERM drains the replica before uvicorn stops it."""
    settings = Settings()
    configure_logging(settings.log_format, settings.log_level)
    app = create_app(settings)
    app.state.drain_on_sigterm = True
    return app


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    app = FastAPI(
        title="GeoArena",
        summary="Rank vision-language models on geographic reasoning by human votes.",
        lifespan=_lifespan,
    )
    app.state.settings = settings
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    for router in ROUTERS:
        app.include_router(router)
    _install_error_handlers(app)
    app.add_middleware(SameOriginWrites)  # no cross-site writes (arena.web.origin)
    app.add_middleware(SecurityHeaders)  # on every answer, refusals included
    app.add_middleware(RequestIds)  # outermost: every answer has an id and an access line
    app.state.drain_on_sigterm = False
    return app


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings: Settings = app.state.settings
    # Database and file work of the streams runs in `asyncio.to_thread`: asyncio's default of
    # cores + 4 threads (6 here) queued a crowd of battles behind each other's round trips.
    asyncio.get_running_loop().set_default_executor(
        ThreadPoolExecutor(max_workers=WORKER_THREADS, thread_name_prefix="arena-io")
    )
    engine = make_engine(settings.resolved_database_url, settings.database_connections)
    http = httpx.AsyncClient(follow_redirects=False)
    upstream = UpstreamClients(settings.connections_for, other=http)
    images = store_for(settings)
    pool_config = settings.pool
    deps = ProviderDeps(http=http, images=images, pool=pool_config, upstream=upstream, public_url=settings.public_url)
    pool = build_pool(deps)
    _log_connection_pools(upstream, settings)

    for name, contender in pool.items():
        for tool, reason in getattr(contender, "disabled", {}).items():
            log.warning("GATE contender %s: tool %s is not offered: %s", name, tool, reason)
    database = Database(engine)
    sessions = database.sessions
    policy = PoolPolicy.from_config(pool_config, SharedCooldowns(sessions))  # every replica, one outage book
    counts = VoteCountCache(sessions)
    evidence = EvidenceCache(sessions) if policy.config.mode == "active" else None
    gatekeeper = build_gatekeeper(pool_config, deps)
    # Load the offline model before the first request, not during the first person's upload.
    await gatekeeper.warm()
    place_names = threading.Event()  # /readyz waits for it: building the index holds the GIL
    if settings.env != "test":
        # Building the place-name index costs 7-15 CPU-s, and the towns an answer's coordinates
        # are placed in about one more; without this the first answer naming a place waited that
        # long for its commitment before `done` (tests warm them where they need them).
        def warm_place_names() -> None:
            load_gazetteer()
            warm_towns()
            _settle_heap()
            place_names.set()

        threading.Thread(target=warm_place_names, name="gazetteer-warm", daemon=True).start()
    else:
        place_names.set()

    def on_side_result(contender: str, ok: bool) -> None:
        policy.record_result(contender, ok)  # outage cool-downs
        metrics.side_finished(contender, ok)

    # PostgreSQL: events reach watchers on other replicas by LISTEN/NOTIFY as they happen
    relay = relay_for(settings.resolved_database_url)
    if relay is not None:
        relay.start()
    battle_runs = BattleRuns(
        sessions,
        images,
        pool,
        # a contender configured with a longer timeout than the battle's gets its time
        battle_timeout=max([settings.battle_timeout, *(c.timeout for c in pool_config.contenders)]),
        max_answer_chars=settings.max_answer_chars,
        lease=settings.battle_lease,
        max_battles=settings.max_battles,
        relay=relay,
        hooks=BattleHooks(
            on_side_result=on_side_result,
            flag_battle=lambda texts: ["identity_leak"] if find_identity_leaks(texts, pool_config) else [],
            on_side_timing=metrics.side_timing,
            on_battle_end=metrics.battle_ended,
        ),
    )
    templates = Jinja2Templates(directory=str(TEMPLATES))
    templates.env.globals["world_map_svg"] = world_map_svg  # inline SVG, drawn on the server
    templates.env.globals["country_name"] = country_display_name
    templates.env.filters.update(figures.FILTERS)  # one rounding for every figure on a page
    services = Services(
        settings=settings,
        templates=templates,
        database=database,
        http=http,
        images=images,
        pool_config=pool_config,
        pool=pool,
        policy=policy,
        draw_pair=lambda rng: policy.draw_pair(rng, counts.get(), evidence.get() if evidence else None),
        gatekeeper=gatekeeper,
        battle_runs=battle_runs,
        decode_slots=asyncio.Semaphore(_decode_slots(settings)),
        votes=VoteWriter(database, pool_config),
        place_names=place_names,
    )
    app.state.services = services
    ranker = app.state.background_ranker = _background_ranker(settings, database)
    try:
        await asyncio.to_thread(battle_runs.recover)
    except Exception:  # the database may be down at start-up: followers still abandon by the lease
        log.warning("could not look for battles left running", exc_info=True)
    restore_signal = _drain_on_sigterm(battle_runs, settings.shutdown_grace) if app.state.drain_on_sigterm else None
    try:
        yield
    finally:
        if restore_signal is not None:
            restore_signal()
        if ranker is not None:
            ranker.stop()
        await services.votes.close()
        await battle_runs.shutdown()
        await upstream.aclose()
        if relay is not None:
            await relay.stop()
        await http.aclose()
        engine.dispose()


def _settle_heap() -> None:
    """Once start-up has built what lives as long as the process (the place-name index, the
    gatekeeper's model, the pool: more than half a million objects), take it out of the garbage
    collector's sight, and collect the young generation less often.

    Each full collection scanned all of it, 0.3-0.4 s with the event loop stopped, three
    times while 500 battles opened at once. With the start-up's objects frozen and gen0
    collected per 5,000 allocations (not 700), full collections scan only what the battles
    made and come 14 times less often: over the 500 battles of benchmarks/http.py (photos
    already spliced, not escaped) the replica's CPU fell from 18.6-19.8 s to 13.6-16.4 s and
    the first delta's p99 from 3.3-3.6 s to 2.0-2.3 s. At 5,000, 67 young collections (0.4 s
    of a gc callback's clock) still fell in the 4 s the 500 opened in. gen0's count is
    allocations less deallocations, and a battle's objects mostly die by their reference
    count: at 50,000, 8 fell in the whole 20 s they streamed, and the p99 gained 0.1-0.3 s."""
    gc.collect()  # the build's own garbage first, or it would be kept forever
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def _drain_on_sigterm(runs: BattleRuns, grace: float) -> Callable[[], None] | None:
    """On SIGTERM: no new battles (503, and /readyz says so), the running ones get `grace`
    seconds and the rest are abandoned, streams of battles run elsewhere are told to
    reconnect; then uvicorn's own handler stops the server. A second SIGTERM stops it now.
    Returns what restores the previous handler (None outside the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    loop = asyncio.get_running_loop()
    previous = signal.getsignal(signal.SIGTERM)
    draining: set[asyncio.Task[None]] = set()

    def stop_now() -> None:
        if callable(previous):
            previous(signal.SIGTERM, None)

    async def drain() -> None:
        log.info("SIGTERM: taking no new battles; %d running get up to %.0f s", runs.running, grace)
        finished, abandoned = await runs.drain(grace)
        log.info("drained: %d battle(s) finished, %d abandoned; stopping", finished, abandoned)
        stop_now()

    def begin() -> None:
        if draining:
            stop_now()
            return
        task = loop.create_task(drain(), name="drain")
        draining.add(task)

    def on_sigterm(_sig: int, _frame: object) -> None:
        loop.call_soon_threadsafe(begin)  # the handler runs between bytecodes: only schedule

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    signal.signal(signal.SIGTERM, on_sigterm)
    return restore


def _log_connection_pools(upstream: UpstreamClients, settings: Settings) -> None:
    needed = 2 * settings.max_battles  # both sides of every battle on one provider
    for origin, size in upstream.sizes().items():
        if size < needed:
            log.warning(
                "%s: %d connections for up to %d battles (%d streams); streams beyond wait for one",
                origin,
                size,
                settings.max_battles,
                needed,
            )
        else:
            log.info("%s: up to %d connections", origin, size)


def _background_ranker(settings: Settings, database: Database) -> BackgroundRanker | None:
    """The rating job in a thread (ARENA_RANK_EVERY / `[ratings] every`), started; None when off."""
    interval = settings.rank_interval
    if interval <= 0:
        return None
    # imported only when on: the rating maths is not needed to serve battles
    from arena.ratings.background import BackgroundRanker
    from arena.ratings.cli import options_from_config

    ranker = BackgroundRanker(
        database.sessions, options_from_config(settings.pool.ratings.given()), interval, settings.data_dir / "rank"
    )
    ranker.start()
    log.info("background rating every %.0f s when votes arrived", interval)
    return ranker


# a 40-megapixel decode peaks near 8 bytes a pixel in intake; 10 leaves room
DECODE_BYTES_PER_PIXEL = 10


def _decode_slots(settings: Settings) -> int:
    """How many photos may decode at once so their memory stays under `decode_memory_mb`."""
    per_decode = max(1, settings.max_pixels) * DECODE_BYTES_PER_PIXEL
    return max(1, settings.decode_memory_mb * 2**20 // per_decode)


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ClientError)
    async def _client_error(_request: Request, exc: ClientError) -> JSONResponse:
        metrics.refused(exc.code)
        return JSONResponse({"error": exc.code, "message": exc.message}, status_code=exc.status, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ())[1:]) or 'body'}: {e.get('msg', 'invalid')}"
            for e in exc.errors()
        )
        message = f"The request is not valid ({problems})." if problems else "The request is not valid."
        return JSONResponse({"error": "invalid_request", "message": message}, status_code=422)

    # Starlette's own exception (FastAPI's subclasses it): unknown paths (404) and methods (405)
    # raised by the router are answered in the arena's format too, not as {"detail": ...}
    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
        code = {
            400: "bad_request",
            401: "unauthorised",
            404: "not_found",
            405: "method_not_allowed",
            408: "request_timeout",
        }.get(exc.status_code, "error")
        message = {
            404: "There is nothing at this address.",
            405: f"This address does not take {request.method} requests.",
        }.get(exc.status_code, str(exc.detail))
        return JSONResponse(
            {"error": code, "message": message}, status_code=exc.status_code, headers=getattr(exc, "headers", None)
        )

    @app.exception_handler(ClientDisconnect)
    async def _gone(request: Request, _exc: ClientDisconnect) -> Response:
        # A browser that closes the tab mid-upload is no fault of ours: one line, no traceback.
        # Nobody reads the answer; the status only names the case in the access log.
        log.warning("the client closed the connection during %s %s", request.method, request.url.path)
        return Response(status_code=400)

    outages.install(app)  # the database or the image store down: 503 with Retry-After

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, exc: Exception) -> JSONResponse:
        # the traceback still goes to the log (Starlette re-raises after answering). This
        # handler answers outside the middleware, so it adds the security headers itself.
        return JSONResponse(
            {"error": "internal_error", "message": "Something went wrong in the arena; please try again."},
            status_code=500,
            headers={name.decode(): value.decode() for name, value in SECURITY_HEADERS},
        )
