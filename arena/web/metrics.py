"""`/metrics` in Prometheus' text format (the official `prometheus_client`).

The counters live in this process's default registry, as Prometheus expects
of one process: a scrape of a replica reads that replica. `ARENA_METRICS`
chooses who may read them: `admin` (default: `Authorization: Bearer
$ARENA_ADMIN_TOKEN`), `public`, or `off` (404).
"""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, Histogram, generate_latest

from arena.deps import BattleRunsDep, SessionDep, SettingsDep, require_admin
from arena.errors import ClientError
from arena.ratings.snapshot import latest_computed_at

router = APIRouter(tags=["probes"])

BATTLES_STARTED = Counter(
    "arena_battles_started",
    "Battles started, per contender drawn into them",
    ["contender"],
)
SIDES_FINISHED = Counter(
    "arena_battle_sides_finished",
    "Contender answers that finished (outcome done) or failed",
    ["contender", "outcome"],
)
VOTES = Counter("arena_votes", "Votes stored, by choice", ["choice"])
GATEKEEPER_REFUSALS = Counter(
    "arena_gatekeeper_refusals",
    "Prompts the gatekeeper refused as not geographic",
    ["classifier"],
)


BATTLES_FINISHED = Counter(
    "arena_battles_finished",
    "Battles this replica ran to their end, per contender in them: ready (both answers), failed, abandoned",
    ["contender", "outcome"],
)
EVENT_STREAMS = Gauge("arena_event_streams_open", "Battle event streams (SSE) open on this replica")
BATTLES_RUNNING = Gauge("arena_battles_running", "Battles this replica is running now")
CONTENDER_LATENCY = Histogram(
    "arena_contender_latency_seconds",
    "Time from asking a contender to its whole answer",
    ["contender"],
    buckets=(0.5, 1, 2, 5, 10, 20, 30, 60, 90, 120, 180, 300),
)
CONTENDER_FIRST_TOKEN = Histogram(
    "arena_contender_first_token_seconds",
    "Time from asking a contender to the first text of its answer",
    ["contender"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60),
)
REFUSALS = Counter(
    "arena_refusals",
    "Requests refused by a rate limit, an integrity check or a full replica, by the refusal's code",
    ["code"],
)
SNAPSHOT_AGE = Gauge(
    "arena_snapshot_age_seconds", "Age of the newest leaderboard snapshot (NaN: none yet), read at each scrape"
)
# The refusals REFUSALS counts: limits, integrity checks and load, not ordinary bad input.
REFUSAL_CODES = frozenset(
    {
        "rate_limited",
        "vote_limit",
        "not_your_battle",
        "already_voted",
        "cross_site",
        "challenge_required",
        "challenge_invalid",
        "challenge_expired",
        "challenge_too_easy",
        "challenge_unsolved",
        "challenge_spent",
        "arena_full",
        "shutting_down",
    }
)


def refused(code: str) -> None:
    """Count a refusal, when it is one of REFUSAL_CODES."""
    if code in REFUSAL_CODES:
        REFUSALS.labels(code=code).inc()


def battle_ended(contender: str, outcome: str) -> None:
    """A `BattleHooks.on_battle_end` hook."""
    BATTLES_FINISHED.labels(contender=contender, outcome=outcome).inc()


def side_timing(contender: str, first_text: float | None, latency: float) -> None:
    """A `BattleHooks.on_side_timing` hook."""
    CONTENDER_LATENCY.labels(contender=contender).observe(latency)
    if first_text is not None:
        CONTENDER_FIRST_TOKEN.labels(contender=contender).observe(first_text)


def side_finished(contender: str, ok: bool) -> None:
    """A `BattleHooks.on_side_result` hook."""
    SIDES_FINISHED.labels(contender=contender, outcome="done" if ok else "failed").inc()


@router.get("/metrics", summary="Prometheus metrics (admin token unless ARENA_METRICS=public)")
def metrics(request: Request, settings: SettingsDep, session: SessionDep, runs: BattleRunsDep) -> Response:
    if settings.metrics == "off":
        raise ClientError(404, "not_found", "Metrics are switched off on this server (ARENA_METRICS=off).")
    if settings.metrics == "admin":
        require_admin(request, settings)
    computed = latest_computed_at(session)
    SNAPSHOT_AGE.set((datetime.now(UTC) - computed).total_seconds() if computed else float("nan"))
    BATTLES_RUNNING.set(runs.running)
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST, headers={"Cache-Control": "no-store"})
