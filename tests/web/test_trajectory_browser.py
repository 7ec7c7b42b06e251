"""Issue 11 item 5 (display): `[battles] trajectory` decides how voters see a
GATE contender's tool steps before they vote, in real Chromium against `arena
serve`: one GATE side (a scripted loopback model that calls `crop` twice, then
answers) against a plain side (a loopback model answering in about 2 s).

* "collapsed" (the default): one summary line on each side ("No tool steps"
  on the plain one), both answers start at the same height, steps on request;
* "after_vote": no steps, and no sign of them, until the vote;
* "open": the steps open beside the answer on a wide screen."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from tests.conftest import SCREENSHOTS
from tests.contenders.gate.scripted_model import Call, ScriptedModelServer, Turn
from tests.servers import serve_in_thread
from tests.servers.openai_compatible import OpenAICompatibleServer
from tests.web.axe import assert_accessible
from tests.web.battles import new_page, start_battle, wait_until_voting_opens
from tests.web.conftest import ArenaServer, serve_arena

pytestmark = pytest.mark.browser

CROP = '{{"image": "img_0", "box": [{0}, 0.3, 0.8, 0.9]}}'
SCRIPT = [
    Turn("The sign may help.", [Call("crop", CROP.format(0.2))]),
    Turn("And the road markings.", [Call("crop", CROP.format(0.4))]),
    Turn("Final answer: **Tokyo, Japan** (kanji on the sign, left-hand traffic).", delay=0.05),
]


class PerBattleScript(ScriptedModelServer):
    """The script from its first turn in every battle: the turn is chosen by how many
    assistant turns the conversation already holds, not by requests served."""

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        done = sum(1 for m in body["messages"] if m.get("role") == "assistant")
        turn = self.turns[min(done, len(self.turns) - 1)]
        return StreamingResponse(self._stream(turn, len(self.requests)), media_type="text/event-stream")


@contextmanager
def gate_arena(base: Path, mode: str | None) -> Iterator[ArenaServer]:
    scripted, plain = PerBattleScript(SCRIPT), OpenAICompatibleServer()
    with serve_in_thread(scripted.app) as gate_url, serve_in_thread(plain.app) as plain_url:
        pool = base / "arena.toml"
        pool.write_text(
            f'[[contenders]]\nname = "scripted+gate"\nprovider = "openai"\nbase_url = "{gate_url}/v1"\n'
            'model = "scripted"\ngate = true\ntimeout = 30\n\n'
            f'[[contenders]]\nname = "plain"\nprovider = "openai"\nbase_url = "{plain_url}/v1"\n'
            'model = "paced-plain"\ntimeout = 30\n\n'
            '[tools]\ncode = false\nmax_turns = 5\n\n[integrity]\nchallenge = "off"\n\n'
            + (f"[battles]\ntrajectory = {json.dumps(mode)}\n" if mode else "")
        )
        with serve_arena(base, pool) as server:
            yield server


def gate_side(page: Any) -> str:
    """The side the sampler gave the GATE contender (the one whose pane has steps)."""
    side = page.evaluate(
        "() => ['a', 'b'].find(s => document.querySelector(`#pane-${s} [data-role=trajectory]`).dataset.steps !== '0')"
    )
    assert side in ("a", "b")
    return str(side)


def answer_tops(page: Any) -> tuple[float, float]:
    boxes = [page.locator(f"#pane-{side} [data-role=answer]").bounding_box() for side in "ab"]
    assert boxes[0] is not None and boxes[1] is not None
    return boxes[0]["y"], boxes[1]["y"]


@pytest.mark.parametrize("mode", [None, "after_vote", "open"], ids=["collapsed-default", "after_vote", "open"])
def test_trajectory_display(tmp_path: Path, chromium: Any, sample_photo: Path, mode: str | None) -> None:
    with gate_arena(tmp_path, mode) as arena:
        for size in ("desktop", "phone"):
            context, page, errors = new_page(chromium, size)
            start_battle(page, arena.url, sample_photo)
            wait_until_voting_opens(page)
            side = gate_side(page)
            other = "b" if side == "a" else "a"
            tools = page.locator(f"#pane-{side} [data-role=trajectory]")
            plain = page.locator(f"#pane-{other} [data-role=trajectory]")
            timeline = tools.locator("details.gate-trajectory")
            name = mode or "collapsed"
            if name == "collapsed":
                assert tools.is_visible() and plain.is_visible()
                assert tools.locator(".gate-trajectory__summary").inner_text() == "Tool use: 2 steps"
                assert plain.inner_text() == "No tool steps"
                assert timeline.get_attribute("open") is None  # folded: one line
                assert tools.locator(".gate-step__images img").first.is_hidden()
                if size == "desktop":  # side by side: both answers start at the same height
                    top_a, top_b = answer_tops(page)
                    assert abs(top_a - top_b) <= 1, (top_a, top_b)
                page.screenshot(path=str(SCREENSHOTS / f"trajectory-collapsed-{size}.png"), full_page=True)
                tools.locator(".gate-trajectory__summary").click()  # the steps on request
                assert timeline.get_attribute("open") is not None
                assert tools.locator(".gate-step").count() == 2
            elif name == "after_vote":
                assert tools.is_hidden() and plain.is_hidden()
                assert "Tool use" not in page.locator("#battle").inner_text()
                if size == "desktop":
                    top_a, top_b = answer_tops(page)
                    assert abs(top_a - top_b) <= 1, (top_a, top_b)
                page.screenshot(path=str(SCREENSHOTS / f"trajectory-after-vote-before-{size}.png"), full_page=True)
            else:
                assert tools.is_visible() and plain.is_hidden()
                assert (timeline.get_attribute("open") is not None) == (size == "desktop")
                if size == "desktop":
                    assert tools.locator(".gate-step__images img").first.is_visible()
                page.screenshot(path=str(SCREENSHOTS / f"trajectory-open-{size}.png"), full_page=True)

            assert_accessible(page, f"battle, trajectory {name}, before the vote, {size}")
            page.get_by_role("button", name="Tie").click()
            page.get_by_role("button", name="New battle").wait_for()
            # after the vote the steps are there in every mode; the plain side has none to show
            assert tools.is_visible()
            assert tools.locator(".gate-trajectory__summary").inner_text() == "Tool use: 2 steps"
            if name == "after_vote":
                assert plain.is_hidden() and timeline.get_attribute("open") is None
                page.screenshot(path=str(SCREENSHOTS / f"trajectory-after-vote-after-{size}.png"), full_page=True)
                page.reload()  # a voted battle shows its steps on reload too
                page.locator(f"#pane-{side} .gate-trajectory__summary").wait_for()
                assert tools.is_visible()
            assert errors == []
            context.close()
