"""search_tools quality and speed.

Quality on the real catalog: Recall@1, Recall@5 and MRR over the query set in
bench/search_queries.py (clean queries, hand-written typo queries, and a mechanical typo of
every clean query). Speed: p50/p99 latency per query for the real catalog and for synthetic
catalogs of growing size (up to 20,000 tools), measured in one run.

    uv run python bench/search.py
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from search_queries import CLEAN, TYPO
from workbench.composition import build_registry
from workbench.search import SearchDoc, SearchIndex


def typo(query: str, rng: random.Random) -> str:
    """Swap two adjacent letters in the longest word (a typical fat-finger typo)."""
    words = query.split()
    i = max(range(len(words)), key=lambda k: len(words[k]))
    w = words[i]
    if len(w) >= 4:
        j = rng.randrange(1, len(w) - 2)
        words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
    return " ".join(words)


def quality(index: SearchIndex, queries: list[tuple[str, str]]) -> tuple[float, float, float, list[str]]:
    r1 = r5 = rr = 0.0
    misses = []
    for query, expected in queries:
        names = [h.doc.name for h in index.search(query, 10)]
        if names[:1] == [expected]:
            r1 += 1
        if expected in names[:5]:
            r5 += 1
        else:
            misses.append(f"{query!r} -> {names[:3]} (want {expected})")
        if expected in names:
            rr += 1 / (names.index(expected) + 1)
    n = len(queries)
    return r1 / n, r5 / n, rr / n, misses


def latency(index: SearchIndex, queries: list[str]) -> tuple[float, float]:
    times = []
    for q in queries:
        t0 = time.perf_counter()
        index.search(q, 10)
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.99) - 1]


def synthetic(docs: list[SearchDoc], size: int, rng: random.Random) -> list[SearchDoc]:
    """Grow the catalog by recombining real vocabulary into new integrations and tools."""
    words = sorted({w for d in docs for w in d.description.lower().split() if w.isalpha() and len(w) > 3})
    out = list(docs)
    n = 0
    while len(out) < size:
        n += 1
        base = docs[n % len(docs)]
        integ = f"synth{n // 12}"
        verb, noun = rng.choice(words), rng.choice(words)
        out.append(
            SearchDoc(
                f"{integ}_{verb}_{noun}", f"{verb.title()} {noun} {' '.join(rng.sample(words, 6))}.", integ
            )
        )
        del base
    return out


def main() -> None:
    rng = random.Random(7)
    registry = build_registry()
    docs = [SearchDoc(t.name, t.description, t.integration) for t in registry.all_tools()]
    names = {d.name for d in docs}
    missing = sorted({t for _, t in CLEAN + TYPO if t not in names})
    if missing:
        print("query set names tools that do not exist:", missing)
    t0 = time.perf_counter()
    index = SearchIndex(docs)
    build_ms = (time.perf_counter() - t0) * 1000
    clean = [(q, t) for q, t in CLEAN if t in names]
    typos = [(q, t) for q, t in TYPO if t in names]
    mechanical = [(typo(q, rng), t) for q, t in clean]
    print(
        f"catalog: {len(docs)} tools in {len({d.integration for d in docs})} integrations; index built in {build_ms:.1f} ms"
    )
    print(f"queries: {len(clean)} clean, {len(typos)} hand-written typo, {len(mechanical)} mechanical typo")
    all_misses = []
    for label, qs in (("clean", clean), ("typo (hand)", typos), ("typo (mechanical)", mechanical)):
        r1, r5, mrr, misses = quality(index, qs)
        all_misses += misses
        print(f"  {label:18s} Recall@1 {r1:.3f}  Recall@5 {r5:.3f}  MRR {mrr:.3f}")
    query_texts = [q for q, _ in clean + typos + mechanical]
    print("latency per query (top 10):")
    p50, p99 = latency(index, query_texts * 3)
    print(f"  real catalog ({len(docs)} tools): p50 {p50:.3f} ms  p99 {p99:.3f} ms")
    for size in (2_000, 20_000):
        big_docs = synthetic(docs, size, rng)
        t0 = time.perf_counter()
        big = SearchIndex(big_docs)
        build = (time.perf_counter() - t0) * 1000
        p50, p99 = latency(big, query_texts)
        print(
            f"  synthetic {size:>6} tools: p50 {p50:.3f} ms  p99 {p99:.3f} ms  (index built in {build:.0f} ms)"
        )
    if "-v" in sys.argv:
        print("misses (not in top 5):", *all_misses, sep="\n  ")


if __name__ == "__main__":
    main()
