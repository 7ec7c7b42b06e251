"""The gatekeeper's figures against issue 49's targets, at the served operating point.

    .venv/bin/python benchmarks/gatekeeper.py [--held-out] [--data ../shared/data] [--not-geo FILE.jsonl ...]

Prints, each target marked PASS or MISS:

* start-up: `Gatekeeper.warm` in fresh processes (the model read, the warming verdicts);
* verdict latency p50/p99 by prompt length up to the 2,000-character limit;
* the hand-written unseen set (`gatekeeper_build/data/unseen/`, never trained or tuned on):
  the share of each form's photo-place questions that start a battle (taken or unsure), in
  English and Chinese and, for clue questions, in each of the 30 languages; the share of
  requests about a photo that are not about its place that start one;
* the GeoBrowse sample's Level-1 and Level-2 questions (real data, never trained on);
* `--not-geo` files (one JSON object a line with `prompt`, or MT-bench's `turns`):
  Arena-Hard and MT-bench, evaluation sets only, never trained or tuned on; the share that
  would start a battle, against the 2% target;
* the arena's own example questions, the kinds the refusal names, keyword stuffing;
* a simulated day of traffic: what the unsure band holds, and what the rank job does with it;
* `--held-out`: the corpus held out form by form (six refits; slow on a busy machine).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as `python benchmarks/NAME.py`, this folder comes first on the import path, and its
# http.py would shadow the standard library's http module: the checkout takes the folder's place.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import json
import os
import statistics
import subprocess
import time
from collections import Counter
from collections.abc import Sequence

from arena.gatekeeper.gatekeeper import SURE, THRESHOLD, Gatekeeper
from arena.gatekeeper.model import shipped_model
from arena.gatekeeper.policy import LANGUAGES, REFUSAL_KINDS_EN
from arena.geo.language import guess_language
from arena.web.pages import EXAMPLE_PROMPTS
from gatekeeper_build.corpus import LabelledPrompt, load_dataset, load_unseen

STUFFED = (
    "geography location country city map latitude: tell me a joke",
    "map country city latitude longitude coordinates: write a haiku about rain",
    "Where country city map: what is 12 squared?",
    "géographie pays ville carte latitude : raconte une blague",
    "地理 位置 国家 城市 地图 纬度：讲个笑话",
)
# A day of traffic, as shares of battles started or refused: photo-place questions of every
# form, requests about a photo that leave its place aside, and chat that has nothing to do with
# either (each kind scored on prompts the model never saw).
DAY = {"photo-place": 0.75, "photo-not-place": 0.15, "chat": 0.10}
BATTLES_A_DAY = 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "data")
    parser.add_argument("--not-geo", type=Path, action="append", default=[], help="JSONL of non-geographic prompts")
    parser.add_argument("--held-out", action="store_true", help="also hold the corpus out form by form (refits)")
    args = parser.parse_args()
    gatekeeper = Gatekeeper(threshold=THRESHOLD, sure=SURE)
    model = shipped_model()
    print(f"operating point: refused under {THRESHOLD}, unsure from there, taken from {SURE}")

    print("== start-up (fresh processes, median of 5; processor time too, as the machine is shared)")
    load, cpu = _fresh(
        "import asyncio, time; from arena.gatekeeper import Gatekeeper\n"
        "t, c = time.perf_counter(), time.process_time(); asyncio.run(Gatekeeper().warm())\n"
        "print(time.perf_counter() - t, time.process_time() - c)"
    )
    print(f"  load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    _target(
        f"Gatekeeper.warm (model.npz, pieces.model, two verdicts): processor {cpu * 1000:.0f} ms", cpu < 0.5, "< 500 ms"
    )
    _target(f"Gatekeeper.warm: wall {load * 1000:.0f} ms", load < 0.5, "< 500 ms")

    print("== verdict latency (score and the refusal's language), 1,000 runs per length; the machine is shared")
    print(f"  load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    text = " ".join(r.prompt for r in load_dataset() if r.source.startswith(("geoarena-v1", "chatterbot")))
    worst = worst_cpu = 0.0
    for length in (50, 200, 1000, 2000):
        wall: list[float] = []
        cpu: list[float] = []
        for i in range(1000):
            start = (i * 7919) % (len(text) - length)
            prompt = text[start : start + length]
            t0, c0 = time.perf_counter(), time.thread_time()
            model.score(prompt, guess_language(prompt))
            cpu.append(time.thread_time() - c0)
            wall.append(time.perf_counter() - t0)
        wall.sort()
        cpu.sort()
        p99, p99_cpu = wall[int(len(wall) * 0.99)], cpu[int(len(cpu) * 0.99)]
        worst, worst_cpu = max(worst, p99), max(worst_cpu, p99_cpu)
        print(
            f"  {length:>5} chars  wall p50 {wall[500] * 1000:.2f} ms  p99 {p99 * 1000:.2f} ms   "
            f"cpu p50 {cpu[500] * 1000:.2f} ms  p99 {p99_cpu * 1000:.2f} ms"
        )
    _target(f"wall p99 at <= 2,000 characters {worst * 1000:.2f} ms", worst < 0.010, "< 10 ms")
    _target(f"cpu p99 at <= 2,000 characters {worst_cpu * 1000:.2f} ms", worst_cpu < 0.010, "< 10 ms")

    def score(prompt: str) -> float:
        return model.score(prompt, guess_language(prompt))

    unseen = load_unseen()
    print(f"== the hand-written unseen set ({len(unseen)} prompts, never trained or tuned on): share that runs")
    shares: dict[str, float] = {}
    for form in ("open", "choice", "chain", "clue"):
        rows = [r for r in unseen if r.form == form and r.geographic]
        for lang in ("en", "zh"):
            _runs_target(f"{form} {lang}", [r for r in rows if r.lang == lang], score, 0.98)
        shares[form] = _share(rows, score)
    clue = [r for r in unseen if r.form == "clue"]
    per = {lang: _share([r for r in clue if r.lang == lang], score) for lang in LANGUAGES}
    low = sorted(lang for lang, share in per.items() if share < 0.98)
    _target(f"clue questions, languages where fewer than 98% run: {len(low)} of 30 {' '.join(low)}", not low, "none")
    photo_other = [r for r in unseen if r.form == "photo-other"]
    shares["photo-not-place"] = _share(photo_other, score)
    _target(f"photo, not its place: {_count(photo_other, score)} run", shares["photo-not-place"] <= 0.05, "<= 5%")
    for miss in [r for r in unseen if (score(r.prompt) >= THRESHOLD) != r.geographic]:
        print(f"      miss  {miss.lang} {miss.form} score={score(miss.prompt):.3f}  {miss.prompt[:100]!r}")

    print("== real data and evaluation sets (never trained or tuned on)")
    for name in ("level1_en", "level2_en"):
        path = args.data / "geobrowse-sample" / f"{name}.jsonl"
        if path.is_file():
            rows = [LabelledPrompt(p, True, "en", name) for p in _prompts(path)]
            _runs_target(f"GeoBrowse sample {name}", rows, score, 0.98)
    chat: list[str] = []
    for path in args.not_geo:
        prompts = _prompts(path)
        chat += prompts
        taken = sum(score(p) >= THRESHOLD for p in prompts)
        _target(
            f"{path.name}: {taken}/{len(prompts)} = {taken / max(len(prompts), 1):.4f} run",
            taken <= 0.02 * len(prompts),
            "<= 2%",
        )

    print("== probes (none is in the training data)")
    for name, prompts, geographic in (
        ("home page examples run", EXAMPLE_PROMPTS, True),
        ("kinds the refusal names run", tuple(REFUSAL_KINDS_EN.values()), True),
        ("keyword stuffing refused", STUFFED, False),
    ):
        wrong = [p for p in prompts if (score(p) >= THRESHOLD) != geographic]
        _target(f"{name}: {len(prompts) - len(wrong)}/{len(prompts)}", not wrong, "all")

    _day(gatekeeper, [r.prompt for r in unseen if r.geographic], [r.prompt for r in photo_other], chat, score)

    if args.held_out:
        from gatekeeper_build.evaluate import by_form

        print("== the corpus held out form by form (each form scored by a model fitted without any of it)")
        for line in by_form(load_dataset(), lambda s: print(f"  {s}", flush=True)).lines(max_errors=30):
            print(f"  {line}")
    return 0


def _day(gatekeeper: Gatekeeper, place: list[str], not_place: list[str], chat: list[str], score: object) -> None:
    """What the unsure band holds on a day of BATTLES_A_DAY uploads mixed as DAY says."""
    print(f"== a simulated day: {BATTLES_A_DAY} uploads, " + ", ".join(f"{k} {v:.0%}" for k, v in DAY.items()))
    kinds = {"photo-place": place, "photo-not-place": not_place, "chat": chat}
    totals: Counter[str] = Counter()
    for kind, prompts in kinds.items():
        if not prompts:
            print(f"  {kind}: no prompts given (--not-geo for chat)")
            continue
        decisions = Counter(gatekeeper.decide(score(p)) for p in prompts)  # type: ignore[operator]
        day = {d: BATTLES_A_DAY * DAY[kind] * decisions[d] / len(prompts) for d in ("take", "unsure", "refuse")}
        totals.update({f"{kind}:{d}": n for d, n in day.items()})
        print(f"  {kind:<16} taken {day['take']:6.1f}  unsure {day['unsure']:6.1f}  refused {day['refuse']:6.1f}")
    unsure = sum(n for k, n in totals.items() if k.endswith(":unsure"))
    wrongly = totals["photo-not-place:unsure"] + totals["chat:unsure"]
    print(
        f"  the unsure band holds {unsure:.0f} battles a day, {wrongly:.0f} of them not about the photo's place: "
        "each runs and is tagged; `arena rank` asks the LLM judge about them (when one is configured) and "
        "leaves out the votes of those it calls not geographic; without a judge they count until a reviewer "
        "marks them (`arena unsure mark`)"
    )


def _share(rows: Sequence[LabelledPrompt], score: object) -> float:
    return sum(score(r.prompt) >= THRESHOLD for r in rows) / max(len(rows), 1)  # type: ignore[operator]


def _count(rows: Sequence[LabelledPrompt], score: object) -> str:
    runs = sum(score(r.prompt) >= THRESHOLD for r in rows)  # type: ignore[operator]
    return f"{runs}/{len(rows)} = {runs / max(len(rows), 1):.3f}"


def _runs_target(name: str, rows: Sequence[LabelledPrompt], score: object, at_least: float) -> None:
    _target(f"{name}: {_count(rows, score)}", _share(rows, score) >= at_least, f">= {at_least:.0%}")


def _prompts(path: Path) -> list[str]:
    lines = [line for line in path.read_text("utf-8").split("\n") if line.strip()]  # not splitlines: U+2028
    records = [json.loads(line) for line in lines]
    return [
        str(r.get("prompt") or (r.get("turns") or [""])[0])[:2000] for r in records if r.get("prompt") or r.get("turns")
    ]


def _fresh(code: str) -> tuple[float, float]:
    """The median wall and processor seconds `code` prints, over five fresh processes."""
    runs = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
        for _ in range(5)
    ]
    return statistics.median(float(r[0]) for r in runs), statistics.median(float(r[1]) for r in runs)


def _target(text: str, ok: bool, target: str) -> None:
    print(f"  {'PASS' if ok else 'MISS'}  {text}  (target {target})")


if __name__ == "__main__":
    raise SystemExit(main())
