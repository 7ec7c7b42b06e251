"""Votes cast at the same moment, written together: group commit by one writer per replica.

A vote request hands its ballot to the replica's `VoteWriter` and waits. The writer takes
every ballot waiting and writes them in one transaction with a handful of statements
(whatever their number): read the battles (locked on PostgreSQL), run each ballot through
the same rules as `votes.cast_vote`, count the accepted ones against the daily limits,
insert the votes, mark the battles voted. Each request is answered only after that
transaction committed. While a batch is being written the next one gathers, so there is
no added wait when votes come one at a time.

On PostgreSQL the writing is one statement (`WRITE_IN_ONE`: the votes, the battles marked
voted and the daily counters, a round trip instead of four). It counts optimistically: when
the counters it returns show a daily limit crossed, which is rare, the transaction is
rolled back and the batch is written again statement by statement, counting each ballot
against the limits one after another.

A refused ballot (404, 403, 409, 429) is answered with its own reason and writes nothing.
When the batch itself fails (a database error, a vote another replica cast between our
read and our insert), it is rolled back and each of its ballots is cast alone by
`cast_vote`, so every error reaches its own request and nothing half-written stays.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import cast

from sqlalchemy import Connection, Table, bindparam, func, select, text, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from arena.battles import integrity
from arena.battles.votes import Reveal, cast_vote, vote_refusal
from arena.config import IntegrityConfig, PoolConfig
from arena.db.batches import Batches
from arena.db.session import Database
from arena.db.tables import Battle, Response, Vote, utcnow

log = logging.getLogger(__name__)

# Core tables, not the ORM: a vote needs rows, not objects (the ORM's insert path cost a
# third of a vote's CPU in the profile)
BATTLES = cast(Table, Battle.__table__)
RESPONSES = cast(Table, Response.__table__)
VOTES = cast(Table, Vote.__table__)
MAX_BATCH = 200  # ballots in one transaction

# Built once: a statement's cache key is then worked out once, not for every batch.
READ = (
    select(
        BATTLES.c.id,
        BATTLES.c.status,
        BATTLES.c.starter_hash,
        BATTLES.c.model_a,
        BATTLES.c.model_b,
        BATTLES.c.flags,
        RESPONSES.c.side,
        RESPONSES.c.gate,
        RESPONSES.c.finished_at,
        func.coalesce(func.length(RESPONSES.c.text), 0),
    )
    .select_from(BATTLES.outerjoin(RESPONSES, RESPONSES.c.battle_id == BATTLES.c.id))
    .where(BATTLES.c.id.in_(bindparam("ids", expanding=True)))
    .order_by(BATTLES.c.id)
)
READ_LOCKED = READ.with_for_update(of=BATTLES)  # PostgreSQL; SQLite has one writer at a time anyway
INSERT = {
    name: insert(VOTES).on_conflict_do_nothing(index_elements=["battle_id"]).returning(VOTES.c.battle_id)
    for name, insert in (("postgresql", postgresql_insert), ("sqlite", sqlite_insert))
}
MARK_VOTED = (
    update(BATTLES)
    .where(BATTLES.c.id.in_(bindparam("ids", expanding=True)))
    .values(status="voted", updated_at=bindparam("voted_at"))
)

# PostgreSQL: the accepted ballots' votes, their battles marked voted and the daily counters
# added to, in one statement (data-modifying CTEs see one snapshot and all run, referenced or
# not). Its text is the same for any batch (arrays, not a VALUES list), so it is prepared once.
WRITE_IN_ONE = text(
    """
    WITH new_votes AS (
        INSERT INTO votes (battle_id, choice, voter_hash, created_at)
        SELECT battle_id, choice, voter_hash, :voted_at
        FROM unnest(CAST(:ids AS text[]), CAST(:choices AS text[]), CAST(:voters AS text[]))
            AS ballot (battle_id, choice, voter_hash)
        ON CONFLICT (battle_id) DO NOTHING
        RETURNING battle_id
    ), marked AS (
        UPDATE battles SET status = 'voted', updated_at = :voted_at
        WHERE id IN (SELECT battle_id FROM new_votes)
    ), counted AS (
        INSERT INTO integrity_counters (key, day, count)
        SELECT key, :today, added FROM unnest(CAST(:keys AS text[]), CAST(:added AS integer[])) AS c (key, added)
        ON CONFLICT (key, day) DO UPDATE SET count = integrity_counters.count + excluded.count
        RETURNING key, count
    )
    SELECT (SELECT count(*) FROM new_votes), (SELECT json_object_agg(key, count) FROM counted)
    """
)


@dataclass(frozen=True)
class Ballot:
    battle_id: str
    choice: str
    voter: str  # the hash of the client's cookie, "" without one
    address: str  # the hash of the client's address


class _RetryAlone(Exception):
    """The batch cannot be written as one; its ballots are cast one by one."""


class _LimitCrossed(Exception):
    """The one-statement write crossed a daily limit; the batch is counted ballot by ballot."""


@dataclass
class _Read:
    """What the rules need of one battle."""

    status: str
    starter_hash: str
    model_a: str
    model_b: str
    flags: list[str]
    gates: dict[str, bool] = field(default_factory=dict)
    ready_at: datetime | None = None
    chars: int = 0  # both answers' length, for the reading time


class VoteWriter:
    """The replica's one writer of votes (see the module)."""

    def __init__(self, database: Database, pool: PoolConfig) -> None:
        self.database = database
        self.pool = pool
        self._batches = Batches(self._write, max_batch=MAX_BATCH, name="vote-writer")
        # the writer's own connection: no pool checkout and no ping a batch. After a lost
        # connection SQLAlchemy opens a new one on its next use (that batch is cast alone).
        self._connection: Connection | None = None

    async def cast(self, ballot: Ballot) -> Reveal:
        """The ballot's reveal once its vote is committed, or its refusal (ClientError)."""
        return await self._batches.submit(ballot)

    async def close(self) -> None:
        """Let the ballots already handed in be written (the lifespan's end)."""
        await self._batches.close()
        if self._connection is not None:
            self._connection.close()

    def _write(self, ballots: list[Ballot]) -> list[Reveal | Exception]:
        if self._connection is None:
            try:
                self._connection = self.database.engine.connect()
            except Exception:  # the database is away: the pool's path gives each ballot its error
                log.warning("the vote writer cannot connect to the database", exc_info=True)
        return write_batch(self.database, ballots, self.pool, self._connection)


def write_batch(
    database: Database, ballots: list[Ballot], pool: PoolConfig, held: Connection | None = None
) -> list[Reveal | Exception]:
    """The batch in one transaction (on the `held` connection, else one from the pool), else
    each ballot alone. Blocking: the writer's thread."""
    try:
        try:
            with _transaction(database, held) as connection:
                return write_ballots(connection, ballots, pool)
        except _LimitCrossed:
            with _transaction(database, held) as connection:
                return write_ballots(connection, ballots, pool, in_one_statement=False)
    except Exception as error:
        level = logging.INFO if isinstance(error, _RetryAlone) else logging.WARNING
        log.log(level, "%d vote(s) could not be written together (%s); casting each alone", len(ballots), error)
        return [_cast_alone(database, ballot, pool) for ballot in ballots]


@contextmanager
def _transaction(database: Database, held: Connection | None) -> Iterator[Connection]:
    if held is None:
        with database.engine.begin() as connection:
            yield connection
    else:
        with held.begin():
            yield held


def _cast_alone(database: Database, ballot: Ballot, pool: PoolConfig) -> Reveal | Exception:
    try:
        return database.transaction(
            cast_vote, ballot.battle_id, ballot.choice, ballot.voter, pool, address=ballot.address
        )
    except Exception as error:  # its own refusal or failure, for its own request
        return error


def write_ballots(
    connection: Connection, ballots: list[Ballot], pool: PoolConfig, *, in_one_statement: bool = True
) -> list[Reveal | Exception]:
    """The ballots' outcomes, in order, written in the connection's transaction: the rules of
    `votes.cast_vote`, applied to each ballot as if they had come one after another.

    On PostgreSQL, unless `in_one_statement` is off, the write is `WRITE_IN_ONE`; it raises
    `_LimitCrossed` (the transaction is then to be rolled back) when a daily limit refuses a
    ballot, which only counting ballot by ballot answers exactly."""
    dialect = connection.dialect.name
    battles = _read_battles(connection, sorted({b.battle_id for b in ballots}), lock=dialect == "postgresql")
    outcomes: list[Reveal | Exception] = []
    taken: set[str] = set()  # battles voted by an earlier ballot of this batch
    for ballot in ballots:
        refusal = vote_refusal(battles.get(ballot.battle_id), ballot.voter, taken=ballot.battle_id in taken)
        outcomes.append(refusal or _reveal(battles[ballot.battle_id], ballot.choice, pool))
        if refusal is None:
            taken.add(ballot.battle_id)
    voted_at = utcnow()
    if dialect == "postgresql" and in_one_statement:
        accepted = _accepted(ballots, outcomes)
        if accepted:
            _write_in_one(connection, accepted, voted_at, pool.integrity)
    else:
        _count_within_limits(connection, ballots, outcomes, pool.integrity)  # may refuse some
        accepted = _accepted(ballots, outcomes)
        if accepted:
            _insert_and_mark(connection, accepted, voted_at)
    if accepted:
        _flag_too_fast(connection, accepted, battles, voted_at, pool)
    return outcomes


def _insert_and_mark(connection: Connection, accepted: list[Ballot], voted_at: datetime) -> None:
    """Insert the accepted ballots' votes and mark their battles voted (counted already)."""
    rows = [
        {"battle_id": b.battle_id, "choice": b.choice, "voter_hash": b.voter, "created_at": voted_at} for b in accepted
    ]
    # many parameter sets of one statement: SQLAlchemy sends them as one multi-row insert
    stored = set(connection.execute(INSERT[connection.dialect.name], rows).scalars())
    if len(stored) != len(accepted):  # voted elsewhere between our read and our insert
        raise _RetryAlone("a battle of the batch was voted meanwhile")
    connection.execute(MARK_VOTED, {"ids": [b.battle_id for b in accepted], "voted_at": voted_at})


def _write_in_one(connection: Connection, accepted: list[Ballot], voted_at: datetime, config: IntegrityConfig) -> None:
    """`WRITE_IN_ONE` for the ballots the rules accepted (PostgreSQL)."""
    added = _limited_counts([integrity.vote_keys(b.voter, b.address) for b in accepted], _limits(config))
    keys = sorted(added)  # in key order, as integrity.add_counts: no deadlock between replicas
    stored, counts = connection.execute(
        WRITE_IN_ONE,
        {
            "ids": [b.battle_id for b in accepted],
            "choices": [b.choice for b in accepted],
            "voters": [b.voter for b in accepted],
            "voted_at": voted_at,
            "keys": keys,
            "added": [added[key][0] for key in keys],
            "today": voted_at.date(),
        },
    ).one()
    if stored != len(accepted):
        raise _RetryAlone("a battle of the batch was voted meanwhile")
    if any(counts[key] > limit for key, (_, limit) in added.items()):
        raise _LimitCrossed


def _accepted(ballots: list[Ballot], outcomes: list[Reveal | Exception]) -> list[Ballot]:
    return [ballot for ballot, outcome in zip(ballots, outcomes, strict=True) if isinstance(outcome, Reveal)]


def _read_battles(connection: Connection, ids: list[str], *, lock: bool) -> dict[str, _Read]:
    """The battles and their two answers in one query; on PostgreSQL their rows stay locked
    to the end of the transaction, so a vote on another replica waits and then sees `voted`."""
    rows = connection.execute(READ_LOCKED if lock else READ, {"ids": ids})
    found: dict[str, _Read] = {}
    for battle_id, status, starter, model_a, model_b, flags, side, gate, finished_at, chars in rows:
        read = found.setdefault(battle_id, _Read(status, starter or "", model_a, model_b, list(flags or [])))
        if side is None:
            continue
        read.gates[side] = bool(gate)
        read.chars += int(chars)
        if finished_at is not None and (read.ready_at is None or finished_at > read.ready_at):
            read.ready_at = finished_at
    return found


def _count_within_limits(
    connection: Connection, ballots: list[Ballot], outcomes: list[Reveal | Exception], config: IntegrityConfig
) -> None:
    """Count the ballots that passed the rules against the daily limits, as if one after
    another: one past a limit becomes a 429 and is not counted (as `cast_vote`'s rollback
    would undo it). One upsert adds them all, one update takes back the refused."""
    limits = _limits(config)
    keyed = [
        (i, integrity.vote_keys(ballot.voter, ballot.address))
        for i, ballot in enumerate(ballots)
        if isinstance(outcomes[i], Reveal)
    ]
    wanted = {key: n for key, (n, _) in _limited_counts([keys for _, keys in keyed], limits).items()}
    if not wanted:
        return
    after = integrity.add_counts(connection, wanted)
    counts = {key: after[key] - n for key, n in wanted.items()}  # before this batch
    for i, keys in keyed:
        over = [who for who, key in keys.items() if limits[who] and counts[key] + 1 > limits[who]]
        if over:
            outcomes[i] = integrity.vote_limit_refusal(limits[over[0]], over[0])
            continue
        for who, key in keys.items():
            if limits[who]:
                counts[key] += 1
    taken_back = {key: counts[key] for key in wanted if counts[key] != after[key]}
    if taken_back:
        integrity.set_counts(connection, taken_back)


def _limits(config: IntegrityConfig) -> dict[str, int]:
    """The daily vote limits by who they count (0: no limit)."""
    return {"voter": config.votes_per_day, "address": config.votes_per_address_per_day}


def _limited_counts(keyed: list[dict[str, str]], limits: dict[str, int]) -> dict[str, tuple[int, int]]:
    """Each limited daily counter of these ballots' counters (`integrity.vote_keys`): how many
    of them it counts, and its limit."""
    added: dict[str, tuple[int, int]] = {}
    for keys in keyed:
        for who, key in keys.items():
            if limits[who]:
                added[key] = (added.get(key, (0, 0))[0] + 1, limits[who])
    return added


def _flag_too_fast(
    connection: Connection, accepted: list[Ballot], battles: dict[str, _Read], voted_at: datetime, pool: PoolConfig
) -> None:
    """A vote sooner after `ready` than the reading time is kept, flagged `too_fast` (not rated),
    and counts as a risk signal for the voter's and the address's next challenges."""
    signals: dict[str, int] = {}
    for ballot in accepted:
        battle = battles[ballot.battle_id]
        if not integrity.read_too_fast(pool.integrity, battle.ready_at, voted_at, battle.chars):
            continue
        if integrity.TOO_FAST not in battle.flags:
            battle.flags = [*battle.flags, integrity.TOO_FAST]
            connection.execute(update(BATTLES).where(BATTLES.c.id == ballot.battle_id).values(flags=battle.flags))
        for key in (f"too_fast:voter:{ballot.voter}", f"too_fast:address:{ballot.address}"):
            signals[key[:100]] = signals.get(key[:100], 0) + 1
    if signals:
        integrity.add_counts(connection, signals)


def _reveal(battle: _Read, choice: str, pool: PoolConfig) -> Reveal:
    return Reveal.of(choice, battle.model_a, battle.model_b, battle.gates, pool)
