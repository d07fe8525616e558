"""Blocking work off the event loop: sync tools and blocking store calls run in bounded thread pools.

The loop only awaits. A pool is owned by whoever needs it (the engine owns one for sync tools and
one for store I/O), made lazily, sized to the batch concurrency; the caller's context variables
(the request's trace span, its deadline) travel with the call into the thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Generic, TypeVar

__all__ = ["BlockingPool", "GroupWrite"]

T = TypeVar("T")


class BlockingPool:
    """A lazily started thread pool of `size` workers; `await pool.run(fn, *args)`."""

    def __init__(self, size: int, name: str) -> None:
        self.size = max(1, size)
        self.name = name
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            with self._lock:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(max_workers=self.size, thread_name_prefix=self.name)
        return self._executor

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self._pool(), call)

    def shutdown(self) -> None:
        with self._lock:
            if self._executor is not None:
                self._executor.shutdown(wait=False, cancel_futures=True)
                self._executor = None


R = TypeVar("R")


class _Round(Generic[R]):
    def __init__(self) -> None:
        self.items: list[R] = []
        self.waiters: list[asyncio.Future[None]] = []
        self.task: asyncio.Task[None] | None = None


class GroupWrite(Generic[R]):
    """Group commit: the items of callers that write at about the same time go to the store in one
    blocking call (`write(items)`, run in `pool`), and each caller returns once its own items are
    written. While one write is under way, what arrives waits for the next, which takes all of it.

    A caller that is cancelled (a client gone) does not take its items back: they are written all
    the same. `write` must not raise (it logs what it could not store)."""

    def __init__(self, write: Callable[[list[R]], None], pool: BlockingPool) -> None:
        self._write = write
        self._pool = pool
        # One round per event loop: futures belong to the loop that made them.
        self._rounds: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Round[R]] = (
            weakref.WeakKeyDictionary()
        )

    async def write(self, items: list[R]) -> None:
        loop = asyncio.get_running_loop()
        state = self._rounds.get(loop)
        if state is None:
            state = self._rounds[loop] = _Round()
        done: asyncio.Future[None] = loop.create_future()
        state.items.extend(items)
        state.waiters.append(done)
        if state.task is None:
            state.task = loop.create_task(self._drain(state))
        await asyncio.shield(done)

    async def _drain(self, state: _Round[R]) -> None:
        try:
            while state.items:
                items, waiters = state.items, state.waiters
                state.items, state.waiters = [], []
                try:
                    await self._pool.run(self._write, items)
                finally:
                    for waiter in waiters:
                        if not waiter.done():
                            waiter.set_result(None)
        finally:
            state.task = None
