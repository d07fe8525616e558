"""Custom catalogs' search indexes built in a child process (guard/child_worker.py), within a time
and a memory limit.

A build on a pool thread keeps the event loop free only in name: it holds the GIL for most of its
run, so every other request of the instance waits behind it (0.6-5 s while 20,000 tools index), and
everything it allocates stays in the serving process. In the child, a catalog that needs more memory
than `memory_mb` fails with SearchBudgetExceeded, never the serving process; its CPU time is checked
by the build itself (BuildBudget), and the parent gives up on an answer after `wall_seconds(budget)`.
The parent then rebuilds the index object from the child's arrays with a few C-level calls. Where no
child can run, the build runs on the calling thread, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.engine.search import BuildBudget, SearchBudgetExceeded, SearchDoc, SearchIndex
from workbench.guard.child_worker import ChildFailed, ChildWorker, Refused, serve

__all__ = ["IndexWorker", "main"]

_MEMORY_MB = 256  # the child's address space may grow this much past what it holds at start
_KEEP_MB = 96  # a child whose resident memory passed this after a build exits (it is restarted)
_FAILURES = {
    "slow": "indexing took longer than its time budget",
    "stopped": "the indexing process stopped (over its memory budget)",
    "garbled": "the indexing process answered nonsense",
}


def wall_seconds(budget: BuildBudget) -> float:
    """How long the parent waits for one build: the CPU budget, room for a busy machine, start-up."""
    return 2.0 + 3.0 * budget.cpu_seconds


class IndexWorker(ChildWorker):
    """The child that builds search indexes, one at a time."""

    module = "workbench.engine.index_worker"

    def __init__(self, memory_mb: int = _MEMORY_MB, keep_mb: int = _KEEP_MB) -> None:
        super().__init__(memory_mb=memory_mb, keep_mb=keep_mb, on_unavailable=_unavailable)

    def build(self, docs: Sequence[SearchDoc], budget: BuildBudget, label: str = "catalog") -> SearchIndex:
        """The index of `docs` (blocking: call it off the event loop); SearchBudgetExceeded when
        the catalog is over its budget in tools, CPU time, wall time or memory."""
        docs = list(docs)
        if len(docs) > budget.tools:  # refused without starting anything
            raise SearchBudgetExceeded(
                f"{label}: more than {budget.tools} tools to index; its tools are left out of search"
            )
        try:
            answer = self.ask(
                lambda: (_columns(docs), budget.tools, budget.cpu_seconds, label), wall_seconds(budget)
            )
        except ChildFailed as failed:
            raise SearchBudgetExceeded(
                f"{label}: {_FAILURES[failed.why]}; its tools are left out of search"
            ) from None
        if answer is None:
            return SearchIndex(docs, budget, label)
        status, payload = answer
        if status == "refused":
            raise SearchBudgetExceeded(payload)
        if status == "memory":
            raise SearchBudgetExceeded(
                f"{label}: indexing needed more memory than its budget; its tools are left out of search"
            )
        if status != "ok":
            raise SearchBudgetExceeded(
                f"{label}: indexing failed ({payload}); its tools are left out of search"
            )
        return SearchIndex.from_state(docs, payload)


def _unavailable(error: str) -> None:
    from workbench.observability import log_event

    log_event("search_index_worker_unavailable", error=error)


def _columns(docs: Sequence[SearchDoc]) -> tuple[list[str], ...]:
    """The documents as five lists of their own strings, one per field: marshalled, the request
    is the only copy of the catalog's text the parent makes (joined columns were a second one)."""
    return (
        [d.name for d in docs],
        [d.description for d in docs],
        [d.integration for d in docs],
        [d.keywords for d in docs],
        [d.arguments for d in docs],
    )


def _documents(columns: tuple[list[str], ...]) -> list[SearchDoc]:
    return list(map(SearchDoc, *columns))


# -- in the child ----------------------------------------------------------------------------------


def _build(request: Any) -> tuple[Any, ...]:
    columns, tools, cpu_seconds, label = request
    try:
        return tuple(
            SearchIndex(_documents(columns), BuildBudget(tools=tools, cpu_seconds=cpu_seconds), label).state()
        )
    except SearchBudgetExceeded as exc:
        raise Refused(str(exc)) from None


def main(argv: list[str] | None = None) -> None:
    """The child: build indexes from stdin until it closes, answer each on stdout."""
    serve(_build, argv=argv, collect=False)  # no cycles in a build: the collector would only cost time


if __name__ == "__main__":
    main()
