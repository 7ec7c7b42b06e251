"""Group commit (arena.db.batches): each request gets its own outcome, at most `max_batch`
of them a transaction."""

from __future__ import annotations

import asyncio

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
