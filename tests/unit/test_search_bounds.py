"""Search that no catalog can stall (issue 24 item 4): bounded words, a bounded prebuilt typo index,
builds off the event loop within a budget, and one memory budget for cached custom indexes."""

from __future__ import annotations

import asyncio
import random
import threading
import time

import pytest
from workbench.engine.blocking import BlockingPool
from workbench.engine.index_cache import IndexCache
from workbench.engine.search import BuildBudget, SearchBudgetExceeded, SearchDoc, SearchIndex

LETTERS = "abcdefghijklmnopqrstuvwxyz"
DOCS = [
    SearchDoc("tracker_list_issues", "List issues in a project, newest first.", "tracker"),
    SearchDoc("tracker_create_issue", "Create a new issue in a project.", "tracker"),
    SearchDoc("chat_send_message", "Send a message to a channel.", "chat"),
]


def _word(n: int, seed: int = 1) -> str:
    return "".join(random.Random(seed).choices(LETTERS, k=n))


@pytest.mark.parametrize("length", [33, 1_000, 100_000])
def test_a_run_of_letters_longer_than_a_word_is_neither_indexed_nor_searched(length: int) -> None:
    long = _word(length)
    index = SearchIndex([*DOCS, SearchDoc("x_get_thing", f"Get the thing {long} quickly.", "x")])
    assert long not in index._at and not any(len(t) > 32 for t in index._at)
    assert not any(len(t) > 32 for t in index._typo_terms)
    assert index.search(long, 5) == []  # nothing to match, and no typo work on it
    assert index.search(f"get thing {long}", 1)[0].doc.name == "x_get_thing"


def test_a_hostile_catalog_builds_in_bounded_time_and_memory() -> None:
    # 1,000 tools of unique 30-letter camelCase identifiers and 24-letter argument names: the
    # vocabulary that made the old lazily built typo index take 52 s and 1.5 GiB.
    rng = random.Random(3)

    def ident() -> str:
        return "".join("".join(rng.choices(LETTERS, k=6)).title() for _ in range(5))

    docs = [
        SearchDoc(f"x_get_{i}", " ".join(ident() for _ in range(50)), "x", arguments=_word(24 * 60, i))
        for i in range(1_000)
    ]
    start = time.process_time()
    index = SearchIndex(docs, BuildBudget(tools=5_000, cpu_seconds=20))
    assert time.process_time() - start < 20
    assert len(index._typo_terms) <= 8_000 + 200  # the bound, plus the synonym words
    assert len(index._typo) <= 33 * len(index._typo_terms)
    index.search("get qwertyuiopasdfgh", 5)  # an unknown long word: bounded candidate lookups


def test_the_typo_index_is_part_of_the_prebuilt_index() -> None:
    index = SearchIndex(DOCS)
    loaded = SearchIndex.from_bytes(index.to_bytes())
    assert loaded._typo_terms == index._typo_terms and loaded._typo == index._typo
    for query in ("lsit isues", "craete isue", "sned mesage"):
        assert [(h.doc.name, h.score) for h in loaded.search(query, 3)] == [
            (h.doc.name, h.score) for h in index.search(query, 3)
        ]
    assert loaded.search("craete isue", 1)[0].doc.name == "tracker_create_issue"


def test_a_build_over_its_budget_fails_that_catalog_with_a_clear_error() -> None:
    with pytest.raises(SearchBudgetExceeded, match="more than 2 tools"):
        SearchIndex(DOCS, BuildBudget(tools=2), label="my apps")
    many = [SearchDoc(f"x_get_{i}", f"Get {_word(8, i)} {_word(9, -i)}.", "x") for i in range(3_000)]
    with pytest.raises(SearchBudgetExceeded, match=r"my apps: indexing took more than its 0\.001 s budget"):
        SearchIndex(many, BuildBudget(cpu_seconds=0.001), label="my apps")


def _catalog(n: int, seed: int) -> tuple[SearchDoc, ...]:
    return tuple(
        SearchDoc(f"app{seed}_get_{i}", f"Get the {_word(7, seed * 1000 + i)} record.", f"app{seed}")
        for i in range(n)
    )


async def test_custom_indexes_build_off_the_loop_once_and_stay_within_the_memory_budget() -> None:
    pool = BlockingPool(2, "test_index")
    built_on: list[str] = []
    original = SearchIndex.__init__

    def spy(self: SearchIndex, *args: object, **kwargs: object) -> None:
        built_on.append(threading.current_thread().name)
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    cache = IndexCache(pool, max_bytes=10**9)
    SearchIndex.__init__ = spy  # type: ignore[method-assign]
    try:
        first = _catalog(50, 1)
        a, b = await asyncio.gather(cache.get(first), cache.get(first))
        assert a is b and len(built_on) == 1  # concurrent searches share one build
        assert built_on[0] != threading.current_thread().name  # not the event loop's thread
        assert await cache.get(first) is a and len(built_on) == 1
    finally:
        SearchIndex.__init__ = original  # type: ignore[method-assign]

    one = SearchIndex(_catalog(50, 2)).nbytes
    small = IndexCache(pool, max_bytes=int(one * 2.5))
    for seed in range(2, 7):
        await small.get(_catalog(50, seed))
    assert small.bytes <= small.max_bytes and len(small) == 2  # least recently used went first
    assert (await small.get(_catalog(50, 6))).docs[0].name == "app6_get_0"


async def test_a_refused_catalog_is_remembered_and_the_cache_goes_on() -> None:
    cache = IndexCache(BlockingPool(1, "test_index"), budget=BuildBudget(tools=10))
    for _ in range(2):
        with pytest.raises(SearchBudgetExceeded, match="more than 10 tools"):
            await cache.get(_catalog(11, 1))
    assert (await cache.get(_catalog(10, 2))).search("get record", 1)
