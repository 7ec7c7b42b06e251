"""The triangulation attack on opt-in location labels, played against the served figures.

The attacker knows the point every answer commits to (answers are shown to voters and
released with consent) and keeps every snapshot of `/api/leaderboard`, taken after each
labelled vote as they arrive one at a time, and the admin's export. With per-contender
distances published from a vote or two, two of them put a label within a fraction of a
kilometre (`TestTheAttackWorks`, on figures computed the way they used to be published).

Against the arena (`TestTheArenaGivesNothingAway`): the same battles and votes are played
in two worlds whose labels differ, each label moved across its 10 km public cell (5 km or
more, same country and continent). Every answer of the API and of the export is the same
in both worlds at every step, so whatever an attacker computes from them is the same too,
and misses one world's label by at least half the distance between the two: no label is
recovered more finely than the cell docs/security.md promises.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from scipy.optimize import least_squares
from sqlalchemy import delete

from arena.db.tables import Base, Battle, BattleLabel, Image, Response, Vote
from arena.geo.cells import CELL_KM, cell_bounds
from arena.geo.commitment import most_specific_place
from arena.geo.distance import great_circle_km
from arena.geo.gazetteer import load_gazetteer
from arena.geo.reverse import locate
from arena.ratings.accuracy import GEOSCORE_MAX, GEOSCORE_SCALE_KM, geoscore
from arena.ratings.job import rank_database
from arena.ratings.options import RankOptions
from tests.conftest import SAMPLE_DIR

ADMIN = {"Authorization": "Bearer test-admin-token-0123456789"}
LABELLED_VOTES = 42  # past the first milestone (30) and the next (40)
START = datetime(2026, 3, 1, tzinfo=UTC)
SHA = hashlib.sha256(b"label privacy photo").hexdigest()
# how far each contender's answers land from the label (km): a sharp one, a vague one
SPREAD = {"sharp": (2.0, 40.0), "vague": (60.0, 400.0), "middling": (20.0, 150.0)}
PROMISE_KM = CELL_KM / 2  # the twin of every label is at least this far away in its cell


@dataclass(frozen=True)
class Point:
    lat: float
    lon: float


@dataclass(frozen=True)
class LabelledBattle:
    model_a: str
    model_b: str
    answer_a: Point
    answer_b: Point
    label: Point
    choice: str


def sample_places() -> list[Point]:
    """The GeoBrowse sample's gold places that name a city or a region (real places)."""
    gazetteer = load_gazetteer()
    places = []
    for line in (SAMPLE_DIR / "level1_en.jsonl").read_text().splitlines():
        place = most_specific_place(json.loads(line)["gold_image_answer"], gazetteer)
        if place is not None and place.kind in ("city", "region") and place.lat is not None:
            places.append(Point(place.lat, float(place.lon)))
    assert len(places) >= 5
    return places


def offset(point: Point, km: float, bearing: float) -> Point:
    lat = point.lat + km * math.cos(bearing) / 111.195
    lon = point.lon + km * math.sin(bearing) / (111.195 * math.cos(math.radians(point.lat)))
    return Point(lat, lon)


def battles(seed: int = 5) -> list[LabelledBattle]:
    rng = np.random.default_rng(seed)
    places = sample_places()
    names = list(SPREAD)
    out = []
    for i in range(LABELLED_VOTES):
        label = offset(places[i % len(places)], float(rng.uniform(0, 30)), float(rng.uniform(0, 2 * math.pi)))
        a, b = (str(n) for n in rng.choice(names, 2, replace=False))
        answers = [offset(label, float(rng.uniform(*SPREAD[n])), float(rng.uniform(0, 2 * math.pi))) for n in (a, b)]
        choice = str(rng.choice(["a", "b", "tie", "both_bad"]))
        out.append(LabelledBattle(a, b, answers[0], answers[1], label, choice))
    return out


def twin(label: Point) -> Point:
    """Another point of the label's public cell, in the same country and continent, as far
    from the label as a point of the cell can be (its corners, inset a little)."""
    south, north, west, east = cell_bounds(label.lat, label.lon)
    inset_lat, inset_lon = (north - south) * 0.02, (east - west) * 0.02
    corners = [
        Point(lat, lon)
        for lat in (south + inset_lat, north - inset_lat)
        for lon in (west + inset_lon, east - inset_lon)
    ]
    here = locate(label.lat, label.lon)
    same = [c for c in corners if locate(c.lat, c.lon) == here]
    best = max(same, key=lambda c: great_circle_km(label.lat, label.lon, c.lat, c.lon))
    assert great_circle_km(label.lat, label.lon, best.lat, best.lon) >= PROMISE_KM
    return best


# -- the attacker ----------------------------------------------------------------------------


def triangulate(p1: Point, d1: float, p2: Point, d2: float) -> list[Point]:
    """The points d1 km from p1 and d2 km from p2 (both intersections of the two circles)."""

    def residual(x: np.ndarray) -> list[float]:
        return [great_circle_km(x[0], x[1], p1.lat, p1.lon) - d1, great_circle_km(x[0], x[1], p2.lat, p2.lon) - d2]

    found: list[Point] = []
    mid = Point((p1.lat + p2.lat) / 2, (p1.lon + p2.lon) / 2)
    for bearing in np.linspace(0, 2 * math.pi, 8, endpoint=False):
        start = offset(mid, max(d1, d2), float(bearing))
        fit = least_squares(residual, [start.lat, start.lon])
        if max(abs(r) for r in fit.fun) < 0.5:
            point = Point(float(fit.x[0]), float(fit.x[1]))
            if all(great_circle_km(point.lat, point.lon, f.lat, f.lon) > 0.5 for f in found):
                found.append(point)
    return found


def distance_from_score(score: float) -> float | None:
    return -GEOSCORE_SCALE_KM * math.log(score / GEOSCORE_MAX) if 0 < score <= GEOSCORE_MAX else None


def attack_snapshots(snapshots: list[dict[str, Any]], played: list[LabelledBattle]) -> dict[int, list[Point]]:
    """Label candidates per battle, from each snapshot (a contender with one labelled answer:
    its median is that answer's distance) and from each pair of consecutive snapshots (a
    contender whose count grew by one: the new answer's GeoScore is the difference of sums)."""
    found: dict[int, list[Point]] = {}
    before: dict[str, Any] = {}
    for index, snapshot in enumerate(snapshots):
        accuracy = snapshot.get("accuracy") or {}
        battle = played[index]
        distances = {}
        for side, name in (("a", battle.model_a), ("b", battle.model_b)):
            now = accuracy.get(name)
            if now is None:
                continue
            if now["labelled"] == 1 and now["median_km"]["value"] is not None:
                distances[side] = float(now["median_km"]["value"])
            elif name in before and now["labelled"] == before[name]["labelled"] + 1:
                new = (
                    now["labelled"] * now["geoscore"]["value"]
                    - before[name]["labelled"] * before[name]["geoscore"]["value"]
                )
                distances[side] = distance_from_score(new)
        if distances.get("a") is not None and distances.get("b") is not None:
            found[index] = triangulate(battle.answer_a, distances["a"], battle.answer_b, distances["b"])
        before = accuracy
    return found


def attack_export(rows: list[dict[str, Any]], played: list[LabelledBattle]) -> dict[int, list[Point]]:
    """Label candidates per battle from the export's two distances next to the answers."""
    return {
        i: triangulate(b.answer_a, row["error_km_a"], b.answer_b, row["error_km_b"])
        for i, (row, b) in enumerate(zip(rows, played, strict=True))
    }


def best_miss(candidates: list[Point], label: Point) -> float:
    """How close the attacker's best candidate comes (generous: it is told which is best)."""
    return min((great_circle_km(c.lat, c.lon, label.lat, label.lon) for c in candidates), default=math.inf)


# -- figures as they were published: distances from the label, every answer, GeoScore to 0.1 --


def unprotected_snapshots(played: list[LabelledBattle]) -> list[dict[str, Any]]:
    errors: dict[str, list[float]] = {}
    snapshots = []
    for battle in played:
        for name, answer in ((battle.model_a, battle.answer_a), (battle.model_b, battle.answer_b)):
            km = round(great_circle_km(answer.lat, answer.lon, battle.label.lat, battle.label.lon))
            errors.setdefault(name, []).append(km)
        snapshots.append(
            {
                "accuracy": {
                    name: {
                        "labelled": len(e),
                        "median_km": {"value": float(np.median(e))},
                        "geoscore": {"value": round(float(np.mean([geoscore(x) for x in e])), 1)},
                    }
                    for name, e in errors.items()
                }
            }
        )
    return snapshots


class TestTheAttackWorks:
    def test_on_figures_published_from_every_vote_it_finds_the_labels(self) -> None:
        played = battles()
        found = attack_snapshots(unprotected_snapshots(played), played)
        misses = {i: best_miss(found[i], played[i].label) for i in found}
        assert misses[0] < 1.0  # the first labelled vote: each contender's median is its distance
        later = [km for i, km in misses.items() if i > 0]
        assert len(later) >= 10 and np.median(later) < 5.0  # differences of consecutive snapshots


# -- the arena ------------------------------------------------------------------------------


def store(session: Any, number: int, battle: LabelledBattle) -> None:
    when = START + timedelta(minutes=number)
    if session.get(Image, SHA) is None:
        session.add(Image(sha256=SHA, width=640, height=480, size_bytes=1234))
        session.flush()
    row = Battle(
        id=f"{number:032x}",
        prompt="Where was this taken?",
        image_sha256=SHA,
        model_a=battle.model_a,
        model_b=battle.model_b,
        status="voted",
        language="en",
        categories=[],
        flags=[],
        created_at=when,
    )
    session.add(row)
    session.flush()
    for side, name, answer in (("a", battle.model_a, battle.answer_a), ("b", battle.model_b, battle.answer_b)):
        where = locate(answer.lat, answer.lon)
        session.add(
            Response(
                battle_id=row.id,
                side=side,
                contender=name,
                gate=False,
                status="done",
                text=f"I think it is at ({answer.lat:.4f}, {answer.lon:.4f}).",
                commitment={
                    "lat": answer.lat,
                    "lon": answer.lon,
                    "level": "coordinates",
                    "place": f"{answer.lat:.4f}, {answer.lon:.4f}",
                    "country": where.country_code,
                },
                finished_at=when,
            )
        )
    where = locate(battle.label.lat, battle.label.lon)
    session.add(
        BattleLabel(
            battle_id=row.id,
            lat=battle.label.lat,
            lon=battle.label.lon,
            precision_km=1.0,
            source="pin",
            country=where.country_code,
            continent=where.continent_code,
        )
    )
    session.add(Vote(battle_id=row.id, choice=battle.choice, voter_hash=f"voter-{number}", created_at=when))
    session.commit()


VOLATILE = ("computed_at", "timings")


async def observe(app: Any, client: Any, played: list[LabelledBattle]) -> list[tuple[dict[str, Any], list[Any]]]:
    """Play the battles one vote at a time on an empty database; after each, rank as the
    rating job does and take what an observer and the admin's export get."""
    sessions = app.state.services.database.sessions
    with sessions() as session:
        for table in reversed(Base.metadata.sorted_tables):
            session.execute(delete(table))
        session.commit()
    seen: list[tuple[dict[str, Any], list[Any]]] = []
    for number, battle in enumerate(played):
        with sessions() as session:
            store(session, number, battle)
        rank_database(sessions, RankOptions(rounds=5, style=False, outlier_alpha=None))
        board = (await client.get("/api/leaderboard")).json()
        export = await client.get("/api/admin/votes/export?format=jsonl&answers=true", headers=ADMIN)
        rows = [json.loads(line) for line in export.text.splitlines()]
        seen.append(({k: v for k, v in board.items() if k not in VOLATILE}, rows))
    return seen


class TestTheArenaGivesNothingAway:
    async def test_labels_a_cell_apart_are_indistinguishable_in_every_snapshot_and_export(
        self, app: Any, client: Any
    ) -> None:
        world_a = battles()
        world_b = [replace(b, label=twin(b.label)) for b in world_a]
        seen_a = await observe(app, client, world_a)
        seen_b = await observe(app, client, world_b)

        for step, ((board_a, rows_a), (board_b, rows_b)) in enumerate(zip(seen_a, seen_b, strict=True)):
            assert board_a == board_b, f"/api/leaderboard differs after labelled vote {step + 1}"
            assert rows_a == rows_b, f"the admin export differs after labelled vote {step + 1}"
        final = seen_a[-1][0]
        assert {r["labelled"] for r in final["accuracy"].values()} <= {30, 40}  # published, from milestones
        assert final["accuracy_release"]["cell_km"] == CELL_KM

        # the attacker's work: identical in both worlds, so in one of them it misses by half their distance
        snapshots = [board for board, _ in seen_a]
        assert attack_snapshots(snapshots, world_a) == {}  # no snapshot, no difference isolates a vote
        from_export = attack_export(seen_a[-1][1], world_a)
        assert from_export == attack_export(seen_b[-1][1], world_b)
        for i, candidates in from_export.items():
            assert candidates, f"battle {i}: the export's distances meet nowhere"
            worst = max(best_miss(candidates, world_a[i].label), best_miss(candidates, world_b[i].label))
            assert worst >= PROMISE_KM / 2, f"battle {i}: a label placed within {worst:.1f} km"
