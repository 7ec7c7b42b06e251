"""Claims of streams opened at once (arena.battles.claims): the claims waiting share one
transaction, each battle is claimed by exactly one stream, a claim's failure is its own,
and a client that leaves while its claim is made does not leave its battle held by nobody."""

from __future__ import annotations

import asyncio
import io
import time

import pytest
from PIL import Image as PILImage
from sqlalchemy import event, select

from arena.battles import claims
from arena.battles.claims import BattleClaims, Claim, Unclaimed, claim_battles
from arena.db.tables import Battle, Response
from tests.battles.test_flow import parse_sse, start_battle


@pytest.fixture
def settings(settings):
    return settings.model_copy(update={"battles_per_minute": 0})  # these tests make many battles a minute


def other_photo(photo: bytes) -> bytes:
    """The same photo, mirrored: another image, so another file in the store."""
    with PILImage.open(io.BytesIO(photo)) as image:
        out = io.BytesIO()
        image.transpose(PILImage.Transpose.FLIP_LEFT_RIGHT).save(out, "JPEG", quality=90)
        return out.getvalue()


def claims_made(engine) -> list[str]:
    """The claim statements executed on `engine` from now on."""
    made: list[str] = []

    def seen(_conn, _cursor, statement, _parameters, _context, _many) -> None:
        if statement.startswith("UPDATE battles SET") and "RETURNING" in statement:
            made.append(statement)

    event.listen(engine, "before_cursor_execute", seen)
    return made


async def test_streams_opened_at_once_share_claims_and_each_battle_runs_once(client, app, photo_bytes):
    battles = [(await start_battle(client, photo_bytes))["battle_id"] for _ in range(12)]
    made = claims_made(app.state.services.database.engine)
    # three battles are opened by two streams at once: one claims, the other joins its run
    urls = [f"/api/battles/{b}/events" for b in battles + battles[:3]]
    streams = await asyncio.wait_for(asyncio.gather(*(client.get(url) for url in urls)), 30)
    ends = [parse_sse(s.text)[-1] for s in streams]
    assert ends == [("end", {"status": "ready"})] * 15
    assert 1 <= len(made) < 12, f"{len(made)} claim statements for 12 battles opened at once"
    twice = {b: [s.text for s, u in zip(streams, urls, strict=True) if b in u] for b in battles[:3]}
    for battle_id, (first, second) in twice.items():
        deltas = [e for e in parse_sse(first) if e[0] == "done"]
        assert deltas == [e for e in parse_sse(second) if e[0] == "done"], battle_id  # one run, two watchers
    with app.state.services.database.sessions() as session:
        assert set(session.scalars(select(Battle.status).where(Battle.id.in_(battles)))) == {"ready"}
        answers = session.execute(select(Response.battle_id, Response.status).where(Response.battle_id.in_(battles)))
        assert sorted(answers) == sorted((b, "done") for b in battles for _ in "ab")


async def test_each_claim_of_a_batch_gets_its_own_outcome(client, app, photo_bytes):
    first, second, running = [(await start_battle(client, photo_bytes))["battle_id"] for _ in range(3)]
    database = app.state.services.database
    with database.sessions.begin() as session:
        session.get(Battle, running).status = "running"  # claimed earlier, by a stream elsewhere
    asked = [first, running, "0" * 32, first, second]
    with database.sessions.begin() as session:
        outcomes = claim_battles(session, asked)
    assert outcomes[1:4] == [Unclaimed.TAKEN, Unclaimed.MISSING, Unclaimed.TAKEN]
    for outcome in (outcomes[0], outcomes[4]):
        assert not isinstance(outcome, Unclaimed)
        assert outcome.prompt and outcome.sides.keys() == {"a", "b"} and outcome.width > 0
    with database.sessions() as session:
        for battle_id in (first, second):
            assert session.get(Battle, battle_id).status == "running"
            started = session.execute(
                select(Response.status, Response.started_at).where(Response.battle_id == battle_id)
            ).all()
            assert [status for status, _ in started] == ["streaming", "streaming"]
            assert all(at is not None for _, at in started)


async def test_a_missing_photo_fails_only_its_own_claim(client, app, photo_bytes):
    kept = (await start_battle(client, photo_bytes))["battle_id"]
    lost = (await start_battle(client, other_photo(photo_bytes)))["battle_id"]
    services = app.state.services
    with services.database.sessions() as session:
        lost_sha = session.get(Battle, lost).image_sha256
    services.images.path(lost_sha).unlink()
    claimer = BattleClaims(services.database.sessions, services.images)
    outcomes = await asyncio.gather(claimer.claim(kept), claimer.claim(lost), return_exceptions=True)
    assert isinstance(outcomes[0], Claim) and outcomes[0].image.jpeg.startswith(b"\xff\xd8")  # a JPEG
    assert isinstance(outcomes[1], KeyError), outcomes[1]


async def test_a_batch_that_fails_is_claimed_one_by_one(client, app, photo_bytes, monkeypatch):
    """A fault of the batch's transaction (a deadlock between two replicas' batches, a
    failover) is not every stream's failure: each battle is then claimed alone."""
    battles = [(await start_battle(client, photo_bytes))["battle_id"] for _ in range(3)]
    real = claims.claim_battles

    def fails_together(session, battle_ids):
        if len(battle_ids) > 1:
            raise RuntimeError("deadlock detected")
        return real(session, battle_ids)

    monkeypatch.setattr(claims, "claim_battles", fails_together)
    services = app.state.services
    claimer = BattleClaims(services.database.sessions, services.images)
    outcomes = await asyncio.gather(*(claimer.claim(b) for b in [*battles, battles[0]]))
    assert [isinstance(o, Claim) for o in outcomes] == [True, True, True, False]
    assert outcomes[3] is Unclaimed.TAKEN
    with services.database.sessions() as session:
        assert set(session.scalars(select(Battle.status).where(Battle.id.in_(battles)))) == {"running"}


async def test_a_client_gone_during_its_claim_leaves_no_battle_held_by_nobody(client, app, photo_bytes):
    """The stream's request is cancelled while its claim is made: the run starts all the
    same (and, as nobody watches it, stops after the lease if it has not finished by then),
    rather than the battle staying `running` with no run until it is found stale."""
    battle_id = (await start_battle(client, photo_bytes))["battle_id"]
    runs = app.state.services.battle_runs
    runs.lease = 0.3
    opening = asyncio.create_task(runs.open(battle_id))
    await asyncio.sleep(0)  # its claim is handed in
    opening.cancel()
    with pytest.raises(asyncio.CancelledError):
        await opening
    for _ in range(100):
        with app.state.services.database.sessions() as session:
            status = session.get(Battle, battle_id).status
        if status not in ("pending", "running"):
            break
        await asyncio.sleep(0.1)
    assert status in ("ready", "abandoned"), f"the battle was left {status} with no run"


async def test_a_claim_being_made_at_shutdown_ends_in_a_battle_someone_ran(client, app, photo_bytes, monkeypatch):
    """The replica stops while a stream's claim is in the database: shutdown waits for it, and
    the run it starts is abandoned with the rest, not left `running` until a lease runs out."""
    battle_id = (await start_battle(client, photo_bytes))["battle_id"]
    real = claims.claim_battles
    claiming = asyncio.Event()
    loop = asyncio.get_running_loop()

    def slow_claim(session, battle_ids):
        loop.call_soon_threadsafe(claiming.set)
        time.sleep(0.3)  # the claim is in the database when shutdown begins
        return real(session, battle_ids)

    monkeypatch.setattr(claims, "claim_battles", slow_claim)
    runs = app.state.services.battle_runs
    opening = asyncio.create_task(runs.open(battle_id))
    await claiming.wait()
    await runs.shutdown()
    with app.state.services.database.sessions() as session:
        assert session.get(Battle, battle_id).status == "abandoned"
    opening.cancel()
    await asyncio.gather(opening, return_exceptions=True)
