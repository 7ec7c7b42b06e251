"""Group commit (arena.db.batches): each request gets its own outcome; under load the writer
gathers requests that come a moment apart into one batch; none is left unanswered when the
writer is cancelled."""

from __future__ import annotations

import asyncio

import pytest

from arena.db.batches import Batches


class Recorder:
    """A `write` that keeps each batch it was given; an item "bad" fails on its own."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def __call__(self, items: list[str]) -> list[str | Exception]:
        self.batches.append(list(items))
        return [ValueError(item) if item == "bad" else item.upper() for item in items]


async def test_each_request_gets_its_own_outcome() -> None:
    write = Recorder()
    batches = Batches(write, max_batch=2, name="test")
    outcomes = await asyncio.gather(*(batches.submit(i) for i in ["a", "bad", "c"]), return_exceptions=True)
    assert outcomes[0] == "A" and isinstance(outcomes[1], ValueError) and outcomes[2] == "C"
    assert write.batches == [["a", "bad"], ["c"]]  # at most max_batch a transaction
    await batches.close()


async def test_requests_a_moment_apart_share_a_batch_only_under_load() -> None:
    write = Recorder()
    batches = Batches(write, max_batch=10, name="test", gather=0.5)
    assert await batches.submit("alone") == "ALONE"  # nothing written lately: written at once
    # a batch was just written: the next waits for those coming right after it
    together = asyncio.gather(batches.submit("b"), later(batches, "c", 0.01), later(batches, "d", 0.02))
    assert await together == ["B", "C", "D"]
    assert write.batches == [["alone"], ["b", "c", "d"]]

    plain = Recorder()
    ungathered = Batches(plain, max_batch=10, name="test")
    await ungathered.submit("alone")
    await asyncio.gather(ungathered.submit("b"), later(ungathered, "c", 0.01))
    assert plain.batches == [["alone"], ["b"], ["c"]]  # without `gather` each came alone


async def later(batches: Batches[str, str], item: str, seconds: float) -> str:
    await asyncio.sleep(seconds)
    return await batches.submit(item)


async def test_a_writer_cancelled_while_it_gathers_answers_everyone() -> None:
    batches = Batches(Recorder(), max_batch=10, name="test", gather=5.0)
    await batches.submit("first")  # the writer is busy from now on
    waiting = asyncio.ensure_future(batches.submit("second"))
    await asyncio.sleep(0.01)  # the writer now sleeps, gathering
    assert batches._writer is not None
    batches._writer.cancel()
    with pytest.raises(RuntimeError, match="stopped"):
        await asyncio.wait_for(waiting, 1)
