"""Tool search: words in any order, typo-tolerant, common synonyms, best match first.

The index is built once per instance. Terms come from the tool name (weighted most), its
integration and its description. A query word matches an index term exactly, through a synonym,
as a prefix, or within a small edit distance (found through a deletion index, so lookup cost does
not grow with the vocabulary).
"""

from __future__ import annotations

import bisect
import math
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["SearchDoc", "SearchHit", "SearchIndex"]

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "to",
        "of",
        "in",
        "on",
        "for",
        "and",
        "or",
        "with",
        "by",
        "from",
        "my",
        "me",
        "i",
        "is",
        "are",
        "be",
        "it",
        "this",
        "that",
        "what",
        "do",
        "does",
        "can",
        "how",
        "all",
        "some",
        "any",
        "into",
        "at",
        "as",
        "via",
        "using",
        "use",
        "want",
        "need",
        "please",
    ]
)

# Groups of interchangeable words; every word maps to the group's canonical term.
_SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    ("pr", "prs", "pull", "pulls", "pullrequest", "mr", "merge"),
    ("issue", "issues", "ticket", "tickets", "bug", "bugs", "task", "tasks"),
    ("message", "messages", "send", "post", "chat", "dm", "notify", "say"),
    ("email", "emails", "mail", "gmail", "inbox"),
    ("create", "new", "add", "make", "open", "start", "write", "schedule", "book"),
    ("list", "show", "get", "find", "fetch", "view", "browse", "all", "lookup"),
    ("search", "query", "find", "lookup", "filter"),
    ("delete", "remove", "erase", "drop", "trash", "destroy"),
    ("update", "edit", "modify", "change", "patch", "rename", "set"),
    ("file", "files", "document", "documents", "doc", "docs"),
    ("upload", "put", "store", "save"),
    ("download", "export", "csv", "dump"),
    ("repo", "repos", "repository", "repositories", "project"),
    ("comment", "comments", "reply", "replies", "note"),
    ("event", "events", "meeting", "meetings", "appointment", "calendar"),
    ("spreadsheet", "spreadsheets", "sheet", "sheets", "table", "tables", "rows", "row"),
    ("page", "pages", "wiki", "article"),
    ("contact", "contacts", "person", "people", "lead", "leads"),
    ("deal", "deals", "opportunity", "opportunities"),
    ("customer", "customers", "client", "clients"),
    ("invoice", "invoices", "bill", "billing"),
    ("payment", "payments", "charge", "charges"),
    ("user", "users", "member", "members", "account", "accounts"),
    ("channel", "channels", "room"),
    ("close", "closed", "resolve", "done", "finish"),
    ("record", "records", "entry", "entries", "item", "items"),
    ("note", "notes", "jot", "jots", "memo"),
    ("secret", "secrets", "vault", "password", "credential"),
    ("screenshot", "capture", "snapshot", "picture", "image"),
    ("navigate", "goto", "visit", "browse", "url", "website", "webpage"),
    ("branch", "branches"),
    ("commit", "commits"),
    ("label", "labels", "tag", "tags"),
    ("query", "sql", "chart", "dashboard"),
)

_SYN: dict[str, set[str]] = defaultdict(set)
for _group in _SYNONYM_GROUPS:
    for _w in _group:
        _SYN[_w].update(g for g in _group if g != _w)


def _tokens(text: str) -> list[str]:
    return [t for t in _WORD.findall(text.lower().replace("_", " ")) if t not in _STOP]


def _stem(word: str) -> str:
    for suffix in ("ies", "es", "s"):
        if len(word) > 4 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def _deletes(word: str, distance: int) -> set[str]:
    out = {word}
    frontier = {word}
    for _ in range(distance):
        nxt = set()
        for w in frontier:
            for i in range(len(w)):
                nxt.add(w[:i] + w[i + 1 :])
        out |= nxt
        frontier = nxt
    return out


def _edit_distance(a: str, b: str, limit: int) -> int:
    """Optimal string alignment distance (insert, delete, substitute, swap adjacent letters)."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], before[j - 2] + 1)
        before, prev = prev, cur
    return prev[-1]


@dataclass(frozen=True, slots=True)
class SearchDoc:
    name: str
    description: str
    integration: str


@dataclass(frozen=True, slots=True)
class SearchHit:
    doc: SearchDoc
    score: float


_FIELD_WEIGHT = {"name": 3.0, "integration": 2.0, "description": 1.0}


class SearchIndex:
    def __init__(self, docs: Iterable[SearchDoc]) -> None:
        self.docs: list[SearchDoc] = list(docs)
        self._postings: dict[str, dict[int, float]] = defaultdict(dict)
        self._deletes: dict[str, set[str]] = defaultdict(set)
        for i, doc in enumerate(self.docs):
            fields = {
                "name": _tokens(doc.name),
                "integration": _tokens(doc.integration),
                "description": _tokens(doc.description)[:40],
            }
            for field_name, toks in fields.items():
                for tok in toks:
                    term = _stem(tok)
                    weight = _FIELD_WEIGHT[field_name]
                    posting = self._postings[term]
                    posting[i] = max(posting.get(i, 0.0), weight)
        self._vocab = sorted(self._postings)  # for prefix lookups
        n = max(len(self.docs), 1)
        self._idf = {t: math.log(1 + n / len(p)) for t, p in self._postings.items()}
        # Fuzzy lookup covers index terms and the synonym vocabulary ("inbx" → "inbox" → email).
        for term in set(self._postings) | {_stem(w) for w in _SYN}:
            for d in _deletes(term, 1 if len(term) < 8 else 2):
                self._deletes[d].add(term)

    def _expand(self, word: str) -> dict[str, float]:
        """Index terms a query word may mean, with a match quality in (0, 1]."""
        stem = _stem(word)
        found: dict[str, float] = {}
        if stem in self._postings:
            found[stem] = 1.0
        for syn in _SYN.get(word, set()) | _SYN.get(stem, set()):
            s = _stem(syn)
            if s in self._postings:
                found.setdefault(s, 0.8)
        if len(stem) >= 3 and not found:
            at = bisect.bisect_right(self._vocab, stem)
            while at < len(self._vocab) and self._vocab[at].startswith(stem):
                found.setdefault(self._vocab[at], 0.7)
                at += 1
        if len(stem) >= 4:
            limit = 1 if len(stem) < 8 else 2
            candidates: set[str] = set()
            for d in _deletes(stem, limit):
                candidates |= self._deletes.get(d, set())
            for term in candidates:
                if term not in found and _edit_distance(stem, term, limit) <= limit:
                    if term in self._postings:
                        found[term] = 0.6
                    for syn in _SYN.get(term, set()) | _SYN.get(term + "s", set()):
                        s = _stem(syn)
                        if s in self._postings:
                            found.setdefault(s, 0.5)
        return found

    def search(self, query: str, limit: int = 10) -> list[SearchHit]:
        words = _tokens(query)
        if not words:
            return []
        scores: dict[int, float] = defaultdict(float)
        best_possible = 0.0
        for word in words:
            expansions = self._expand(word)
            if not expansions:
                continue
            # One weight per query word: a synonym or typo match must not outscore the exact word
            # merely because the synonym is rarer in the catalog.
            exact = _stem(word)
            idf = self._idf[exact] if exact in self._idf else max(self._idf[t] for t in expansions)
            per_doc: dict[int, float] = {}
            for term, quality in expansions.items():
                for doc, weight in self._postings[term].items():
                    value = quality * weight * idf
                    if value > per_doc.get(doc, 0.0):
                        per_doc[doc] = value
            for doc, value in per_doc.items():
                scores[doc] += value
            best_possible += _FIELD_WEIGHT["name"] * idf
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], len(self.docs[kv[0]].name), kv[0]))
        norm = best_possible or 1.0
        return [SearchHit(self.docs[i], round(min(s / norm, 1.0), 4)) for i, s in ranked[:limit]]
