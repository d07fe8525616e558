"""Would a static embedding model earn its place beside search_tools' lexical ranking? One run:

- quality: Recall@1 / Recall@5 on the same sets as bench/search.py (BFCL and its typo variant, the
  catalog query set and its mechanical typos) for the lexical engine alone, WordLlama alone, and
  the two fused (cosine + the lexical score relative to the top hit, over both top 50s). The
  tools' embeddings are computed up front, as a build step would; queries are embedded at run time.
- cost: what the model adds to a deployment (installed size of wordllama and what only it needs)
  and to a cold start (import and load, CPU time, in a fresh interpreter).

WordLlama ships its weights and tokenizer inside its wheel. Its 0.4.0 loader still looks for the
tokenizer under a folder name the wheel does not use and then tries the network, so this loads the
two files from the wheel directly.

    uv run --group bench python bench/search_hybrid.py
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np
from search import TYPO_SEED, Query, load_bfcl, typo_variant
from search_queries import CLEAN, FRESH, TYPO
from workbench.composition import build_registry
from workbench.engine.search import SearchDoc, SearchIndex, catalog_docs

FUSION_WEIGHT = 0.5  # cosine similarity's weight beside the lexical score (top hit = 1)
DEPTH = 50

LOAD = """
import time
c0 = time.process_time()
import numpy
c1 = time.process_time()
from pathlib import Path
import wordllama
from safetensors import safe_open
from wordllama import WordLlama
from wordllama.inference import WordLlamaInference
c2 = time.process_time()
root = Path(wordllama.__file__).parent
tokenizer = WordLlama.load_tokenizer(root / "tokenizers" / "l2_supercat_tokenizer_config.json", hf_model_id=None)
with safe_open(root / "weights" / "l2_supercat_256.safetensors", framework="np", device="cpu") as f:
    table = f.get_tensor("embedding.weight")
model = WordLlamaInference(table, tokenizer)
c3 = time.process_time()
model.embed(["send a slack message"], norm=True)
c4 = time.process_time()
"""


def load_model() -> Any:
    namespace: dict[str, Any] = {}
    exec(LOAD, namespace)
    return namespace["model"]


def cold_start_ms() -> dict[str, float]:
    """Import and load in a fresh interpreter (CPU ms), best of three."""
    report = LOAD + "\nprint(__import__('json').dumps([c1 - c0, c2 - c1, c3 - c2, c4 - c3]))"
    runs = [json.loads(subprocess.check_output([sys.executable, "-c", report], text=True)) for _ in range(3)]
    best = min(runs, key=sum)
    return dict(
        zip(("numpy import", "wordllama import", "tokenizer+weights load", "first query"), best, strict=True)
    )


def installed_mb(*dists: str) -> float:
    total = 0
    for name in dists:
        for f in metadata.distribution(name).files or []:
            path = Path(str(f.locate()))
            if path.is_file():
                total += path.stat().st_size
    return total / 1e6


def evaluate(docs: list[SearchDoc], sets: Sequence[tuple[str, Sequence[Query]]], model: Any) -> None:
    index = SearchIndex(docs)
    names = [d.name for d in docs]
    doc_vectors = model.embed([f"{d.name.replace('_', ' ')}: {d.description}" for d in docs], norm=True)
    for label, queries in sets:
        query_vectors = model.embed([q for q, _ in queries], norm=True)
        ranks: dict[str, list[int | None]] = {"lexical": [], "embedding": [], "hybrid": []}
        for (query, gold), qv in zip(queries, query_vectors, strict=True):
            sims = doc_vectors @ qv
            hits = index.search(query, DEPTH)
            lexical = [h.doc.name for h in hits]
            nearest = [names[i] for i in np.argsort(-sims)[:DEPTH]]
            top = hits[0].score if hits else 1.0
            fused = {h.doc.name: h.score / top for h in hits}
            for i, name in enumerate(names):
                if name in fused or name in nearest:
                    fused[name] = fused.get(name, 0.0) + FUSION_WEIGHT * float(sims[i])
            hybrid = sorted(fused, key=lambda n: -fused[n])
            for key, ranked in (("lexical", lexical), ("embedding", nearest), ("hybrid", hybrid)):
                ranks[key].append(ranked.index(gold) if gold in ranked else None)
        cells = []
        for ranked_list in ranks.values():
            r1 = sum(r == 0 for r in ranked_list) / len(ranked_list)
            r5 = sum(r is not None and r < 5 for r in ranked_list) / len(ranked_list)
            cells.append(f"{r1:.3f} {r5:.3f}")
        print(f"  {label:30s} {len(queries):4d}   " + "      ".join(cells))


def main() -> None:
    model = load_model()
    print(f"  {'set':30s} {'n':>4s}   lexical R@1 R@5  embedding R@1 R@5  hybrid R@1 R@5")
    pool, questions = load_bfcl()
    evaluate(pool, [("BFCL", questions), ("BFCL typo variant", typo_variant(questions, TYPO_SEED))], model)
    docs = catalog_docs(build_registry())
    known = {d.name for d in docs}
    fresh = [q for group in FRESH.values() for q in group]
    everything = [q for q in CLEAN + TYPO + fresh if q[1] in known]
    mechanical = typo_variant([q for q in CLEAN + fresh if q[1] in known], TYPO_SEED, rate=0.0)
    evaluate(docs, [("catalog, all queries", everything), ("catalog mechanical typo", mechanical)], model)

    print("\ncost of the model at run time:")
    size = installed_mb("wordllama", "numpy", "tokenizers", "safetensors", "toml")
    print(f"  installed: {size:.0f} MB (wordllama with numpy, tokenizers, safetensors, toml)")
    print(f"  runtime dependencies today: {installed_mb(*runtime_dists()):.0f} MB")
    cold = cold_start_ms()
    print(
        "  cold start, CPU: "
        + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in cold.items())
        + f"; total {sum(cold.values()) * 1000:.0f} ms"
    )


def runtime_dists() -> list[str]:
    """The project's runtime dependency closure (what `make serve` installs), by distribution."""
    seen: set[str] = set()
    todo = ["workbench-gateway"]
    while todo:
        name = todo.pop()
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        key = dist.metadata["Name"].lower()
        if key in seen:
            continue
        seen.add(key)
        for req in dist.requires or []:
            if "extra ==" in req:
                continue
            match = re.match(r"[A-Za-z0-9._-]+", req)
            if match:
                todo.append(match.group())
    seen.discard("workbench-gateway")
    return sorted(seen)


if __name__ == "__main__":
    main()
