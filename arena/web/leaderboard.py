"""The leaderboard: `/leaderboard` (page) and `/api/leaderboard` (latest snapshot)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse

from arena.deps import AdminDep, SessionDep, TemplatesDep
from arena.ratings.snapshot import EMPTY_MESSAGE, Snapshot, describe, latest_snapshot

router = APIRouter()


@router.get("/api/leaderboard", summary="The latest leaderboard snapshot", response_model=Snapshot)
def leaderboard_api(session: SessionDep) -> JSONResponse:
    """The latest snapshot as JSON; `{"status": "empty", ...}` before the first one."""
    snapshot = latest_snapshot(session)
    if snapshot is None:
        return JSONResponse(empty_snapshot())
    # served as stored, less what only the admin reads; the stored JSON was checked against the model
    return JSONResponse({"status": "ok", **public(snapshot)})


ADMIN_ONLY = ("anonymity",)  # how recognisable each contender is: a map for an attacker


def public(snapshot: dict[str, Any]) -> dict[str, Any]:
    """The snapshot without what only the admin should read."""
    return {k: v for k, v in snapshot.items() if k not in ADMIN_ONLY}


@router.get("/api/admin/anonymity", summary="The latest anonymity audit (admin token)", dependencies=[AdminDep])
def anonymity_api(session: SessionDep) -> JSONResponse:
    """How well a text classifier identifies each contender, as the latest snapshot recorded it."""
    snapshot = latest_snapshot(session) or {}
    return JSONResponse({"computed_at": snapshot.get("computed_at"), "anonymity": snapshot.get("anonymity")})


@router.get("/leaderboard", response_class=HTMLResponse, include_in_schema=False)
def leaderboard_page(request: Request, session: SessionDep, templates: TemplatesDep) -> HTMLResponse:
    """Ratings with 95% intervals, the style toggle, charts and categories."""
    snapshot = latest_snapshot(session)
    page = LeaderboardPage.of(None if snapshot is None else public(snapshot))
    return templates.TemplateResponse(request, "leaderboard.html", {"page": page})


def empty_snapshot() -> dict[str, Any]:
    return Snapshot.empty().model_dump(
        include={
            "status",
            "message",
            "computed_at",
            "votes_used",
            "excluded",
            "leaderboard",
            "style",
            "categories",
        }
    )


@dataclass(frozen=True)
class LeaderboardPage:
    """Context of `leaderboard.html`."""

    snapshot: dict[str, Any] | None = field(metadata={"help": "The latest snapshot, None before the first"})
    empty_message: str = field(default=EMPTY_MESSAGE, metadata={"help": "Shown when there is no snapshot"})

    @classmethod
    def of(cls, snapshot: dict[str, Any] | None) -> LeaderboardPage:
        return cls(snapshot=snapshot)

    @property
    def rows(self) -> list[dict[str, Any]]:
        return list(self.snapshot.get("leaderboard", [])) if self.snapshot else []

    @property
    def settled_rows(self) -> list[dict[str, Any]]:
        """Rows with enough votes to be ranked with the rest."""
        return [r for r in self.rows if not r.get("provisional")]

    @property
    def provisional_rows(self) -> list[dict[str, Any]]:
        """Rows below the vote threshold, shown apart."""
        return [r for r in self.rows if r.get("provisional")]

    @property
    def provisional_votes(self) -> int | None:
        votes = (self.snapshot or {}).get("method", {}).get("provisional_votes")
        return None if votes is None else int(votes)

    @property
    def robustness_sentence(self) -> str | None:
        """How fragile #1 is, in words ("#1 would change if 14 votes were removed")."""
        return describe((self.snapshot or {}).get("robustness"))

    @property
    def robustness_pairs(self) -> list[dict[str, Any]]:
        return list(((self.snapshot or {}).get("robustness") or {}).get("pairs") or [])

    @property
    def excluded_total(self) -> int:
        return sum(self.snapshot.get("excluded", {}).values()) if self.snapshot else 0

    @property
    def gate_sentences(self) -> list[str]:
        """One sentence per base model whose GATE variant also played:
        "+gate adds 31 [12, 50] points to gpt-4o"."""
        uplift = (self.snapshot or {}).get("gate_uplift") or {}
        return [_uplift_sentence(base, entry) for base, entry in uplift.items()]

    @property
    def position_sentence(self) -> str | None:
        """What the left side is worth: "The left answer (A) gains 4 [-3, 11] points over the right one"."""
        position = (self.snapshot or {}).get("position")
        if not position:
            return None
        points, low, high = position["points"], position["ci_low"], position["ci_high"]
        if points >= 0:
            return f"The left answer (A) gains {points:.0f} [{low:.0f}, {high:.0f}] points over the right one (B)."
        return f"The left answer (A) loses {-points:.0f} [{-high:.0f}, {-low:.0f}] points against the right one (B)."

    @property
    def snapshot_json(self) -> str:
        """The snapshot for the page's script, safe inside <script type="application/json">."""
        text = json.dumps(self.snapshot or empty_snapshot(), ensure_ascii=False, separators=(",", ":"))
        return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _uplift_sentence(base: str, entry: dict[str, Any]) -> str:
    points, low, high = entry["points"], entry["ci_low"], entry["ci_high"]
    suffix = entry["contender"].removeprefix(base) or "+gate"
    if points >= 0:
        return f"{suffix} adds {points:.0f} [{low:.0f}, {high:.0f}] points to {base}."
    return f"{suffix} takes {-points:.0f} [{-high:.0f}, {-low:.0f}] points from {base}."
