"""Custom-app catalogs' search indexes: built in another process, each within a build budget, and
kept within one memory budget for all of them.

A user's custom apps come back from discovery as the same catalog search after search (it is cached
for 10 minutes), so each distinct catalog is indexed once. The build runs in the index worker's
child process (engine/index_worker.py), awaited from a pool thread: it neither holds the event loop
nor the GIL, and what it allocates is not the serving process's. A build over its budget (too many
tools, too much CPU or wall time, more memory than the child may have) fails that catalog with
SearchBudgetExceeded, remembered so the next search does not pay for it again; the process and the
rest of the search go on. Concurrent searches over one catalog share one build.

A catalog of at most IN_PROCESS_TOOLS tools is indexed on the pool thread itself: its build is tens
of milliseconds whose C-level steps are each short, so the event loop keeps getting its turns
(another request waited at most 13 ms while 200 tools of unique long identifiers indexed, against
~7 ms for 200 ordinary ones), its memory is bounded (every field of a tool is capped: 200 tools of
distinct words with every field at its most grew the process 28 MB), and an instance's first custom
search does not wait for the index worker's child to start (~100 ms here, a new interpreter
importing the engine).

Where the semantic component is installed (engine/semantic.py), a catalog also gets vectors when it
is discovered: embedded in the background on the pool, batch by batch within their own budget
(semantic.DISCOVERED_BUDGET), never awaited by a search; `vectors` gives what is embedded so far.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import TYPE_CHECKING

from workbench.engine.index_worker import IndexWorker
from workbench.engine.search import BuildBudget, SearchBudgetExceeded, SearchDoc, SearchIndex

if TYPE_CHECKING:
    from workbench.engine.blocking import BlockingPool
    from workbench.engine.semantic import CatalogVectors, VectorStore

__all__ = ["CACHE_BYTES", "CUSTOM_BUDGET", "IN_PROCESS_TOOLS", "IndexCache"]

# One custom catalog: at most 5,000 tools and 2 s of CPU to index (bench/search_scale.py measures
# 1,000 realistic tools), and the index worker's memory cap. All cached catalogs together: at most
# 32 MB.
CUSTOM_BUDGET = BuildBudget(tools=5_000, cpu_seconds=2.0)
IN_PROCESS_TOOLS = 200
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
        in_process_tools: int = IN_PROCESS_TOOLS,
    ) -> None:
        self.pool = pool
        self.worker = worker or IndexWorker()
        self.in_process_tools = in_process_tools
        self.max_bytes = max_bytes
        self.budget = budget
        self.bytes = 0
        self._entries: OrderedDict[Key, tuple[SearchIndex, int]] = OrderedDict()
        self._refused: OrderedDict[Key, str] = OrderedDict()
        self._building: dict[Key, asyncio.Future[SearchIndex]] = {}
        self._store: VectorStore | None = None
        self._embedding: dict[Key, asyncio.Task[None]] = {}
        self._embedded: OrderedDict[Key, None] = OrderedDict()  # catalogs done (or over budget)

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
            building = asyncio.ensure_future(self.pool.run(self._build, docs, label))
            self._building[docs] = building
            building.add_done_callback(lambda done: self._built(docs, done))
        return await asyncio.shield(building)

    def _build(self, docs: Key, label: str) -> SearchIndex:
        if len(docs) <= self.in_process_tools:
            index = SearchIndex(docs, self.budget, label)
        else:
            index = self.worker.build(docs, self.budget, label)
        index.prepare()  # on this pool thread, not on the first search's event loop
        return index

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

    def vectors(self, docs: Key) -> CatalogVectors | None:
        """The catalog's semantic vectors embedded so far (None without the component or before any);
        the first call for a catalog starts embedding it in the background."""
        from workbench.engine import semantic

        if not semantic.available():
            return None
        if self._store is None:
            self._store = semantic.VectorStore()
        if docs not in self._embedded and docs not in self._embedding:
            task = asyncio.ensure_future(self._embed(self._store, docs))
            self._embedding[docs] = task
            task.add_done_callback(lambda _: self._embedding.pop(docs, None))
        return self._store.vectors(docs)

    async def _embed(self, store: VectorStore, docs: Key) -> None:
        """Embed a catalog's tools in batches on the pool, within the store's budget."""
        from workbench.engine import semantic
        from workbench.observability import log_event

        todo = store.missing(docs)
        if len(docs) > store.budget.tools:
            log_event("search_vectors_refused", tools=len(docs), budget=store.budget.tools)
        spent = 0.0
        try:
            for start in range(0, len(todo), semantic.BATCH):
                if spent > store.budget.cpu_seconds:
                    log_event("search_vectors_refused", tools=len(docs), cpu_seconds=round(spent, 1))
                    break
                spent += await self.pool.run(store.embed, todo[start : start + semantic.BATCH])
        except Exception as e:  # the catalog stays lexical; the search goes on
            log_event("search_vectors_failed", error=f"{type(e).__name__}: {e}")
        self._embedded[docs] = None
        while len(self._embedded) > _REFUSALS:
            self._embedded.popitem(last=False)
