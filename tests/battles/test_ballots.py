"""Group commit of votes (arena.battles.ballots): votes cast at once share one transaction,
each keeps every rule of a vote, each is answered only once committed, and a batch that
cannot be written as one falls back to one transaction a vote, each error to its own ballot."""

from __future__ import annotations

import asyncio
import logging

import pytest
from sqlalchemy import event, func, select, text
from sqlalchemy.exc import IntegrityError

from arena.battles import integrity
from arena.battles.ballots import Ballot, VoteWriter, write_ballots, write_batch
from arena.battles.votes import Reveal, VoteRefused
from arena.db.session import Database, make_engine
from arena.db.tables import Battle, IntegrityCounter, Vote
from arena.errors import ClientError
from tests.battles.test_integrity import ready_battle, with_integrity


@pytest.fixture
def settings(settings):
    return settings.model_copy(update={"battles_per_minute": 0})  # these tests make many battles a minute


async def test_votes_cast_at_once_share_transactions_and_each_is_committed_when_answered(client, app, photo_bytes):
    battles = [await ready_battle(client, photo_bytes) for _ in range(12)]
    engine = app.state.services.database.engine
    commits: list[int] = []
    event.listen(engine, "commit", lambda _conn: commits.append(1))

    async def vote(battle_id: str, choice: str) -> tuple[int, dict, bool]:
        answer = await client.post(f"/api/battles/{battle_id}/vote", json={"choice": choice})
        with app.state.services.database.sessions() as session:  # another connection
            stored = session.scalar(select(Vote.choice).where(Vote.battle_id == battle_id))
        return answer.status_code, answer.json(), stored == choice

    answers = await asyncio.gather(*(vote(b, "ab"[i % 2]) for i, b in enumerate(battles)))
    assert [code for code, _, _ in answers] == [200] * 12
    assert all(committed for _, _, committed in answers)  # durable before the answer left
    assert {body["model_a"] for _, body, _ in answers} <= {"model-one", "model-two"}
    assert [body["choice"] for _, body, _ in answers] == ["ab"[i % 2] for i in range(12)]
    assert len(commits) < 12, f"{len(commits)} transactions for 12 votes cast at once"
    with app.state.services.database.sessions() as session:
        assert session.scalar(select(func.count()).select_from(Vote)) == 12
        assert set(session.scalars(select(Battle.status).where(Battle.id.in_(battles)))) == {"voted"}


async def test_each_vote_of_a_batch_gets_its_own_refusal(client, app, photo_bytes):
    ready = await ready_battle(client, photo_bytes)
    voted = await ready_battle(client, photo_bytes)
    assert (await client.post(f"/api/battles/{voted}/vote", json={"choice": "tie"})).status_code == 200
    pending = (
        await client.post(
            "/api/battles", files={"image": ("p.jpg", photo_bytes, "image/jpeg")}, data={"prompt": "Where is this?"}
        )
    ).json()["battle_id"]
    urls = [ready, ready, voted, pending, "f" * 32]
    answers = await asyncio.gather(*(client.post(f"/api/battles/{b}/vote", json={"choice": "a"}) for b in urls))
    codes = [(a.status_code, a.json().get("error")) for a in answers]
    # the same battle twice at once: one vote counts, the other is told it was voted
    assert sorted(codes[:2], key=str) == [(200, None), (409, "already_voted")]
    assert codes[2:] == [(409, "already_voted"), (409, "not_ready"), (404, "battle_not_found")]
    with app.state.services.database.sessions() as session:
        assert session.scalar(select(func.count()).select_from(Vote)) == 2
        assert session.get(Battle, pending).status in ("pending", "running", "ready")


def many_battles_with(settings, tmp_path, openai_server, **integrity):  # type: ignore[no-untyped-def]
    settings = settings.model_copy(update={"battles_per_minute": 0})
    return with_integrity(settings, tmp_path, openai_server, **integrity)


class TestLimitsInOneBatch:
    @pytest.fixture
    def settings(self, settings, tmp_path, openai_server):
        return many_battles_with(
            settings, tmp_path, openai_server, votes_per_day=3, votes_per_address_per_day=4, min_read_seconds=0
        )

    async def test_ballots_count_one_after_another_and_the_refused_are_not_counted(self, client, app, photo_bytes):
        battles = [await ready_battle(client, photo_bytes) for _ in range(6)]
        database = app.state.services.database
        pool = app.state.services.pool_config
        with database.sessions() as session:
            starter = session.get(Battle, battles[0]).starter_hash
        ballots = [Ballot(b, "a", starter, "address-1") for b in battles[:5]]
        ballots.insert(1, Ballot(battles[0], "b", starter, "address-1"))  # a second vote on the first battle
        # on PostgreSQL the batch is first written in one statement, which crosses the limits
        # and is rolled back; then counted ballot by ballot
        outcomes = write_batch(database, ballots, pool)
        kinds = [o.choice if isinstance(o, Reveal) else (o.status, o.code) for o in outcomes]  # type: ignore[union-attr]
        assert kinds == ["a", (409, "already_voted"), "a", "a", (429, "vote_limit"), (429, "vote_limit")]
        assert isinstance(outcomes[4], ClientError) and int(outcomes[4].headers["Retry-After"]) > 0
        with database.sessions() as session:
            counts = dict(session.execute(select(IntegrityCounter.key, IntegrityCounter.count)).all())
            assert session.scalar(select(func.count()).select_from(Vote)) == 3
        keys = integrity.vote_keys(starter, "address-1")
        # the two 429s and the first, rolled back attempt left no trace
        assert counts[keys["voter"]] == 3 and counts[keys["address"]] == 3
        # the address allows one more today, from another browser's battle
        with database.sessions.begin() as session:
            session.execute(Battle.__table__.update().where(Battle.id == battles[5]).values(starter_hash="other"))
        with database.engine.begin() as connection:
            more = write_ballots(connection, [Ballot(battles[5], "tie", "other", "address-1")], pool)
        assert isinstance(more[0], Reveal)
        with database.sessions() as session:
            assert session.scalar(select(IntegrityCounter.count).where(IntegrityCounter.key == keys["address"])) == 4


class TestWriteInOneStatement:
    @pytest.fixture
    def settings(self, settings, tmp_path, openai_server):
        # limits that count but do not refuse; no reading time, so no vote is flagged too fast
        return many_battles_with(
            settings, tmp_path, openai_server, votes_per_day=50, votes_per_address_per_day=50, max_read_seconds=0
        )

    async def test_a_batch_within_the_limits_reads_once_and_writes_once_on_postgresql(
        self, client, app, photo_bytes, database_url
    ):
        battles = [await ready_battle(client, photo_bytes) for _ in range(4)]
        database = app.state.services.database
        with database.sessions() as session:
            starter = session.get(Battle, battles[0]).starter_hash
        statements: list[str] = []
        event.listen(database.engine, "before_cursor_execute", lambda *args: statements.append(args[2].split()[0]))
        ballots = [
            Ballot(b, c, starter, f"address-{i % 2}") for i, (b, c) in enumerate(zip(battles, "ab", strict=False))
        ]
        ballots += [
            Ballot(battles[2], "tie", starter, "address-0"),
            Ballot(battles[3], "both_bad", starter, "address-1"),
        ]
        outcomes = write_batch(database, ballots, app.state.services.pool_config)
        assert [o.choice for o in outcomes] == ["a", "b", "tie", "both_bad"]  # type: ignore[union-attr]
        if database_url.startswith("postgresql"):
            assert statements == ["SELECT", "WITH"]  # the read (locked), then votes, battles, counters at once
        with database.sessions() as session:
            votes = dict(session.execute(select(Vote.battle_id, Vote.choice)).all())
            counts = dict(session.execute(select(IntegrityCounter.key, IntegrityCounter.count)).all())
            statuses = set(session.scalars(select(Battle.status).where(Battle.id.in_(battles))))
        assert votes == dict(zip(battles, ["a", "b", "tie", "both_bad"], strict=True)) and statuses == {"voted"}
        keys = integrity.vote_keys(starter, "address-0")
        assert counts[keys["voter"]] == 4 and counts[keys["address"]] == 2
        assert counts[integrity.vote_keys(starter, "address-1")["address"]] == 2


async def test_a_batch_that_fails_is_cast_one_by_one_each_error_to_its_own_ballot(client, app, photo_bytes):
    battles = [await ready_battle(client, photo_bytes) for _ in range(3)]
    services = app.state.services
    with services.database.sessions() as session:
        starter = session.get(Battle, battles[0]).starter_hash
    writer = VoteWriter(services.database, services.pool_config)
    # "maybe" passes the rules but not the votes table's CHECK: the batch's insert fails
    choices = ["a", "maybe", "b"]
    outcomes = await asyncio.gather(
        *(writer.cast(Ballot(b, c, starter, "address")) for b, c in zip(battles, choices, strict=True)),
        return_exceptions=True,
    )
    await writer.close()
    assert isinstance(outcomes[0], Reveal) and outcomes[0].choice == "a"
    assert isinstance(outcomes[1], IntegrityError)  # its own failure (a 500 at the HTTP layer)
    assert isinstance(outcomes[2], Reveal) and outcomes[2].choice == "b"
    with services.database.sessions() as session:
        votes = dict(session.execute(select(Vote.battle_id, Vote.choice)).all())
        assert votes == {battles[0]: "a", battles[2]: "b"}
        assert session.get(Battle, battles[1]).status == "ready"  # nothing half-written


async def test_a_writer_answers_votes_that_come_one_at_a_time(database_url, tmp_path):
    """No battles at all: each ballot still gets its refusal, and the writer stops cleanly."""
    from arena.config import load_pool

    engine = make_engine(database_url)
    writer = VoteWriter(Database(engine), load_pool(tmp_path / "absent.toml"))
    for _ in range(3):
        with pytest.raises(VoteRefused) as refused:
            await writer.cast(Ballot("0" * 32, "a", "voter", "address"))
        assert refused.value.status == 404
    await writer.close()
    engine.dispose()


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_the_writer_outlives_its_connection_being_cut(client, app, photo_bytes, caplog):
    """The writer keeps one connection; when the server drops it (a restart, a failover), the
    batch that finds it gone is cast alone through the pool, and the next one reconnects."""
    battles = [await ready_battle(client, photo_bytes) for _ in range(3)]
    services = app.state.services
    with services.database.sessions() as session:
        starter = session.get(Battle, battles[0]).starter_hash
    writer = VoteWriter(services.database, services.pool_config)
    assert (await writer.cast(Ballot(battles[0], "a", starter, "address"))).choice == "a"
    with services.database.engine.begin() as connection:  # every other backend of this database
        cut = connection.scalar(
            text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        )
    assert cut >= 1
    with caplog.at_level(logging.INFO, logger="arena.battles.ballots"):
        assert (await writer.cast(Ballot(battles[1], "b", starter, "address"))).choice == "b"
        assert "casting each alone" in caplog.text
        caplog.clear()
        assert (await writer.cast(Ballot(battles[2], "tie", starter, "address"))).choice == "tie"
        assert caplog.text == ""  # written as a batch again, on a new connection
    await writer.close()
    with services.database.sessions() as session:
        assert dict(session.execute(select(Vote.battle_id, Vote.choice)).all()) == dict(
            zip(battles, ["a", "b", "tie"], strict=True)
        )
