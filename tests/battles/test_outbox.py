"""The replica's one writer of battle events (arena.battles.relay.EventOutbox), on PostgreSQL:
the events of many battles handed in at once go in one transaction, each battle's doorbell
rings, and `flush` returns once a battle's events are written."""

from __future__ import annotations

import asyncio

import psycopg
import pytest
from sqlalchemy import event, text
from sqlalchemy.engine import make_url

from arena.battles.events import BattleEvent
from arena.battles.relay import CHANNEL, EventOutbox, read_events
from arena.db.session import make_engine, make_sessionmaker

pytestmark = pytest.mark.postgres


async def test_events_of_many_battles_share_a_transaction_and_ring_each_doorbell(postgres_url):
    engine = make_engine(postgres_url)
    with engine.begin() as conn:
        conn.execute(text("TRUNCATE battle_events"))
    commits: list[int] = []
    event.listen(engine, "commit", lambda _conn: commits.append(1))
    dsn = make_url(postgres_url).set(drivername="postgresql").render_as_string(hide_password=False)
    listener = psycopg.connect(dsn, autocommit=True)
    listener.execute(f"LISTEN {CHANNEL}")
    outbox = EventOutbox(make_sessionmaker(engine))
    battles = [f"{n:032x}" for n in range(1, 21)]
    for seq in (1, 2, 3):
        for battle_id in battles:
            outbox.add(battle_id, seq, BattleEvent("delta", {"side": "a", "text": f"{battle_id[-2:]}-{seq}"}))
    await asyncio.wait_for(asyncio.gather(*(outbox.flush(b) for b in battles)), 30)
    assert len(commits) <= 2, f"{len(commits)} transactions for 60 events of 20 battles"
    with make_sessionmaker(engine)() as session:
        for battle_id in battles:
            events = read_events(session, battle_id, 0)
            assert [seq for seq, _ in events] == [1, 2, 3]
            assert events[2][1].data == {"side": "a", "text": f"{battle_id[-2:]}-3"}
    rung = {n.payload for n in listener.notifies(timeout=5, stop_after=len(battles))}
    assert rung == set(battles)
    listener.close()
    engine.dispose()


async def test_a_failed_write_is_logged_and_flush_still_returns(postgres_url, caplog):
    engine = make_engine(postgres_url)
    outbox = EventOutbox(make_sessionmaker(engine))
    outbox.add("x" * 40, 1, BattleEvent("delta", {"side": "a", "text": "too long an id"}))  # battle_id is 32
    await asyncio.wait_for(outbox.flush("x" * 40), 30)
    assert "could not write 1 event(s) of 1 battle(s)" in caplog.text
    engine.dispose()
