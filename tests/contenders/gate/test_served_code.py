"""The code tool through a real `arena serve` process (uvloop, as deployed): a
scripted GATE model runs Python in the sandbox and the step comes back ok."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.battles.test_flow import parse_sse
from tests.contenders.gate.scripted_model import Call, ScriptedModelServer, Turn
from tests.contenders.gate.test_code import REASON
from tests.photos import SAMPLE
from tests.servers import serve_in_thread
from tests.servers.openai_compatible import OpenAICompatibleServer
from tests.web.conftest import serve_arena

pytestmark = pytest.mark.skipif(bool(REASON), reason=f"code sandbox unavailable: {REASON}")


def test_code_interpreter_runs_in_the_served_app(tmp_path: Path) -> None:
    scripted = ScriptedModelServer(
        [
            Turn("Compute it.", [Call("code_interpreter", json.dumps({"code": "print(6 * 7)"}))]),
            Turn("Final answer: **Tokyo, Japan**."),
        ]
    )
    plain = OpenAICompatibleServer()
    with serve_in_thread(scripted.app) as gate_url, serve_in_thread(plain.app) as plain_url:
        pool = tmp_path / "arena.toml"
        pool.write_text(
            f'[[contenders]]\nname = "scripted+gate"\nprovider = "openai"\nbase_url = "{gate_url}/v1"\n'
            'model = "scripted"\ngate = true\ntimeout = 30\n\n'
            f'[[contenders]]\nname = "plain"\nprovider = "openai"\nbase_url = "{plain_url}/v1"\n'
            'model = "echo-plain"\ntimeout = 30\n\n[tools]\ncode = true\nmax_turns = 4\n\n'
            '[integrity]\nchallenge = "off"\n'
        )
        with serve_arena(tmp_path, pool) as server, httpx.Client(timeout=60, trust_env=False) as client:
            created = client.post(
                server.url + "/api/battles",
                data={"prompt": "Where was this photo taken?"},
                files={"image": ("p.jpg", (SAMPLE / "level1-1.jpg").read_bytes(), "image/jpeg")},
            )
            assert created.status_code == 201, created.text + server.log_tail()
            events = parse_sse(client.get(server.url + created.json()["events_url"]).text)
            steps = [data for name, data in events if name == "step"]
            assert [(s["tool"], s["ok"]) for s in steps] == [("code_interpreter", True)], server.log_tail()
            assert steps[0]["observation"] == "exit code 0: 42"
