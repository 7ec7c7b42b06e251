"""Vote integrity, decided at vote time: daily limits, reading time, the challenge.

Everything a later request (on any replica) needs is in the database: the
per-day counters are incremented in SQL (`INSERT ... ON CONFLICT DO UPDATE`,
a row lock on PostgreSQL), so two app processes cannot both let the 201st
vote of one voter through; a spent challenge is a row, so it starts one
battle only. The rating job later reads the flags written here and excludes.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import math
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any
from typing import cast as cast_type

from sqlalchemy import Connection, Table, Text, bindparam, cast, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arena.config import IntegrityConfig
from arena.db.tables import Battle, IntegrityCounter, SpentChallenge, Vote
from arena.errors import ClientError

TOO_FAST = "too_fast"
OUTLIER = "outlier_voter"  # written by the rating job (arena.ratings.job)
# Risk raises the challenge by this many bits (each doubles the work).
RISK_BITS_MANY_BATTLES = 2
RISK_BITS_TOO_FAST = 3
RISK_BITS_OUTLIER = 6
# A person may click before reading now and then; a habit of it is a signal.
TOO_FAST_TOLERATED = 3


def address_key(ip: str) -> str:
    """What one "address" is for the limits: an IPv4 address, or an IPv6 /64
    (one household or phone gets a whole /64 and can rotate within it)."""
    try:
        parsed = ipaddress.ip_address(ip)
    except ValueError:
        return ip
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.IPv6Network((parsed, 64), strict=False))
    return str(parsed)


# -- per-day counters ------------------------------------------------------------


def bump(session: Session, key: str, today: date | None = None) -> int:
    """Add one to today's counter `key` and return the new count, atomically."""
    today = today or datetime.now(UTC).date()
    dialect = session.get_bind().dialect.name
    insert = pg_insert if dialect == "postgresql" else sqlite_insert
    row = insert(IntegrityCounter).values(key=key[:100], day=today, count=1)
    statement = row.on_conflict_do_update(
        index_elements=["key", "day"], set_={"count": IntegrityCounter.count + 1}
    ).returning(IntegrityCounter.count)
    return int(session.execute(statement).scalar_one())


def counted(session: Session, key: str, today: date | None = None) -> int:
    today = today or datetime.now(UTC).date()
    found = session.scalar(
        select(IntegrityCounter.count).where(IntegrityCounter.key == key[:100], IntegrityCounter.day == today)
    )
    return int(found or 0)


def count_vote(session: Session, config: IntegrityConfig, voter: str, address: str) -> None:
    """Count one vote against the voter's and the address's daily limits, or
    refuse it with 429 (the caller's rollback undoes the increment). Both
    counters move in one statement: one round trip per vote, not two."""
    limits = {"voter": config.votes_per_day, "address": config.votes_per_address_per_day}
    keys = vote_keys(voter, address)
    counts = bump_many(session, [key for who, key in keys.items() if limits[who]])
    for who, key in keys.items():
        if limits[who] and counts[key] > limits[who]:
            raise vote_limit_refusal(limits[who], who)


def vote_keys(voter: str, address: str) -> dict[str, str]:
    """The daily vote counters of a voter and an address, by who they count."""
    return {"voter": f"votes:voter:{voter}"[:100], "address": f"votes:address:{address}"[:100]}


def vote_limit_refusal(limit: int, who: str) -> ClientError:
    """The 429 of a vote past a daily limit (`who`: "voter" or "address")."""
    wait = seconds_to_midnight()
    whom = "from this browser" if who == "voter" else "from your network address"
    return ClientError(
        429,
        "vote_limit",
        f"You have cast {limit} votes today {whom}, the most one person can in a day; "
        f"voting opens again in {_hours(wait)}.",
        headers={"Retry-After": str(wait)},
    )


COUNTERS = cast_type(Table, IntegrityCounter.__table__)  # Core: rows, not objects


def _add_counts_statement(insert: Any) -> Any:
    rows = insert(COUNTERS)
    return rows.on_conflict_do_update(
        index_elements=["key", "day"], set_={"count": COUNTERS.c.count + rows.excluded.count}
    ).returning(COUNTERS.c.key, COUNTERS.c.count)


ADD_COUNTS = {"postgresql": _add_counts_statement(pg_insert), "sqlite": _add_counts_statement(sqlite_insert)}
SET_COUNT = (
    update(COUNTERS)
    .where(COUNTERS.c.key == bindparam("counter"), COUNTERS.c.day == bindparam("today"))
    .values(count=bindparam("new_count"))
)


def add_counts(connection: Connection, added: dict[str, int], today: date | None = None) -> dict[str, int]:
    """Add `added[key]` to today's counter `key`, all in one statement; their new counts.
    In key order, so two replicas adding to the same counters lock them in the same order."""
    today = today or datetime.now(UTC).date()
    # many parameter sets of one statement, sent as one multi-row upsert
    params = [{"key": k, "day": today, "count": added[k]} for k in sorted(added)]
    found = connection.execute(ADD_COUNTS[connection.dialect.name], params)
    return {key: int(count) for key, count in found}


def set_counts(connection: Connection, counts: dict[str, int], today: date | None = None) -> None:
    """Set today's counters (rows `add_counts` made or locked in this transaction)."""
    today = today or datetime.now(UTC).date()
    params = [{"counter": k, "today": today, "new_count": counts[k]} for k in sorted(counts)]
    connection.execute(SET_COUNT, params)


def bump_many(session: Session, keys: list[str], today: date | None = None) -> dict[str, int]:
    """`bump` for several counters in one statement; their new counts by key."""
    if not keys:
        return {}
    today = today or datetime.now(UTC).date()
    insert = pg_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
    rows = insert(IntegrityCounter).values([{"key": key[:100], "day": today, "count": 1} for key in keys])
    statement = rows.on_conflict_do_update(
        index_elements=["key", "day"], set_={"count": IntegrityCounter.count + 1}
    ).returning(IntegrityCounter.key, IntegrityCounter.count)
    return {key: int(count) for key, count in session.execute(statement)}


def seconds_to_midnight(now: datetime | None = None) -> int:
    now = now or datetime.now(UTC)
    tomorrow = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), UTC)
    return max(1, math.ceil((tomorrow - now).total_seconds()))


def _hours(seconds: int) -> str:
    if seconds < 3600:
        return f"{math.ceil(seconds / 60)} minutes"
    return f"about {round(seconds / 3600)} hours"


# -- reading time -------------------------------------------------------------------


def reading_seconds(config: IntegrityConfig, answer_a: str, answer_b: str) -> float:
    """The least time a person needs to read both answers before voting."""
    return reading_seconds_of(config, len(answer_a) + len(answer_b))


def reading_seconds_of(config: IntegrityConfig, chars: int) -> float:
    """`reading_seconds` of answers `chars` characters long in all."""
    return min(config.max_read_seconds, config.min_read_seconds + chars / config.read_chars_per_second)


def too_fast(
    config: IntegrityConfig, ready_at: datetime | None, voted_at: datetime, answer_a: str, answer_b: str
) -> bool:
    """A vote sooner after `ready` than the reading time: stored, flagged, not rated."""
    return read_too_fast(config, ready_at, voted_at, len(answer_a) + len(answer_b))


def read_too_fast(config: IntegrityConfig, ready_at: datetime | None, voted_at: datetime, chars: int) -> bool:
    """`too_fast` from the answers' length alone (`chars`, both answers)."""
    if ready_at is None:
        return False
    if ready_at.tzinfo is None:
        ready_at = ready_at.replace(tzinfo=UTC)
    return (voted_at - ready_at).total_seconds() < reading_seconds_of(config, chars)


# -- the proof-of-work challenge -------------------------------------------------------


@dataclass(frozen=True)
class Challenge:
    """Find `solution` such that sha256(f"{token}:{solution}") starts with `bits` zero bits."""

    token: str
    bits: int
    expires_at: int  # unix seconds


def challenge_bits(session: Session, config: IntegrityConfig, voter: str, address: str) -> int:
    """0 (no challenge) or how hard the next battle's challenge is for this client."""
    if config.challenge == "off":
        return 0
    risk = 0
    battles = max(counted(session, f"battles:voter:{voter}"), counted(session, f"battles:address:{address}"))
    if battles >= config.risk_battles_per_day:
        risk += RISK_BITS_MANY_BATTLES * (1 + int(math.log2(battles / config.risk_battles_per_day)))
    fast = max(counted(session, f"too_fast:voter:{voter}"), counted(session, f"too_fast:address:{address}"))
    if fast >= TOO_FAST_TOLERATED:
        risk += RISK_BITS_TOO_FAST * min(3, fast - TOO_FAST_TOLERATED + 1)
    if voter and _flagged_outlier(session, voter):
        risk += RISK_BITS_OUTLIER
    if config.challenge == "risk" and risk == 0:
        return 0
    return min(28, config.challenge_bits + risk)


def issue(secret: str, subject: str, bits: int, ttl: int, now: float | None = None) -> Challenge:
    """A signed challenge bound to `subject` (the client's voter id hash)."""
    expires = int((now or time.time()) + ttl)
    nonce = secrets.token_hex(12)
    body = f"{nonce}.{bits}.{expires}"
    return Challenge(f"{body}.{_sign(secret, body, subject)}", bits, expires)


def redeem(
    session: Session, secret: str, subject: str, token: str, solution: str, needed_bits: int, now: float | None = None
) -> None:
    """Check a solved challenge and spend it, or refuse the battle (4xx)."""
    try:
        nonce, bits_text, expires_text, signature = token.split(".")
        bits, expires = int(bits_text), int(expires_text)
    except ValueError:
        raise _missing() from None
    body = f"{nonce}.{bits_text}.{expires_text}"
    if not hmac.compare_digest(signature, _sign(secret, body, subject)):
        raise ClientError(
            403, "challenge_invalid", "This challenge was not issued to this browser; reload the page and try again."
        )
    if expires < (now or time.time()):
        raise ClientError(403, "challenge_expired", "The challenge expired; reload the page and try again.")
    if bits < needed_bits:
        raise ClientError(403, "challenge_too_easy", "A harder challenge is needed now; reload the page and try again.")
    if leading_zero_bits(hashlib.sha256(f"{token}:{solution}".encode()).digest()) < bits:
        raise ClientError(403, "challenge_unsolved", "The challenge's answer is wrong; reload the page and try again.")
    token_hash = hashlib.sha256(token.encode()).hexdigest()
    try:
        with session.begin_nested():
            session.add(SpentChallenge(token_hash=token_hash, expires_at=datetime.fromtimestamp(expires, UTC)))
    except IntegrityError:
        raise ClientError(
            403, "challenge_spent", "This challenge was already used; reload the page and try again."
        ) from None


def forget_expired(session: Session) -> None:
    """Spent challenges only matter until they expire."""
    session.query(SpentChallenge).filter(SpentChallenge.expires_at < func.now()).delete(synchronize_session=False)


def leading_zero_bits(digest: bytes) -> int:
    bits = 0
    for byte in digest:
        if byte == 0:
            bits += 8
            continue
        return bits + 8 - byte.bit_length()
    return bits


def _missing() -> ClientError:
    return ClientError(
        428,
        "challenge_required",
        "This browser must solve a short challenge before starting a battle; the arena page "
        "does it by itself, so reload it and try again.",
    )


def missing_challenge() -> ClientError:
    return _missing()


def _sign(secret: str, body: str, subject: str) -> str:
    return hmac.new(secret.encode(), f"challenge|{body}|{subject}".encode(), hashlib.sha256).hexdigest()[:32]


def _flagged_outlier(session: Session, voter: str) -> bool:
    query = (
        select(Vote.id)
        .join(Battle, Vote.battle_id == Battle.id)
        .where(Vote.voter_hash == voter, cast(Battle.flags, Text).contains(f'"{OUTLIER}"'))
        .limit(1)
    )
    return session.scalar(query) is not None
