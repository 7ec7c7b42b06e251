"""What GATE's fixed policy changes in OCR recall, on GeoBrowse-format photos.

For each Level 1 photo and each offline contender (`ocr-geolocator`,
`ocr-geolocator+gate`) it prints the views read, the raw line reads over all
views, the distinct text lines and characters left after merging and noise
filtering, the seconds taken (OCR of every view + ranking + answer),
the top-3 countries, and whether the gold country is among them: once from
the photo alone (what OCR recall buys) and once with the question's hints.

    .venv/bin/python benchmarks/ocr_recall.py [--data ../shared/data/geobrowse-sample]

The gold country is read from `gold_image_answer` with the same gazetteer
(e.g. "Anshun City, Guizhou Province" -> CN); "China, Taiwan" accepts CN and TW.
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
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from arena.contenders.baselines import (
    GeolocatorOptions,
    OcrEngine,
    OcrGeolocator,
    merge_lines,
)
from arena.contenders.baselines.answer import render_answer
from arena.contenders.baselines.ocr import DEFAULT_MAX_SIDE, OcrLine
from arena.geo.gazetteer import Gazetteer, load_gazetteer

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "geobrowse-sample"


@dataclass
class Row:
    photo: str
    contender: str
    views: int
    reads: int  # lines read over all views, before merging and noise filtering
    lines: int
    chars: int
    seconds: float
    top3_photo: list[str]
    top3_question: list[str]
    gold: set[str]

    @property
    def hit_photo(self) -> bool:
        return bool(self.gold & set(self.top3_photo))

    @property
    def hit_question(self) -> bool:
        return bool(self.gold & set(self.top3_question))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder with level1_en.jsonl and images/")
    parser.add_argument("--limit", type=int, default=0, help="only the first N photos")
    parser.add_argument(
        "--max-side", type=int, default=DEFAULT_MAX_SIDE, help="long side views are shrunk to before OCR"
    )
    args = parser.parse_args()
    if not (args.data / "level1_en.jsonl").exists():
        print(f"no level1_en.jsonl under {args.data}", file=sys.stderr)
        return 2
    rows = asyncio.run(run(args.data, args.limit, OcrEngine(max_side=args.max_side)))
    report(rows, args.max_side)
    return 0


async def run(data: Path, limit: int, engine: OcrEngine) -> list[Row]:
    gazetteer = load_gazetteer()
    contenders = [
        OcrGeolocator(name="ocr-geolocator", engine=engine),
        OcrGeolocator(name="ocr-geolocator+gate", engine=engine, gate=True),
    ]
    photos = list(_photos(data))[: limit or None]
    engine.read(Image.new("RGB", (64, 64), "white"))  # load the models outside the timings
    rows = []
    for path, prompt, gold_answer in photos:
        gold = gold_countries(gold_answer, gazetteer)
        photo = Image.open(path).convert("RGB")
        for contender in contenders:
            started = time.perf_counter()
            views = 0
            read: list[OcrLine] = []
            async for _view, lines in contender.read(photo):
                views += 1
                read.extend(lines)
            merged = merge_lines(read)
            ranking = contender.rank(merged, prompt, gazetteer)
            render_answer(ranking, merged, views=views)
            seconds = time.perf_counter() - started
            photo_only = OcrGeolocator(contender.name, engine, options=GeolocatorOptions(use_question=False))
            rows.append(
                Row(
                    photo=path.name,
                    contender=contender.name,
                    views=views,
                    reads=len(read),
                    lines=len(merged),
                    chars=sum(len(ln.text) for ln in merged),
                    seconds=seconds,
                    top3_photo=[c.country.country_code for c in photo_only.rank(merged, "", gazetteer).candidates],
                    top3_question=[c.country.country_code for c in ranking.candidates],
                    gold=gold,
                )
            )
            print(_line(rows[-1]), flush=True)
    return rows


def gold_countries(answer: str, gazetteer: Gazetteer) -> set[str]:
    """Countries named by a gold answer: every country/region match, else the
    country of the most populous place named."""
    matches = gazetteer.match(answer)
    named = {m.places[0].country_code for m in matches if m.places and m.places[0].kind != "city"}
    if "taiwan" in answer.lower():
        named.add("TW")
    if not named and matches:
        best = max((m.places[0] for m in matches if m.places), key=lambda p: p.population)
        named.add(best.country_code)
    return named


def report(rows: list[Row], max_side: int) -> None:
    print(f"\nviews shrunk to at most {max_side} px before OCR")
    print(
        f"{'contender':<22} {'photos':>6} {'reads':>6} {'lines':>6} {'chars':>6} {'s/photo':>8} {'top3 photo':>11} {'top3 +question':>15}"
    )
    for name in dict.fromkeys(r.contender for r in rows):
        mine = [r for r in rows if r.contender == name]
        n = len(mine)
        print(
            f"{name:<22} {n:>6} {sum(r.reads for r in mine):>6} {sum(r.lines for r in mine):>6} {sum(r.chars for r in mine):>6} "
            f"{sum(r.seconds for r in mine) / n:>8.2f} {sum(r.hit_photo for r in mine):>5}/{n:<5} "
            f"{sum(r.hit_question for r in mine):>9}/{n:<5}"
        )
    with_text = {
        name: sum(1 for r in rows if r.contender == name and r.lines)
        for name in dict.fromkeys(r.contender for r in rows)
    }
    print("photos with any text read: " + ", ".join(f"{k} {v}" for k, v in with_text.items()))


def _photos(data: Path):
    with (data / "level1_en.jsonl").open(encoding="utf-8") as f:
        for raw in f:
            item = json.loads(raw)
            images = item["image"] if isinstance(item["image"], list) else [item["image"]]
            for image in images:
                yield data / image, item["prompt"], item["gold_image_answer"]


def _line(r: Row) -> str:
    return (
        f"{r.photo:<18} {r.contender:<22} views {r.views:>2}  reads {r.reads:>3}  lines {r.lines:>3}  chars {r.chars:>4}  "
        f"{r.seconds:6.2f}s  top3 {','.join(r.top3_photo) or '-':<9} (+q {','.join(r.top3_question) or '-':<9}) "
        f"gold {','.join(sorted(r.gold))}  {'HIT' if r.hit_photo else 'miss'}/{'HIT' if r.hit_question else 'miss'}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
