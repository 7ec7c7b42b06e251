"""How big each request of a GATE trajectory is, turn by turn.

A scripted loopback model (OpenAI wire format, the real streaming client)
makes two crops on each of nine turns and answers on the tenth; the script
prints the size of every request body and how many images it carries. With
a bounded context the size stays flat: each image is sent once, when a tool
makes it, plus any earlier image the last turn named.

    python benchmarks/gate_context.py [--photo PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the repository, in place of benchmarks/ (whose http.py would shadow the standard library's)
sys.path[0] = str(ROOT)

import httpx  # noqa: E402
from PIL import Image  # noqa: E402

from arena.config import GateSettings  # noqa: E402
from arena.contenders.apis.openai import OpenAIChat  # noqa: E402
from arena.contenders.base import ContenderImage  # noqa: E402
from arena.contenders.gate.agent import GateContender  # noqa: E402
from arena.contenders.gate.tools.image import image_tools  # noqa: E402
from arena.images.store import LocalImageStore  # noqa: E402
from tests.contenders.gate.scripted_model import Call, ScriptedModelServer, Turn  # noqa: E402
from tests.servers import serve_in_thread  # noqa: E402

DEFAULT_PHOTO = Path("/work/shared/data/geobrowse-sample/images/level1-1.jpg")
TURNS = 10


def script() -> list[Turn]:
    boxes = [[0, 0, 0.6, 0.6], [0.4, 0.4, 1, 1]]
    turns = [
        Turn(f"Turn {n}: look closer.", [Call("crop", json.dumps({"image": "img_0", "box": b})) for b in boxes])
        for n in range(1, TURNS)
    ]
    return [*turns, Turn("Final answer: Japan.")]


def photo(path: Path) -> ContenderImage:
    with Image.open(path) as im:
        rgb = im.convert("RGB")
    rgb.thumbnail((1280, 1280))
    out = io.BytesIO()
    rgb.save(out, "JPEG", quality=90)
    return ContenderImage(out.getvalue(), rgb.width, rgb.height)


async def measure(image: ContenderImage) -> list[tuple[int, int]]:
    server = ScriptedModelServer(script())
    with serve_in_thread(server.app) as base_url, tempfile.TemporaryDirectory() as tmp:
        async with httpx.AsyncClient() as http:
            model = OpenAIChat(http=http, base_url=base_url + "/v1", model="scripted")
            settings = GateSettings(max_turns=TURNS, time_budget=600)
            agent = GateContender("m+gate", model, image_tools(), settings, LocalImageStore(Path(tmp)))
            async for _ in agent.stream("Where was this photo taken?", image):
                pass
    return [(len(json.dumps(body)), json.dumps(body).count('"type": "image_url"')) for body in server.requests]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--photo", type=Path, default=DEFAULT_PHOTO)
    args = parser.parse_args()
    sizes = asyncio.run(measure(photo(args.photo)))
    print(f"{'turn':>4} {'request bytes':>14} {'images':>6}")
    for turn, (size, images) in enumerate(sizes, 1):
        print(f"{turn:>4} {size:>14,} {images:>6}")


if __name__ == "__main__":
    main()
