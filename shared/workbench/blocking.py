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
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["BlockingPool"]

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
