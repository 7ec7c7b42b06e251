"""What a watcher of a battle is sent, and when (arena.battles.run, `BattleRun.follow`):
a side's first delta at once, its later deltas gathered for a moment so that both sides'
share one write, and the events that end something never held back."""

from __future__ import annotations

import asyncio
import time

import pytest

from arena.battles.events import DELTA_GATHER, BattleEvent
from arena.battles.run import BattleRun


def delta(side: str, text: str) -> BattleEvent:
    return BattleEvent("delta", {"side": side, "text": text, "html": text})


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # no database in play
async def test_first_deltas_go_at_once_and_later_ones_share_a_write(app):
    runs = app.state.services.battle_runs
    run = BattleRun(runs, "f" * 32, "Where is this?", None, {"a": "model-one", "b": "model-two"})  # type: ignore[arg-type]
    run.finished = True  # never started: nothing to cancel when the watcher leaves
    writes: list[tuple[float, str]] = []

    async def watch() -> None:
        async for chunk in run.follow():
            writes.append((time.perf_counter(), chunk))

    watcher = asyncio.create_task(watch())
    await asyncio.sleep(0)  # the watcher is waiting for the first event
    run._publish(delta("a", "It "))
    await asyncio.sleep(0.005)
    run._publish(delta("b", "This "))  # b's first: not held back either
    await asyncio.sleep(0.005)
    held_from = time.perf_counter()
    run._publish(delta("a", "is "))
    # the timers fire in order, so this comes before a's gathering ends, however busy the loop
    await asyncio.sleep(DELTA_GATHER / 3)
    run._publish(delta("b", "looks "))
    await asyncio.sleep(DELTA_GATHER * 2)
    run._publish(delta("a", "Lisbon."))
    run._publish(BattleEvent("done", {"side": "a", "html": "", "latency_ms": 1}))
    run._publish(BattleEvent("end", {"status": "ready"}))
    await asyncio.wait_for(watcher, 5)

    sent = [[line for line in chunk.splitlines() if line.startswith("data:")] for _, chunk in writes]
    assert [len(data) for data in sent] == [1, 1, 2, 3]
    assert '"It "' in sent[0][0] and '"This "' in sent[1][0]  # each side's first, alone and at once
    assert '"is "' in sent[2][0] and '"looks "' in sent[2][1]  # a later delta waited for b's
    assert writes[2][0] - held_from >= DELTA_GATHER * 0.9
    # `done` and `end` are not held: they went with the delta that came with them
    assert "event: done" in writes[3][1] and "event: end" in writes[3][1]
