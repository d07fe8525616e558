"""Custom-app catalogs' search indexes: built in another process, each within a build budget, and
kept within one memory budget for all of them.

A user's custom apps come back from discovery as the same catalog search after search (it is cached
for 10 minutes), so each distinct catalog is indexed once. The build runs in the index worker's
child process (engine/index_worker.py), awaited from a pool thread: it neither holds the event loop
nor the GIL, and what it allocates is not the serving process's. A build over its budget (too many
tools, too much CPU or wall time, more memory than the child may have) fails that catalog with
SearchBudgetExceeded, remembered so the next search does not pay for it again; the process and the
rest of the search go on. Concurrent searches over one catalog share one build.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import TYPE_CHECKING

from workbench.engine.index_worker import IndexWorker
from workbench.engine.search import BuildBudget, SearchBudgetExceeded, SearchDoc, SearchIndex

if TYPE_CHECKING:
    from workbench.engine.blocking import BlockingPool

__all__ = ["CACHE_BYTES", "CUSTOM_BUDGET", "IndexCache"]

# One custom catalog: at most 5,000 tools and 2 s of CPU to index (bench/search_scale.py measures
# 1,000 realistic tools), and the index worker's memory cap. All cached catalogs together: at most
# 32 MB.
CUSTOM_BUDGET = BuildBudget(tools=5_000, cpu_seconds=2.0)
CACHE_BYTES = 32 * 1024 * 1024
_REFUSALS = 256

Key = tuple[SearchDoc, ...]


class IndexCache:
    def __init__(
        self,
        pool: BlockingPool,
        max_bytes: int = CACHE_BYTES,
        budget: BuildBudget = CUSTOM_BUDGET,
        worker: IndexWorker | None = None,
    ) -> None:
        self.pool = pool
        self.worker = worker or IndexWorker()
        self.max_bytes = max_bytes
        self.budget = budget
        self.bytes = 0
        self._entries: OrderedDict[Key, tuple[SearchIndex, int]] = OrderedDict()
        self._refused: OrderedDict[Key, str] = OrderedDict()
        self._building: dict[Key, asyncio.Future[SearchIndex]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    async def get(self, docs: Key, label: str = "custom apps") -> SearchIndex:
        """The index of `docs`, built off the loop if it is not cached; SearchBudgetExceeded if the
        catalog cannot be indexed within its budget."""
        entry = self._entries.get(docs)
        if entry is not None:
            self._entries.move_to_end(docs)
            return entry[0]
        refused = self._refused.get(docs)
        if refused is not None:
            raise SearchBudgetExceeded(refused)
        building = self._building.get(docs)
        if building is None:
            building = asyncio.ensure_future(self.pool.run(self.worker.build, docs, self.budget, label))
            self._building[docs] = building
            building.add_done_callback(lambda done: self._built(docs, done))
        return await asyncio.shield(building)

    def _built(self, docs: Key, done: asyncio.Future[SearchIndex]) -> None:
        self._building.pop(docs, None)
        if done.cancelled():
            return
        error = done.exception()
        if isinstance(error, SearchBudgetExceeded):
            self._refused[docs] = str(error)
            while len(self._refused) > _REFUSALS:
                self._refused.popitem(last=False)
            return
        if error is not None:
            return
        index = done.result()
        size = index.nbytes
        if size > self.max_bytes:
            return  # used by the searches that waited for it, never kept
        self._entries[docs] = (index, size)
        self.bytes += size
        while self.bytes > self.max_bytes:
            _, (_, freed) = self._entries.popitem(last=False)
            self.bytes -= freed
