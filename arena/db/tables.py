"""The arena's tables, in one place so Alembic's env.py imports one module.

Relationships load with `lazy="raise"`: an accidental lazy load in a request
fails loudly in tests instead of issuing hidden queries.
"""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    event,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from arena.db.vocabulary import BATTLE_STATUSES as BATTLE_STATUSES
from arena.db.vocabulary import LABEL_SOURCES as LABEL_SOURCES
from arena.db.vocabulary import RESPONSE_STATUSES as RESPONSE_STATUSES
from arena.db.vocabulary import SIDES as SIDES
from arena.db.vocabulary import VOTE_CHOICES as VOTE_CHOICES

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_battle_id() -> str:
    return uuid.uuid4().hex


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class Image(Base):
    """A normalised upload: metadata-free JPEG, stored by content hash."""

    __tablename__ = "images"

    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    width: Mapped[int] = mapped_column(Integer)
    height: Mapped[int] = mapped_column(Integer)
    size_bytes: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Battle(Base):
    """One image + prompt answered by two anonymous contenders."""

    __tablename__ = "battles"
    __table_args__ = (
        CheckConstraint(f"status IN {BATTLE_STATUSES}", name="status"),
        CheckConstraint("model_a <> model_b", name="distinct_contenders"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_battle_id)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)
    prompt: Mapped[str] = mapped_column(Text)
    image_sha256: Mapped[str] = mapped_column(ForeignKey("images.sha256"), index=True)
    model_a: Mapped[str] = mapped_column(String(100))
    model_b: Mapped[str] = mapped_column(String(100))
    status: Mapped[str] = mapped_column(String(16), default="pending")
    language: Mapped[str | None] = mapped_column(String(16))
    categories: Mapped[list[Any]] = mapped_column(default=list)
    flags: Mapped[list[Any]] = mapped_column(default=list)
    client_hash: Mapped[str] = mapped_column(String(64), default="")
    # HMAC of the IP address alone, for the per-address rate limit
    ip_hash: Mapped[str] = mapped_column(String(64), default="", server_default="", index=True)
    # probability the sampler gave this pair (either side order); None when unknown
    propensity: Mapped[float | None] = mapped_column(Float, default=None)
    # HMAC of the voter cookie that started it: only that client may vote on it
    starter_hash: Mapped[str] = mapped_column(String(64), default="", server_default="")
    # The gatekeeper was unsure of the prompt (it ran all the same); a re-check's answer, and who
    # gave it ("llm:<model>" or "reviewer"), when one has looked (gatekeeper/recheck.py)
    unsure: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    recheck: Mapped[str | None] = mapped_column(String(16), default=None)
    rechecked_by: Mapped[str | None] = mapped_column(String(100), default=None)

    responses: Mapped[list[Response]] = relationship(back_populates="battle", lazy="raise", order_by="Response.side")
    vote: Mapped[Vote | None] = relationship(back_populates="battle", lazy="raise")


class Response(Base):
    """One side's answer to a battle, persisted as soon as it finishes."""

    __tablename__ = "responses"
    __table_args__ = (
        UniqueConstraint("battle_id", "side"),
        CheckConstraint(f"side IN {SIDES}", name="side"),
        CheckConstraint(f"status IN {RESPONSE_STATUSES}", name="status"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    battle_id: Mapped[str] = mapped_column(ForeignKey("battles.id", ondelete="CASCADE"), index=True)
    side: Mapped[str] = mapped_column(String(1))
    contender: Mapped[str] = mapped_column(String(100))
    gate: Mapped[bool] = mapped_column(Boolean, default=False)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    text: Mapped[str] = mapped_column(Text, default="")
    error: Mapped[str | None] = mapped_column(Text)
    latency_ms: Mapped[int | None] = mapped_column(Integer)
    input_tokens: Mapped[int | None] = mapped_column(Integer)
    output_tokens: Mapped[int | None] = mapped_column(Integer)
    trajectory: Mapped[list[Any]] = mapped_column(default=list)
    # style counts of the final answer (arena.ratings.style), kept so the
    # rating job never re-parses answers and imported votes keep theirs
    style: Mapped[dict[str, Any] | None] = mapped_column()
    # the same counts summed into the style fit's features (`style_columns`), as
    # integers ranking reads without parsing JSON; NULL when `style` is
    style_tokens: Mapped[int | None] = mapped_column(Integer)
    style_list_items: Mapped[int | None] = mapped_column(Integer)
    style_headers: Mapped[int | None] = mapped_column(Integer)
    style_emphasis: Mapped[int | None] = mapped_column(Integer)
    style_gps: Mapped[int | None] = mapped_column(Integer)
    style_tool_calls: Mapped[int | None] = mapped_column(Integer)  # NULL too when not stored with the counts
    # where the answer commits to (arena.geo.commitment): lat, lon, level, place, country
    commitment: Mapped[dict[str, Any] | None] = mapped_column()
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    battle: Mapped[Battle] = relationship(back_populates="responses", lazy="raise")


# column -> the paths in `Response.style` it sums (a missing count is 0)
STYLE_SUMS: dict[str, tuple[tuple[str, ...], ...]] = {
    "style_tokens": (("tokens",),),
    "style_list_items": (("list_count", "ordered"), ("list_count", "unordered")),
    "style_headers": tuple(("header_count", f"h{i}") for i in range(1, 7)),
    "style_emphasis": (("bold_count", "**"), ("bold_count", "__"), ("italic_count", "*"), ("italic_count", "_")),
    "style_gps": (("gps_count",),),
}
STYLE_COLUMNS = (*STYLE_SUMS, "style_tool_calls")


def style_columns(style: Any) -> dict[str, int | None]:
    """The integer columns of a `Response.style` value: every writer of `style`
    writes them beside it (ORM writes get them from the event below)."""
    if style is None:
        return dict.fromkeys(STYLE_COLUMNS)
    out: dict[str, int | None] = {name: sum(_count(style, p) or 0 for p in paths) for name, paths in STYLE_SUMS.items()}
    out["style_tool_calls"] = _count(style, ("tool_calls",))
    return out


def _count(style: Any, path: tuple[str, ...]) -> int | None:
    value = style
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return None if value is None else int(value)


@event.listens_for(Response.style, "set")
def _set_style_columns(target: Response, value: Any, _old: Any, _initiator: Any) -> None:
    for name, count in style_columns(value).items():
        setattr(target, name, count)


class Vote(Base):
    """The human verdict; the unique battle_id makes it one vote per battle."""

    __tablename__ = "votes"
    __table_args__ = (CheckConstraint(f"choice IN {VOTE_CHOICES}", name="choice"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    battle_id: Mapped[str] = mapped_column(ForeignKey("battles.id", ondelete="CASCADE"), unique=True)
    choice: Mapped[str] = mapped_column(String(16))
    voter_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)

    battle: Mapped[Battle] = relationship(back_populates="vote", lazy="raise")


class BattleLabel(Base):
    """Where the uploader says the photo was taken, kept only with their consent.

    Private: never in the image, a contender request, a page or an export
    (those carry distances and country/continent only). Rounded to
    `precision_km`; deleted with the battle or by the admin."""

    __tablename__ = "battle_labels"
    __table_args__ = (CheckConstraint(f"source IN {LABEL_SOURCES}", name="source"),)

    battle_id: Mapped[str] = mapped_column(ForeignKey("battles.id", ondelete="CASCADE"), primary_key=True)
    lat: Mapped[float] = mapped_column(Float)
    lon: Mapped[float] = mapped_column(Float)
    precision_km: Mapped[float] = mapped_column(Float)
    source: Mapped[str] = mapped_column(String(8))
    country: Mapped[str] = mapped_column(String(2), default="")  # ISO alpha-2 of the point
    continent: Mapped[str] = mapped_column(String(2), default="")  # GeoNames continent code
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class VoteChange(Base):
    """A battle whose vote, battle row, answers or label changed: written by
    the database's own triggers (migration 0011), read by ranking's copy of
    the votes (`export.vote_copy`) to bring it up to date, trimmed after a week."""

    __tablename__ = "vote_changes"
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    battle_id: Mapped[str] = mapped_column(String(32))
    at: Mapped[float] = mapped_column(Float, index=True)  # epoch seconds, the database's clock
    txid: Mapped[int | None] = mapped_column(BigInteger, index=True)  # PostgreSQL's writing transaction


class DatabaseIdentity(Base):
    """One row: a token naming this database, so a copy of its votes kept on
    disk is never applied to another database at the same address."""

    __tablename__ = "database_identity"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token: Mapped[str] = mapped_column(String(32))


class LeaderboardSnapshot(Base):
    """One run of `arena rank`: the whole leaderboard as JSON."""

    __tablename__ = "leaderboard_snapshots"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    computed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    votes_used: Mapped[int] = mapped_column(Integer)
    payload: Mapped[dict[str, Any]] = mapped_column()


class GatekeeperRejection(Base):
    """A counter per rejection reason; rejected prompts themselves are not kept."""

    __tablename__ = "gatekeeper_rejections"

    reason: Mapped[str] = mapped_column(String(100), primary_key=True)
    count: Mapped[int] = mapped_column(Integer, default=0)


class UploadCount(Base):
    """Battle uploads one address attempted in one minute, refused ones included: the rate
    limit, counted in the database so every replica sees the same count."""

    __tablename__ = "upload_counts"

    ip_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    minute: Mapped[int] = mapped_column(Integer, primary_key=True)  # minutes since the epoch
    count: Mapped[int] = mapped_column(Integer, default=0)


class BattleEventRow(Base):
    """An event of a running battle, written by the replica running it so watchers on other
    replicas can follow (PostgreSQL: NOTIFY carries the battle id, the rows carry the events).
    Kept for a few minutes, then pruned: a finished battle replays from its responses."""

    __tablename__ = "battle_events"

    battle_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)  # 1, 2, ... in publication order
    name: Mapped[str] = mapped_column(String(16))
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)


class ContenderHealth(Base):
    """Outage state of a contender, shared by every replica: consecutive provider failures and,
    after `failure_threshold` of them, the end of its cool-down (epoch seconds)."""

    __tablename__ = "contender_health"

    contender: Mapped[str] = mapped_column(String(100), primary_key=True)
    failures: Mapped[int] = mapped_column(Integer, default=0)
    cooling_until: Mapped[float] = mapped_column(Float, default=0.0)


# -- evaluations: the benchmark, the model judge, expert re-votes ---------------

BENCH_STATUSES = ("done", "error")
JUDGE_CHOICES = VOTE_CHOICES


class BenchResult(Base):
    """One contender's run on one benchmark instance. Unique per (suite,
    instance, contender), which is what makes `arena bench` resumable; the
    instance hash notices when a dataset row was edited since the run."""

    __tablename__ = "bench_results"
    __table_args__ = (
        UniqueConstraint("suite", "instance_key", "contender"),
        CheckConstraint(f"status IN {BENCH_STATUSES}", name="status"),
        CheckConstraint("level IN (1, 2)", name="level"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    suite: Mapped[str] = mapped_column(String(200), index=True)
    instance_key: Mapped[str] = mapped_column(String(100))
    instance_hash: Mapped[str] = mapped_column(String(64))
    level: Mapped[int] = mapped_column(Integer)
    language: Mapped[str] = mapped_column(String(16))
    contender: Mapped[str] = mapped_column(String(100), index=True)
    gate: Mapped[bool] = mapped_column(Boolean, default=False)
    status: Mapped[str] = mapped_column(String(16))
    answer: Mapped[str] = mapped_column(Text, default="")
    error: Mapped[str | None] = mapped_column(Text)
    trajectory: Mapped[list[Any]] = mapped_column(default=list)
    tool_calls: Mapped[int] = mapped_column(Integer, default=0)
    turns: Mapped[int] = mapped_column(Integer, default=0)
    latency_ms: Mapped[int | None] = mapped_column(Integer)
    input_tokens: Mapped[int | None] = mapped_column(Integer)
    output_tokens: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class BenchGrade(Base):
    """A grader's verdict on one run: `offline` (normalised match) or
    `llm:<judge>`; milestones are the expert-solution steps the run reached."""

    __tablename__ = "bench_grades"
    __table_args__ = (UniqueConstraint("result_id", "grader"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    result_id: Mapped[int] = mapped_column(ForeignKey("bench_results.id", ondelete="CASCADE"), index=True)
    grader: Mapped[str] = mapped_column(String(120))
    correct: Mapped[bool] = mapped_column(Boolean)
    extracted_answer: Mapped[str] = mapped_column(Text, default="")
    reasoning: Mapped[str] = mapped_column(Text, default="")
    confidence: Mapped[int | None] = mapped_column(Integer)
    milestones: Mapped[list[Any] | None] = mapped_column()  # one bool per expert step, or None
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class JudgeVerdict(Base):
    """A model judge's vote on a voted battle, asked in both orders. `choice`
    is in the battle's own sides; `consistent` says both orders agreed."""

    __tablename__ = "judge_verdicts"
    __table_args__ = (
        UniqueConstraint("battle_id", "judge"),
        CheckConstraint(f"choice IN {JUDGE_CHOICES}", name="choice"),
        CheckConstraint(f"choice_ab IN {JUDGE_CHOICES}", name="choice_ab"),
        CheckConstraint(f"choice_ba IN {JUDGE_CHOICES}", name="choice_ba"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    battle_id: Mapped[str] = mapped_column(ForeignKey("battles.id", ondelete="CASCADE"), index=True)
    judge: Mapped[str] = mapped_column(String(120))
    choice_ab: Mapped[str] = mapped_column(String(16))  # shown as the battle was
    choice_ba: Mapped[str] = mapped_column(String(16))  # shown swapped, mapped back to the battle's sides
    choice: Mapped[str] = mapped_column(String(16))
    consistent: Mapped[bool] = mapped_column(Boolean)
    reasoning: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Reviewer(Base):
    """An expert who re-votes battles. Only a hash of the link's token is kept."""

    __tablename__ = "reviewers"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Review(Base):
    """An expert's re-vote of a battle, in the battle's own sides (the page may
    have shown them swapped); one per reviewer per battle."""

    __tablename__ = "reviews"
    __table_args__ = (
        UniqueConstraint("battle_id", "reviewer_id"),
        CheckConstraint(f"choice IN {VOTE_CHOICES}", name="choice"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    battle_id: Mapped[str] = mapped_column(ForeignKey("battles.id", ondelete="CASCADE"), index=True)
    reviewer_id: Mapped[int] = mapped_column(ForeignKey("reviewers.id", ondelete="CASCADE"), index=True)
    choice: Mapped[str] = mapped_column(String(16))
    swapped: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class IntegrityCounter(Base):
    """Per-day counts (votes, battles, too-fast votes) of one voter or address,
    incremented in SQL so every app replica sees the same number."""

    __tablename__ = "integrity_counters"

    key: Mapped[str] = mapped_column(String(100), primary_key=True)  # e.g. "votes:voter:<hmac>"
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    count: Mapped[int] = mapped_column(Integer, default=0)


class SpentChallenge(Base):
    """A proof-of-work challenge already used: each one starts one battle."""

    __tablename__ = "spent_challenges"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
