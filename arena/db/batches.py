"""Requests that arrive at the same moment, written together: group commit.

A request hands its item to a `Batches` and waits. One task takes every item waiting and
passes them to `write` in a worker thread, which makes one transaction of them and returns
each item's outcome: a result, or the exception that item's request is to raise. While a
batch is written the next one gathers, so a request that comes alone waits for nothing
extra, and many at once cost a few transactions instead of one each. The replica's votes
(`arena.battles.ballots`) and stream claims (`arena.battles.claims`) are written this way.

Under load requests come a few milliseconds apart, and a batch would often hold one or two
(a transaction's statements cost the same for one item as for twenty): then, and only then,
the writer waits `gather` seconds before it takes a batch. A request that comes alone, with
no batch written in the last `BUSY` seconds, waits for nothing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Generic, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")
BUSY = 0.1  # seconds: a batch written this recently means requests are coming in a stream


class Batches(Generic[Item, Result]):
    def __init__(
        self,
        write: Callable[[list[Item]], list[Result | Exception]],
        *,
        max_batch: int,
        name: str,
        gather: float = 0.0,
    ) -> None:
        self.write = write  # blocking: called in a worker thread, one outcome per item, in order
        self.max_batch = max_batch
        self.name = name
        self.gather = gather
        self._written_at = -BUSY  # monotonic time the last batch was written
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
            if self.gather and len(self._waiting) < self.max_batch and time.monotonic() - self._written_at < BUSY:
                try:
                    await asyncio.sleep(self.gather)
                except BaseException as error:  # cancelled at shutdown
                    _fail(self._waiting, error)
                    raise
            batch, self._waiting = self._waiting[: self.max_batch], self._waiting[self.max_batch :]
            try:
                outcomes = await asyncio.to_thread(self.write, [item for item, _ in batch])
            except BaseException as error:
                _fail(batch, error)
                raise
            self._written_at = time.monotonic()
            for (_, future), outcome in zip(batch, outcomes, strict=True):
                if future.done():
                    continue
                if isinstance(outcome, Exception):
                    future.set_exception(outcome)
                else:
                    future.set_result(outcome)


def _fail(waiting: list[tuple[Item, asyncio.Future[Result]]], error: BaseException) -> None:
    """Nobody is left without an answer: a batch that failed (or was cancelled at shutdown)."""
    for _, future in waiting:
        if not future.done():
            future.set_exception(error if isinstance(error, Exception) else RuntimeError("stopped"))
