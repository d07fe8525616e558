"""Tool search: words in any order, typo-tolerant, a few synonyms, best match first.

Ranking is BM25F over six fields of a tool: the action of its name (the verb of
`<integration>_<verb>_<object>`), the rest of the name, its integration, its description, its
search keywords (the tool's and its integration's) and, at low weight, its arguments. A query word
matches an index term exactly (after light stemming), through a synonym or an everyday verb's
action at reduced weight, or, only when neither matches anything, as a prefix or within a small
edit distance (a deletion index, so the cost does not grow with the vocabulary). Request frames
("tell me", "could you") and values (ids, URLs) are left out of the query first.

The score is calibrated rather than relative: the top hit's score is the share of the query's
informative words (weighted by rarity) that it matches, and every other hit is scaled by its
ranking score against the top one. A query whose words match nothing useful gets a low top score.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import heapq
import itertools
import marshal
import math
import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from workbench.engine.registry import Registry

__all__ = ["SearchDoc", "SearchHit", "SearchIndex", "catalog_docs", "stem", "tokens"]


def _words_of(text: str) -> frozenset[str]:
    return frozenset(text.split())


# -- tokenising ----------------------------------------------------------------------------------

_ASCII_WORD = re.compile(r"[A-Za-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z]{2})")
# Scripts written without spaces between words: indexed as overlapping character pairs.
_BIGRAM_SCRIPT = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff]+"
)
_STOP = _words_of(
    "a an the to of in on for and or with by from my me i is are be it this that what do does can "
    "how all some any into at as via using use want need please you your we our us would like could "
    "should will there their them its which who when where so then just also about up out has have "
    "had was were been being"
)


def stem(word: str) -> str:
    """Light English stemmer for plurals and third-person -s, always to a real word: files→file,
    issues→issue, replies→reply, branches→branch, addresses→address; status stays status.
    -ed and -ing are left alone (measured: stripping them loses more than it finds). Words outside
    a-z are returned unchanged."""
    if not word.isascii() or not word.isalpha() or len(word) < 3:
        return word
    if len(word) == 3:  # prs→pr, ids→id; "bus" and "gas" are not plurals
        return word[:-1] if word.endswith("s") and word[1] not in "aeiou" else word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("sses") or word.endswith(("xes", "ches", "shes", "zzes")):
        return word[:-2]
    if word.endswith("uses") and len(word) > 6:  # statuses, bonuses
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _fold(text: str) -> str:
    """NFKC, and accents off Latin letters (résumé→resume); other scripts keep their marks."""
    out: list[str] = []
    for ch in unicodedata.normalize("NFKD", text):
        if unicodedata.combining(ch) and out and ord(out[-1]) < 0x250:
            continue
        out.append(ch)
    return unicodedata.normalize("NFKC", "".join(out))


def _split_camel(word: str) -> list[str]:
    """createIssue → create, issue, createissue; PaymentIntents → payment, intents, paymentintents.
    Brand-like words stay whole (GitHub, HubSpot: a part under four letters), and so do
    acronym plurals (PRs, URLs)."""
    parts = [p for p in _CAMEL.split(word) if p]
    low = word.lower()
    if len(parts) == 1 or (word[0].isupper() and min(map(len, parts)) < 4):
        return [low]
    return [*(p.lower() for p in parts), low]


def _words(text: str) -> list[str]:
    """Runs of letters, digits and combining marks in any script (ASCII has a fast path)."""
    if text.isascii():
        return [w for raw in _ASCII_WORD.findall(text) for w in _split_camel(raw)]
    words: list[str] = []
    cur: list[str] = []
    for ch in _fold(text) + " ":
        if unicodedata.category(ch)[0] in "LNM":
            cur.append(ch)
        elif cur:
            raw = "".join(cur)
            words.extend(_split_camel(raw) if raw.isascii() else [raw.casefold()])
            cur = []
    return words


def _clusters(run: str) -> list[str]:
    """Characters with their combining marks (Thai vowel and tone marks stay on their letter)."""
    out: list[str] = []
    for ch in run:
        if out and unicodedata.category(ch)[0] == "M":
            out[-1] += ch
        else:
            out.append(ch)
    return out


def tokens(text: str) -> list[str]:
    """Index terms of a text: stemmed words without stop words; CJK/Thai runs as character pairs."""
    return [term for term, _ in _terms(text)]


@functools.lru_cache(maxsize=1 << 16)
def _ascii_terms(raw: str) -> tuple[tuple[str, str], ...]:
    """Terms of one ASCII word as it appears in a text (cached: catalogs repeat their words)."""
    return tuple((stem(w), w) for w in _split_camel(raw) if w not in _STOP and (len(w) > 1 or w.isdigit()))


def _terms(text: str) -> list[tuple[str, str]]:
    """(index term, the word as written) for each term of a text."""
    out: list[tuple[str, str]] = []
    if text.isascii():
        for raw in _ASCII_WORD.findall(text):
            out.extend(_ascii_terms(raw))
        return _phrases(out)
    for word in _words(text):
        if word.isascii():
            out.extend(_ascii_terms(word))
            continue
        start = 0
        for run in _BIGRAM_SCRIPT.finditer(word):
            if run.start() > start:
                out.append((word[start : run.start()],) * 2)
            seg = _clusters(run.group())
            pairs = seg if len(seg) == 1 else [seg[i] + seg[i + 1] for i in range(len(seg) - 1)]
            out.extend((p, p) for p in pairs)
            start = run.end()
        if start < len(word):
            out.append((word[start:],) * 2)
    return _phrases(out)


@functools.lru_cache(maxsize=1 << 16)
def _ascii_stems(raw: str) -> tuple[str, ...]:
    return tuple(t for t, _ in _ascii_terms(raw))


def _index_terms(text: str) -> list[str]:
    """tokens(text), quicker for the common ASCII text (building an index of 20,000 tools)."""
    if not text.isascii():
        return tokens(text)
    out: list[str] = []
    for raw in _ASCII_WORD.findall(text):
        out.extend(_ascii_stems(raw))
    if _PHRASE_ENDS.isdisjoint(out):
        return out
    return [t for t, _ in _phrases([(t, t) for t in out])]


def _phrases(terms: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Two-word names also get their one-word form ("pull requests" → pr), on both sides."""
    out = terms
    for (first, _), (second, written) in itertools.pairwise(terms):
        joined = _PHRASES.get((first, second))
        if joined:
            out = out if out is not terms else list(terms)
            out.append((joined, joined if written == second else joined + "s"))  # "prs" if plural
    return out


# -- vocabulary --------------------------------------------------------------------------------

# Words that can be the action of a tool name (`jira_create_issue` → create).
_ACTIONS = _words_of(
    "get list search find create update delete remove add send post read write upload download export "
    "import run query merge review comment close open assign transition move copy share trash archive "
    "append clear modify respond reply invite join describe finalize refund register refresh navigate "
    "click type screenshot set upsert fetch retrieve calculate compute convert check validate generate "
    "schedule book cancel publish approve start stop edit rename replace count lookup analyze predict "
    "estimate plot sort filter translate"
)

# Interchangeable words, matched at reduced weight. Verbs that tell tools apart (get / list /
# search, create / add / open, send / reply) are never in one group, nor are objects that are
# different things in different integrations (a Jira project is not a GitHub repository).
_SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    # actions
    ("create", "new", "make"),
    ("delete", "remove", "erase", "destroy", "trash"),
    ("update", "edit", "modify", "change"),
    ("search", "find", "lookup"),
    ("get", "fetch", "retrieve", "read"),
    ("send", "post"),
    ("reply", "respond", "answer"),
    ("close", "resolve"),
    ("export", "download"),
    ("navigate", "visit", "goto"),
    ("cancel", "delete"),
    ("schedule", "book"),
    ("copy", "duplicate"),
    # objects
    ("pr", "pullrequest", "mr"),
    ("issue", "ticket"),
    ("email", "mail", "inbox"),
    ("message", "dm"),
    ("file", "document", "doc"),
    ("repo", "repository"),
    ("event", "meeting", "appointment"),
    ("spreadsheet", "sheet", "workbook"),
    ("contact", "person", "people"),
    ("deal", "opportunity"),
    ("customer", "client"),
    ("invoice", "bill"),
    ("payment", "charge"),
    ("user", "member"),
    ("note", "jot", "memo"),
    ("secret", "password", "credential", "token"),
    ("label", "tag"),
    ("folder", "directory"),
    ("column", "field"),
    ("recent", "latest", "newest", "last"),
)
_SYNONYMS: dict[str, frozenset[str]] = {}
for _group in _SYNONYM_GROUPS:
    _stems = {stem(w) for w in _group}
    for _t in _stems:
        _SYNONYMS[_t] = _SYNONYMS.get(_t, frozenset()) | frozenset(_stems - {_t})

# Two-word names of one thing, indexed and searched as one more word.
_PHRASES = {("pull", "request"): "pr", ("merge", "request"): "pr", ("direct", "message"): "dm"}
_PHRASE_ENDS = frozenset(second for _, second in _PHRASES)

# Nouns that, first in a query without another verb, are the command itself ("message the team").
_VERB_SENSE = {
    "message": "send",
    "email": "send",
    "mail": "send",
    "dm": "send",
    "ping": "send",
    "text": "send",
}

# Values in a query name a thing, not the kind of tool: an email address, a URL, an issue key
# (ACME-12), a #channel or @mention, an owner/repo. They are left out of the query.
# Possessive quantifiers keep each pattern linear in the query's length.
_VALUES = re.compile(
    r"[^\s@]++@[^\s@.]++\.[^\s@]++"  # email address
    r"|https?://\S++"  # URL
    r"|\b[A-Za-z][A-Za-z0-9]*+-\d++\b"  # issue key: ACME-12
    r"|(?<!\w)[#@][\w.-]++"  # #channel, @mention
    r"|\b[\w.-]++/[\w.-]++"  # owner/repo
)

# A snake_case identifier in a description names another tool or a parameter
# ("use superset_export_csv for files"), not what this tool does.
_IDENTIFIER = re.compile(r"\b[A-Za-z0-9]+(?:_[A-Za-z0-9]+)+\b")

# How people ask, not what they ask for: request frames whose verbs are not the action ("tell me
# what is on my calendar" is not a message to send) and filler words. Both are left out of the
# query, so they neither pull towards a tool nor count against the score.
_FRAMES = re.compile(
    r"\b(?:tell me|let me know|give me|help me|(?:want|need|like|wish) to know|i wonder|"
    r"is (?:it|there a way) (?:possible )?to|is there a way to|would you mind|do me a favou?r|"
    r"go ahead and|when you (?:get|have) a (?:chance|minute|moment)|(?:would|could) you be able to|"
    r"i(?:['\u2019]d| would) (?:really )?appreciate(?: it)?(?: if)?|thank(?:s| you)(?: in advance)?)\b",
    re.I,
)
_FILLER = _words_of(
    "kindly just really actually basically quickly currently maybe hey hi hello okay ok sure asap"
)

# Everyday verbs that are no tool's action, read as the actions they ask for, at synonym weight
# (times the share given here). One way only (a tool named show_x is not found by "list"), and
# never between actions: "show" asks for a read, a listing or a record before a search, "tell" for
# a send, "press" for a click.
_READ = {"list": 1.0, "get": 1.0, "search": 0.75, "find": 0.75}
_LEXICON: dict[str, dict[str, float]] = {
    "show": _READ,
    "display": _READ,
    "view": _READ,
    "see": _READ,
    "tell": {"send": 1.0},
    "notify": {"send": 1.0},
    "inform": {"send": 1.0},
    "announce": {"send": 1.0, "post": 1.0},
    "save": {"create": 1.0, "upload": 1.0, "set": 1.0},
    "store": {"set": 1.0, "save": 1.0, "upload": 1.0},
    "press": {"click": 1.0},
    "tap": {"click": 1.0},
    "enter": {"type": 1.0},
    "fill": {"type": 1.0},
    "lookup": {"search": 1.0, "find": 1.0, "get": 1.0},
    "locate": {"find": 1.0, "search": 1.0},
    "discover": {"find": 1.0, "search": 1.0},
    "rename": {"update": 1.0},
    "erase": {"delete": 1.0, "clear": 1.0},
    "wipe": {"delete": 1.0, "clear": 1.0},
    "kill": {"close": 1.0, "stop": 1.0},
    "quit": {"close": 1.0},
    "exit": {"close": 1.0},
}

# -- ranking parameters (chosen on BFCL and the catalog query set together: bench/search.py) -----

_FIELDS = ("action", "object", "integration", "description", "keywords", "arguments")
_WEIGHT = {
    "action": 2.0,
    "object": 2.0,
    "integration": 2.0,
    "description": 1.0,
    "keywords": 1.0,
    "arguments": 0.2,
}
_B = {
    "action": 0.0,
    "object": 0.3,
    "integration": 0.3,
    "description": 0.75,
    "keywords": 0.3,
    "arguments": 0.75,
}
_K1 = 1.2
_DESCRIPTION_TERMS = 60  # a long description's tail says little about what the tool is for
_SYNONYM = 0.6  # a synonym match counts this much of an exact one
_PREFIX = 0.6  # an unknown word completed to an index term ("calend" → calendar)
_TYPO = 0.7  # an unknown word corrected to an index term ("lsit" → list)
_TYPO_MIN_LENGTH = 3  # shorter words are another real word one letter away too often
_TYPO_MAX_LENGTH = 24  # no word is longer; a longer "word" is not worth its edit-distance cost
# Bounds on the work one query can cause: its first 2,000 characters and 64 distinct terms are
# used (BFCL's longest questions are well inside both).
_QUERY_CHARS = 2000
_QUERY_TERMS = 64
_NAMED_INTEGRATION = 1.2  # a tool of an integration the query names
_SURFACE = 0.2  # the word also found as written, singular or plural ("comments" → list_comments)
# to_bytes layout and everything an index depends on: a saved index from other settings is refused.
_FORMAT = (
    "workbench-search-2 "
    + hashlib.sha256(
        repr(
            (_FIELDS, _WEIGHT, _B, _K1, _DESCRIPTION_TERMS, sorted(_STOP), sorted(_ACTIONS), _PHRASES)
        ).encode()
    ).hexdigest()[:16]
)
# How much a match counts towards the calibrated score, by where it is found.
_FIELD_STRENGTH = {
    "action": 1.0,
    "object": 1.0,
    "integration": 1.0,
    "description": 0.8,
    "keywords": 0.8,
    "arguments": 0.5,
}
# Prior, for tools that score the same: one that reads, then one that writes, then one that deletes.
_READ_ONLY = _words_of("get list search find read fetch retrieve describe query lookup count check")
_DESTRUCTIVE = _words_of("delete remove trash archive clear cancel destroy erase")


@dataclass(frozen=True, slots=True)
class SearchDoc:
    name: str
    description: str
    integration: str
    # Words users say for this action and object that the name and description do not use
    # (a tool author's `keywords`); custom apps have none.
    keywords: str = ""
    # The tool's arguments: their names and descriptions.
    arguments: str = ""


def catalog_docs(registry: Registry) -> list[SearchDoc]:
    """The registry's tools as search documents: each tool's keywords plus its integration's."""
    extra = {m.name: m.keywords for m in registry.manifests()}
    return [
        SearchDoc(
            t.name,
            t.description,
            t.integration,
            " ".join((*t.keywords, *extra.get(t.integration, ()))),
            t.argument_text(),
        )
        for t in registry.all_tools()
    ]


@dataclass(frozen=True, slots=True)
class SearchHit:
    doc: SearchDoc
    score: float


class _Parsed(NamedTuple):
    fields: dict[str, list[str]]
    written: frozenset[str]  # the words as written (singular or plural) in name and description


def _parse(doc: SearchDoc) -> _Parsed:
    """`<integration>_<verb>_<object>`: leading name words the integration also has, the first
    action word after them, and the rest. Names without an action word are all object."""
    integration = _integration_terms(doc.integration)
    known = set(integration)
    name = _index_terms(doc.name)
    at = 0
    while at < len(name) - 1 and name[at] in known:
        at += 1
    rest = name[at:]
    verb = next((i for i, t in enumerate(rest) if t in _ACTIONS), None)
    description = _IDENTIFIER.sub(" ", doc.description) if "_" in doc.description else doc.description
    fields = {
        "action": [rest[verb]] if verb is not None else [],
        "object": [t for i, t in enumerate(rest) if i != verb],
        "integration": [*integration, *(t for t in name[:at] if t not in known)],
        "description": _index_terms(description)[:_DESCRIPTION_TERMS],
        "keywords": _index_terms(doc.keywords),
        "arguments": _argument_terms(doc.arguments),
    }
    text = f"{doc.name} {description} {doc.keywords}"
    if text.isascii():
        return _Parsed(fields, frozenset(_ASCII_WORD.findall(text.lower())))
    return _Parsed(fields, frozenset(w for _, w in _terms(text)))


def _argument_terms(text: str) -> list[str]:
    """Each argument word once (a word repeated across arguments, "page id", "page title", says no
    more about the tool), without the example values argument descriptions give (dates, ids:
    "2024-01-31T10:00:00Z" is not the words t10 and 00z)."""
    if not text.isascii():
        return [t for t in dict.fromkeys(tokens(text)) if not any(c.isdigit() for c in t)]
    out: list[str] = []
    for raw in dict.fromkeys(_ASCII_WORD.findall(text)):
        if raw.isalpha():
            out += _ascii_stems(raw)
    return list(dict.fromkeys(out))


@functools.lru_cache(maxsize=1024)
def _integration_terms(integration: str) -> tuple[str, ...]:
    return tuple(tokens(integration))


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


def _deletes(word: str, distance: int) -> set[str]:
    out = {word}
    frontier = {word}
    for _ in range(distance):
        frontier = {w[:i] + w[i + 1 :] for w in frontier for i in range(len(w))}
        out |= frontier
    return out


def _typo_limit(word: str) -> int:
    return 1 if len(word) < 8 else 2


class SearchIndex:
    def __init__(self, docs: Iterable[SearchDoc]) -> None:
        self.docs: list[SearchDoc] = list(docs)
        n = len(self.docs)
        parsed = [_parse(d) for d in self.docs]
        per_doc = [p.fields for p in parsed]
        avg = {f: (sum(len(p[f]) for p in per_doc) / n if n else 0.0) or 1.0 for f in _FIELDS}
        # BM25F: a term's frequency in each field, weighted and length-normalised per field, summed,
        # then saturated once; stored saturated so that a query only multiplies and adds.
        freq: dict[str, dict[int, float]] = defaultdict(dict)
        for i, fields in enumerate(per_doc):
            for f in _FIELDS:
                terms = fields[f]
                if terms:
                    norm = _WEIGHT[f] / (1 - _B[f] + _B[f] * len(terms) / avg[f])
                    for t in terms:
                        row = freq[t]
                        row[i] = row.get(i, 0.0) + norm
        self._idf = {t: math.log(1 + (n - len(row) + 0.5) / (len(row) + 0.5)) for t, row in freq.items()}
        self._postings = {t: {i: tf / (_K1 + tf) for i, tf in row.items()} for t, row in freq.items()}
        self._unseen_idf = math.log(1 + (n + 0.5) / 1.5)  # as rare as a word of one tool
        self._vocab = sorted(self._postings)  # for prefix lookups
        self._prior = [_prior(fields) for fields in per_doc]
        # Tools by the words of their integration, for queries that name one ("zendesk tickets").
        self._by_integration: dict[str, list[int]] = defaultdict(list)
        for i, fields in enumerate(per_doc):
            for t in dict.fromkeys(fields["integration"]):
                self._by_integration[t].append(i)
        # Words as written, so that a plural query prefers the tool about many ("notion comments").
        self._written: dict[str, list[int]] = defaultdict(list)
        for i, p in enumerate(parsed):
            for w in p.written:
                self._written[w].append(i)
        self._typo_index: dict[str, set[str]] | None = None  # built on the first unknown word

    # -- prebuilt -------------------------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        """The built index, for a build step to ship beside a large catalog (loading it is about
        ten times quicker than building it: bench/search.py)."""
        state = (
            _FORMAT,
            [(d.name, d.description, d.integration, d.keywords, d.arguments) for d in self.docs],
            self._idf,
            self._postings,
            self._unseen_idf,
            self._prior,
            dict(self._written),
            dict(self._by_integration),
        )
        return marshal.dumps(state)

    @classmethod
    def from_bytes(cls, data: bytes) -> SearchIndex:
        """An index saved by to_bytes from this same version of the engine (never untrusted input)."""
        state = marshal.loads(data)  # noqa: S302 -- our own build artefact, never user input
        if not isinstance(state, tuple) or not state or state[0] != _FORMAT:
            raise ValueError("search index built by another version of the engine; rebuild it")
        _, docs, idf, postings, unseen_idf, prior, written, by_integration = state
        index = cls.__new__(cls)
        index.docs = [SearchDoc(*d) for d in docs]
        index._idf, index._postings, index._unseen_idf = idf, postings, unseen_idf
        index._vocab = sorted(postings)
        index._prior, index._written, index._by_integration = prior, written, by_integration
        index._typo_index = None
        return index

    # -- query words → index terms ----------------------------------------------------------------

    def _expand(self, word: str, written: str) -> dict[str, float]:
        """Index terms a query term may mean, with a match quality in (0, 1]."""
        found: dict[str, float] = {}
        if word in self._postings:
            found[word] = 1.0
        for syn in _SYNONYMS.get(word, ()):
            if syn in self._postings:
                found.setdefault(syn, _SYNONYM)
        for action, share in _LEXICON.get(word, {}).items():
            if action in self._postings:
                found.setdefault(action, _SYNONYM * share)
        if found or not word.isascii() or word.isdigit():
            return found
        # Nothing matches the word as written: complete a prefix, or correct a typo.
        if len(word) >= 3:
            at = bisect.bisect_left(self._vocab, word)
            while at < len(self._vocab) and self._vocab[at].startswith(word):
                found[self._vocab[at]] = _PREFIX
                at += 1
        for typed in {word, written}:  # "lits" stems to "lit", but it is "list" mistyped
            if _TYPO_MIN_LENGTH <= len(typed) <= _TYPO_MAX_LENGTH:
                for term in self._corrections(typed):
                    found.setdefault(term, _TYPO)
                    for syn in _SYNONYMS.get(term, ()):
                        if syn in self._postings:
                            found.setdefault(syn, _TYPO * _SYNONYM)
        return found

    def _corrections(self, word: str) -> list[str]:
        """Index terms and synonym words within a small edit distance of an unknown word."""
        if self._typo_index is None:
            self._typo_index = defaultdict(set)
            for term in set(self._postings) | set(_SYNONYMS):
                if term.isascii() and len(term) >= _TYPO_MIN_LENGTH:
                    for d in _deletes(term, _typo_limit(term)):
                        self._typo_index[d].add(term)
        limit = _typo_limit(word)
        candidates: set[str] = set()
        for d in _deletes(word, limit):
            candidates |= self._typo_index.get(d, set())
        out = []
        for term in sorted(candidates):
            if _edit_distance(word, term, limit) <= limit:
                if term in self._postings:
                    out.append(term)
                out.extend(s for s in _SYNONYMS.get(term, ()) if s in self._postings)
        return out

    # -- search -----------------------------------------------------------------------------------

    def search(self, query: str, limit: int = 10) -> list[SearchHit]:
        terms: dict[str, str] = {}  # index term → the word as first written
        for term, written in _terms(_FRAMES.sub(" ", _VALUES.sub(" ", query[:_QUERY_CHARS]))):
            if term in _FILLER:
                continue
            terms.setdefault(term, written)
            if len(terms) == _QUERY_TERMS:
                break
        if not terms or not self.docs:
            return []
        first = next(iter(terms))
        if first in _VERB_SENSE and not any(t in _ACTIONS for t in terms):
            # "message the team", "email bob the report": a noun used as the command is its verb.
            terms.setdefault(_VERB_SENSE[first], _VERB_SENSE[first])
        scores: dict[int, float] = defaultdict(float)
        matched: list[tuple[float, dict[str, float]]] = []  # (idf, expansions) per matched word
        unmatched = 0.0
        queue = [(word, written, self._expand(word, written)) for word, written in terms.items()]
        phrases: dict[str, float] = {}
        for (_, _, left), (_, _, right) in itertools.pairwise(queue):
            # A two-word name seen only once its words were corrected ("pul requests" → pr).
            for a, qa in left.items():
                for b, qb in right.items():
                    joined = _PHRASES.get((a, b))
                    if joined and joined not in terms and joined in self._postings and min(qa, qb) < 1:
                        phrases[joined] = max(phrases.get(joined, 0.0), min(qa, qb))
        queue += [(joined, joined, {joined: quality}) for joined, quality in phrases.items()]
        for word, written, expansions in queue:
            if not expansions:
                # An unknown word counts against the calibrated score, unless it is a value
                # (a number, an id) rather than a word.
                unmatched += 0.0 if any(c.isdigit() for c in word) else self._unseen_idf
                continue
            # One weight per query word: a synonym or a correction must not outscore the exact
            # word merely because it is rarer in the catalog.
            idf = self._idf.get(word) or max(self._idf[t] for t in expansions)
            matched.append((idf, expansions))
            if len(expansions) == 1:  # the common case: no synonym, no correction
                ((term, quality),) = expansions.items()
                best = self._postings[term]
                factor = idf * quality
                for doc, weight in best.items():
                    scores[doc] += factor * weight
            else:
                best = {}
                for term, quality in expansions.items():
                    for doc, weight in self._postings[term].items():
                        value = quality * weight
                        if value > best.get(doc, 0.0):
                            best[doc] = value
                for doc, value in best.items():
                    scores[doc] += idf * value
            surface = _SURFACE * idf
            for doc in self._written.get(written, ()):
                if doc in best:
                    scores[doc] += surface
        if not scores:
            return []
        # A query that names an integration is about it: its tools come before another
        # integration's tool that merely shares a rarer word ("zendesk tickets assigned to me").
        for doc in {d for t in terms if t in self._by_integration for d in self._by_integration[t]}:
            if doc in scores:
                scores[doc] *= _NAMED_INTEGRATION
        return self._ranked(scores, limit, matched, unmatched)

    def _ranked(
        self,
        scores: dict[int, float],
        limit: int,
        matched: list[tuple[float, dict[str, float]]],
        unmatched: float,
    ) -> list[SearchHit]:
        # The best `limit` without sorting every scored tool, plus any tied with the last of them,
        # then ties broken by the prior and the name, so the order never depends on dict order.
        top = heapq.nlargest(limit, scores, key=scores.__getitem__)
        cutoff = scores[top[-1]]
        chosen = [doc for doc, score in scores.items() if score >= cutoff]
        chosen.sort(key=lambda d: (-scores[d], -self._prior[d], self.docs[d].name))
        best = scores[chosen[0]]
        calibrated = _coverage(_parse(self.docs[chosen[0]]).fields, matched, unmatched)
        return [SearchHit(self.docs[d], round(calibrated * scores[d] / best, 4)) for d in chosen[:limit]]


def _prior(fields: dict[str, list[str]]) -> float:
    """Between tools that score the same: one that reads, then one that writes, then one that deletes."""
    action = fields["action"][0] if fields["action"] else ""
    return 0.0 if action in _READ_ONLY else -2.0 if action in _DESTRUCTIVE else -1.0


def _coverage(
    fields: dict[str, list[str]], matched: list[tuple[float, dict[str, float]]], unmatched: float
) -> float:
    """The calibrated score of a hit: the share of the query's informative words (by idf) it
    matches, by match quality and field (1.0 when every word is in its name or integration)."""
    strength: dict[str, float] = {}
    for f in _FIELDS:
        for t in fields[f]:
            strength[t] = max(strength.get(t, 0.0), _FIELD_STRENGTH[f])
    total = unmatched + sum(idf for idf, _ in matched)
    got = sum(
        idf * max((q * strength.get(t, 0.0) for t, q in exp.items()), default=0.0) for idf, exp in matched
    )
    return min(got / total, 1.0) if total else 0.0
