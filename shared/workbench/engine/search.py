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
import collections
import functools
import hashlib
import heapq
import itertools
import marshal
import math
import re
import time
import unicodedata
import zlib
from array import array
from collections import defaultdict
from collections.abc import Collection, Container, Iterable, Iterator
from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from workbench.errors import WorkbenchError
from workbench.guard.gcdefer import deferred_full_collections

if TYPE_CHECKING:
    from workbench.engine.registry import Registry

__all__ = [
    "BuildBudget",
    "SearchBudgetExceeded",
    "SearchDoc",
    "SearchHit",
    "SearchIndex",
    "catalog_docs",
    "implied_integrations",
    "stem",
    "tokens",
]


def _words_of(text: str) -> frozenset[str]:
    return frozenset(text.split())


# -- tokenising ----------------------------------------------------------------------------------

# A run of more than 128 letters and digits (a hash, base64, a pasted blob) is no word: skipped
# whole, so no input word costs more than a bounded amount of work or memory.
_WORD_MAX = 128
_ASCII_WORD = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]{1,128}(?![A-Za-z0-9])")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z]{2})")
# Scripts written without spaces between words: indexed as overlapping character pairs.
_BIGRAM_RANGES = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x3040, 0x30FF),  # kana
    (0x3400, 0x4DBF),  # CJK
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF),  # Hangul
    (0xF900, 0xFAFF),
)
_BIGRAM_SCRIPT = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _BIGRAM_RANGES) + "]+")
_BIGRAM_MARKED = _BIGRAM_RANGES[:4]  # the scripts with combining marks (ideographs and Hangul have none)
_STOP = _words_of(
    "a an the to of in on for and or with by from my me i is are be it this that what do does can "
    "how all some any into at as via using use want need please you your we our us would like could "
    "should will there their them its which who when where so then just also about up out has have "
    "had was were been being"
)


# Words ending in -s that are not plurals, or whose singular means something else ("news" is not
# "new", "sales" not "sale", "aws" not "aw"): never stemmed.
_NOT_PLURAL = _words_of(
    "news sales analytics status series species physics mathematics politics economics "
    "logistics ethics always perhaps canvas alias atlas bias lens chaos kudos macos ios "
    "postgres kubernetes redis jenkins aws sms dns cms gps ops https minutes customs means goods "
    "thanks towards afterwards whereas devops mlops gitops finops saas paas iaas odds dynamics "
    "sqs sns ecs eks efs rds"
)


def stem(word: str) -> str:
    """Light English stemmer for plurals and third-person -s, always to a real word: files→file,
    issues→issue, replies→reply, branches→branch, addresses→address; status stays status, and so
    does every word of _NOT_PLURAL (news, sales, analytics...), whose -s is not a plural's.
    -ed and -ing are left alone (measured: stripping them loses more than it finds). Words outside
    a-z are returned unchanged."""
    if not word.isascii() or not word.isalpha() or len(word) < 3 or word in _NOT_PLURAL:
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


def _bases(word: str) -> tuple[str, ...]:
    """The words an -ed or -ing form may come from, most likely first: emailed → email, charged →
    charge, planned → plan, copied → copy, sharing → share. Only looked up when the word itself is
    no index term (the stemmer leaves -ed and -ing alone: "meeting" and "shared" are words too)."""
    if len(word) < 5 or not word.isalpha():
        return ()
    for ending in ("ed", "ing"):
        if word.endswith(ending):
            root = word[: -len(ending)]
            if len(root) < 3:
                return ()
            out = [root, root + "e"]
            if root[-1] == root[-2] and root[-1] not in "aeiouls":  # planned, shipped
                out.append(root[:-1])
            if ending == "ed" and root.endswith("i"):  # copied, replied
                out.append(root[:-1] + "y")
            return tuple(out)
    return ()


def _fold(text: str) -> str:
    """NFKC, and accents off Latin letters (résumé→resume); other scripts keep their marks: in
    NFKD, each run of combining marks right after a character below U+0250 is taken off. The text's
    distinct characters are looked at, not each one (a catalog's descriptions are long): when none
    can shed a mark, the text is its NFKC (most text in another script: 日本語, Привет)."""
    if not any(map(_may_shed_marks, set(text))):
        return unicodedata.normalize("NFKC", text)
    decomposed = unicodedata.normalize("NFKD", text)
    marks = frozenset(c for c in set(decomposed) if unicodedata.combining(c))
    if marks:
        decomposed = _marks_after_latin(marks).sub("", decomposed)
    return unicodedata.normalize("NFKC", decomposed)


@functools.lru_cache(maxsize=4096)
def _may_shed_marks(char: str) -> bool:
    """Whether _fold may take a mark off at this character: its NFKD has a mark right after a
    character below U+0250 (é), or begins with one (a mark of its own, which may follow one)."""
    decomposed = unicodedata.normalize("NFKD", char)
    return unicodedata.combining(decomposed[0]) != 0 or any(
        unicodedata.combining(mark) and ord(base) < 0x250 for base, mark in itertools.pairwise(decomposed)
    )


@functools.lru_cache(maxsize=256)
def _marks_after_latin(marks: frozenset[str]) -> re.Pattern[str]:
    return re.compile(r"(?<=[\x00-\u024f])[" + "".join(map(re.escape, sorted(marks))) + "]+")


class _WordCharacters(dict[int, str]):
    """str.translate's table: a letter, digit or mark as itself, any other character as a space,
    each character's category looked up the first time it is met (a text's words are then its
    split(): no whitespace is a letter, a digit or a mark)."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        out = self[code] = " " if _splits_words(char) else char
        return out


_WORD_CHARACTERS = _WordCharacters()
_WORD_CHARACTERS_KEPT = 8_192  # distinct characters the table remembers (it starts again past it)


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


@functools.lru_cache(maxsize=1024)
def _splits_words(char: str) -> bool:
    """Whether a character splits words where it stands, as a space does: any but a letter, a
    digit or a mark (’ — « © and emoji do)."""
    return unicodedata.category(char)[0] not in "LNM"


@functools.lru_cache(maxsize=1024)
def _may_fold(char: str) -> bool:
    """Whether a character outside ASCII can be part of a text _folded_ascii folds: one that splits
    words, a combining mark, or one whose compatibility form is ASCII but for its marks (é, ﬁ, ™)."""
    decomposed = unicodedata.normalize("NFKD", char)
    return _splits_words(char) or all(c.isascii() or unicodedata.combining(c) for c in decomposed)


def _folded_ascii(text: str) -> str:
    """`text` as ASCII, when it reads as ASCII: folded as _words folds it (_fold: résumé → resume,
    … → ...) and every other character that splits words (’ — « ©) written as a space. Its words, and so its
    terms, are the same as `text`'s, and a catalog's build reads it on its fast path: real
    descriptions are full of curly quotes and dashes. Any other text (a letter or a mark outside
    ASCII once folded: ß, Ω, 日本) is returned as it is."""
    if text.isascii():
        return text
    first = _NON_ASCII.search(text)
    if first is not None and not _may_fold(first.group()):  # Привет, 日本: no need to read on
        return text
    folded = _fold(text)
    if not all(map(_splits_words, set(_NON_ASCII.findall(folded)))):
        return text
    return _NON_ASCII.sub(" ", folded)


def _split_camel(word: str) -> list[str]:
    """createIssue → create, issue, createissue; PaymentIntents → payment, intents, paymentintents.
    Brand-like words stay whole (GitHub, HubSpot: a part under four letters), and so do
    acronym plurals (PRs, URLs)."""
    rest = word[1:]
    if rest.islower() or rest.isdigit() or not rest:  # no capital past the first letter: one part
        return [word.lower()]
    parts = _CAMEL.split(word)  # zero-width splits inside the word: never an empty part
    low = word.lower()
    if len(parts) == 1 or (word[0].isupper() and min(map(len, parts)) < 4):
        return [low]
    out = list(map(str.lower, parts))
    out.append(low)
    return out


def _words(text: str) -> list[str]:
    """Runs of letters, digits and combining marks in any script (ASCII has a fast path)."""
    if text.isascii():
        return [w for raw in _ASCII_WORD.findall(text) for w in _split_camel(raw)]
    if len(_WORD_CHARACTERS) > _WORD_CHARACTERS_KEPT:  # text of every script there is: bounded
        _WORD_CHARACTERS.clear()
    words: list[str] = []
    for raw in _fold(text).translate(_WORD_CHARACTERS).split():
        if len(raw) <= _WORD_MAX:
            words.extend(_split_camel(raw) if raw.isascii() else [raw.casefold()])
    return words


@functools.cache
def _bigram_marks() -> re.Pattern[str]:
    """Any combining mark of the scripts _BIGRAM_SCRIPT matches (worked out once, when first needed)."""
    marks = (chr(c) for lo, hi in _BIGRAM_MARKED for c in range(lo, hi + 1))
    return re.compile("[" + re.escape("".join(m for m in marks if unicodedata.category(m)[0] == "M")) + "]")


def _clusters(run: str) -> list[str]:
    """Characters with their combining marks (Thai vowel and tone marks stay on their letter)."""
    if _bigram_marks().search(run) is None:  # a run without one: its characters (most CJK text)
        return list(run)
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


@functools.lru_cache(maxsize=1 << 15)
def _ascii_terms(raw: str) -> tuple[tuple[str, str], ...]:
    """Terms of one ASCII word as it appears in a text (cached: catalogs repeat their words)."""
    return tuple(
        (stem(w), w)
        for w in _split_camel(raw)
        if w not in _STOP and (len(w) > 1 or w.isdigit()) and len(w) <= _TERM_MAX
    )


def _terms(text: str) -> list[tuple[str, str]]:
    """(index term, the word as written) for each term of a text."""
    return _phrases(_word_terms(text))


def _word_terms(text: str) -> list[tuple[str, str]]:
    """_terms of a text word by word, without the one-word forms of two-word names (_phrases): the
    terms of texts joined by a space are theirs end to end."""
    out: list[tuple[str, str]] = []
    if text.isascii():
        for raw in _ASCII_WORD.findall(text):
            out.extend(_ascii_terms(raw))
        return out
    words = _words(text)
    if _BIGRAM_SCRIPT.search(" ".join(words)) is None:  # each word a term (the usual case)
        for word in words:
            if word.isascii():
                out.extend(_ascii_terms(word))
            elif len(word) <= _TERM_MAX:
                out.append((word, word))
        return out
    for word in words:
        if word.isascii():
            out.extend(_ascii_terms(word))
            continue
        start = 0
        for run in _BIGRAM_SCRIPT.finditer(word):
            if 0 < run.start() - start <= _TERM_MAX:
                out.append((word[start : run.start()],) * 2)
            seg = _clusters(run.group())
            pairs = seg if len(seg) == 1 else list(map(str.__add__, seg, itertools.islice(seg, 1, None)))
            out.extend(zip(pairs, pairs, strict=True))
            start = run.end()
        if 0 < len(word) - start <= _TERM_MAX:
            out.append((word[start:],) * 2)
    return out


@functools.lru_cache(maxsize=1 << 15)
def _ascii_stems(raw: str) -> tuple[str, ...]:
    return tuple(t for t, _ in _ascii_terms(raw))


def _index_terms(text: str) -> list[str]:
    """tokens(text), quicker for the common ASCII text (building an index of 20,000 tools)."""
    if not text.isascii():
        return tokens(text)
    out = list(itertools.chain.from_iterable(map(_ascii_stems, _ASCII_WORD.findall(text))))
    if _PHRASE_ENDS.isdisjoint(out):
        return out
    return [t for t, _ in _phrases([(t, t) for t in out])]


def _phrases(terms: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Two-word names also get their one-word form ("pull requests" → pr), on both sides. Only the
    terms that can end one are looked at (found in C: a description has hundreds of terms)."""
    out = terms
    firsts = list(map(itemgetter(0), terms))
    for at in itertools.compress(range(len(firsts)), map(_PHRASE_ENDS.__contains__, firsts)):
        joined = _PHRASES.get((firsts[at - 1], firsts[at])) if at else None
        if joined:
            out = out if out is not terms else list(terms)
            written = terms[at][1]
            out.append((joined, joined if written == firsts[at] else joined + "s"))  # "prs" if plural
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
# (ACME-12), a #channel or @mention, an owner/repo, a NAME_IN_CAPITALS (a secret's or a setting's).
# They are left out of the query.
# Possessive quantifiers keep each pattern linear in the query's length.
_VALUES = re.compile(
    r"[^\s@]++@[^\s@.]++\.[^\s@]++"  # email address
    r"|https?://\S++"  # URL
    r"|\b[A-Za-z][A-Za-z0-9]*+-\d++\b"  # issue key: ACME-12
    r"|(?<!\w)[#@][\w.-]++"  # #channel, @mention
    r"|\b[\w.-]++/[\w.-]++"  # owner/repo
    r"|\b[A-Z][A-Z0-9]*+(?:_[A-Z0-9]++)++\b"  # a constant's or a secret's name: STRIPE_KEY
)

# Identifiers that belong to one integration imply it as if the query named it (an agent pastes the
# id, not the service's name): each (pattern, integration). A Jira issue key (ABC-123: Linear's keys
# look the same; a query that names Linear gets Linear's tools), a GitHub owner/repo, Stripe object
# ids (cus_, ch_, pi_, in_, sub_...), Slack channel and user ids (C024BE91L), Salesforce record ids
# (001..., 003..., 006...), Airtable ids (app/tbl/rec/fld/viw + 14), a sheet range (A1:C10), and a
# service's own URL. Each has a test in tests/unit/test_search_identifiers.py.
_IMPLIED: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?<![\w-])[A-Z][A-Z0-9]{1,9}-\d{1,7}\b"), "atlassian-jira"),
    (
        re.compile(
            r"(?<![\w/.:@-])(?![a-z]+/[a-z]+(?![\w./-]))(?=[\w.-]*[a-z])[A-Za-z0-9][\w.-]{0,38}"
            r"/(?=[\w.-]*[a-z])[A-Za-z0-9][\w.-]{0,99}(?![\w/])"
        ),
        "github",
    ),
    (
        re.compile(r"(?<![\w/.:@-])[a-z][a-z0-9-]{1,38}/[a-z0-9][a-z0-9_.-]*[-_.0-9][a-z0-9_.-]*(?![\w/])"),
        "github",
    ),
    (
        re.compile(
            r"\b(?:cus|ch|pi|in|sub|prod|price|re|pm|py|plink|txn|acct|seti|evt|po|tr|ii|si)"
            r"_(?=[a-z]*[A-Z0-9])[A-Za-z0-9]{10,40}\b"
        ),
        "stripe",
    ),
    (re.compile(r"\b[CGDUW](?=[A-Z]*[0-9])[A-Z0-9]{8,10}\b"), "slack"),
    (re.compile(r"\b00[0-9A-Za-z](?=[0-9]*[A-Za-z])[0-9A-Za-z]{12}(?:[0-9A-Za-z]{3})?\b"), "salesforce"),
    (re.compile(r"\b(?:app|tbl|rec|fld|viw)(?=[a-z]*[A-Z0-9])[A-Za-z0-9]{14}\b"), "airtable"),
    (re.compile(r"\b[A-Z]{1,3}[1-9][0-9]{0,6}:[A-Z]{1,3}[1-9][0-9]{0,6}\b"), "google-sheets"),
    (re.compile(r"https?://(?:www\.)?github\.com/"), "github"),
    (re.compile(r"https?://[\w-]+\.atlassian\.net/(?:browse|jira)/"), "atlassian-jira"),
    (re.compile(r"https?://[\w-]+\.atlassian\.net/wiki/"), "atlassian-confluence"),
    (re.compile(r"https?://(?:www\.)?notion\.(?:so|site)/"), "notion"),
    (re.compile(r"https?://docs\.google\.com/spreadsheets/"), "google-sheets"),
    (
        re.compile(r"https?://(?:drive\.google\.com|docs\.google\.com/(?:document|presentation))/"),
        "google-drive",
    ),
    (re.compile(r"https?://mail\.google\.com/"), "google-gmail"),
    (re.compile(r"https?://calendar\.google\.com/"), "google-calendar"),
    (re.compile(r"https?://app(?:-\w+)?\.hubspot\.com/"), "hubspot"),
    (re.compile(r"https?://[\w.-]+\.(?:salesforce|force)\.com/"), "salesforce"),
    (re.compile(r"https?://[\w-]+\.zendesk\.com/"), "zendesk"),
    (re.compile(r"https?://linear\.app/"), "linear"),
    (re.compile(r"https?://airtable\.com/"), "airtable"),
    (re.compile(r"https?://dashboard\.stripe\.com/"), "stripe"),
    (re.compile(r"https?://[\w-]+\.slack\.com/"), "slack"),
)
# Integrations whose identifiers are proof enough that the query is about them (a Jira key, a
# Stripe, Salesforce or Airtable id), for the score as for the ranking; an owner/repo, a Slack-like
# id or a cell range are hints for the ranking only ("meters/second" is no repository).
_SURE_IDENTIFIERS = frozenset({"atlassian-jira", "stripe", "salesforce", "airtable"})
# Word pairs with a slash that are not an owner/repo.
_NOT_REPO = _words_of("and/or read/write input/output on/off yes/no true/false either/or client/server i/o")


_URL = re.compile(r"https?://\S++")

# Function words of Spanish, Portuguese, French and German that English does not use: two of them
# in a query written in plain ASCII ("o build do CI falhou") make it one to read cross-lingually
# even when its English reading looked confident.
_FOREIGN_WORDS = _words_of(
    "el la los las del de una unos unas al es este esta estos estas estan por para que se su sus mi mis "
    "muy pero sin ya o os uma umas em nao nos nas ao aos pelo pela sem ainda esse essa isso meu "
    "minha meus minhas le les une des du au aux est sont avec pour dans sur pas ne qui encore mon "
    "mes cette der das dem des ein eine einen und ist sind nicht mit von zu im auf fur noch mein "
    "meine meinen bitte"
)


def _foreign(text: str) -> bool:
    return len(_FOREIGN_WORDS.intersection(text.lower().split())) >= 2


def implied_integrations(query: str) -> set[str]:
    """The integrations a query's identifiers belong to (see _IMPLIED)."""
    return _implied(query)[0]


def _implied(query: str) -> tuple[set[str], str]:
    """(the integrations a query's identifiers imply, the query without those identifiers): a URL
    counts for its host alone (ABC-1 inside a linear.app URL is Linear's, not Jira's)."""
    found = set()
    urls = _URL.findall(query) if "://" in query else ()
    rest = _URL.sub(" ", query) if urls else query
    for pattern, integration in _IMPLIED:
        if pattern.pattern.startswith("https?"):
            if any(pattern.match(url) for url in urls):
                found.add(integration)
            continue
        for match in pattern.finditer(rest):
            if integration != "github" or match.group().lower() not in _NOT_REPO:
                found.add(integration)
                rest = rest.replace(match.group(), " ")
    return found, rest


# A snake_case identifier in a description names another tool or a parameter
# ("use superset_export_csv for files"), not what this tool does.
_IDENTIFIER = re.compile(r"\b[A-Za-z0-9]++(?:_[A-Za-z0-9]++)+\b")  # possessive: no backtracking in a word

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
    "attached": {"attachment": 1.0},
    "press": {"click": 1.0},
    "hit": {"click": 1.0},
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

# Situations and symptoms read as the action they call for ("the page is out of date" asks for an
# update, "X isn't in hubspot yet" for a create, "I can't find" for a search, "they can't open it"
# for a share). Each phrase is taken out of the query and stands for the actions it names, matched
# at synonym weight times the share given (a tool's action, not its words: "can't read" is not a
# read). Written from what the phrases mean, tuned on bench/search_queries_untuned.py INDIRECT (the
# first round's set) and measured on INDIRECT_B, written before them. English only; ordered: the
# first phrase that matches a span takes it.
_N = r"(?:n['\u2019]t| not)"  # isn't / is not
_CANT = r"(?:can['\u2019]?t|cannot|can not|couldn['\u2019]?t|could not|unable to)"
_SYMPTOMS: tuple[tuple[str, str], ...] = (
    # someone else does not know yet: tell them
    (
        r"\b(?:ha(?:s|ve) no idea|(?:does|do)" + _N + r" know) yet\b|\bunaware\b|"
        r"\b(?:ha(?:s|ve)" + _N + r"|never) (?:heard|been told)\b|\bnever (?:got|received)\b|"
        r"\b(?:did" + _N + r"|never) (?:get|receive)\b|\bhave" + _N + r" told\b|"
        r"\bstill (?:thinks?|believes?|assumes?|expects?)\b",
        "inform",
    ),
    # what was said while I was away: read the history
    (
        r"\bwhile (?:i|we) (?:was|were) (?:away|asleep|out|off|offline|on leave|on vacation|on holiday)\b|"
        r"\bwhat did (?:people|they|everyone|everybody|the team|others|folks) (?:say|write|post|discuss)\b|"
        r"\b(?:i|we) missed\b|\bcatch up on\b",
        "missed",
    ),
    # I do not know what there is: list it, read it
    (
        r"\b(?:(?:i|we) (?:have|had) no idea|(?:i|we) (?:do|did)" + _N + r" know|not sure|(?:i|we) forg[eo]t|"
        r"(?:i|we) (?:(?:do|did)" + _N + r"|" + _CANT + r") (?:remember|recall)|lost track|i['\u2019]?m lost|"
        r"i wonder|no clue)\b",
        "unknown",
    ),
    # it is somewhere: search
    (
        r"\b" + _CANT + r" (?:find|locate|see where)\b|\bburied\b|"
        r"\bsomewhere\b|\bwhere (?:did|was|is) (?:i|we|it)\b",
        "lost",
    ),
    # others cannot get at it: share, invite
    (
        r"\b" + _CANT + r" (?:see|open|access|view|read|edit|get into)\b|"
        r"\b(?:access|permission) denied\b|\bno access\b|\b(?:be|is|isn['\u2019]t|not) visible\b|\bvisible to\b",
        "unshared",
    ),
    # only on my machine: upload
    (r"\bon my (?:laptop|computer|desktop|machine|disk|phone)\b|\blocally\b", "local"),
    # it is wrong: update
    (
        r"\b(?:wrong|incorrect(?:ly)?|inaccurate|out ?of ?date|outdated|stale|typo(?:ed|s)?|misspel(?:t|led)|"
        r"still (?:says|shows|lists|describes|tells|mentions|points|has|is|at|in|on)|should (?:say|read)|"
        r"(?:was|were|got|been) revoked|expired|(?:has|have|shows?|lists?|with) (?:the |an )?old|"
        r"but (?:\w+ )?(?:actually|really|in fact))\b",
        "fix",
    ),
    # it is in the way: delete, archive, trash, remove
    (
        r"\b(?:obsolete|irrelevant|useless|unneeded|unnecessary|redundant|superseded|"
        r"no longer (?:needed|used|relevant|valid|useful)|(?:do|does)"
        + _N
        + r" need (?:it|them|this|that) any ?more|"
        r"not needed any ?more|stopped using|dropped|clutter(?:s|ing|ed)?|duplicates|junk|leftovers?|left ?over|"
        r"(?:i|we) (?:do|did)" + _N + r" need|nobody (?:needs|uses|reads|wants|looks at)|"
        r"(?:is|are|a|the same|two|three|some|many|with) duplicated?)\b",
        "unwanted",
    ),
    # it is missing: create, add
    (
        r"\b(?:(?:is|are|was|were|has|have)"
        + _N
        + r"(?: been)?|not) (?:tracked|logged|recorded|filed|written down|"
        r"captured|anywhere)\b|"
        r"\bnobody (?:has|have) (?:recorded|logged|filed|written|tracked|created|added|reported|opened)\b|"
        r"\bnowhere to (?:put|keep|store|record|track|write)\b|\b(?:does|do)" + _N + r" exist(?: yet)?\b|"
        r"\b(?:has|have|there['\u2019]?s|there is|there are) (?:no|nothing)\b(?=[^.,;!?]*\byet\b)|\bnothing yet\b|"
        r"\b(?:(?:is|are)" + _N + r"|['\u2019](?:s|re) not) (?:in|on) (?=[^.,;!?]*\byet\b)|\bmissing\b|"
        r"\bnever wrote (?:down|up)\b|\bthere(?:['\u2019]s| is) no \w+ (?:for|about) (?:it|this|that)\b|"
        r"\b(?:track|log|file|record) (?:it|this|that|them)\b",
        "missing",
    ),
    # money taken wrongly: refund
    (
        r"(?<=charged |.billed |...paid )(?:twice|double|two times|too much|by mistake|wrongly)\b|"
        r"\b(?:double|twice)[- ](?:charged|billed)\b|\bover(?:charged|billed)\b",
        "overcharged",
    ),
    # stop paying: cancel the subscription
    (
        r"\b(?:stop|stopped|quit) (?:paying|being billed|the subscription)\b|"
        r"\b(?:does|do)" + _N + r" want to (?:pay|be billed|renew|continue)\b|\bunsubscribe\b",
        "stop",
    ),
    # nobody does it: assign it
    (
        r"\bnobody(?:['\u2019]s| is) (?:working on|looking at|handling|assigned to|on)\b|\bno(?:body| one) owns\b|"
        r"\bunassigned\b|\bno owner\b|\bshould (?:take|pick up|own|handle) (?:it|this|that)\b|"
        r"\b(?:take|pick) (?:it|this|that) (?:over|up)\b",
        "unowned",
    ),
    # a list that has not caught up: refresh it
    (
        r"\b(?:do|does|did)" + _N + r" show(?: up)?\b|\bnot showing(?: up)?\b|\bout of sync\b|"
        r"\bnot (?:in sync|synced|refreshed)\b|\b(?:aren|isn)['\u2019]?t (?:listed|there yet)\b",
        "unsynced",
    ),
    # work done, waiting for others: open a pull request
    (
        r"\bready (?:for (?:review|a review|the team|others|someone)|to (?:be )?reviewed)\b|"
        r"\bfor the team to (?:look at|review|check)\b",
        "ready",
    ),
    # reviewed and accepted: merge it
    (
        r"\b(?:was|is|got|been|were|are) approved\b|\bready to (?:go in|ship|land|be merged|merge)\b|"
        r"\bgood to (?:go|merge)\b",
        "approved",
    ),
    # something is broken: it is a ticket or an issue (what to do with it is told elsewhere)
    (
        r"\bcomplain(?:s|ed|ing|t|ts)?\b|\bbroken\b|\bnot working\b|\b(?:does|do|did)" + _N + r" work\b|"
        r"\bcrash(?:es|ed|ing)?\b",
        "complaint",
    ),
    # written, not to be sent yet: a draft
    (
        r"\bbefore (?:it goes out|it(?:['\u2019]s| is) sent|sending|i send|we send)\b|"
        r"\b(?:check|review|look at|approve) it (?:first|before)\b|\bnot (?:send|sent) (?:it )?yet\b",
        "unsent",
    ),
    # how it looks: a picture of it
    (
        r"\bwhat (?:it|this|that) looks like\b|\blooks like (?:right )?now\b|\bhow (?:it|this|that) looks\b",
        "appearance",
    ),
    # failed by chance: run again
    (r"\bflaky\b|\bone more (?:try|time|run|go)\b|\btry (?:it |that )?again\b|\bretry\b", "retry"),
    # at the wrong time: reschedule
    (
        r"\bdouble[- ]booked\b|\bclash(?:es)?\b|\bconflicts? with\b|\bha(?:s|ve) to (?:happen|be) (?:at|on)\b|"
        r"\bpush(?:ed)? (?:it |back|to)\b|\breschedul\w*",
        "conflict",
    ),
    # nobody answered: reply, comment
    (
        r"\bwaiting (?:on|for)\b(?=[^.;!?]*\b(?:reply|answer|response)\b)|\bwithout (?:a |any )?(?:reply|response|answer)\b|"
        r"\b(?:has|have)" + _N + r" (?:replied|answered|responded)\b|\bno (?:reply|response|answer)\b",
        "unanswered",
    ),
    # what a container holds (the words stay in the query: they may name the integration)
    (
        r"\bwhat(?:['\u2019]s| is| do (?:i|we) have|(?: else)? have (?:i|we) got)(?= (?:on|in) "
        r"(?:my|our|the|their|his|her|your) (?:calendar|agenda|schedule)\b)",
        "agenda",
    ),
    (r"\b(?=(?:in|from|into) (?:my|our|the|your) (?:inbox|mailbox)\b)", "mailbox"),
)
_SYMPTOM_WORDS = 4  # a symptom is told in a sentence: shorter queries are not read for one


@functools.cache
def _symptom_pattern() -> re.Pattern[str]:
    # Compiled on the first query long enough to hold a symptom (a few ms), not at import.
    # Matched against the lower-cased query (quicker than re.I).
    return re.compile("|".join(f"(?P<{name}>{pattern})" for pattern, name in _SYMPTOMS))


_INTENT_ACTIONS: dict[str, dict[str, float]] = {
    "inform": {"send": 1.0, "post": 1.0, "reply": 0.5},
    "unknown": {"list": 1.0, "get": 0.8, "describe": 1.0, "search": 0.5},
    "lost": {"search": 1.0, "find": 1.0},
    "unshared": {"share": 1.0, "invite": 1.0, "permission": 0.5},
    "local": {"upload": 1.0},
    "fix": {"update": 1.0, "edit": 1.0, "set": 1.0, "modify": 0.8, "write": 0.8},
    "unwanted": {"delete": 1.0, "archive": 1.0, "trash": 1.0, "remove": 1.0, "clear": 0.5},
    "missing": {"create": 1.0, "add": 0.9, "append": 0.8, "log": 0.5},
    "overcharged": {"refund": 1.0},
    "stop": {"cancel": 1.0},
    "retry": {"rerun": 1.0, "run": 0.5},
    "conflict": {"update": 1.0, "move": 0.5},
    "unanswered": {"reply": 1.0, "comment": 1.0, "respond": 1.0},
    "unowned": {"assign": 1.0},
    "unsynced": {"refresh": 1.0, "sync": 1.0, "update": 0.5},
    "ready": {"create": 1.0, "open": 0.8},
    "unsent": {"create": 1.0},
    "appearance": {"screenshot": 1.0},
    "missed": {"get": 1.0, "list": 1.0, "read": 0.8, "search": 0.5},
    "approved": {"merge": 1.0},
}
# Symptoms that tell what to do as plainly as its verb would ("charged twice" is a refund): their
# reading is evidence for the score; the others ("it's wrong", "I can't find it") only rank.
_TELLING = frozenset(
    {"overcharged", "stop", "retry", "unowned", "unsent", "ready", "appearance", "unsynced", "approved"}
)
# What some symptoms are about, as a second word ("doesn't want to pay" is about a subscription).
_INTENT_OBJECTS: dict[str, dict[str, float]] = {
    "stop": {"subscription": 1.0},
    "conflict": {"event": 1.0, "meeting": 1.0},
    "ready": {"pr": 1.0},
    "unsent": {"draft": 1.0},
    "missed": {"history": 1.0, "thread": 0.5},
    "complaint": {"ticket": 1.0, "issue": 1.0},
    "agenda": {"event": 1.0},
    "mailbox": {"email": 0.5, "message": 0.5},
}


def _symptoms(text: str, short: bool = False) -> tuple[str, list[str]]:
    """(the query without its symptom phrases, the intents they stand for, in order, once each).
    English phrases; a query in another language has them once engine/crosslingual.py read it
    (`short`: then a query of fewer words is read too)."""
    found: list[str] = []
    lowered = text.lower()
    if (len(text.split()) < _SYMPTOM_WORDS and not short) or len(lowered) != len(text):
        return text, found

    kept: list[str] = []
    at = 0
    match_at = _symptom_pattern().match
    # Every phrase starts at a word boundary: tried there only (what finditer finds, a quarter
    # quicker than trying each of the pattern's hundreds of branches at every character).
    for boundary in _BOUNDARY.finditer(lowered):  # the same length lower-cased
        if boundary.start() < at or (match := match_at(lowered, boundary.start())) is None:
            continue
        name = match.lastgroup
        if name and name not in found:
            found.append(name)
        kept += (text[at : match.start()], " ")
        at = match.end()
    return ("".join(kept) + text[at:] if found else text), found


_BOUNDARY = re.compile(r"\b")


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
_INTENT = 1.0  # a symptom read as its action (_SYMPTOMS)
_PREFIX = 0.6  # an unknown word completed to an index term ("calend" → calendar)
_INFLECTED = 0.9  # an unknown -ed / -ing word read as its base ("emailed" → email)
_TYPO = 0.7  # an unknown word corrected to an index term ("lsit" → list)
_TYPO_MIN_LENGTH = 3  # shorter words are another real word one letter away too often
_TYPO_MAX_LENGTH = 24  # no word is longer; a longer "word" is not worth its edit-distance cost
_TYPO_TERMS = 8_000  # the typo index covers at most this many terms, the most common first
_TYPO_LONG = 1_000  # of which the most common long ones (8+ letters) with two deletions, not one
# At most this many distinct words in one index, plus so many per tool (real catalogs have 3-6 per
# tool; a catalog of unique identifiers, 120): a tool's words new past it are left out of postings.
_VOCABULARY = 50_000
_VOCABULARY_PER_TOOL = 8
_TYPO_ENTRIES = 48_000  # and at most this many entries in all (384 KB): SearchIndex._build_typo_index
_PREFIX_TERMS = 32
_CONFIDENT = 0.3  # the top of the "no match" band: below it a query is also read cross-lingually  # an unknown word completes to at most this many terms
# Bounds on what one tool adds to an index, so that memory and build time grow with the number of
# tools and nothing else: a term is at most _TERM_MAX characters (a longer run of letters, a hash or
# base64, is no word anyone searches for), a field at most this many characters of text.
_TERM_MAX = 32
_NAME_CHARS = 200
_DESCRIPTION_CHARS = 1_000
_KEYWORD_CHARS = 1_000
_ARGUMENT_CHARS = 2_000
_ARGUMENT_TERMS = 60
# Bounds on the work one query can cause: its first 2,000 characters and 64 distinct terms are
# used (BFCL's longest questions are well inside both).
_QUERY_CHARS = 2000
_QUERY_TERMS = 64
_SURFACE = 0.2  # the word also found as written, singular or plural ("comments" → list_comments)
# to_bytes layout and everything an index depends on: a saved index from other settings is refused.
_FORMAT = (
    "workbench-search-6 "
    + hashlib.sha256(
        repr(
            (
                _FIELDS,
                _WEIGHT,
                _B,
                _K1,
                _DESCRIPTION_TERMS,
                sorted(_STOP),
                sorted(_ACTIONS),
                _PHRASES,
                _TERM_MAX,
                _TYPO_TERMS,
                _TYPO_LONG,
                _TYPO_ENTRIES,
                _VOCABULARY,
                _VOCABULARY_PER_TOOL,
                sorted(_SYNONYMS),
                sorted(_NOT_PLURAL),
            )
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
    # The query names this tool's integration, or holds an identifier of it: it ranks before
    # every tool of an integration the query does not name (also across catalogs).
    named: bool = False


class _Parsed(NamedTuple):
    fields: dict[str, list[str]]
    written: frozenset[str]  # the words as written (singular or plural) in name and description


def _parse(doc: SearchDoc) -> _Parsed:
    """`<integration>_<verb>_<object>`: leading name words the integration also has, the first
    action word after them, and the rest. Names without an action word are all object."""
    integration = _integration_terms(doc.integration[:_NAME_CHARS])
    known = set(integration)
    written_name = _folded_ascii(doc.name[:_NAME_CHARS])
    description = _folded_ascii(doc.description[:_DESCRIPTION_CHARS])
    description = _IDENTIFIER.sub(" ", description) if "_" in description else description
    keywords = _folded_ascii(doc.keywords[:_KEYWORD_CHARS])
    text = f"{written_name} {description} {keywords}"
    if text.isascii():
        name, description_terms, keyword_terms = map(_index_terms, (written_name, description, keywords))
        written = frozenset(w for w in _ASCII_WORD.findall(text.lower()) if len(w) <= _TERM_MAX)
    else:  # each text's words read once, for its terms and for the words as written
        words = [_word_terms(written_name), _word_terms(description), _word_terms(keywords)]
        name, description_terms, keyword_terms = ([t for t, _ in _phrases(w)] for w in words)
        written = frozenset(w for _, w in _phrases(list(itertools.chain.from_iterable(words))))
    at = 0
    while at < len(name) - 1 and name[at] in known:
        at += 1
    rest = name[at:]
    verb = next((i for i, t in enumerate(rest) if t in _ACTIONS), None)
    fields = {
        "action": [rest[verb]] if verb is not None else [],
        "object": [t for i, t in enumerate(rest) if i != verb],
        "integration": [*integration, *(t for t in name[:at] if t not in known)],
        "description": description_terms[:_DESCRIPTION_TERMS],
        "keywords": keyword_terms,
        "arguments": _argument_terms(_folded_ascii(doc.arguments[:_ARGUMENT_CHARS]))[:_ARGUMENT_TERMS],
    }
    return _Parsed(fields, written)


@functools.lru_cache(maxsize=4096)
def _fields_of(doc: SearchDoc) -> dict[str, list[str]]:
    """A top hit's fields, for its calibrated score (the same few tools come first again and again)."""
    return _parse(doc).fields


def _argument_terms(text: str) -> list[str]:
    """Each argument word once (a word repeated across arguments, "page id", "page title", says no
    more about the tool), without the example values argument descriptions give (dates, ids:
    "2024-01-31T10:00:00Z" is not the words t10 and 00z)."""
    if not text.isascii():
        return [t for t in dict.fromkeys(tokens(text)) if not any(c.isdigit() for c in t)]
    raws = filter(str.isalpha, dict.fromkeys(_ASCII_WORD.findall(text)))
    return list(dict.fromkeys(itertools.chain.from_iterable(map(_ascii_stems, raws))))


# A maximal run of ASCII letters and digits: _ASCII_WORD without its lookarounds (several times
# quicker over a catalog's text); a run longer than _WORD_MAX is then dropped as _ASCII_WORD drops it.
_RUN = re.compile(r"[A-Za-z0-9]+")
# Every byte but an ASCII letter or digit as a space, NUL apart: an ASCII text translated by it and
# split() has the words _RUN finds (several times quicker than the pattern), and many texts joined
# by NUL are translated at once (_split_words).
_NOT_WORD = bytes(c if c == 0 or (c < 128 and chr(c).isalnum()) else 32 for c in range(256))
_CHUNK = 64  # tools read together (_Parser.read): their words are held at once


_NOT_IDENTIFIER = bytes(c if c == 95 else n for c, n in enumerate(_NOT_WORD))  # _NOT_WORD but "_"


def _translated(texts: list[str], table: bytes) -> list[str]:
    """Each of `texts` (ASCII, at least one) translated by `table`, by one translate of them all."""
    joined = "\0".join(texts)
    if joined.count("\0") != len(texts) - 1:  # a text with a NUL of its own (no word has one)
        joined = "\0".join(t.replace("\0", " ") for t in texts)
    return joined.encode().translate(table).decode().split("\0")


def _split_words(texts: list[str]) -> list[list[str]]:
    """_RUN.findall of each of `texts` (ASCII, at least one)."""
    return list(map(str.split, _translated(texts, _NOT_WORD)))


def _description_words(texts: list[str]) -> list[list[str]]:
    """_RUN.findall(_IDENTIFIER.sub(" ", text)) of each of `texts` (ASCII, at least one): split at
    every character but a letter, a digit or "_", a run with an underscore is an identifier (left
    out) when each of its underscores joins two runs of letters and digits, as _IDENTIFIER matches
    it between word boundaries; any other is its runs of letters and digits."""
    out = []
    for text in _translated(texts, _NOT_IDENTIFIER):
        words = text.split()
        if "_" in text:
            if all(w[0] != "_" and w[-1] != "_" and "__" not in w for w in words if "_" in w):
                words = [w for w in words if "_" not in w]  # every one an identifier: most texts
            else:
                words = [
                    run
                    for w in words
                    if "_" not in w or w[0] == "_" or w[-1] == "_" or "__" in w
                    for run in w.split("_")
                    if run
                ]
        out.append(words)
    return out


_WORDS_CACHED = 32_768  # distinct words a build remembers (it starts again past it)
_COMPOUNDS_NOTED = 16_384  # identifiers' whole-word terms a build notes for its typo index, at most


class _Words:
    """One build's ASCII words, each distinct word worked out once: its index terms (_ascii_stems)
    and its written form (lower-cased, or "" past _TERM_MAX). A chunk's new words are worked out
    together (`learn`), so that reading a word already seen is one dict lookup: a catalog of 20,000
    tools has millions of words but a hundred thousand distinct ones. It lives as long as the
    build, and starts again past _WORDS_CACHED words (a vocabulary of unique identifiers)."""

    def __init__(self) -> None:
        self.terms: dict[str, tuple[str, ...]] = {}
        self.lower: dict[str, str] = _Lower()
        # The whole-word terms of camelCase identifiers ("createissue" of createIssue), first met
        # as such: the typo index leaves out a single tool's (its parts are indexed, and typed).
        self.compounds: set[str] = set()

    def forget(self) -> None:
        """Start again if past _WORDS_CACHED words (called between chunks, never within one)."""
        if len(self.terms) >= _WORDS_CACHED:
            self.terms.clear()
            self.lower.clear()

    def learn(self, raws: set[str]) -> None:
        """Work out the words of `raws` not known yet (each a run of ASCII letters and digits), all
        of them at once: a catalog of camelCase identifiers has new words in almost every tool."""
        terms, lower = self.terms, self.lower
        new = raws.difference(terms)
        # Most words have no capital: one part, itself. Digits alone have none either.
        camel = set(itertools.filterfalse(str.isdigit, itertools.filterfalse(str.islower, new)))
        plain = new.difference(camel) if camel else new
        terms.update(zip(plain, map(_plain_terms, plain), strict=True))
        self._as_written(plain)
        if not camel:
            return
        if max(map(len, camel)) > _WORD_MAX:  # no word: see _ASCII_WORD
            long = {raw for raw in camel if len(raw) > _WORD_MAX}
            terms.update(dict.fromkeys(long, ()))
            camel -= long
        # _split_camel of each, its pattern run once over them all, a line each (no split point
        # crosses a line's end): "createIssue" -> "create issue".
        words = list(camel)
        spaced = _CAMEL.sub(" ", "\n".join(words)).lower().split("\n")
        split: list[tuple[str, list[str]]] = []
        for raw, parts in zip(words, map(str.split, spaced), strict=True):
            low = raw.lower()
            if len(low) <= _TERM_MAX:
                lower[raw] = low
            if len(parts) == 1 or (raw[0].isupper() and min(map(len, parts)) < 4):
                terms[raw] = _plain_terms(low)  # one word after all: GitHub, PRs
            else:
                parts.append(low)  # createIssue: create, issue and createissue
                split.append((raw, parts))
        if not split:
            return
        wholes = [parts[-1] for _, parts in split]
        # Whole words first met as such in this catalog (not a word of their own elsewhere).
        compounds = [w for w in wholes if w not in terms]
        new_parts = set(itertools.chain.from_iterable(p for _, p in split)).difference(terms)
        terms.update(zip(new_parts, map(_plain_terms, new_parts), strict=True))
        self._as_written(new_parts)
        room = _COMPOUNDS_NOTED - len(self.compounds)
        if compounds and room > 0:
            self.compounds.update(
                itertools.islice(itertools.chain.from_iterable(map(terms.__getitem__, compounds)), room)
            )
        get = terms.__getitem__
        for raw, parts in split:
            terms[raw] = tuple(itertools.chain.from_iterable(map(get, parts)))

    def _as_written(self, words: Collection[str]) -> None:
        """Words in lower case as written: themselves, the same strings as their terms (an index's
        terms and written words then share them), or "" past _TERM_MAX."""
        self.lower.update(zip(words, words, strict=True))
        if words and max(map(len, words)) > _TERM_MAX:
            self.lower.update((w, "") for w in words if len(w) > _TERM_MAX)


class _Lower(dict[str, str]):
    """A written word as the index keeps it (lower-cased, or "" past _TERM_MAX): learnt with its
    terms, or worked out when first asked for."""

    def __missing__(self, raw: str) -> str:
        out = self[raw] = raw.lower() if len(raw) <= _TERM_MAX else ""
        return out


def _plain_terms(word: str) -> tuple[str, ...]:
    """_ascii_stems of a word in lower case or digits (one part): none for a stop word, a letter or
    a word past _TERM_MAX, else its stem (a word not ending in -s is its own)."""
    if len(word) > _TERM_MAX or word in _STOP or (len(word) == 1 and not word.isdigit()):
        return ()
    return (stem(word) if word[-1] == "s" else word,)


class _Vocabulary:
    """At most `limit` distinct words in one build's postings: a tool's words new past it are left
    out (as one tool's, they could only find that tool). Counted only once the words given
    (`admitted`: the distinct words of every tool so far, kept up to date by the build) may hold
    that many, so a catalog within it pays nothing."""

    def __init__(self, limit: int, admitted: Collection[str]) -> None:
        self.limit, self.admitted = limit, admitted
        self.seen: dict[str, None] | None = None

    def admit(self, words: Collection[str]) -> Collection[str]:
        """`words` (a tool's, distinct) within the limit: a dict's keys over it are deleted in
        place, a set's are returned as a new list."""
        seen = self.seen
        if seen is None:
            if len(self.admitted) + len(words) <= self.limit:
                return words
            seen = self.seen = dict.fromkeys(self.admitted)
        if len(seen) + len(words) <= self.limit:  # all of them fit: remembered in C
            seen.update(dict.fromkeys(words))
            return words
        fresh = [w for w in words if w not in seen]
        room = max(self.limit - len(seen), 0)
        seen.update(dict.fromkeys(fresh[:room]))
        if len(fresh) <= room:
            return words
        left_out = fresh[room:]
        if isinstance(words, dict):
            for w in left_out:
                del words[w]
            return words
        dropped = set(left_out)
        return [w for w in words if w not in dropped]


class _EarlyVocabulary:
    """The postings' _Vocabulary of terms, kept as a catalog is read: each tool's terms new past the
    bound are taken out of its fields (`trim`), from the first tool on. The postings admit terms
    tool by tool, in the order of a tool's sums (its fields' terms in _FIELDS order), so what is
    taken out here they would leave out, and what stays they admit as they would have."""

    def __init__(self, limit: int) -> None:
        self.terms: dict[str, None] = {}
        self.known = _Vocabulary(limit, self.terms)
        self.lengths: dict[int, dict[str, int]] = {}  # a trimmed tool's fields' lengths as they were

    def trim(self, i: int, parsed: dict[str, list[str]]) -> None:
        """Take out of tool `i`'s fields its terms past the bound."""
        own = dict.fromkeys(itertools.chain.from_iterable(map(parsed.__getitem__, _FIELDS)))
        distinct = len(own)
        self.known.admit(own)  # a dict's words past the bound are deleted from it
        self.terms.update(own)
        if len(own) < distinct:
            self.lengths[i] = {f: len(parsed[f]) for f in _FIELDS}
            for f in _FIELDS:
                parsed[f] = [t for t in parsed[f] if t in own]


class _Parser:
    """_parse for a whole catalog: the same fields and written words, each distinct word worked
    out once (_Words), no regex lookarounds; a document with text that does not read as ASCII
    (_folded_ascii) goes through _parse."""

    def __init__(self) -> None:
        self.words = _Words()

    def _terms(self, raws: list[str], most: int | None = None) -> list[str]:
        """_index_terms of the text of `raws`, its first `most`."""
        try:
            return self._known_terms(raws, most)
        except KeyError:  # a description whose first words give fewer than `most` terms
            self.words.learn(set(raws))
            return self._known_terms(raws, most)

    def _known_terms(self, raws: list[str], most: int | None) -> list[str]:
        out = itertools.chain.from_iterable(map(self.words.terms.__getitem__, raws))
        terms = list(out if most is None else itertools.islice(out, most + 1))
        if most is not None and len(terms) > most:
            return terms[:most]  # two-word names add their word at the end: past `most` too
        if not _PHRASE_ENDS.isdisjoint(terms):
            terms = [t for t, _ in _phrases([(t, t) for t in terms])]
        return terms if most is None or len(terms) <= most else terms[:most]

    def _arguments(self, raws: list[str]) -> list[str]:
        """_argument_terms of the text of `raws`: each word once, the first _ARGUMENT_TERMS, from as
        few of the text's words as give them."""
        words = self.words.terms.__getitem__
        head = 2 * _ARGUMENT_TERMS
        if len(raws) <= head:  # every word in the head: the terms' dict drops repeats alone
            return list(dict.fromkeys(itertools.chain.from_iterable(map(words, filter(str.isalpha, raws)))))[
                :_ARGUMENT_TERMS
            ]
        raws = list(filter(str.isalpha, dict.fromkeys(raws)))
        terms = dict.fromkeys(itertools.chain.from_iterable(map(words, raws[:head])))
        if len(terms) < _ARGUMENT_TERMS and len(raws) > head:
            terms = dict.fromkeys(itertools.chain.from_iterable(map(words, raws)))
        return list(terms)[:_ARGUMENT_TERMS]

    def read(self, docs: list[SearchDoc]) -> Iterator[tuple[dict[str, list[str]], Collection[str]]]:
        """Each document's fields and written words, as _parse reads them, in order. Read _CHUNK
        documents at a time: each field of theirs split into words at once (_split_words), their new
        words worked out together (_Words.learn); a document with text that does not read as ASCII
        (_folded_ascii) goes through _parse."""
        words = self.words
        for start in range(0, len(docs), _CHUNK):
            chunk = docs[start : start + _CHUNK]
            names = [d.name[:_NAME_CHARS] for d in chunk]
            descriptions = [d.description[:_DESCRIPTION_CHARS] for d in chunk]
            keywords = [d.keywords[:_KEYWORD_CHARS] for d in chunk]
            arguments = [d.arguments[:_ARGUMENT_CHARS] for d in chunk]
            texts = (names, descriptions, keywords, arguments)
            # The documents with text that does not read as ASCII (_folded_ascii): left out of the
            # columns, each read by _parse.
            other: set[int] = set()
            if not all(map(str.isascii, map("".join, texts))):
                for column in texts:
                    for i, text in enumerate(column):
                        if not text.isascii():
                            column[i] = _folded_ascii(text)
                            if not column[i].isascii():
                                other.add(i)
                for column in texts:
                    for i in other:
                        column[i] = ""
            name_runs, description_runs, keyword_runs, argument_runs = (
                _split_words(names),
                _description_words(descriptions),
                _split_words(keywords),
                _split_words(arguments),
            )
            # A description's terms are its first _DESCRIPTION_TERMS: its first as many words
            # give them, unless some are stop words (then _terms learns the rest).
            heads = (runs[:_DESCRIPTION_TERMS] for runs in description_runs)
            words.forget()
            words.learn(
                set(
                    itertools.chain.from_iterable(
                        itertools.chain(name_runs, heads, keyword_runs, argument_runs)
                    )
                )
            )
            lower = words.lower.__getitem__
            for i, d in enumerate(chunk):
                if i in other:
                    parsed = _parse(d)
                    yield parsed.fields, parsed.written
                    continue
                integration = _integration_terms(d.integration[:_NAME_CHARS])
                name_raws, description_raws, keyword_raws = name_runs[i], description_runs[i], keyword_runs[i]
                terms = self._terms(name_raws)
                at = 0
                while at < len(terms) - 1 and terms[at] in integration:
                    at += 1
                rest = terms[at:]
                verb = next((k for k, t in enumerate(rest) if t in _ACTIONS), None)
                fields = {
                    "action": [rest[verb]] if verb is not None else [],
                    "object": [t for k, t in enumerate(rest) if k != verb],
                    "integration": [*integration, *(t for t in terms[:at] if t not in integration)],
                    "description": self._terms(description_raws, _DESCRIPTION_TERMS),
                    "keywords": self._terms(keyword_raws),
                    "arguments": self._arguments(argument_runs[i]),
                }
                written = set(map(lower, itertools.chain(name_raws, description_raws, keyword_raws)))
                written.discard("")
                yield fields, written


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
    """The word and every form of it with up to `distance` (1 or 2) letters deleted."""
    n = len(word)
    out = {word[:i] + word[i + 1 :] for i in range(n)}
    out.add(word)
    if distance >= 2:  # two distinct positions, each pair once
        out.update(word[:i] + word[i + 1 : j] + word[j + 1 :] for j in range(1, n) for i in range(j))
    return out


def _deletion_crcs(words: list[bytes], length: int, two: bool) -> Iterator[Iterable[int]]:
    """The CRC-32 of _deletes(word, 2 if two else 1) of every word (all `length` letters long),
    position by position: the words themselves, then each with its i-th letter deleted, then (two)
    with its i-th and j-th, each an iterator over all the words at once. A deletion's CRC goes on
    from its prefix's (crc32(a + b) is crc32(b, crc32(a))), so no deletion is built as bytes."""
    crc32 = zlib.crc32
    yield map(crc32, words)
    prefix: list[int] = [0] * len(words)  # the CRC of each word's first i letters
    prefixes = [prefix]
    for i in range(length):
        yield map(crc32, map(itemgetter(slice(i + 1, None)), words), prefix)
        if i + 1 < length:
            prefix = list(map(crc32, map(itemgetter(slice(i, i + 1)), words), prefix))
            prefixes.append(prefix)
    if two:
        for j in range(1, length):
            tail = list(map(itemgetter(slice(j + 1, None)), words))
            for i in range(j):
                yield map(crc32, tail, map(crc32, map(itemgetter(slice(i + 1, j)), words), prefixes[i]))


def _one_deletion(length: int) -> int:
    return length + 1  # the word and each one-letter deletion


def _two_deletions(length: int) -> int:
    return length * (length - 1) // 2


def _typo_limit(word: str) -> int:
    return 1 if len(word) < 8 else 2


_TYPO_SHIFT = float(1 << 20)  # a typo index entry is crc * 2**20 + term number, a float below 2**53


def _typo_key(text: str) -> int:
    """A deletion's slot in the typo index: its CRC-32 (stable across processes, unlike hash())."""
    return zlib.crc32(text.encode())


class SearchBudgetExceeded(WorkbenchError):
    """A catalog too large to index within its budget (tools, or CPU time of the build)."""


@dataclass(frozen=True, slots=True)
class BuildBudget:
    """What one index build may cost: at most `tools` documents and `cpu_seconds` of the building
    thread's CPU time (checked as it goes; past it the build stops with SearchBudgetExceeded)."""

    tools: int = 100_000
    cpu_seconds: float = 60.0


class _Clock:
    def __init__(self, budget: BuildBudget, label: str) -> None:
        self.budget, self.label = budget, label
        self.start = time.thread_time()

    def check(self) -> None:
        if time.thread_time() - self.start > self.budget.cpu_seconds:
            raise SearchBudgetExceeded(
                f"{self.label}: indexing took more than its {self.budget.cpu_seconds:g} s budget; "
                "its tools are left out of search"
            )


class SearchIndex:
    """BM25F postings in flat arrays (a term's documents and weights side by side), so an index of
    20,000 tools with real descriptions stays in tens of MB, and the typo index prebuilt with it.

    Everything one tool can add is bounded (its name, description, keywords and arguments each to
    a number of terms, every term to _TERM_MAX characters), so memory and build time grow with the
    number of tools and nothing else; `budget` bounds those too."""

    def __init__(
        self, docs: Iterable[SearchDoc], budget: BuildBudget | None = None, label: str = "catalog"
    ) -> None:
        # A build makes a few container objects per tool, all freed when it ends: a full garbage
        # collection over them (and the rest of the process) would cost more than the build itself.
        with deferred_full_collections():
            self._build(docs, budget or BuildBudget(), label)

    def _build(self, docs: Iterable[SearchDoc], budget: BuildBudget, label: str) -> None:
        self.docs: list[SearchDoc] = list(itertools.islice(docs, budget.tools + 1))
        if len(self.docs) > budget.tools:
            raise SearchBudgetExceeded(
                f"{label}: more than {budget.tools} tools to index; its tools are left out of search"
            )
        clock = _Clock(budget, label)
        n = len(self.docs)
        parser = _Parser()
        fields: list[dict[str, list[str]]] = []
        # Each written word's tools, and below each term's tools and weights, tool after tool: a
        # row per word (in the order words first appear), then laid end to end (_flatten).
        written_rows: dict[str, array[int]] = {}
        vocabulary = _VOCABULARY + _VOCABULARY_PER_TOOL * n
        known = _Vocabulary(vocabulary, written_rows)
        # Once the written words pass the bound, a catalog of distinct words: each tool's terms
        # are admitted as it is read, as the postings below will admit them, and those left out
        # are taken out of its fields, so that no more of them are held than the postings hold.
        # The lengths its fields had are kept (BM25F normalises by them).
        early: _EarlyVocabulary | None = None
        for i, (parsed, written) in enumerate(parser.read(self.docs)):
            fields.append(parsed)
            for w in known.admit(written):
                try:
                    written_rows[w].append(i)
                except KeyError:
                    written_rows[w] = array("i", (i,))
            if early is not None:
                early.trim(i, parsed)
            elif known.seen is not None:  # the written words reach their bound: from now on
                early = _EarlyVocabulary(vocabulary)
                for j, p in enumerate(fields):
                    early.trim(j, p)
            if i & 127 == 127:
                clock.check()
        lengths = early.lengths if early else {}
        del early
        compounds = parser.words.compounds
        del parser
        self._written_at, self._written_ids, _ = _flatten(written_rows, None)
        del written_rows
        total = {f: sum(len(p[f]) for p in fields) for f in _FIELDS}
        for i, had in lengths.items():  # the terms taken out count as the tool has them
            for f in _FIELDS:
                total[f] += had[f] - len(fields[i][f])
        avg = {f: (total[f] / n if n else 0.0) or 1.0 for f in _FIELDS}
        norms = [(f, _WEIGHT[f], 1 - _B[f], _B[f] / avg[f]) for f in _FIELDS]
        # BM25F: a term's frequency in each field, weighted and length-normalised per field, summed,
        # then saturated once; stored saturated so that a query only multiplies and adds. Each
        # tool's sums in a dict by C-level maps (the same additions in the same order as a loop:
        # dict.update takes each pair as it comes, so a repeated term adds to its sum so far).
        rows: dict[str, array[int]] = {}
        weights: dict[str, array[float]] = {}
        known = _Vocabulary(vocabulary, rows)
        for i, p in enumerate(fields):
            tf: dict[str, float] = {}
            sizes = lengths.get(i)
            for f, weight, flat, slope in norms:
                own = p[f]
                if own:
                    norm = weight / (flat + slope * (sizes[f] if sizes else len(own)))
                    tf.update(zip(own, map(norm.__add__, map(tf.get, own, _ZEROS)), strict=False))
            known.admit(tf)
            for term, v in tf.items():
                try:
                    rows[term].append(i)
                    weights[term].append(v / (_K1 + v))
                except KeyError:
                    rows[term] = array("i", (i,))
                    weights[term] = array("f", (v / (_K1 + v),))
            if i & 127 == 127:
                clock.check()
        self._at, self._ids, self._weights = _flatten(rows, weights)
        del rows, weights
        clock.check()
        self._unseen_idf = math.log(1 + (n + 0.5) / 1.5)  # as rare as a word of one tool
        self._vocab = sorted(self._at)  # for prefix lookups
        self._prior = array("b", (int(_prior(p)) for p in fields))
        # Tools by the words of their integration, for queries that name one ("zendesk tickets").
        by_integration: dict[str, list[int]] = defaultdict(list)
        for i, p in enumerate(fields):
            for t in dict.fromkeys(p["integration"]):
                by_integration[t].append(i)
        self._by_integration = dict(by_integration)
        del fields
        clock.check()
        self._typo_terms, self._typo = self._build_typo_index(compounds)
        del compounds
        self._by_name: dict[str, list[int]] | None = None
        self._actions: dict[str, tuple[list[int], list[float]]] = {}
        self._numpy_arrays: tuple[Any, Any, Any] | None = None
        clock.check()

    def _build_typo_index(self, compounds: Container[str] = ()) -> tuple[list[str], array[float]]:
        """A deletion index of the _TYPO_TERMS most common terms (and the synonym words): each
        term and every form of it with one letter deleted (two for the _TYPO_LONG most common long
        words), as CRC-32 * 2**20 + term number, sorted. A query word's deletions (one, or two for
        a long word) are looked up in it, and every candidate is checked by edit distance.

        At most _TYPO_ENTRIES entries, filled by what a correction is likeliest to be worth: the
        words of two or more tools (and the synonym words), commonest first; two deletions of the
        common long ones; then the words of a single tool, shortest first, then their two
        deletions. A single tool's `compounds` (camelCase identifiers' whole words, "getuserprofile")
        are left out: their parts are indexed, and a query's identifier is split into them as the
        tool's was; in a catalog of identifiers they were most of the typo index and of its build.
        A catalog's size or its identifiers bound the typo index's size and build time, never grow
        them."""
        n_docs = self._doc_count
        eligible = [
            t
            for t in self._at
            if _TYPO_MIN_LENGTH <= len(t) <= _TYPO_MAX_LENGTH and t.isascii() and t.isalpha()
        ]
        if compounds:
            eligible = [t for t in eligible if t not in compounds or n_docs(t) != 1]
        if len(eligible) > _TYPO_TERMS:
            eligible.sort(key=n_docs, reverse=True)
            del eligible[_TYPO_TERMS:]
        candidates = sorted({*eligible, *(t for t in _SYNONYMS if len(t) >= _TYPO_MIN_LENGTH)})
        at = self._at
        count = dict(
            zip(candidates, (at[t] & _COUNT_MASK if t in at else 0 for t in candidates), strict=True)
        )
        # Stable sorts (equal keys keep their order, reverse=True too): the most common long words
        # alphabetically; common words by (-count, length, word); rare ones by (length, word).
        by_count = sorted(candidates, key=count.__getitem__, reverse=True)
        long = set(itertools.islice((t for t in by_count if len(t) >= 8), _TYPO_LONG))
        common = sorted((t for t in candidates if count[t] != 1), key=len)
        common.sort(key=count.__getitem__, reverse=True)
        rare = sorted((t for t in candidates if count[t] == 1), key=len)
        one: set[str] = set()
        two: set[str] = set()
        spent = 0
        for tier, into, cost in (
            (common, one, _one_deletion),
            ([t for t in common if t in long], two, _two_deletions),
            (rare, one, _one_deletion),
            ([t for t in rare if t in long], two, _two_deletions),
        ):
            for t in tier:
                spent += cost(len(t))
                if spent > _TYPO_ENTRIES:
                    break
                into.add(t)
            else:
                continue
            break
        terms = sorted(one)
        # Two deletions for the most common long words (two slips in "invented" → "inventor").
        groups: dict[tuple[int, bool], tuple[list[bytes], list[float]]] = {}
        for number, term in enumerate(terms):
            group = groups.setdefault((len(term), term in two), ([], []))
            group[0].append(term.encode())
            group[1].append(float(number))
        # key * 2**20 + number for each deletion, as floats (exact below 2**53, sorted several
        # times faster than such ints are, and stored as they are sorted). The deletions are made
        # a position at a time across every term of one length, by C-level maps (no bytecode per
        # deletion: this is most of the build); a term's repeated deletions ("leter" twice from
        # "letter") are one entry.
        entries: set[float] = set()
        for (length, twice), (words, numbers) in groups.items():
            for crcs in _deletion_crcs(words, length, twice):
                entries.update(map(float.__add__, map(_TYPO_SHIFT.__mul__, crcs), numbers))
        return terms, array("d", sorted(entries))

    def _doc_count(self, term: str) -> int:
        return self._at[term] & _COUNT_MASK

    @property
    def nbytes(self) -> int:
        """About how much memory the index holds (for the cache's budget)."""
        text = sum(
            len(d.name) + len(d.description) + len(d.keywords) + len(d.arguments) + 200 for d in self.docs
        )
        arrays = sum(a.itemsize * len(a) for a in (self._ids, self._weights, self._written_ids, self._typo))
        return text + arrays + 150 * (len(self._at) + len(self._written_at)) + 60 * len(self._typo_terms)

    # -- prebuilt -------------------------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        """The built index with its typo index, for a build step to ship beside a large catalog
        (loading it is several times quicker than building it: bench/search_scale.py)."""
        docs = [(d.name, d.description, d.integration, d.keywords, d.arguments) for d in self.docs]
        return marshal.dumps((_FORMAT, docs, *self.state()))

    @classmethod
    def from_bytes(cls, data: bytes) -> SearchIndex:
        """An index saved by to_bytes from this same version of the engine (never untrusted input).
        Its documents are a few container objects each, all kept: as in a build, no full garbage
        collection over them (and the rest of the process) starts while they are loaded."""
        with deferred_full_collections():
            state = marshal.loads(data)  # noqa: S302 -- our own build artefact, never user input
            if not isinstance(state, tuple) or not state or state[0] != _FORMAT:
                raise ValueError("search index built by another version of the engine; rebuild it")
            return cls.from_state([SearchDoc(*d) for d in state[1]], state[2:])

    def state(self) -> tuple[Any, ...]:
        """Everything built from the documents, as marshal-able values (the documents apart): term
        lists sorted, with their posting runs in arrays beside them, so loading neither sorts nor
        unpickles a dict."""
        written = sorted(self._written_at)
        return (
            self._vocab,
            array("q", map(self._at.__getitem__, self._vocab)).tobytes(),
            self._ids.tobytes(),
            self._weights.tobytes(),
            written,
            array("q", map(self._written_at.__getitem__, written)).tobytes(),
            self._written_ids.tobytes(),
            self._unseen_idf,
            self._prior.tobytes(),
            self._by_integration,
            self._typo_terms,
            self._typo.tobytes(),
        )

    @classmethod
    def from_state(cls, docs: list[SearchDoc], state: tuple[Any, ...]) -> SearchIndex:
        """The index of `docs` from what state() returned for them (in this version of the engine)."""
        (
            terms,
            at,
            ids,
            weights,
            written,
            written_at,
            written_ids,
            unseen,
            prior,
            by_integration,
            typo_terms,
            typo,
        ) = state
        index = cls.__new__(cls)
        index.docs = docs
        index._at, index._vocab = _runs(terms, _array("q", at)), terms
        index._ids, index._weights = _array("i", ids), _array("f", weights)
        index._written_at, index._written_ids = (
            _runs(written, _array("q", written_at)),
            _array("i", written_ids),
        )
        index._unseen_idf, index._prior = unseen, _array("b", prior)
        index._by_integration = by_integration
        index._typo_terms, index._typo = typo_terms, _array("d", typo)
        index._by_name = None
        index._actions = {}
        index._numpy_arrays = None
        return index

    # -- postings -----------------------------------------------------------------------------------

    def _posting(self, term: str) -> tuple[array[int], array[float]]:
        at = self._at[term]
        start, count = at >> _COUNT_BITS, at & _COUNT_MASK
        return self._ids[start : start + count], self._weights[start : start + count]

    def _idf(self, term: str) -> float:
        count = self._at[term] & _COUNT_MASK
        n = len(self.docs)
        return math.log(1 + (n - count + 0.5) / (count + 0.5))

    def _written_docs(self, word: str) -> array[int]:
        at = self._written_at.get(word)
        if at is None:
            return _NO_DOCS
        start = at >> _COUNT_BITS
        return self._written_ids[start : start + (at & _COUNT_MASK)]

    # -- query words → index terms ----------------------------------------------------------------

    def _expand(self, word: str, written: str) -> dict[str, float]:
        """Index terms a query term may mean, with a match quality in (0, 1]."""
        found: dict[str, float] = {}
        at = self._at
        if word in at:
            found[word] = 1.0
        for syn in _SYNONYMS.get(word, ()):
            if syn in at:
                found.setdefault(syn, _SYNONYM)
        for action, share in _LEXICON.get(word, {}).items():
            if action in at:
                found.setdefault(action, _SYNONYM * share)
        if found or not word.isascii() or word.isdigit() or word in _NOT_PLURAL:
            return found  # a word known for what it means ("news") is not another one mistyped
        for base in _bases(word):  # "emailed" is email, "charged" charge, "shared" share
            if base in at:
                found[base] = _INFLECTED
                for syn in _SYNONYMS.get(base, ()):
                    if syn in at:
                        found.setdefault(syn, _INFLECTED * _SYNONYM)
                return found
        # Nothing matches the word as written: complete a prefix, or correct a typo.
        if len(word) >= 3:
            i = bisect.bisect_left(self._vocab, word)
            end = min(i + _PREFIX_TERMS, len(self._vocab))
            while i < end and self._vocab[i].startswith(word):
                found[self._vocab[i]] = _PREFIX
                i += 1
        for typed in {word, written}:  # "lits" stems to "lit", but it is "list" mistyped
            if _TYPO_MIN_LENGTH <= len(typed) <= _TYPO_MAX_LENGTH:
                for term in self._corrections(typed):
                    found.setdefault(term, _TYPO)
                    for syn in _SYNONYMS.get(term, ()):
                        if syn in at:
                            found.setdefault(syn, _TYPO * _SYNONYM)
        return found

    def _corrections(self, word: str) -> list[str]:
        """Index terms and synonym words within a small edit distance of an unknown word."""
        limit = _typo_limit(word)
        typo, terms = self._typo, self._typo_terms
        candidates: set[str] = set()
        for d in _deletes(word, limit):
            key = _typo_key(d)
            i = bisect.bisect_left(typo, key * _TYPO_SHIFT)
            while i < len(typo) and (entry := int(typo[i])) >> 20 == key:
                candidates.add(terms[entry & 0xFFFFF])
                i += 1
        out = []
        for term in sorted(candidates):
            if len(word) == 3 and len(term) == 3 and sorted(word) != sorted(term):
                # A three-letter word one letter off another is usually a word of its own ("met"
                # is no "get", "buy" no "bug"): only swapped letters are a slip ("gte" → get).
                continue
            if _edit_distance(word, term, limit) <= limit:
                if term in self._at:
                    out.append(term)
                out.extend(s for s in _SYNONYMS.get(term, ()) if s in self._at)
        return out

    # -- search -----------------------------------------------------------------------------------

    def search(self, query: str, limit: int = 10) -> list[SearchHit]:
        query = query[:_QUERY_CHARS]
        implied, text = _implied(query)
        hits, floor = self._search(text, implied, limit)
        if not hits or hits[0].score < _CONFIDENT or not text.isascii() or _foreign(text):
            # Not confident, or not English only: read the query's foreign words as the catalog's
            # English ones (engine/crosslingual.py) and keep the better answer. A confident
            # English query never gets here.
            from workbench.engine.crosslingual import translate

            translated = translate(text)
            if translated != text:
                # A situation the lexicon read in the query's language is one however short.
                other, other_floor = self._search(translated, implied, limit, situations=True)
                if other and (not hits or other[0].score > hits[0].score):
                    hits, floor = other, other_floor
        if floor and hits[0].score < _NAMED_FLOOR:
            # The query names (or implies) the top tool's integration and names what the tool does
            # or acts on: a weak match, not "no match".
            hits[0] = SearchHit(hits[0].doc, _NAMED_FLOOR, True)
        return hits

    def _search(
        self, text: str, implied: set[str], limit: int, situations: bool = False
    ) -> tuple[list[SearchHit], bool]:
        """(the hits, whether the top one may be lifted to the weak-match band: _NAMED_FLOOR)."""
        terms: dict[str, str] = {}  # index term → the word as first written
        text, intents = _symptoms(text, situations)
        for term, written in _terms(_FRAMES.sub(" ", _VALUES.sub(" ", text))):
            if term in _FILLER:
                continue
            # A word the lexicon read into English has no form as written (singular or plural).
            terms.setdefault(term, "" if situations else written)
            if len(terms) == _QUERY_TERMS:
                break
        if not self.docs or not (terms or implied or intents):
            return [], False
        first = next(iter(terms), "")
        if first in _VERB_SENSE and not any(t in _ACTIONS for t in terms):
            # "message the team", "email bob the report": a noun used as the command is its verb.
            terms.setdefault(_VERB_SENSE[first], _VERB_SENSE[first])
        matched: list[tuple[float, dict[str, float]]] = []  # (idf, expansions) per matched word
        evidence: list[dict[str, float]] = []  # the expansions of the query's own words
        words: list[_Word] = []  # (idf, expansions, the word as written) per matched word
        unmatched = 0.0
        queue = [(word, written, self._expand(word, written)) for word, written in terms.items()]
        phrases: dict[str, float] = {}
        for (_, _, left), (_, _, right) in itertools.pairwise(queue):
            # A two-word name seen only once its words were corrected ("pul requests" → pr).
            for a, qa in left.items():
                for b, qb in right.items():
                    joined = _PHRASES.get((a, b))
                    if joined and joined not in terms and joined in self._at and min(qa, qb) < 1:
                        phrases[joined] = max(phrases.get(joined, 0.0), min(qa, qb))
        queue += [(joined, joined, {joined: quality}) for joined, quality in phrases.items()]
        for intent in intents:  # a symptom stands for its actions (and what they act on)
            for suffix, table in (("", _INTENT_ACTIONS), ("/object", _INTENT_OBJECTS)):
                found = {a: _INTENT * share for a, share in table.get(intent, {}).items() if a in self._at}
                if found:
                    # Actions count where they are the tool's action (its name's verb), objects anywhere.
                    queue.append((f"~{intent}{suffix}", "" if suffix else _AS_ACTION, found))
        for word, written, expansions in queue:
            if not expansions:
                # An unknown word counts against the calibrated score, unless it is a value
                # (a number, an id) rather than a word.
                unmatched += 0.0 if any(c.isdigit() for c in word) else self._unseen_idf
                continue
            # One weight per query word: a synonym or a correction must not outscore the exact
            # word merely because it is rarer in the catalog.
            idf = self._idf(word) if word in self._at else max(self._idf(t) for t in expansions)
            matched.append((idf, expansions))
            # Evidence for the score: the query's words, but not a short word corrected into another
            # ("legs" is no typo of "logs", "buy" none of "bug": short words are real ones), and of
            # the symptoms only those that tell what to do as plainly as a verb (_TELLING).
            if (
                word[1:].split("/")[0] in _TELLING
                if word.startswith("~")
                else word in self._at or word in _SYNONYMS or len(word) > 4
            ):
                evidence.append(expansions)
            words.append((idf, expansions, written))
        # A query that names an integration, or holds one of its identifiers, is about it: its
        # tools come before any other integration's ("zendesk tickets assigned to me", "comment on
        # ABC-123"), even those no other word of the query matched (reads first, at score 0).
        named = {d for t in terms if t in self._by_integration for d in self._by_integration[t]}
        # Named by a word of one integration only ("google" is four, and an identifier's shape is a
        # hint for the ranking, not proof the query is about the service): may lift the score.
        spoken = {
            d
            for t in terms
            if len({self.docs[i].integration for i in self._by_integration.get(t, ())}) == 1
            for d in self._by_integration[t]
        }
        for integration in implied:
            named.update(self._integration_docs().get(integration, ()))
            if integration in _SURE_IDENTIFIERS:
                spoken.update(self._integration_docs().get(integration, ()))
        np = _numpy() if len(self.docs) >= _NUMPY_DOCS else None
        if np is not None:  # a large index: the same sums as whole arrays (numpy, when installed)
            scores = self._array_scores(np, words, named, limit)
        else:
            scores = {}
            for matched_word in words:
                self._add_word(scores, *matched_word)
            for doc in named:
                scores[doc] = scores.get(doc, 0.0) + 1e-9
        if not scores:
            return [], False
        return self._ranked(scores, limit, matched, unmatched, named, evidence, spoken)

    def _add_word(
        self, scores: dict[int, float], idf: float, expansions: dict[str, float], written: str
    ) -> None:
        """Add one query word's contribution to every tool it matches. Postings are added with
        C-level maps (no bytecode per posting), with the same float operations, in the same order,
        as the loop `scores[doc] += idf * quality * weight` (or the best of the word's expansions)
        and then the bonus for the word as written."""
        best: dict[int, float] = {}
        if written == _AS_ACTION:  # a symptom's reading: only the tools whose action it is
            for term, quality in expansions.items():
                acting, acting_weights = self._acting(term)
                _put(
                    best,
                    acting,
                    map(max, map(best.get, acting, _ZEROS), map(quality.__mul__, acting_weights)),
                )
            _add(scores, best, map(idf.__mul__, best.values()))
            return
        if len(expansions) == 1:  # the common case: no synonym, no correction
            ((term, quality),) = expansions.items()
            ids, weights = self._posting(term)
            _add(scores, ids, map((idf * quality).__mul__, weights))
        else:
            for term, quality in expansions.items():
                ids, weights = self._posting(term)
                # best[doc] = the larger of what it had (0.0 if nothing) and quality * weight
                _put(best, ids, map(max, map(best.get, ids, _ZEROS), map(quality.__mul__, weights)))
            _add(scores, best, map(idf.__mul__, best.values()))
        surfaced = self._written_docs(written)
        if surfaced:
            present: Container[int] = best or set(ids)
            found = list(filter(present.__contains__, surfaced))
            _add(scores, found, itertools.repeat(_SURFACE * idf, len(found)))

    def _acting(self, term: str) -> tuple[list[int], list[float]]:
        """The posting of an action word, kept to the tools whose name has it as its action
        (worked out once per index and word: a large catalog's "delete" has thousands of tools)."""
        found = self._actions.get(term)
        if found is not None:
            return found
        ids, weights = self._posting(term)
        if term not in _ACTIONS:  # a word no tool name uses as its verb ("rerun", "permission")
            found = list(ids), list(weights)
        else:
            docs = self.docs
            keep = [k for k, i in enumerate(ids) if term in _name_actions(docs[i].name, docs[i].integration)]
            found = [ids[k] for k in keep], [weights[k] for k in keep]
        if len(self._actions) < _ACTING_CACHED:
            self._actions[term] = found
        return found

    def prepare(self) -> None:
        """Load what searching this index needs beyond itself (numpy, for a large index), so that
        the first search does not: call it off the event loop."""
        if len(self.docs) >= _NUMPY_DOCS:
            _numpy()

    def _array_scores(self, np: Any, words: list[_Word], named: set[int], limit: int) -> dict[int, float]:
        """What _add_word gives, for the tools that can rank in the first `limit` (ties and the
        named integration's tools included): the same float operations in the same order per
        tool, on whole postings at once (a posting's tools are distinct, so `scores[ids] += x`
        adds once to each)."""
        if self._numpy_arrays is None:
            self._numpy_arrays = (
                np.frombuffer(self._ids, dtype=np.int32),
                np.frombuffer(self._weights, dtype=np.float32),
                np.frombuffer(self._written_ids, dtype=np.int32),
            )
        all_ids, all_weights, all_written = self._numpy_arrays
        n = len(self.docs)
        scores = np.zeros(n)
        touched = np.zeros(n, dtype=bool)
        for idf, expansions, written in words:
            if written == _AS_ACTION:
                best = np.zeros(n)
                for term, quality in expansions.items():
                    acting, acting_weights = self._acting(term)
                    ids = np.asarray(acting, dtype=np.int64)
                    best[ids] = np.maximum(best[ids], quality * np.asarray(acting_weights, dtype=np.float64))
                present = np.flatnonzero(best)
                scores[present] += idf * best[present]
                touched[present] = True
                continue
            if len(expansions) == 1:
                ((term, quality),) = expansions.items()
                start, end = self._run(self._at[term])
                present = all_ids[start:end]
                scores[present] += (idf * quality) * all_weights[start:end].astype(np.float64)
            else:
                best = np.zeros(n)
                for term, quality in expansions.items():
                    start, end = self._run(self._at[term])
                    ids = all_ids[start:end]
                    best[ids] = np.maximum(best[ids], quality * all_weights[start:end].astype(np.float64))
                present = np.flatnonzero(best)
                scores[present] += idf * best[present]
            touched[present] = True
            at = self._written_at.get(written)
            if at is not None:
                start, end = self._run(at)
                surfaced = all_written[start:end]
                mark = np.zeros(n, dtype=bool)
                mark[present] = True
                scores[surfaced[mark[surfaced]]] += _SURFACE * idf
        chosen = touched
        if named:
            own = np.fromiter(named, dtype=np.int64, count=len(named))
            scores[own] += 1e-9
            chosen = touched.copy()
            chosen[own] = False
        top = np.flatnonzero(chosen)
        if len(top) > limit:  # every other tool scoring at least the limit-th of them
            values = scores[top]
            top = top[values >= np.partition(values, len(values) - limit)[len(values) - limit]]
        out = dict(zip(top.tolist(), scores[top].tolist(), strict=True))
        if named:
            out.update(zip(own.tolist(), scores[own].tolist(), strict=True))
        return out

    @staticmethod
    def _run(at: int) -> tuple[int, int]:
        start = at >> _COUNT_BITS
        return start, start + (at & _COUNT_MASK)

    def _integration_docs(self) -> dict[str, list[int]]:
        if self._by_name is None:
            by_name: dict[str, list[int]] = defaultdict(list)
            for i, d in enumerate(self.docs):
                by_name[d.integration].append(i)
            self._by_name = dict(by_name)
        return self._by_name

    def _ranked(
        self,
        scores: dict[int, float],
        limit: int,
        matched: list[tuple[float, dict[str, float]]],
        unmatched: float,
        named: set[int],
        evidence: list[dict[str, float]],
        spoken: set[int],
    ) -> tuple[list[SearchHit], bool]:
        # The best `limit` (the named integration's tools first) without sorting every scored tool,
        # plus any tied with the last of them, then ties broken by the prior and the name, so the
        # order never depends on dict order.
        if named.isdisjoint(scores):
            named = set()
        if named:

            def rank(d: int) -> tuple[bool, float]:
                return d in named, scores[d]

            top = heapq.nlargest(limit, scores, key=rank)
            cutoff = rank(top[-1])
            chosen = [doc for doc in scores if rank(doc) >= cutoff]
        else:  # the same, in C: every tool scoring at least the limit-th score
            least = heapq.nlargest(limit, scores.values())[-1]
            chosen = list(itertools.compress(scores, map(least.__le__, scores.values())))
        chosen.sort(key=lambda d: (d not in named, -scores[d], -self._prior[d], self.docs[d].name))
        best = scores[chosen[0]]
        fields = _fields_of(self.docs[chosen[0]])
        # How strong the top tool's evidence is: a query word (as written, mistyped or a synonym;
        # a symptom's reading does not count) found in what the tool does or acts on, in its name.
        strong = _found_in(fields, ("object", "integration"), evidence) or _found_in(
            # A tool's name is English: in another script its text is where a word is found.
            fields,
            ("description", "keywords"),
            [{t: q for t, q in e.items() if not t.isascii()} for e in evidence],
        )
        if not strong and _found_in(fields, ("action",), evidence):
            # Its action alone is evidence for a one-word query ("screenshot") or with another word
            # of the query in its text ("reply to that email"), not a verb with nothing to act on
            # ("set an alarm" is no secret to store in the vault).
            strong = (len(matched) == 1 and not unmatched) or sum(
                _found_in(fields, _FIELDS, [e]) for e in evidence
            ) > 1
        # In a query that names its integration, a symptom's reading counts ("the hubspot deal is
        # out of date" is a weak match for hubspot_update_deal, not "no match").
        acts = _found_in(fields, ("action", "object", "description", "keywords"), [e for _, e in matched])
        if not strong and len(evidence) < len(matched):
            # A symptom read as the tool's action, and a word of the query in its text ("the
            # customer was charged twice" for a refund of a charge): evidence, not a stray word.
            inferred = [e for _, e in matched if not any(e is own for own in evidence)]
            strong = _found_in(fields, ("action",), inferred) and _found_in(
                fields, ("description", "keywords"), evidence
            )
        calibrated = round(_coverage(fields, matched, unmatched) * (1.0 if strong else _WEAK_EVIDENCE), 4)
        hits = []
        score = calibrated
        for d in chosen[:limit]:
            # Never above the hit before it: a named tool can outrank a higher raw score.
            score = min(score, round(calibrated * scores[d] / best, 4))
            hits.append(SearchHit(self.docs[d], score, d in named))
        return hits, acts and chosen[0] in spoken


_COUNT_BITS = 24  # a posting run's start and length packed in one int: start << 24 | length
_COUNT_MASK = (1 << _COUNT_BITS) - 1
_NO_DOCS: array[int] = array("i")


def _flatten(
    rows: dict[str, array[int]], weights: dict[str, array[float]] | None
) -> tuple[dict[str, int], array[int], array[float]]:
    """Per-term rows laid end to end: {term: start << 24 | length} in the rows' order, the tools,
    the weights (float32). Each row is taken out of `rows` and `weights` as it is laid (a catalog of
    distinct words has as many rows as postings: never all of them twice)."""
    at: dict[str, int] = {}
    ids: array[int] = array("i")
    out: array[float] = array("f")
    for term in list(rows):
        docs = rows.pop(term)
        at[term] = len(ids) << _COUNT_BITS | len(docs)
        ids.extend(docs)
        if weights is not None:
            out.extend(weights.pop(term))
    return at, ids, out


_ZEROS = itertools.repeat(0.0)
# Indexes of this many tools or more are scored with numpy when it is installed (the `scale` extra):
# its import (~0.2 s CPU) is paid only there, off the event loop (SearchIndex.prepare).
_NUMPY_DOCS = 2_000


@functools.cache
def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        return None
    return numpy


_Word = tuple[float, dict[str, float], str]  # a matched query word: (idf, expansions, as written)
_ACTING_CACHED = 256  # action words whose kept postings an index remembers (_ACTIONS has ~110)
_AS_ACTION = "\x00action"  # "as written" of a symptom's actions: they match tools' actions only


@functools.lru_cache(maxsize=1 << 16)
def _name_actions(name: str, integration: str) -> frozenset[str]:
    """A tool's actions by its name: the first action word after the integration's words, and any
    joined to it by "or" / "and" (`github_create_or_update_file` creates and updates;
    `jira_get_create_fields` only gets), and the last word when it is an action word too
    (`stripe_create_refund` refunds)."""
    known = set(_integration_terms(integration[:_NAME_CHARS]))
    words = [
        part.lower()
        for raw in _ASCII_WORD.findall(name[:_NAME_CHARS])
        for part in (_CAMEL.split(raw) if raw[:1].islower() else [raw])
        if part
    ]
    at = 0
    while at < len(words) - 1 and stem(words[at]) in known:
        at += 1
    acts: set[str] = set()
    for i in range(at, len(words)):
        if stem(words[i]) in _ACTIONS:
            acts.add(stem(words[i]))
            j = i + 1
            while j + 1 < len(words) and words[j] in ("or", "and") and stem(words[j + 1]) in _ACTIONS:
                acts.add(stem(words[j + 1]))
                j += 2
            break
    if acts and stem(words[-1]) in _ACTIONS:  # an action named as the object (`create_refund`)
        acts.add(stem(words[-1]))
    return frozenset(acts)


def _put(target: dict[int, float], keys: Iterable[int], values: Iterable[float]) -> None:
    """target[key] = value for each pair, in C (a posting's keys are distinct)."""
    collections.deque(map(target.__setitem__, keys, values), maxlen=0)


def _add(target: dict[int, float], keys: Iterable[int], values: Iterable[float]) -> None:
    """target[key] = target.get(key, 0.0) + value for each pair, in C (keys distinct)."""
    if not target:  # 0.0 + value is value (every value here is positive)
        target.update(zip(keys, values, strict=False))  # values is a map over keys
        return
    keys = keys if isinstance(keys, (array, list)) else list(keys)
    _put(target, keys, map(float.__add__, map(target.get, keys, _ZEROS), values))


def _runs(terms: list[str], at: array[int]) -> dict[str, int]:
    """{term: its posting run}, built a slice at a time: a thread loading a large index lets the
    others (the event loop) run between slices instead of holding the GIL for the whole dict."""
    out: dict[str, int] = {}
    for i in range(0, len(terms), 8192):
        out.update(zip(terms[i : i + 8192], at[i : i + 8192], strict=True))
    return out


def _array(code: str, data: bytes) -> array[Any]:
    out = array(code)
    out.frombytes(data)
    return out


def _prior(fields: dict[str, list[str]]) -> float:
    """Between tools that score the same: one that reads, then one that writes, then one that deletes."""
    action = fields["action"][0] if fields["action"] else ""
    return 0.0 if action in _READ_ONLY else -2.0 if action in _DESTRUCTIVE else -1.0


# Calibration of the top score (chosen on the tuning sets: the catalog query set, issue 27's first
# round sets and BFCL's questions over the catalog; measured on the held-out sets, bench/search.py).
_WEAK_EVIDENCE = 0.25  # the top tool matched no query word in its name, only in its text
_NAMED_FLOOR = 0.3  # the query names the top tool's integration and its action or object
_STRONG_MATCH = 0.6  # a word as written, mistyped or a synonym


def _found_in(fields: dict[str, list[str]], where: tuple[str, ...], evidence: list[dict[str, float]]) -> bool:
    """Whether a query word's match (of at least _STRONG_MATCH quality) is in one of these fields."""
    terms = {t for f in where for t in fields[f]}
    return any(q >= _STRONG_MATCH and t in terms for expansions in evidence for t, q in expansions.items())


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
