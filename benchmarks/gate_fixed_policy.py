"""A run of `policy = "fixed"` on a photo of the shared GeoBrowse sample, step by step.

Everything is on loopback: a scripted model (OpenAI wire format, through the
real client) answers, a SearxNG-format server answers text search and
TinEye-style reverse image search (it fetches each view from an arena image
route, as a real engine would from ARENA_PUBLIC_URL) and serves the visited
pages. The search results are canned, so the figures show what the policy
does and what it costs, not how well a model geolocates.

    python benchmarks/gate_fixed_policy.py [--photo PATH] [--question TEXT]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the repository, in place of benchmarks/ (whose http.py would shadow the standard library's)
sys.path[0] = str(ROOT)

import httpx  # noqa: E402
from PIL import Image  # noqa: E402

from arena.config import GateSettings  # noqa: E402
from arena.contenders.apis.openai import OpenAIChat  # noqa: E402
from arena.contenders.base import ContenderImage, TextDelta, ToolStep  # noqa: E402
from arena.contenders.gate import FixedPolicyContender  # noqa: E402
from arena.contenders.gate.toolbox import build_toolbox  # noqa: E402
from arena.images.store import LocalImageStore  # noqa: E402
from tests.contenders.gate.reverse_servers import ReverseEngine, arena_images  # noqa: E402
from tests.contenders.gate.scripted_model import ScriptedModelServer, Turn  # noqa: E402
from tests.servers import serve_in_thread  # noqa: E402

SAMPLE = Path("/work/shared/data/geobrowse-sample")


def photo(path: Path) -> ContenderImage:
    with Image.open(path) as im:
        rgb = im.convert("RGB")
    rgb.thumbnail((2048, 2048))
    out = io.BytesIO()
    rgb.save(out, "JPEG", quality=90)
    return ContenderImage(out.getvalue(), rgb.width, rgb.height)


async def run(image: ContenderImage, question: str) -> None:
    engine = ReverseEngine()
    model_server = ScriptedModelServer([Turn("Final answer: (scripted) Japan.")])
    with tempfile.TemporaryDirectory() as tmp:
        store = LocalImageStore(Path(tmp))
        with (
            serve_in_thread(arena_images(store)) as arena,
            serve_in_thread(engine.app) as engine_url,
            serve_in_thread(model_server.app) as model_url,
        ):
            engine.base_url = engine_url
            settings = GateSettings(
                code=False, search_backend="searxng", search_url=engine_url, reverse_search_backend="searxng"
            )
            async with httpx.AsyncClient() as http:
                box = build_toolbox(settings, http, public_url=arena, allow_loopback=True)
                model = OpenAIChat(http=http, base_url=model_url + "/v1", model="scripted")
                contender = FixedPolicyContender("fixed", model, box.tools, settings, store)
                started = time.perf_counter()
                n, answer = 0, ""
                async for event in contender.stream(question, image):
                    if isinstance(event, ToolStep):
                        n += 1
                        print(f"{n:>2}. {event.tool:<21} {json.dumps(event.args)[:100]}")
                        print(f"    -> {event.observation[:110]}")
                    elif isinstance(event, TextDelta):
                        answer += event.text
                elapsed = time.perf_counter() - started
                print(f"answer: {answer}")
    [request] = model_server.requests
    images = sum(
        1
        for m in request["messages"]
        if isinstance(m["content"], list)
        for p in m["content"]
        if p["type"] == "image_url"
    )
    print(f"\n{n} steps in {elapsed:.1f} s; the answering request: {len(json.dumps(request)):,} bytes, {images} images")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--photo", type=Path, default=SAMPLE / "images/level1-1.jpg")
    first = json.loads((SAMPLE / "level1_en.jsonl").read_text().splitlines()[0])["prompt"]
    parser.add_argument("--question", default=first)
    args = parser.parse_args()
    asyncio.run(run(photo(args.photo), args.question))


if __name__ == "__main__":
    main()
