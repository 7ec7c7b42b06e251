"""HTTP API of battles: the challenge, create, stream, vote."""

from __future__ import annotations

import asyncio
import random
import secrets
from collections.abc import AsyncIterator
from dataclasses import asdict
from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel
from sqlalchemy.orm import Session
from starlette.datastructures import UploadFile
from starlette.types import Message

from arena.battles import integrity, labels, repository
from arena.battles.ballots import Ballot
from arena.battles.runner import Slot
from arena.battles.votes import Reveal, reveal_of, voter_hash
from arena.config import Settings
from arena.db.session import Database
from arena.db.tables import Image, utcnow
from arena.db.text import is_storable_text
from arena.deps import AdminDep, BattleRunsDep, DatabaseDep, Services, ServicesDep, SessionDep, SettingsDep
from arena.errors import ClientError
from arena.geo.language import guess_language
from arena.images.intake import IntakeLimits, NormalisedImage, normalise
from arena.pool import PoolExhausted
from arena.web.metrics import BATTLES_STARTED, EVENT_STREAMS, GATEKEEPER_REFUSALS, VOTES

router = APIRouter()

VOTER_COOKIE = "arena_voter"


class BattleCreated(BaseModel):
    battle_id: str
    events_url: str
    image_url: str  # the stored JPEG, which every browser can show (HEIC uploads included)


class VoteIn(BaseModel):
    choice: Literal["a", "b", "tie", "both_bad"]


@router.get("/api/challenge")
def challenge(request: Request, session: SessionDep, services: ServicesDep) -> JSONResponse:
    """Whether this browser must solve a proof-of-work before its next battle, and the puzzle."""
    settings, config = services.settings, services.pool_config.integrity
    voter_id = request.cookies.get(VOTER_COOKIE) or secrets.token_hex(16)
    voter = _voter(voter_id, settings)
    bits = integrity.challenge_bits(session, config, voter, _ip_hash(request, settings))
    body: dict[str, object] = {"required": bits > 0}
    if bits:
        issued = integrity.issue(settings.secret_key, voter, bits, config.challenge_ttl_seconds)
        body.update(token=issued.token, bits=issued.bits, expires_at=issued.expires_at)
    response = JSONResponse(body, headers={"Cache-Control": "no-store"})
    _ensure_voter_cookie(request, response, voter_id)
    return response


# The handler reads the form itself (to count the body as it arrives), so the spec says what it takes.
_BATTLE_FORM = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    # `same_photo` may stand in for `image`; the spec asks for the file, so fuzzers send one
                    "required": ["image", "prompt"],
                    "properties": {
                        "image": {"type": "string", "format": "binary", "description": "JPEG, PNG or WebP photo"},
                        "prompt": {"type": "string", "description": "a geographic question about the photo"},
                        "same_photo": {"type": "string", "description": "instead of `image`: an earlier battle's id"},
                        "share_location": {"type": "string", "description": "`true` to keep a location label"},
                        "location": {"type": "string", "description": "`lat,lon` of the photo (with consent)"},
                        "place": {"type": "string", "description": "a place name (with consent)"},
                        "challenge": {"type": "string", "description": "proof-of-work token from /api/challenge"},
                        "solution": {"type": "string", "description": "its solution"},
                    },
                }
            }
        },
    }
}


@router.post("/api/battles", status_code=201, response_model=BattleCreated, openapi_extra=_BATTLE_FORM)
async def create_battle(
    request: Request, settings: SettingsDep, db: DatabaseDep, services: ServicesDep
) -> JSONResponse:
    """Start a battle from an uploaded photo and a question."""
    # a full replica refuses first, before it reads the upload (503 with Retry-After)
    async with services.battle_runs.slot() as slot:
        return await _create_battle(request, settings, db, services, slot)


async def _create_battle(
    request: Request, settings: Settings, db: Database, services: Services, slot: Slot
) -> JSONResponse:
    declared = int(request.headers.get("content-length") or 0)
    if declared > settings.max_upload_bytes + 64 * 1024:  # room for the prompt and multipart framing
        raise ClientError(
            413,
            "file_too_large",
            f"The upload is larger than the {settings.max_upload_bytes // (1024 * 1024)} MB limit.",
        )
    ip_hash = _ip_hash(request, settings)
    config = services.pool_config.integrity
    voter_id = request.cookies.get(VOTER_COOKIE) or secrets.token_hex(16)  # the cookie is set with the answer
    voter = _voter(voter_id, settings)
    # short transactions of their own: no pooled connection is held while a slow upload arrives
    needed_bits = await db.run(integrity.challenge_bits, config, voter, ip_hash)
    if settings.battles_per_minute:
        # Counted first and atomically, so a refused upload counts too and parallel ones race for
        # the same counter in the database (on every replica) instead of each reading a stale count.
        attempts = await db.run(repository.count_upload, ip_hash, utcnow())
        if attempts > settings.battles_per_minute:
            raise ClientError(
                429,
                "rate_limited",
                f"This address has sent {attempts - 1} photos in the last minute (the limit is "
                f"{settings.battles_per_minute}); please wait a moment before starting another.",
                headers={"Retry-After": "60"},
            )
    # The body is counted as it arrives: a chunked upload has no Content-Length
    # to refuse up front, and the form parser would spool all of it to disk.
    # The form closes (and deletes) its spooled upload when this block ends.
    async with _limited(request, settings.max_upload_bytes, settings.upload_timeout).form(
        max_files=1, max_fields=7
    ) as form:
        upload, prompt = form.get("image"), form.get("prompt")
        if needed_bits:
            token, solution = form.get("challenge"), form.get("solution")
            if not isinstance(token, str) or not isinstance(solution, str) or not token:
                raise integrity.missing_challenge()
            await db.run(integrity.redeem, settings.secret_key, voter, token, solution, needed_bits)
        # "Same photo, new pair": a battle id in `same_photo` stands for that battle's stored photo.
        same_photo = form.get("same_photo")
        reused = (
            same_photo if isinstance(same_photo, str) and same_photo and not isinstance(upload, UploadFile) else None
        )
        if not isinstance(upload, UploadFile) and reused is None:
            raise ClientError(422, "missing_image", "Attach a photo in the `image` field.")
        prompt = valid_prompt(prompt, settings.max_prompt_chars)
        # The cheap checks first: the question is judged before the photo is decoded.
        verdict = await services.gatekeeper.classify(prompt)
        if not verdict.geographic:
            await db.run(repository.count_rejection, verdict.classifier[:100])
            GATEKEEPER_REFUSALS.labels(classifier=verdict.classifier[:100]).inc()
            # the refusal is in the prompt's language: the page sets its lang and direction from this
            raise ClientError(422, "not_geographic", verdict.reason, headers={"Content-Language": verdict.lang})
        data = await upload.read(settings.max_upload_bytes + 1) if isinstance(upload, UploadFile) else b""
        share, location, place = form.get("share_location"), form.get("location"), form.get("place")
    if reused is not None:
        image = await _stored_photo(db, services, reused)
    else:
        limits = IntakeLimits(settings.max_upload_bytes, settings.max_pixels, settings.contender_long_side)
        async with services.decode_slots:
            image = await asyncio.to_thread(normalise, data, limits)  # IntakeError is answered as it is
    del data
    label = await asyncio.to_thread(  # opt-in only; the photo's GPS is dropped here otherwise
        labels.label_from_form,
        share=share,
        location=location,
        place=place,
        exif_gps=image.gps,
        precision_km=settings.label_precision_km,
    )

    try:
        # the cool-downs it consults are in the database (shared by the replicas): off the event loop
        draw = await asyncio.to_thread(services.draw_pair, random.SystemRandom())
    except PoolExhausted:
        raise ClientError(
            503, "no_contenders", "Not enough contenders are available right now; please try again in a minute."
        ) from None
    pair = draw.pair
    gates = (services.pool[pair[0]].gate, services.pool[pair[1]].gate)

    sha = await asyncio.to_thread(services.images.put, image.jpeg, "jpg")
    battle_id = await db.run(  # committed before answering: the client opens the stream right away
        _store_battle,
        image,
        sha,
        prompt=prompt,
        contenders=pair,
        gates=gates,
        client_hash=_client_hash(request, settings),
        ip_hash=ip_hash,
        voter=voter,
        propensity=draw.propensity,
        label=label,
        unsure=verdict.unsure,
    )
    slot.bind(battle_id)
    for contender in pair:
        BATTLES_STARTED.labels(contender=contender).inc()
    body = BattleCreated(battle_id=battle_id, events_url=f"/api/battles/{battle_id}/events", image_url=f"/images/{sha}")
    response = JSONResponse(body.model_dump(), status_code=201)
    _ensure_voter_cookie(request, response, voter_id)
    return response


class BattleView(BaseModel):
    """A battle as its page shows it: reload resumes it, a link shares it."""

    battle_id: str
    prompt: str
    image_url: str
    events_url: str
    status: str
    mine: bool  # this browser started it, so only it may vote
    vote: dict[str, object] | None  # the reveal, once voted (names are no secret then)


@router.get("/api/battles/{battle_id}", response_model=BattleView)
def battle_view(battle_id: str, request: Request, session: SessionDep, services: ServicesDep) -> JSONResponse:
    """A battle's question, photo, state and (once voted) its vote and contenders."""
    battle = repository.get_battle(session, battle_id, with_responses=True)
    if battle is None:
        raise ClientError(404, "battle_not_found", "There is no battle with this id.")
    voter_id = request.cookies.get(VOTER_COOKIE)
    mine = (
        bool(voter_id)
        and bool(battle.starter_hash)
        and secrets.compare_digest(battle.starter_hash, _voter(voter_id or "", services.settings))
    )
    vote = asdict(reveal_of(battle, battle.vote.choice, services.pool_config)) if battle.vote is not None else None
    view = BattleView(
        battle_id=battle.id,
        prompt=battle.prompt,
        image_url=f"/images/{battle.image_sha256}",
        events_url=f"/api/battles/{battle.id}/events",
        status=battle.status,
        mine=mine,
        vote=vote,
    )
    return JSONResponse(view.model_dump(), headers={"Cache-Control": "no-store"})


@router.get("/api/battles/{battle_id}/events")
async def battle_events(battle_id: str, runs: BattleRunsDep) -> StreamingResponse:
    """Server-sent events: both answers as they stream, then `ready` and `end`."""
    stream = await runs.open(battle_id)
    if stream is None:
        raise ClientError(404, "battle_not_found", "There is no battle with this id.")
    return StreamingResponse(
        _counted(stream),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _counted(stream: AsyncIterator[str]) -> AsyncIterator[str]:
    """The stream, counted in `arena_event_streams_open` while it is open."""
    EVENT_STREAMS.inc()
    try:
        async for chunk in stream:
            yield chunk
    finally:
        EVENT_STREAMS.dec()


@router.post("/api/battles/{battle_id}/vote", response_model=Reveal)
async def vote(battle_id: str, body: VoteIn, request: Request, services: ServicesDep) -> JSONResponse:
    """Cast the battle's one vote; the answer reveals the contenders.

    The replica's vote writer writes it in one transaction with the votes cast at the same
    moment (arena.battles.ballots), off the event loop, and this answers once it committed;
    a refusal (VoteRefused, the 429 of the daily limits) is answered as it is."""
    settings = services.settings
    voter_id = request.cookies.get(VOTER_COOKIE)
    ballot = Ballot(battle_id, body.choice, _voter(voter_id, settings) if voter_id else "", _ip_hash(request, settings))
    reveal = await services.votes.cast(ballot)
    VOTES.labels(choice=body.choice).inc()
    return JSONResponse(asdict(reveal))


@router.delete("/api/admin/battles/{battle_id}/label", dependencies=[AdminDep])
def delete_label(battle_id: str, session: SessionDep) -> JSONResponse:
    """Forget a battle's location label (admin token); its distances leave the next snapshot."""
    if not labels.delete_label(session, battle_id):
        raise ClientError(404, "label_not_found", "This battle has no location label.")
    return JSONResponse({"battle_id": battle_id, "deleted": True})


def valid_prompt(prompt: object, max_chars: int) -> str:
    """The question, refused (422) before anything is stored when it is missing, too long or not
    text: NUL and other control characters, and lone surrogates that UTF-8 cannot hold."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise ClientError(422, "missing_prompt", "Ask a question about the photo in the `prompt` field.")
    prompt = prompt.strip()
    if len(prompt) > max_chars:
        raise ClientError(
            422, "prompt_too_long", f"The question is {len(prompt)} characters long; the limit is {max_chars}."
        )
    if not is_storable_text(prompt, allow="\t\n\r"):
        raise ClientError(
            422,
            "invalid_prompt",
            "The question contains control characters (such as NUL) or broken Unicode; please type it as plain text.",
        )
    return prompt


def _store_battle(
    session: Session,
    image: NormalisedImage,
    sha: str,
    *,
    prompt: str,
    contenders: tuple[str, str],
    gates: tuple[bool, bool],
    client_hash: str,
    ip_hash: str,
    voter: str,
    propensity: float | None,
    label: labels.Label | None,
    unsure: bool = False,
) -> str:
    repository.save_image(session, sha, image.width, image.height, len(image.jpeg))
    battle = repository.create_battle(
        session,
        prompt=prompt,
        image_sha256=sha,
        contenders=contenders,
        gates=gates,
        client_hash=client_hash,
        ip_hash=ip_hash,
        language=guess_language(prompt),
        propensity=propensity,
        categories=[],  # the language is its own column; the rating job makes it a category
        starter_hash=voter,
        unsure=unsure,
    )
    if label is not None:
        labels.save_label(session, battle.id, label)
    integrity.bump(session, f"battles:voter:{voter}")  # risk signals for the challenge
    integrity.bump(session, f"battles:address:{ip_hash}")
    return battle.id


async def _stored_photo(db: Database, services: Services, battle_id: str) -> NormalisedImage:
    """The photo of an earlier battle, as stored (already normalised, so it is not decoded again)."""
    found = await db.run(_photo_of, battle_id)
    if found is None:
        raise ClientError(404, "battle_not_found", "The battle whose photo you asked to reuse does not exist.")
    sha, width, height = found
    try:
        jpeg = await asyncio.to_thread(services.images.get, sha)
    except KeyError:
        raise ClientError(404, "image_not_found", "The photo of that battle is no longer stored.") from None
    return NormalisedImage(jpeg=jpeg, width=width, height=height, sha256=sha, source_format="jpeg")


def _photo_of(session: Session, battle_id: str) -> tuple[str, int, int] | None:
    battle = repository.get_battle(session, battle_id)
    stored = session.get(Image, battle.image_sha256) if battle is not None else None
    return (stored.sha256, stored.width, stored.height) if stored is not None else None


def _limited(request: Request, max_bytes: int, timeout: float) -> Request:
    """The same request, whose body refuses to grow past the upload limit (413) or to take
    longer than `timeout` seconds to arrive (408): a client that trickles its body or stops
    half-way would otherwise hold the connection and the battle slot for ever."""
    limit = max_bytes + 64 * 1024  # room for the prompt and multipart framing
    deadline = asyncio.get_running_loop().time() + timeout
    received = 0

    async def receive() -> Message:
        nonlocal received
        remaining = deadline - asyncio.get_running_loop().time()
        try:
            message = await asyncio.wait_for(request.receive(), max(remaining, 0.0))
        except TimeoutError:
            raise ClientError(
                408,
                "upload_timeout",
                f"The upload did not arrive within {timeout:g} seconds; check the connection and try again.",
                headers={"Connection": "close"},
            ) from None
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                raise ClientError(
                    413, "file_too_large", f"The upload is larger than the {max_bytes // (1024 * 1024)} MB limit."
                )
        return message

    return Request(request.scope, receive)


def _client_ip(request: Request) -> str:
    return request.client.host if request.client else ""


def _ip_hash(request: Request, settings: Settings) -> str:
    # an IPv6 address counts by its /64: rotating within it is one address
    return voter_hash(settings.secret_key, "ip", integrity.address_key(_client_ip(request)))


def _voter(voter_id: str, settings: Settings) -> str:
    """The voter: an HMAC of the cookie id alone, so the same browser is the
    same voter whichever address it comes from (the anomaly test and the daily
    limit key on it)."""
    return voter_hash(settings.secret_key, voter_id, "")


def _client_hash(request: Request, settings: Settings) -> str:
    voter_id = request.cookies.get(VOTER_COOKIE, "")
    return voter_hash(settings.secret_key, voter_id, _client_ip(request))


def _ensure_voter_cookie(request: Request, response: JSONResponse, voter_id: str | None = None) -> None:
    if request.cookies.get(VOTER_COOKIE):
        return
    response.set_cookie(
        VOTER_COOKIE,
        voter_id or secrets.token_hex(16),
        max_age=365 * 24 * 3600,
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )
