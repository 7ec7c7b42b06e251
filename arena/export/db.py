"""Votes out of and into the database.

`iter_voted_battles` pages through votes by id (keyset pagination: the same
plain queries on SQLite and PostgreSQL, one page in memory at a time); the
exporter and the ratings job both read votes through it. `import_rows`
writes rows the reader has already validated, in short transactions of one batch each.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session

from arena.answers.style import style_features
from arena.db.tables import Battle, BattleLabel, Image, Response, Vote, style_columns
from arena.export.contract import CleanBattleRow
from arena.export.format import WINNERS, ExportVote, Truth, row_flags, side_counts, stored_steps, to_row
from arena.geo.cells import CELL_KM, cell_center
from arena.geo.commitment import Commitment
from arena.geo.reverse import continent_name

PAGE = 1000
# FastChat rows have no image: they point at this placeholder (sha256 of no bytes).
NO_IMAGE_SHA256 = hashlib.sha256(b"").hexdigest()


@dataclass(frozen=True)
class Side:
    """One side's answer, as the rating job and the export need it."""

    id: int
    contender: str
    gate: bool
    status: str
    text: str
    style: dict[str, Any] | None = None  # stored counts; None: count them from `text`
    commitment: dict[str, Any] | None = None  # where the answer commits to (arena.geo.commitment)
    tool_calls: int = 0  # steps of its trajectory (imported answers have none stored)
    steps: list[Any] | None = None  # the trajectory itself, read only for an export that asks

    def counts(self) -> dict[str, Any]:
        """Style counts of the answer with the tool calls behind it: as stored
        (the runner and the importer store both), else counted here."""
        counts = self.style if self.style is not None else style_features(self.text)
        return counts if "tool_calls" in counts else {**counts, "tool_calls": self.tool_calls}


@dataclass(frozen=True)
class VotedBattle:
    """A vote with its battle and both answers (plain values, not ORM objects:
    reading a million of them as entities would cost several times more)."""

    vote_id: int
    choice: str
    voter_hash: str
    voted_at: datetime
    battle_id: str
    prompt: str
    image_sha256: str
    model_a: str
    model_b: str
    status: str
    language: str | None
    categories: list[Any]
    flags: list[Any]
    side_a: Side | None
    side_b: Side | None
    label: LabelPoint | None = None  # private: only distances and country/continent leave the server
    propensity: float | None = None

    @property
    def sides_done(self) -> bool:
        return all(r is not None and r.status == "done" for r in (self.side_a, self.side_b))


@dataclass(frozen=True)
class LabelPoint:
    lat: float
    lon: float
    precision_km: float
    country: str
    continent: str  # GeoNames code


VOTE_COLUMNS = (
    Vote.id,
    Vote.choice,
    Vote.voter_hash,
    Vote.created_at,
    Battle.id,
    Battle.prompt,
    Battle.image_sha256,
    Battle.model_a,
    Battle.model_b,
    Battle.status,
    Battle.language,
    Battle.categories,
    Battle.flags,
    Battle.propensity,
)
SIDE_COLUMNS = (
    Response.battle_id,
    Response.side,
    Response.id,
    Response.contender,
    Response.gate,
    Response.status,
    Response.text,
    Response.style,
    Response.commitment,
    # counted by the database: the steps themselves (observations and all) stay there
    func.coalesce(func.json_array_length(Response.trajectory), 0),
)
LABEL_COLUMNS = (
    BattleLabel.battle_id,
    BattleLabel.lat,
    BattleLabel.lon,
    BattleLabel.precision_km,
    BattleLabel.country,
    BattleLabel.continent,
)


def iter_voted_battles(
    session: Session, *, since: datetime | None = None, page: int = PAGE, trajectories: bool = False
) -> Iterator[VotedBattle]:
    """Every vote with its battle and both responses, oldest vote id first;
    with `trajectories`, each response's tool steps too."""
    last_id = 0
    while True:
        query = select(*VOTE_COLUMNS).join(Battle, Vote.battle_id == Battle.id).where(Vote.id > last_id)
        if since is not None:
            query = query.where(Vote.created_at >= since)
        rows = session.execute(query.order_by(Vote.id).limit(page)).all()
        if not rows:
            return
        ids = [row[4] for row in rows]
        sides = {
            (battle_id, side): Side(rid, contender, bool(gate), status, text or "", style, commitment, tools)
            for battle_id, side, rid, contender, gate, status, text, style, commitment, tools in session.execute(
                select(*SIDE_COLUMNS).where(Response.battle_id.in_(ids))
            )
        }
        if trajectories:
            steps = select(Response.battle_id, Response.side, Response.trajectory).where(Response.battle_id.in_(ids))
            for battle_id, side, trajectory in session.execute(steps):
                if (battle_id, side) in sides:
                    sides[battle_id, side] = replace(sides[battle_id, side], steps=list(trajectory or []))
        labels = {
            battle_id: LabelPoint(lat, lon, precision, country, continent)
            for battle_id, lat, lon, precision, country, continent in session.execute(
                select(*LABEL_COLUMNS).where(BattleLabel.battle_id.in_(ids))
            )
        }
        for vote_id, choice, voter, created, battle_id, prompt, sha, a, b, status, language, cats, flags, p in rows:
            yield VotedBattle(
                vote_id,
                choice,
                voter,
                _aware(created),
                battle_id,
                prompt,
                sha,
                a,
                b,
                status,
                language,
                list(cats or []),
                list(flags or []),
                sides.get((battle_id, "a")),
                sides.get((battle_id, "b")),
                labels.get(battle_id),
                p,
            )
        last_id = rows[-1][0]


def export_rows(
    session: Session, *, since: datetime | None = None, answers: bool = False, trajectories: bool = False
) -> Iterator[CleanBattleRow]:
    """clean_battle rows for every vote (flagged ones too: `flags` says why)."""
    for item in iter_voted_battles(session, since=since, trajectories=trajectories):
        yield to_row(export_vote(item, answers=answers, trajectories=trajectories))


def export_vote(item: VotedBattle, *, answers: bool = False, trajectories: bool = False) -> ExportVote:
    text_a = item.side_a.text if item.side_a else ""
    text_b = item.side_b.text if item.side_b else ""
    return ExportVote(
        battle_id=item.battle_id,
        model_a=item.model_a,
        model_b=item.model_b,
        choice=item.choice,
        voter_hash=item.voter_hash,
        voted_at=item.voted_at,
        prompt=item.prompt,
        image_sha256=item.image_sha256,
        language=item.language,
        categories=item.categories,
        flags=item.flags,
        gate_a=item.side_a.gate if item.side_a else False,
        gate_b=item.side_b.gate if item.side_b else False,
        battle_status=item.status,
        sides_done=item.sides_done,
        counts_a=item.side_a.counts() if item.side_a else style_features(""),
        counts_b=item.side_b.counts() if item.side_b else style_features(""),
        answer_a=text_a if answers else None,
        answer_b=text_b if answers else None,
        truth=battle_truth(item),
        propensity=item.propensity,
        trajectory_a=_steps(item.side_a) if trajectories else None,
        trajectory_b=_steps(item.side_b) if trajectories else None,
    )


def _steps(side: Side | None) -> list[Any]:
    return list(side.steps or []) if side is not None else []


def battle_truth(item: VotedBattle) -> Truth:
    """What an export may say about a vote's label and answers (`label_truth`)."""
    return label_truth(
        item.side_a.commitment if item.side_a else None,
        item.side_b.commitment if item.side_b else None,
        item.label,
    )


def label_truth(
    commitment_a: dict[str, Any] | None, commitment_b: dict[str, Any] | None, label: LabelPoint | None
) -> Truth:
    """What may leave the server of a label: each answer's distance from the centre of the
    label's public cell (`arena.geo.cells`), in whole km, and the label's country and
    continent. Every distance that leaves (exports, the rank job's snapshot) is measured
    here, so none says more about the label than which cell it is in; the label's
    coordinates stay here. The precision given is the cell's, or the label's if coarser."""
    commit_a = Commitment.from_json(commitment_a)
    commit_b = Commitment.from_json(commitment_b)
    country_a = commit_a.country_code if commit_a else None
    country_b = commit_b.country_code if commit_b else None
    if label is None:
        return Truth(None, None, None, None, country_a, country_b)
    lat, lon = cell_center(label.lat, label.lon)
    step = max(label.precision_km, 1.0)

    def error(commit: Commitment | None) -> float | None:
        if commit is None:
            return None
        return round(round(commit.error_km(lat, lon) / step) * step, 1)

    return Truth(
        error(commit_a),
        error(commit_b),
        label.country or None,
        continent_name(label.continent) or None,
        country_a,
        country_b,
        max(label.precision_km, CELL_KM),
    )


@dataclass
class ImportResult:
    imported: int = 0
    already_present: int = 0


def import_rows(
    session: Session,
    rows: Iterable[dict[str, Any]],
    *,
    batch: int = PAGE,
    after_batch: Callable[[], None] | None = None,
) -> ImportResult:
    """Insert validated clean_battle rows as voted battles, `batch` at a time; a row whose
    battle id is already stored is skipped, so an interrupted import can simply be rerun.

    `after_batch` (the command passes `session.commit`) ends each batch's transaction: a
    running arena on the same SQLite file waits for one batch, not for the whole import.
    Without it the caller commits or rolls back everything at once."""
    result = ImportResult()
    seen_images: set[str] = set()
    pending: list[dict[str, Any]] = []
    for row in rows:
        pending.append(row)
        if len(pending) >= batch:
            _insert(session, pending, seen_images, result)
            pending = []
            if after_batch is not None:
                after_batch()
    if pending:
        _insert(session, pending, seen_images, result)
    if after_batch is not None:
        after_batch()
    return result


def count_votes(session: Session) -> tuple[int, int]:
    """(number of votes, highest vote id): changes whenever a vote arrives."""
    count, top = session.execute(select(func.count(Vote.id), func.max(Vote.id))).one()
    return int(count or 0), int(top or 0)


def _insert(session: Session, rows: list[dict[str, Any]], seen_images: set[str], result: ImportResult) -> None:
    ids: dict[str, dict[str, Any]] = {}
    for row in rows:
        battle_id = _battle_id(row)
        if battle_id in ids:
            result.already_present += 1  # the same battle twice in one file
        else:
            ids[battle_id] = row
    existing = set(session.scalars(select(Battle.id).where(Battle.id.in_(list(ids)))))
    shas = {r.get("image_sha256") or NO_IMAGE_SHA256 for r in rows} - seen_images
    if shas:
        stored = set(session.scalars(select(Image.sha256).where(Image.sha256.in_(list(shas)))))
        missing = sorted(shas - stored)
        if missing:
            # the export carries the image's hash, not its pixels: placeholder rows
            session.execute(
                insert(Image), [{"sha256": sha, "width": 0, "height": 0, "size_bytes": 0} for sha in missing]
            )
        seen_images.update(shas)
    battles: list[dict[str, Any]] = []
    sides: list[dict[str, Any]] = []
    votes: list[dict[str, Any]] = []
    for battle_id, row in ids.items():
        if battle_id in existing:
            result.already_present += 1
            continue
        voted_at = datetime.fromtimestamp(float(row.get("tstamp") or 0.0), UTC)
        battles.append(
            {
                "id": battle_id,
                "created_at": voted_at,
                "updated_at": voted_at,
                "prompt": row.get("prompt") or "",
                "image_sha256": row.get("image_sha256") or NO_IMAGE_SHA256,
                "model_a": row["model_a"],
                "model_b": row["model_b"],
                "status": _imported_status(row.get("battle_status")),
                "language": row.get("language_code"),
                "categories": list(row.get("categories") or []),
                "flags": row_flags(row),
                "client_hash": "",
                "propensity": row.get("propensity"),
            }
        )
        for side in ("a", "b"):
            sides.append(
                {
                    "battle_id": battle_id,
                    "side": side,
                    "contender": row[f"model_{side}"],
                    "gate": bool(row.get(f"gate_{side}") or False),
                    # the file says only whether both finished: record a failure on side b
                    "status": "error" if side == "b" and row.get("sides_done") is False else "done",
                    "text": row.get(f"answer_{side}") or "",
                    "error": None,
                    "output_tokens": (row.get("conv_metadata") or {}).get(f"sum_assistant_{side}_tokens"),
                    "trajectory": stored_steps(row.get(f"trajectory_{side}") or []),
                    **_style(side_counts(row, side) if _has_style(row) else None),
                    "finished_at": voted_at,
                }
            )
        votes.append(
            {
                "battle_id": battle_id,
                "choice": WINNERS[row["winner"]],
                "voter_hash": (row.get("judge") or "")[:64],
                "created_at": voted_at,
            }
        )
        result.imported += 1
    # Core inserts in batches: no ORM identity map growing with a million rows
    if battles:
        session.execute(insert(Battle), battles)
        session.execute(insert(Response), sides)
        session.execute(insert(Vote), votes)


# A vote ends its battle's run. A row still "pending" or "running" (a hand-made file, or a vote
# that outran its battle's last status write) is stored as voted: it ranks the same, and no
# event stream here can claim it and try to run it again on a photo the import never had.
IN_FLIGHT = ("pending", "running")


def _imported_status(status: str | None) -> str:
    return "voted" if status is None or status in IN_FLIGHT else status


def _battle_id(row: dict[str, Any]) -> str:
    """Our ids are 32 hex characters; any other question_id maps to a stable uuid5."""
    qid = str(row.get("question_id") or "")
    if len(qid) == 32 and all(c in "0123456789abcdef" for c in qid):
        return qid
    basis = qid or f"{row.get('model_a')}|{row.get('model_b')}|{row.get('tstamp')}|{row.get('judge')}"
    return uuid.uuid5(uuid.NAMESPACE_URL, f"geoarena:clean_battle:{basis}").hex


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _style(counts: dict[str, Any] | None) -> dict[str, Any]:
    return {"style": counts, **style_columns(counts)}


def _has_style(row: dict[str, Any]) -> bool:
    """Whether a row carries style counts (FastChat's conv_metadata or our gps fields)."""
    return bool(row.get("conv_metadata")) or any(f"gps_count_{s}" in row for s in "ab")
