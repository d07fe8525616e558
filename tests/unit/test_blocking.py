"""workbench.engine.blocking: the thread pools that keep blocking work off the event loop, and GroupWrite.

BlockingPool: at most `size` threads, the caller's context variables carried into the thread, errors
raised back to the caller, work of a caller cancelled before it started dropped. GroupWrite: audit
rows of requests that finish together share one store write, each caller returns only once its own
rows are stored, and a caller that goes away still has its rows written."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import pytest
from workbench.engine.blocking import BlockingPool, GroupWrite


class SlowStore:
    """Takes 50 ms per write (a store round trip); records each write's items and thread."""

    def __init__(self) -> None:
        self.writes: list[list[int]] = []
        self.threads: set[str] = set()
        self.lock = threading.Lock()

    def write(self, items: list[int]) -> None:
        time.sleep(0.05)
        with self.lock:
            self.writes.append(list(items))
            self.threads.add(threading.current_thread().name)

    def stored(self) -> list[int]:
        return sorted(i for w in self.writes for i in w)


async def test_writers_arriving_during_a_write_share_the_next_one() -> None:
    store = SlowStore()
    group: GroupWrite[int] = GroupWrite(store.write, BlockingPool(4, "test-store"))
    returned: list[int] = []

    async def caller(i: int) -> None:
        await group.write([i * 10, i * 10 + 1])
        # Back only once its own rows are in the store.
        assert {i * 10, i * 10 + 1} <= set(store.stored())
        returned.append(i)

    first = asyncio.create_task(caller(0))
    await asyncio.sleep(0.01)  # the first write is under way
    await asyncio.gather(first, *(caller(i) for i in range(1, 20)))
    assert sorted(returned) == list(range(20))
    assert store.stored() == sorted(i * 10 + d for i in range(20) for d in (0, 1))
    assert len(store.writes) == 2  # the first caller's, then everyone who came meanwhile
    assert store.writes[0] == [0, 1]
    assert store.threads and all(n.startswith("test-store") for n in store.threads)


async def test_a_cancelled_caller_still_has_its_rows_written() -> None:
    store = SlowStore()
    group: GroupWrite[int] = GroupWrite(store.write, BlockingPool(2, "test-store"))
    task = asyncio.create_task(group.write([1]))
    await asyncio.sleep(0.01)
    task.cancel()
    later = asyncio.create_task(group.write([2]))  # queued behind the first write
    await asyncio.sleep(0)
    await asyncio.wait_for(later, 2)
    assert store.stored() == [1, 2]


def test_each_event_loop_has_its_own_rounds() -> None:
    """The Lambda runtime and tests run one loop after another: nothing of a closed loop is reused."""
    store = SlowStore()
    group: GroupWrite[int] = GroupWrite(store.write, BlockingPool(2, "test-store"))
    asyncio.run(group.write([1]))
    asyncio.run(group.write([2]))
    assert store.writes == [[1], [2]]


REQUEST: contextvars.ContextVar[str] = contextvars.ContextVar("request", default="-")


async def test_a_pool_runs_at_most_its_size_at_once_on_its_own_threads() -> None:
    pool = BlockingPool(3, "test-pool")
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}
    seen: set[str] = set()

    def work(i: int) -> tuple[int, str, str]:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
            seen.add(threading.current_thread().name)
        time.sleep(0.02)
        with lock:
            state["now"] -= 1
        return i, REQUEST.get(), threading.current_thread().name

    async def one(i: int) -> tuple[int, str, str]:
        REQUEST.set(f"req-{i}")  # each caller's own context travels into the thread
        return await pool.run(work, i)

    results = await asyncio.gather(*(one(i) for i in range(12)))
    assert [(i, r) for i, r, _ in results] == [(i, f"req-{i}") for i in range(12)]
    assert state["peak"] == 3 and len(seen) == 3
    assert all(name.startswith("test-pool_") for name in seen)
    assert threading.current_thread().name not in seen  # never on the loop's thread


async def test_errors_come_back_to_the_caller() -> None:
    pool = BlockingPool(1, "test-pool")

    def boom() -> None:
        raise ValueError("kaboom")

    with pytest.raises(ValueError, match="kaboom"):
        await pool.run(boom)
    assert await pool.run(lambda: 7) == 7  # the thread survived


async def test_work_of_a_caller_cancelled_before_it_started_is_dropped() -> None:
    pool = BlockingPool(1, "test-pool")
    ran: list[str] = []
    release = threading.Event()
    first = asyncio.create_task(pool.run(lambda: release.wait(2) and ran.append("first")))
    await asyncio.sleep(0.02)  # the only thread is busy with `first`
    second = asyncio.create_task(pool.run(lambda: ran.append("second")))
    await asyncio.sleep(0.01)
    second.cancel()
    release.set()
    await first
    assert await pool.run(lambda: "after") == "after"
    assert ran == ["first"]


async def test_a_full_batch_never_leaves_an_item_waiting_behind_busy_threads() -> None:
    """As many blocking calls as the pool has threads all run at once, every time: a thread that has
    just taken an item must not count as idle when the next item decides whether to start a thread
    (that race left one call of eight waiting for another to finish)."""
    for _ in range(40):
        pool = BlockingPool(8, "race")
        gate = _Gate()
        calls = [asyncio.ensure_future(pool.run(gate.hold)) for _ in range(8)]
        for _ in range(500):
            if gate.running == 8:
                break
            await asyncio.sleep(0.002)
        try:
            assert gate.running == 8
        finally:
            gate.release.set()
            await asyncio.gather(*calls)
            pool.shutdown()


class _Gate:
    """Blocking calls that count themselves in, then hold until released."""

    def __init__(self) -> None:
        self.running = 0
        self.lock = threading.Lock()
        self.release = threading.Event()

    def hold(self) -> None:
        with self.lock:
            self.running += 1
        self.release.wait(10)
