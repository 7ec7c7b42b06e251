"""A GATE contender in a real battle: the app streams its tool steps as `step`
events, serves the images they produced, and stores the trajectory."""

from __future__ import annotations

from pathlib import Path

import httpx
from sqlalchemy import select

from arena.app import create_app
from arena.config import Settings
from arena.db.migrate import upgrade
from arena.db.tables import Response
from tests.battles.test_flow import parse_sse
from tests.contenders.gate.scripted_model import Call, ScriptedModelServer, Turn
from tests.photos import SAMPLE
from tests.servers import serve_in_thread
from tests.servers.openai_compatible import OpenAICompatibleServer


class TestGateBattle:
    async def test_steps_stream_and_persist(self, tmp_path: Path) -> None:
        scripted = ScriptedModelServer(
            [
                Turn("The plate may help.", [Call("super_resolution", '{"box": [0.6, 0.5, 0.9, 0.8], "factor": 2}')]),
                Turn("Final answer: **Tokyo, Japan** (Japanese plate, left-hand traffic)."),
            ]
        )
        plain = OpenAICompatibleServer()
        with serve_in_thread(scripted.app) as gate_url, serve_in_thread(plain.app) as plain_url:
            pool = tmp_path / "arena.toml"
            pool.write_text(
                f'[[contenders]]\nname = "scripted+gate"\nprovider = "openai"\nbase_url = "{gate_url}/v1"\n'
                'model = "scripted"\ngate = true\ntimeout = 20\n\n'
                f'[[contenders]]\nname = "plain"\nprovider = "openai"\nbase_url = "{plain_url}/v1"\n'
                'model = "echo-plain"\ntimeout = 20\n\n[tools]\ncode = false\nmax_turns = 5\n'
            )
            database = f"sqlite:///{tmp_path / 'arena.db'}"
            upgrade(database)
            settings = Settings(
                env="test",
                data_dir=tmp_path / "data",
                database_url=database,
                config=pool,
                secret_key="test-secret-key-0123456789",
                battle_timeout=30,
            )
            app = create_app(settings)
            async with app.router.lifespan_context(app):
                async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
                    photo = (SAMPLE / "level1-1.jpg").read_bytes()
                    created = await client.post(
                        "/api/battles",
                        data={"prompt": "Where was this photo taken?"},
                        files={"image": ("p.jpg", photo, "image/jpeg")},
                    )
                    assert created.status_code == 201, created.text
                    events = parse_sse((await client.get(created.json()["events_url"])).text)
                    steps = [data for name, data in events if name == "step"]
                    assert len(steps) == 1
                    step = steps[0]
                    assert step["tool"] == "super_resolution" and step["ok"] is True
                    assert step["thought"] == "The plate may help."
                    assert step["args"] == {"box": [0.6, 0.5, 0.9, 0.8], "factor": 2}
                    thumb = await client.get(f"/images/{step['image_refs'][0]}")
                    assert thumb.status_code == 200 and thumb.headers["content-type"] == "image/jpeg"
                    done = {data["side"]: data for name, data in events if name == "done"}
                    assert "<strong>Tokyo, Japan</strong>" in done[step["side"]]["html"]
                    assert events[-1][0] == "end"
            with app.state.services.database.sessions() as session:
                response = session.scalars(select(Response).where(Response.contender == "scripted+gate")).one()
                assert response.gate is True
                assert response.text == "**Tokyo, Japan** (Japanese plate, left-hand traffic)."
                assert [s["tool"] for s in response.trajectory] == ["super_resolution"]
                assert response.style is not None and response.style["tool_calls"] == 1  # the tool-use style feature
                assert response.trajectory[0]["image_refs"] == step["image_refs"]
