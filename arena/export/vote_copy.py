"""Ranking's copy of the votes: what `arena rank` reads, kept on disk and brought up to date.

Reading every vote from the database costs several times what reading an
export file does (one join of four tables: 5-16 s at a million votes, see
the README), and the rating job runs again whenever votes arrive. So the
columns `vote_table.read_vote_table` gives are kept as an Arrow IPC file
under the data directory (`rank/votes-<token>.arrow`); a rank maps it and
reads again only the battles that changed since it was written. The database
names them itself: its triggers (migration 0011) log a battle in
`vote_changes` on every write of its vote, its row, its answers or its label.

A refresh reads in one snapshot of the database:

1. where the log stands: on SQLite its last id (one writer at a time, so
   every smaller id is committed); on PostgreSQL the oldest transaction still
   running, since there a smaller id can commit later, but every change not
   yet visible was written by a transaction at least that old;
2. the battles logged since the copy's position, and their votes afresh;
3. the copy without those battles, plus what was read, in vote id order;
4. a check against the votes table (how many, the highest id, the sum of the
   ids): a difference means a change the log never saw (a restored backup, a
   TRUNCATE), and every vote is read again.

The copy is written again (beside the old one, then swapped in) after a full
read or once `REWRITE_AT` battles changed since it was written; until then
each rank reads those battles again, which costs less than rewriting
hundreds of megabytes every half minute.

A copy is used only for the database whose token it names, only when it was
brought up to date within `USABLE` (the log keeps `KEPT`), and only when its
columns are the ones this code writes (`VERSION`). Anything else about it
(missing, unreadable, another version) means one full read, as without it.
"""

from __future__ import annotations

import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import Engine, delete, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arena.db.tables import DatabaseIdentity, VoteChange
from arena.export.columnar import RANK_SCHEMA, complete_rank_table
from arena.export.vote_table import COUNTS, DatabaseVotes, FeatureCounts, read_vote_table

log = logging.getLogger(__name__)

# bump when what a row of the copy holds changes (a column, a count's meaning, a label's truth)
VERSION = "2"
KEPT = 7 * 86400.0  # seconds the change log keeps a change
USABLE = 6 * 86400.0  # a copy older than this is read again whole (a day's margin on the log)
# past FEW + MANY x the copy's votes changed battles (a bulk import, say), one full read is
# quicker than reading them row by row (tens of microseconds a battle against a few a vote)
FEW, MANY = 1000, 0.1
# the copy is written again once this many battles changed since it was (or after a full read):
# reading them row by row costs ~0.2 s, and rewriting a copy of 1.67M votes means ~470 MB on disk
REWRITE_AT = 5000


@dataclass(frozen=True)
class Refresh:
    """What a read did: `full` when every vote was read, else how many battles were read again."""

    full: bool
    battles: int


def read_votes(engine: Engine, folder: Path, cache: FeatureCounts | None = None) -> tuple[DatabaseVotes, Refresh]:
    """Every vote, as `read_vote_table` gives it, through the copy in `folder`."""
    token = _identity(engine)
    path = folder / f"votes-{token}.arrow"
    with Session(engine) as session:
        _begin_snapshot(session)
        position, now = _position(session)
        found = _brought_up_to_date(session, _load(path, token, now), cache)
        votes, refresh = found or (read_vote_table(session, cache), Refresh(full=True, battles=0))
        session.rollback()  # the snapshot ends; nothing was written
    if refresh.full or refresh.battles >= REWRITE_AT:
        _store(path, token, votes, position, now)
    _trim(engine, now)
    return votes, refresh


def _brought_up_to_date(
    session: Session, copy: tuple[int, DatabaseVotes] | None, cache: FeatureCounts | None
) -> tuple[DatabaseVotes, Refresh] | None:
    """The copy with the battles changed since read again, or None when every vote must be read."""
    if copy is None:
        return None
    since, votes = copy
    changed = _changed_since(session, since)
    if len(changed) > FEW + MANY * len(votes.vote_id):
        return None
    if changed:
        votes = _merged(votes, changed, read_vote_table(session, cache, battles=changed))
    if not _agrees(session, votes.vote_id):
        log.warning("ranking's copy of the votes disagrees with the database: reading every vote")
        return None
    return votes, Refresh(full=False, battles=len(changed))


def _identity(engine: Engine) -> str:
    """The database's token; a new one if the row is gone (the tables were emptied: another database, for a copy)."""
    from uuid import uuid4

    query = select(DatabaseIdentity.token).where(DatabaseIdentity.id == 1)
    with Session(engine) as session:
        token = session.scalar(query)
        if token is None:
            try:
                session.add(DatabaseIdentity(id=1, token=uuid4().hex))
                session.commit()
            except IntegrityError:  # another ranker gave it one first
                session.rollback()
            token = session.scalar(query)
    assert token is not None
    return token


def _begin_snapshot(session: Session) -> None:
    """Every later statement of the session's transaction sees the database as it was now."""
    if session.get_bind().dialect.name == "postgresql":
        session.connection(execution_options={"isolation_level": "REPEATABLE READ", "postgresql_readonly": True})
    else:  # sqlite3 opens no transaction for a read; in WAL mode an open one holds its snapshot
        session.connection().exec_driver_sql("BEGIN")


def _position(session: Session) -> tuple[int, float]:
    """(where the change log stands, the database's clock in epoch seconds), as of the snapshot."""
    if session.get_bind().dialect.name == "postgresql":
        query = "SELECT (pg_snapshot_xmin(pg_current_snapshot())::text)::bigint, extract(epoch from now())"
    else:
        query = "SELECT COALESCE(max(id), 0), (julianday('now') - 2440587.5) * 86400.0 FROM vote_changes"
    position, now = session.execute(text(query)).one()
    return int(position), float(now)


def _changed_since(session: Session, position: int) -> list[str]:
    """The battles the log names after `position` (on PostgreSQL some seen before may come again)."""
    if session.get_bind().dialect.name == "postgresql":
        after = VoteChange.txid >= position
    else:
        after = VoteChange.id > position
    return sorted(session.scalars(select(VoteChange.battle_id).where(after).distinct()))


def _agrees(session: Session, vote_id: pa.Array) -> bool:
    """Whether the copy holds the votes table's ids: how many, the highest, their sum."""
    count, top, total = session.execute(text("SELECT count(*), max(id), sum(id) FROM votes")).one()
    ids = vote_id.to_numpy(zero_copy_only=False)
    if ids.size == 0:
        return bool(count == 0)
    return bool((count, top, total) == (ids.size, int(ids.max()), int(ids.sum(dtype=np.int64))))


# -- the file ------------------------------------------------------------------

# RANK_SCHEMA but conv_metadata, always null from a database (26 integer columns: 350 MB at 1.67M votes)
KEPT_COLUMNS = [f for f in RANK_SCHEMA if f.name != "conv_metadata"]
COPY_SCHEMA = pa.schema(
    [
        *KEPT_COLUMNS,
        pa.field("vote_id", pa.int64()),
        pa.field("battle_id", pa.string()),
        pa.field("address", pa.string()),
        *(pa.field(f"{name}_{side}", pa.int64()) for side in "ab" for name in COUNTS),
    ]
)


def _store(path: Path, token: str, votes: DatabaseVotes, position: int, now: float) -> None:
    """Write the copy beside its old self and swap it in, so a reader never sees half of one."""
    columns = [*(votes.table.column(f.name) for f in KEPT_COLUMNS), votes.vote_id, votes.battle_id, votes.address]
    columns += [pa.array(values) for side in "ab" for values in votes.counts[side]]
    meta = {"version": VERSION, "token": token, "position": str(position), "refreshed_at": repr(now)}
    table = pa.Table.from_arrays(columns, schema=COPY_SCHEMA.with_metadata(meta))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, part = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".part")
        with os.fdopen(handle, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        os.replace(part, path)
    except OSError as exc:  # a read-only data directory: rank without a copy
        log.warning("cannot keep the copy of the votes at %s: %s", path, exc)


def _load(path: Path, token: str, now: float) -> tuple[int, DatabaseVotes] | None:
    """(position, votes) of the copy at `path`, or None when it cannot be used."""
    try:
        table = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
    except (OSError, pa.ArrowException):
        return None
    meta = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
    if (
        not table.schema.equals(COPY_SCHEMA)
        or meta.get("version") != VERSION
        or meta.get("token") != token
        or not now - USABLE < float(meta.get("refreshed_at", "-inf")) <= now
    ):
        return None
    counts = {side: [table.column(f"{name}_{side}").to_numpy() for name in COUNTS] for side in "ab"}
    rank = complete_rank_table(table.select([f.name for f in KEPT_COLUMNS]))
    ids = (table.column(name).combine_chunks() for name in ("vote_id", "battle_id", "address"))
    votes = DatabaseVotes(rank, counts, *ids)
    return int(meta["position"]), votes


def _merged(copy: DatabaseVotes, changed: list[str], fresh: DatabaseVotes) -> DatabaseVotes:
    """The copy's votes of battles not in `changed`, and `fresh` (those battles' votes now), by vote id."""
    keep = pc.invert(pc.is_in(copy.battle_id, value_set=pa.array(changed, pa.string())))
    # without conv_metadata (all null) until the end: a take would write out its 26 columns
    kept = [f.name for f in KEPT_COLUMNS]
    table = pa.concat_tables([copy.table.select(kept).filter(keep), fresh.table.select(kept)])
    vote_id = pa.concat_arrays([copy.vote_id.filter(keep), fresh.vote_id])
    battle_id = pa.concat_arrays([copy.battle_id.filter(keep), fresh.battle_id])
    address = pa.concat_arrays([copy.address.filter(keep), fresh.address])
    mask = keep.to_numpy(zero_copy_only=False)
    counts = {
        side: [np.concatenate([old[mask], new]) for old, new in zip(copy.counts[side], fresh.counts[side], strict=True)]
        for side in "ab"
    }
    ids = vote_id.to_numpy()
    if ids.size > 1 and not bool((ids[1:] > ids[:-1]).all()):  # a battle read again holds an older vote
        order = np.argsort(ids, kind="stable")
        table, vote_id, battle_id, address = (x.take(order) for x in (table, vote_id, battle_id, address))
        counts = {side: [values[order] for values in counts[side]] for side in "ab"}
    return DatabaseVotes(complete_rank_table(table), counts, vote_id, battle_id, address)


def _trim(engine: Engine, now: float) -> None:
    """Forget changes older than `KEPT`: no usable copy is that old."""
    with Session(engine) as session, session.begin():
        session.execute(delete(VoteChange).where(VoteChange.at < now - KEPT))
