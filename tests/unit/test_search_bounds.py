"""Search that no catalog can stall (issue 24 item 4): bounded words, a bounded prebuilt typo index,
builds off the event loop within a budget, and one memory budget for cached custom indexes."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import random
import signal
import time

import pytest
from workbench.engine import search
from workbench.engine.blocking import BlockingPool
from workbench.engine.index_cache import IN_PROCESS_TOOLS, IndexCache
from workbench.engine.index_worker import IndexWorker
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


def _realistic(n: int) -> list[SearchDoc]:
    """Tools as real ones read: a name `<integration>_<verb>_<object>`, 40-60 word descriptions
    with camelCase and snake_case identifiers in them, arguments with names and descriptions."""
    rng = random.Random(n)
    words = [_word(rng.randint(3, 9), seed) for seed in range(600)]
    verbs = ["get", "list", "create", "update", "delete", "search", "send"]
    out = []
    for i in range(n):
        text = rng.sample(words, rng.randint(40, 60))
        text.insert(5, rng.choice(words) + rng.choice(words).title())
        text.insert(9, f"{rng.choice(words)}_{rng.choice(words)}")
        arguments = " ".join(f"{rng.choice(words)}Id {' '.join(rng.sample(words, 5))}" for _ in range(4))
        out.append(
            SearchDoc(
                f"app{i // 20}_{rng.choice(verbs)}_{rng.choice(words)}",
                " ".join(text) + ".",
                f"app{i // 20}",
                arguments=arguments,
            )
        )
    return out


def _catalog(n: int, seed: int) -> tuple[SearchDoc, ...]:
    return tuple(
        SearchDoc(f"app{seed}_get_{i}", f"Get the {_word(7, seed * 1000 + i)} record.", f"app{seed}")
        for i in range(n)
    )


async def test_custom_indexes_build_in_another_process_once_and_stay_within_the_memory_budget() -> None:
    pool = BlockingPool(2, "test_index")
    worker = IndexWorker()
    cache = IndexCache(pool, max_bytes=10**9, worker=worker, in_process_tools=0)
    first = _catalog(50, 1)
    a, b = await asyncio.gather(cache.get(first), cache.get(first))
    assert a is b and worker.answered == 1  # concurrent searches share one build
    assert worker._child is not None and worker._child.pid != os.getpid()  # built by the child
    assert await cache.get(first) is a and worker.answered == 1
    assert [h.doc.name for h in a.search("get record", 3)] == [
        h.doc.name for h in SearchIndex(first).search("get record", 3)
    ]

    one = SearchIndex(_catalog(50, 2)).nbytes
    small = IndexCache(pool, max_bytes=int(one * 2.5), worker=worker, in_process_tools=0)
    for seed in range(2, 7):
        await small.get(_catalog(50, seed))
    assert small.bytes <= small.max_bytes and len(small) == 2  # least recently used went first
    assert (await small.get(_catalog(50, 6))).docs[0].name == "app6_get_0"
    worker.close()


def test_the_child_indexes_a_catalog_exactly_as_this_process_does_whatever_its_text_holds() -> None:
    # The child is sent each tool's own strings: NULs, other scripts and empty fields arrive as
    # they are, and the index it builds is the one this process would have built.
    docs = [
        SearchDoc(
            "app_get_a\0b",
            "Get the r\u00e9sum\u00e9\0 of a \u65e5\u672c\u8a9e user.",
            "app",
            "cv\0",
            "id\0 the id",
        ),
        SearchDoc("app_list_things", "", "app", "", ""),
        SearchDoc("app_send_x", "Send\0\0 x \u2014 \u201cnow\u201d", "app\0", "k", "to \0 whom"),
    ] * 3
    worker = IndexWorker()
    built = worker.build(docs, BuildBudget())
    assert worker.answered == 1
    here = SearchIndex(docs)
    assert built.docs == docs and built._vocab == here._vocab
    assert all(built._posting(t) == here._posting(t) for t in here._vocab)
    # Each written word's tools (laid out in the order a set of words gives, which differs by process).
    assert sorted(built._written_at) == sorted(here._written_at)
    assert all(built._written_docs(w) == here._written_docs(w) for w in here._written_at)
    assert (built._prior, built._by_integration) == (here._prior, here._by_integration)
    assert (built._typo_terms, built._typo) == (here._typo_terms, here._typo)
    worker.close()


async def test_a_small_catalog_is_indexed_without_starting_the_child_and_a_larger_one_in_it() -> None:
    # An instance's first custom search does not wait for a new interpreter: up to
    # IN_PROCESS_TOOLS tools are indexed on the pool thread, within the same budget.
    worker = IndexWorker()
    cache = IndexCache(BlockingPool(2, "test_index"), max_bytes=10**9, worker=worker)
    small = _catalog(IN_PROCESS_TOOLS, 1)
    index = await cache.get(small)
    assert worker._child is None and worker.answered == 0
    assert [(h.doc, h.score) for h in index.search("get record", 3)] == [
        (h.doc, h.score) for h in SearchIndex(small).search("get record", 3)
    ]
    larger = _catalog(IN_PROCESS_TOOLS + 1, 2)
    assert (await cache.get(larger)).search("get record", 1)[0].doc.integration == "app2"
    assert worker._child is not None and worker.answered == 1
    over = IndexCache(
        BlockingPool(1, "test_index"), budget=BuildBudget(tools=10, cpu_seconds=0.0), worker=worker
    )
    with pytest.raises(SearchBudgetExceeded, match="my apps: indexing took more than its 0 s budget"):
        await over.get(_catalog(10, 3), "my apps")  # in process, the same budget and the same error
    worker.close()


async def test_a_refused_catalog_is_remembered_and_the_cache_goes_on() -> None:
    worker = IndexWorker()
    cache = IndexCache(BlockingPool(1, "test_index"), budget=BuildBudget(tools=10), worker=worker)
    for _ in range(2):
        with pytest.raises(SearchBudgetExceeded, match="more than 10 tools"):
            await cache.get(_catalog(11, 1))
    assert (await cache.get(_catalog(10, 2))).search("get record", 1)
    worker.close()


def _hostile(n: int) -> tuple[SearchDoc, ...]:
    """Tools of unique long camelCase identifiers and argument names: a vocabulary as large as the
    text, the catalog that costs an index the most memory per byte."""
    rng = random.Random(11)

    def ident() -> str:
        return "".join("".join(rng.choices(LETTERS, k=6)).title() for _ in range(5))

    return tuple(
        SearchDoc(f"x_get_{i}", " ".join(ident() for _ in range(50)), "x", arguments=_word(24 * 60, i))
        for i in range(n)
    )


async def test_a_hostile_catalog_fails_that_catalog_while_another_users_search_answers() -> None:
    pool = BlockingPool(4, "test_index")
    worker = IndexWorker(memory_mb=24)  # a child that may grow 24 MB: this catalog needs more
    hostile = IndexCache(pool, budget=BuildBudget(tools=5_000, cpu_seconds=60), worker=worker)
    shared = SearchIndex(DOCS)  # another user's search: the shared catalog, already loaded

    async def other_user() -> list[str]:
        await asyncio.sleep(0)
        return [h.doc.name for h in shared.search("send a message", 1)]

    refused, answered = await asyncio.gather(
        hostile.get(_hostile(3_000), "my apps"), other_user(), return_exceptions=True
    )
    assert isinstance(refused, SearchBudgetExceeded)
    assert (
        str(refused)
        == "my apps: indexing needed more memory than its budget; its tools are left out of search"
    )
    assert answered == ["chat_send_message"]
    # The child went with its memory; the next catalog gets a new one, and this process goes on.
    assert (await hostile.get(_catalog(20, 3))).search("get record", 1)[0].doc.integration == "app3"
    with pytest.raises(SearchBudgetExceeded, match="needed more memory"):  # remembered, not rebuilt
        await hostile.get(_hostile(3_000), "my apps")
    worker.close()


async def test_a_child_that_does_not_answer_in_time_fails_that_catalog_and_is_replaced() -> None:
    pool = BlockingPool(1, "test_index")
    worker = IndexWorker()
    budget = BuildBudget(tools=100, cpu_seconds=0.1)  # the parent waits wall_seconds(budget): 2.3 s
    assert worker.build(_catalog(5, 1), budget).search("get record", 1)
    assert worker._child is not None
    stuck = worker._child.pid
    os.kill(stuck, signal.SIGSTOP)  # a child that never answers (stopped, as if starved)
    try:
        with pytest.raises(SearchBudgetExceeded, match="my apps: indexing took longer than its time budget"):
            await pool.run(worker.build, _catalog(5, 2), budget, "my apps")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(stuck, signal.SIGCONT)
    assert (await pool.run(worker.build, _catalog(5, 3), budget)).docs[0].name == "app3_get_0"
    assert worker._child is not None and worker._child.pid != stuck
    worker.close()


@pytest.mark.parametrize("load", ["prebuilt", "worker"])
def test_an_index_loaded_or_built_elsewhere_answers_as_a_fresh_build(load: str) -> None:
    docs = _realistic(400)
    fresh = SearchIndex(docs)
    if load == "prebuilt":
        other = SearchIndex.from_bytes(fresh.to_bytes())
    else:
        worker = IndexWorker()
        other = worker.build(docs, BuildBudget())
        worker.close()
    assert other._at == fresh._at and other._vocab == fresh._vocab and other._typo == fresh._typo
    rng = random.Random(4)
    for doc in rng.sample(docs, 40):
        words = doc.description.lower().rstrip(".").split()
        for query in (" ".join(rng.sample(words, 3)), doc.name.replace("_", " "), words[0][:-1] + " zzqx"):
            assert [(h.doc, h.score, h.named) for h in other.search(query, 10)] == [
                (h.doc, h.score, h.named) for h in fresh.search(query, 10)
            ]


@pytest.mark.parametrize("arrays", [False, True])
def test_a_large_index_answers_the_same_scored_by_arrays_or_by_dicts(
    arrays: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.engine import search

    if arrays:
        pytest.importorskip("numpy")
    docs = _realistic(2_100)  # over the size at which numpy scores, when installed
    dicts = SearchIndex(docs)
    monkeypatch.setattr(search, "_NUMPY_DOCS", 0 if arrays else 10**9)
    other = SearchIndex(docs)
    other.prepare()
    rng = random.Random(8)
    queries = ["app3 get", "app7 list records"]  # a named integration ranks first
    # symptoms, read as actions that count only where they are the tool's action
    queries += ["the app3 record is out of date now", "nobody is working on the app5 item, take it over"]
    queries += ["the customer was charged twice and the app2 invoice is wrong"]
    for doc in rng.sample(docs, 60):
        words = doc.description.lower().rstrip(".").split()
        queries += [" ".join(rng.sample(words, 4)), words[1][:-1] + " " + words[2]]
    for query in queries:
        for limit in (1, 10, 300):
            got = [(h.doc, h.score, h.named) for h in other.search(query, limit)]
            monkeypatch.setattr(search, "_NUMPY_DOCS", 10**9)
            assert got == [(h.doc, h.score, h.named) for h in dicts.search(query, limit)], query
            monkeypatch.setattr(search, "_NUMPY_DOCS", 0 if arrays else 10**9)


def test_a_catalog_with_nul_characters_indexes_in_the_worker_as_in_process() -> None:
    docs = [*DOCS, SearchDoc("x_get_thing", "Get the\0thing\0quickly.", "x", arguments="thing\0id the id")]
    worker = IndexWorker()
    built = worker.build(docs, BuildBudget())
    worker.close()
    fresh = SearchIndex(docs)
    assert built.docs == docs  # the caller's documents, as they were
    for query in ("get thing", "thing id", "quickly"):
        assert [(h.doc, h.score) for h in built.search(query, 3)] == [
            (h.doc, h.score) for h in fresh.search(query, 3)
        ]


def test_the_typo_index_has_an_entry_budget_spent_on_the_words_of_many_tools_first() -> None:
    # 2,000 tools of unique identifiers beside a few common words: the typo index stays within its
    # budget, and what it covers first are the words many tools share (and their two-slip forms).
    rng = random.Random(4)
    common = "invoice customer subscription refund payment"
    docs = [
        SearchDoc(
            f"billing_get_{i}",
            f"Get the {common.split()[i % 5]} {' '.join(_word(rng.randint(9, 20), i * 100 + k) for k in range(40))}",
            "billing",
            arguments=" ".join(_word(12, -i * 100 - k) for k in range(20)),
        )
        for i in range(2_000)
    ]
    index = SearchIndex(docs)
    assert len(index._typo) <= search._TYPO_ENTRIES
    assert {"invoice", "customer", "subscription", "refund", "payment"} <= set(index._typo_terms)
    assert index._corrections("subscirption") == ["subscription"]  # one slip
    assert index._corrections("subscirptoin") == ["subscription"]  # two, in a common long word
    assert index.search("get the subscirptoin", 1)[0].doc.description.startswith("Get the subscription")


def test_a_catalogs_every_word_is_in_its_typo_index_while_the_budget_allows() -> None:
    # Every word, but a single tool's camelCase identifiers as whole words (their parts are in).
    docs = _realistic(200)
    index = SearchIndex(docs)
    eligible = {t for t in index._at if 3 <= len(t) <= 24 and t.isalpha() and t.isascii()}
    identifiers = {
        term
        for d in docs
        for w in (d.description + " " + d.arguments).rstrip(".").split()
        if w[1:] != w[1:].lower()
        for term in search._plain_terms(w.lower())
        if index._doc_count(term) == 1
    }
    assert identifiers and identifiers <= eligible
    assert eligible - identifiers <= set(index._typo_terms)
    assert not identifiers & set(index._typo_terms)
    assert len(index._typo) < search._TYPO_ENTRIES


def test_an_identifiers_whole_word_is_corrected_only_when_many_tools_have_it() -> None:
    # A single tool's identifier is found through its parts, a slip in them corrected; an
    # identifier many tools share is corrected as the word it is too.
    docs = [
        SearchDoc("crm_get_lead", "Get a lead by its leadIdentifier.", "crm"),
        *(SearchDoc(f"crm_get_{i}", f"Get record {i} by its pageCursor.", "crm") for i in range(3)),
        SearchDoc("crm_list_owners", "List the owners of an account.", "crm"),
    ]
    index = SearchIndex(docs)
    assert "leadidentifier" in index._at and "leadidentifier" not in index._typo_terms
    assert "identifier" in index._typo_terms and "pagecursor" in index._typo_terms
    assert index._corrections("leadidentifer") == []
    assert index._corrections("pagecurosr") == ["pagecursor"]
    assert index.search("lead identifer", 1)[0].doc.name == "crm_get_lead"
    assert index.search("leadIdentifer", 1)[0].doc.name == "crm_get_lead"


def test_no_full_garbage_collection_starts_while_an_index_is_built_or_loaded() -> None:
    # A full collection holds the GIL over the whole process (the event loop waits); an index's
    # build and a prebuilt index's load make thousands of objects that stay, which would set one off.
    docs = _realistic(1_500)
    data = SearchIndex(docs).to_bytes()
    full: list[str] = []
    inside = ""

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2 and inside:
            full.append(inside)

    saved, enabled = gc.get_threshold(), gc.isenabled()
    gc.enable()
    gc.collect()
    gc.freeze()  # the test process's own objects out of the way: a small heap, as in a child
    gc.collect()  # and the collector's count of long-lived objects with them (it gates full ones)
    gc.callbacks.append(note)
    gc.set_threshold(50, 1, 1)  # a full collection every few dozen allocations, unless deferred
    try:
        inside = "build"
        SearchIndex(docs)
        inside = "load"
        loaded = SearchIndex.from_bytes(data)
        inside = ""
        _ = [[n] for n in range(2_000)]  # outside: full collections run as configured
        inside = "after"
        _ = [[n] for n in range(2_000)]
    finally:
        inside = ""
        gc.callbacks.remove(note)
        gc.set_threshold(*saved)
        gc.unfreeze()
        if not enabled:
            gc.disable()
    assert "build" not in full and "load" not in full
    assert "after" in full  # the thresholds are back: the test would see a full collection
    assert loaded.search("get", 1)
