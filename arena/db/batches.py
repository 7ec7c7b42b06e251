"""Requests that arrive at the same moment, written together: group commit.

A request hands its item to a `Batches` and waits. One task takes every item waiting and
passes them to `write` in a worker thread, which makes one transaction of them and returns
each item's outcome: a result, or the exception that item's request is to raise. While a
batch is written the next one gathers, so a request that comes alone waits for nothing
extra, and many at once cost a few transactions instead of one each. The replica's votes
(`arena.battles.ballots`) and stream claims (`arena.battles.claims`) are written this way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


class Batches(Generic[Item, Result]):
    def __init__(self, write: Callable[[list[Item]], list[Result | Exception]], *, max_batch: int, name: str) -> None:
        self.write = write  # blocking: called in a worker thread, one outcome per item, in order
        self.max_batch = max_batch
        self.name = name
        self._waiting: list[tuple[Item, asyncio.Future[Result]]] = []
        self._writer: asyncio.Task[None] | None = None

    async def submit(self, item: Item) -> Result:
        """The item's result once its batch is written, or its exception."""
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self._waiting.append((item, future))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_waiting(), name=self.name)
        # shielded: a request that is cancelled (its client hung up) does not stop a batch
        # that other requests wait for
        return await asyncio.shield(future)

    async def close(self) -> None:
        """Let the items already handed in be written (the lifespan's end)."""
        if self._writer is not None:
            await self._writer

    async def _write_waiting(self) -> None:
        while self._waiting:
            batch, self._waiting = self._waiting[: self.max_batch], self._waiting[self.max_batch :]
            try:
                outcomes = await asyncio.to_thread(self.write, [item for item, _ in batch])
            except BaseException as error:  # cancelled at shutdown: nobody is left without an answer
                for _, future in batch:
                    if not future.done():
                        future.set_exception(error if isinstance(error, Exception) else RuntimeError("stopped"))
                raise
            for (_, future), outcome in zip(batch, outcomes, strict=True):
                if future.done():
                    continue
                if isinstance(outcome, Exception):
                    future.set_exception(outcome)
                else:
                    future.set_result(outcome)
