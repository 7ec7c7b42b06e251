"""Offline battles on the shared GeoBrowse sample photos, scored against their gold places.

Each Level 1 photo is uploaded to the real app (in-process, SQLite, the
offline pool) with `share_location=true` and its gold answer typed as the
`place`, exactly as an uploader would; both contenders answer; the script
then reads the stored label and the answers' commitments and prints each
answer's error and the accuracy metrics per contender. No votes are cast
(no person is here), so the preference-vs-accuracy share is not computed.

    GEOARENA_SHARED=../shared python benchmarks/accuracy_sample.py [--json]
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as `python benchmarks/NAME.py`, this folder comes first on the import path, and its
# http.py (the name for the HTTP benchmark) would shadow the standard library's http
# module, which httpx imports: the checkout takes the folder's place.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import httpx
from sqlalchemy import select

from arena.app import create_app
from arena.config import Settings
from arena.db.migrate import upgrade
from arena.db.tables import BattleLabel, Response
from arena.geo.commitment import Commitment
from arena.ratings.accuracy import EVERY_ANSWER, LabelledVote, accuracy_section

SHARED = Path(os.environ.get("GEOARENA_SHARED", Path(__file__).resolve().parents[2] / "shared"))
SAMPLE = SHARED / "data" / "geobrowse-sample"


async def run(limit: int | None) -> dict:
    rows = [json.loads(line) for line in (SAMPLE / "level1_en.jsonl").read_text().splitlines() if line.strip()]
    rows = rows[:limit] if limit else rows
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/arena.db"
        upgrade(url)  # the schema, as `arena serve` makes it
        settings = Settings(
            env="test",
            data_dir=Path(tmp),
            database_url=url,
            config=Path(tmp) / "no-pool.toml",
            secret_key="benchmark-secret-key",
            battle_timeout=600,
            battles_per_minute=0,
        )
        app = create_app(settings)
        results = []
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://bench", timeout=900) as client:
                for row in rows:
                    image = row["image"][0] if isinstance(row["image"], list) else row["image"]
                    started = time.perf_counter()
                    created = await client.post(
                        "/api/battles",
                        files={"image": ("photo.jpg", (SAMPLE / image).read_bytes(), "image/jpeg")},
                        data={"prompt": row["prompt"], "share_location": "true", "place": row["gold_image_answer"]},
                    )
                    if created.status_code != 201:
                        results.append({"photo": image, "gold": row["gold_image_answer"], "refused": created.json()})
                        continue
                    battle_id = created.json()["battle_id"]
                    await client.get(created.json()["events_url"])  # runs both contenders to the end
                    results.append(
                        _scored(app, battle_id, image, row["gold_image_answer"], time.perf_counter() - started)
                    )
                    print(f"  {image}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    labelled = [
        LabelledVote(
            r["sides"]["a"]["contender"],
            r["sides"]["b"]["contender"],
            0.5,
            r["sides"]["a"]["error_km"],
            r["sides"]["b"]["error_km"],
            r["sides"]["a"]["country_hit"],
            r["sides"]["b"]["country_hit"],
            r["label"]["country"],
        )
        for r in results
        if "sides" in r
    ]
    # the sample's gold places are public: every answer counts, none is held back as a snapshot's would be
    return {"battles": results, "accuracy": accuracy_section(labelled, rounds=1000, seed=0, release=EVERY_ANSWER)}


def _scored(app, battle_id: str, image: str, gold: str, seconds: float) -> dict:  # type: ignore[no-untyped-def]
    with app.state.sessionmaker() as session:
        label = session.get(BattleLabel, battle_id)
        responses = session.scalars(select(Response).where(Response.battle_id == battle_id)).all()
        assert label is not None
        sides = {}
        for r in responses:
            commit = Commitment.from_json(r.commitment)
            sides[r.side] = {
                "contender": r.contender,
                "status": r.status,
                "place": commit.place if commit else None,
                "level": commit.level if commit else None,
                "error_km": round(commit.error_km(label.lat, label.lon), 1) if commit else None,
                "country_hit": (commit.country_code == label.country) if commit else False,
            }
        return {
            "photo": image,
            "gold": gold,
            "seconds": round(seconds, 1),
            "label": {
                "source": label.source,
                "precision_km": label.precision_km,
                "country": label.country,
                "continent": label.continent,
            },
            "sides": sides,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the whole result as JSON")
    parser.add_argument("--limit", type=int, help="only the first N photos")
    args = parser.parse_args()
    result = asyncio.run(run(args.limit))
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return
    print(f"{'photo':<18} {'gold (label)':<34} {'contender':<22} {'commits to':<34} {'level':<11} {'error km':>9}")
    for r in result["battles"]:
        if "sides" not in r:
            print(f"{r['photo']:<18} {r['gold'][:34]:<34} refused: {r['refused']}")
            continue
        gold = f"{r['gold'][:24]} ({r['label']['precision_km']:g} km)"
        for side in ("a", "b"):
            s = r["sides"][side]
            err = "no place" if s["error_km"] is None else f"{s['error_km']:,.0f}"
            print(
                f"{r['photo']:<18} {gold[:34]:<34} {s['contender']:<22} {(s['place'] or '-')[:34]:<34} "
                f"{s['level'] or '-':<11} {err:>9}"
            )
    print()
    print(
        f"{'contender':<22} {'n':>3} {'median km':>10} {'<=25':>6} {'<=200':>6} {'<=750':>6} {'<=2500':>7} "
        f"{'GeoScore':>9} {'country':>8} {'no place':>9}"
    )
    for name, a in result["accuracy"].items():
        med = a["median_km"]["value"]
        w = a["within_km"]
        print(
            f"{name:<22} {a['labelled']:>3} {('miss' if med is None else f'{med:,.0f}'):>10} "
            f"{w['25']['value']:>6.0%} {w['200']['value']:>6.0%} {w['750']['value']:>6.0%} {w['2500']['value']:>7.0%} "
            f"{a['geoscore']['value']:>9,.0f} {a['country_accuracy']['value']:>8.0%} "
            f"{a['no_commitment_rate']['value']:>9.0%}"
        )


if __name__ == "__main__":
    main()
