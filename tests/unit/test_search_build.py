"""The index build's bulk steps give exactly what the plain per-tool loop gives (issue 24 item 4:
the build made fast without changing a single posting): fields and written words as `_parse` reads
each tool, BM25F sums added in the same order, postings laid out term by term, on ASCII,
camelCase, snake_case, non-Latin, accented, typographic, over-long and NUL-holding texts."""

from __future__ import annotations

import itertools
import random
import unicodedata
from array import array

import pytest
from workbench.engine import search
from workbench.engine.search import SearchDoc, SearchIndex

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _catalog(n: int, seed: int = 1) -> list[SearchDoc]:
    rng = random.Random(seed)
    words = [
        "list", "issues", "pull", "requests", "direct", "messages", "files", "statuses", "news", "the",
        "create", "a", "of", "PRs", "URLs", "GitHub", "résumé", "straße", "日本語のテキスト", "2024",
        "x", "9", "createIssue", "HTTPServer", "XMLHttpRequest", "iOS", "owner_repo", "api_key_id",
        "don’t", "—", "naïve", "café_id", "Acme™", "½", "ﬁle", "Ｆull",
        "été", "’́x", "a͏b", "😀", "«quoted»", " ", "…",
    ]  # fmt: skip
    out = []
    for i in range(n):
        text = lambda k: " ".join(rng.choice(words) for _ in range(k))  # noqa: E731
        long = "".join(rng.choices(LETTERS, k=rng.choice([5, 33, 129, 200])))
        out.append(
            SearchDoc(
                f"app{i % 7}_{rng.choice(['get', 'send', 'list', 'sync'])}_{rng.choice(words)}",
                f"{text(rng.randint(0, 80))} {long}" + ("\0nul" if i % 11 == 0 else ""),
                f"app{i % 7}" if i % 5 else "app-ü",
                text(rng.randint(0, 5)),
                text(rng.randint(0, 90)),
            )
        )
    return out


def _reference(
    docs: list[SearchDoc],
) -> tuple[dict[str, tuple[list[int], list[float]]], dict[str, list[int]]]:
    """The postings as the per-tool loop built them before: {term: (tools, weights)}, {word: tools}."""
    parsed = [search._parse(d) for d in docs]
    n = len(docs)
    avg = {f: (sum(len(p.fields[f]) for p in parsed) / n) or 1.0 for f in search._FIELDS}
    rows: dict[str, tuple[list[int], array[float]]] = {}
    written: dict[str, list[int]] = {}
    for i, p in enumerate(parsed):
        tf: dict[str, float] = {}
        for f, terms in p.fields.items():
            if terms:
                norm = search._WEIGHT[f] / (1 - search._B[f] + search._B[f] / avg[f] * len(terms))
                for t in terms:
                    tf[t] = tf.get(t, 0.0) + norm
        for t, v in tf.items():
            row = rows.setdefault(t, ([], array("f")))
            row[0].append(i)
            row[1].append(v / (search._K1 + v))
        for w in p.written:
            written.setdefault(w, []).append(i)
    return {t: (ids, list(w)) for t, (ids, w) in rows.items()}, written


def _runs(at: dict[str, int], ids: array[int], weights: array[float] | None) -> dict[str, object]:
    out: dict[str, object] = {}
    for term, run in at.items():
        start, count = run >> 24, run & 0xFFFFFF
        got = list(ids[start : start + count])
        out[term] = (got, list(weights[start : start + count])) if weights is not None else got
    return out


def test_the_bulk_build_gives_the_per_tool_loops_postings_bit_for_bit() -> None:
    docs = _catalog(400)
    index = SearchIndex(docs)
    rows, written = _reference(docs)
    assert list(index._at) == list(rows)  # runs in the order terms first appear
    assert _runs(index._at, index._ids, index._weights) == rows
    assert _runs(index._written_at, index._written_ids, None) == written
    assert index._prior.tolist() == [int(search._prior(search._parse(d).fields)) for d in docs]


def test_the_bulk_parser_reads_every_tool_as_parse_does() -> None:
    docs = _catalog(300, seed=2)  # ASCII and non-ASCII tools in each chunk the parser reads
    for doc, (fields, written) in zip(docs, search._Parser().read(docs), strict=True):
        assert (fields, set(written)) == (search._parse(doc).fields, set(search._parse(doc).written))


def test_a_vocabulary_past_its_bound_keeps_the_first_words_and_their_postings_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    docs = _catalog(300, seed=3)
    rows, written = _reference(docs)
    assert len(rows) > 60 and len(written) > 60
    monkeypatch.setattr(search, "_VOCABULARY", 40)
    monkeypatch.setattr(search, "_VOCABULARY_PER_TOOL", 0)
    # Past the bound, the build takes a tool's left-out terms out of its fields as it reads it:
    # the postings are those of the tools' whole fields all the same (their weights too, which
    # BM25F normalises by the fields' lengths).
    trimmed: list[int] = []
    trim = search._EarlyVocabulary.trim

    def counted(self: search._EarlyVocabulary, i: int, parsed: dict[str, list[str]]) -> None:
        trim(self, i, parsed)
        trimmed.extend(self.lengths.keys() - set(trimmed))

    monkeypatch.setattr(search._EarlyVocabulary, "trim", counted)
    index = SearchIndex(docs)
    assert len(trimmed) > 250
    # The first 40 distinct words, each with every tool that has it (a word new past the bound
    # is left out whole; a word already in keeps its later tools).
    assert list(index._at) == list(rows)[:40]
    assert _runs(index._at, index._ids, index._weights) == {t: rows[t] for t in list(rows)[:40]}
    kept = _runs(index._written_at, index._written_ids, None)
    assert len(kept) == 40 and all(written[w] == tools for w, tools in kept.items())
    first = docs[0]
    assert (
        index.search(first.name.replace("_", " "), 10)[0].doc.name.split("_")[0] == first.name.split("_")[0]
    )


def test_camel_case_splits_as_the_pattern_alone_splits() -> None:
    def reference(word: str) -> list[str]:
        parts = [p for p in search._CAMEL.split(word) if p]
        low = word.lower()
        if len(parts) == 1 or (word[0].isupper() and min(map(len, parts)) < 4):
            return [low]
        return [*(p.lower() for p in parts), low]

    rng = random.Random(7)
    alphabet = "aAbBzZ09xXyY"
    words = ["".join(rng.choices(alphabet, k=rng.randint(1, 12))) for _ in range(20_000)]
    words += [
        "createIssue",
        "PaymentIntents",
        "GitHub",
        "PRs",
        "HTTPServer",
        "XMLHttpRequest",
        "iOS",
        "A1B",
        "Create2go",
    ]
    for word in words:
        assert search._split_camel(word) == reference(word), word


def test_a_builds_words_have_the_terms_and_written_forms_of_one_word_read_alone() -> None:
    rng = random.Random(8)
    alphabet = "aAbBsSzZ09xXyY"
    words = {"".join(rng.choices(alphabet, k=rng.randint(1, 40))) for _ in range(20_000)}
    words |= {"createIssue", "PaymentIntents", "GitHub", "PRs", "HTTPServer", "XMLHttpRequest", "iOS"}
    words |= {"statuses", "news", "the", "x", "9", "A" * 129, "a" * 33, "aB" * 17}
    learnt = search._Words()
    learnt.learn(words)
    for word in words:
        assert learnt.terms[word] == search._ascii_stems(word), word
        assert learnt.lower[word] == (word.lower() if len(word) <= search._TERM_MAX else ""), word


def test_descriptions_lose_their_snake_case_identifiers_as_the_pattern_takes_them_out() -> None:
    rng = random.Random(9)
    texts = ["".join(rng.choices("ab_ -.1\0", k=rng.randint(0, 30))) for _ in range(20_000)]
    texts += [
        "a_b _c d_ e__f g_h_i j_k_ _l_m n1_2 x",
        "foo_bar-baz_qux",
        "__init__ x_y",
        "use superset_export_csv",
    ]
    expected = [search._RUN.findall(search._IDENTIFIER.sub(" ", text)) for text in texts]
    assert search._description_words(texts) == expected


def test_a_description_of_stop_words_first_still_gives_its_later_terms() -> None:
    # The parser learns a description's first 60 words with the rest of a chunk, and the rest
    # only when those give fewer than 60 terms (stop words, single letters).
    docs = [
        SearchDoc(f"app_get_thing{i}", "the a of x " * 20 + f"wantedTerm{i} found_here paymentIntents", "app")
        for i in range(70)
    ]
    for doc, (fields, written) in zip(docs, search._Parser().read(docs), strict=True):
        assert (fields, set(written)) == (search._parse(doc).fields, set(search._parse(doc).written))
        assert "wantedterm" in fields["description"] or "wanted" in fields["description"]


# Characters a text outside ASCII is made of: typographic punctuation, accents (precomposed and
# combining), compatibility forms that fold to letters (™ → TM, ﬁ → fi, full width), a grapheme
# joiner, emoji, marks with nothing Latin before them, and letters no folding makes ASCII.
PALETTE = [
    *"abcXYZ019 _-.,'", "\u2019", "\u201c", "\u2014", "\u2026", "\u00a0", "\u00ab", "\u00a9",
    "\u00e9", "e\u0301", "\u0301", "\u0308", "\u2122", "\u00bd", "\u00b2", "\ufb01", "\uff21", "\u034f",
    "\U0001f600", "\u00df", "\u03a9", "\u65e5", "\u0e01", "\u0483", "\u1ab0", "\u2019\u0301",
]  # fmt: skip


def test_a_text_that_reads_as_ascii_is_folded_to_it_with_the_same_words_and_terms() -> None:
    rng = random.Random(5)
    folded = kept = 0
    for _ in range(4_000):
        palette = PALETTE if rng.random() < 0.5 else PALETTE[:-7]  # half of them with no letter outside ASCII
        text = "".join(rng.choices(palette, k=rng.randint(1, 40)))
        out = search._folded_ascii(text)
        assert search._words(out) == search._words(text), repr(text)
        assert search.tokens(out) == search.tokens(text), repr(text)
        if out.isascii():
            folded += not text.isascii()
        else:
            assert out == text  # left as it is: read by _parse, as before
            kept += 1
    assert folded > 500 and kept > 500  # both kinds, many times


def test_typographic_punctuation_and_accents_read_as_ascii_letters_and_spaces() -> None:
    assert (
        search._folded_ascii("Don\u2019t \u2014 see \u201cR\u00e9sum\u00e9s\u201d\u2026")
        == "Don t   see  Resumes ..."
    )
    assert search._folded_ascii("na\u0308ive \u00a9 Acme\u2122") == "naive   AcmeTM"
    for text in ("Stra\u00dfe", "\u03a9mega", "\u65e5\u672c", "\u2019\u0301x", "a\u034fb"):
        assert search._folded_ascii(text) == text


def _fold_one_by_one(text: str) -> str:
    """_fold as it was first written, a character at a time: the oracle of the quicker one."""
    out: list[str] = []
    for ch in unicodedata.normalize("NFKD", text):
        if unicodedata.combining(ch) and out and ord(out[-1]) < 0x250:
            continue
        out.append(ch)
    return unicodedata.normalize("NFKC", "".join(out))


def _words_one_by_one(text: str) -> list[str]:
    """_words of a non-ASCII text as it was first written, a character at a time."""
    words: list[str] = []
    cur: list[str] = []
    for ch in _fold_one_by_one(text) + " ":
        if unicodedata.category(ch)[0] in "LNM":
            cur.append(ch)
        elif cur:
            raw = "".join(cur)
            if len(raw) <= search._WORD_MAX:
                words.extend(search._split_camel(raw) if raw.isascii() else [raw.casefold()])
            cur = []
    return words


# Scripts and their marks: Japanese kana whose voicing NFKD writes as a mark (ガ = カ + U+3099),
# Hangul, Thai, Devanagari (virama, nukta), Cyrillic, Greek with tonos, Arabic with harakat,
# Latin with stacked marks, marks at the start and after punctuation, joiners, emoji sequences.
SCRIPTS = [
    *"ab Z9_-. ", "ガ", "ぱ", "日本", "한국어", "ภาษา", "हिन्दी", "क़", "Привет", "ё", "ά", "Ωμέγα",
    "كتابٌ", "e\u0301\u0302", "\u0301", "\u20d7", "’\u0301", "a\u034fb", "\u200d", "👩\u200d💻",
    "ﬁ", "Ａ", "™", "½", "ß", "İ", "ǅ", "\u00a0", "—", "x" * 130, "Ⅻ", "①", "\u024f\u0301", "\u0250\u0301",
]  # fmt: skip


def test_words_of_any_script_are_what_reading_a_character_at_a_time_gives() -> None:
    rng = random.Random(6)
    for _ in range(4_000):
        text = "".join(rng.choices(SCRIPTS, k=rng.randint(1, 30)))
        assert search._fold(text) == _fold_one_by_one(text), repr(text)
        assert search._words(text) == _words_one_by_one(text), repr(text)


def _clusters_one_by_one(run: str) -> list[str]:
    """_clusters as it was first written: each character's category looked at."""
    out: list[str] = []
    for ch in run:
        if out and unicodedata.category(ch)[0] == "M":
            out[-1] += ch
        else:
            out.append(ch)
    return out


def test_a_run_of_a_script_without_spaces_keeps_each_mark_on_its_character() -> None:
    # Thai vowel and tone marks, kana voicing marks, Myanmar and Khmer vowel signs, among letters
    # of those scripts, CJK and Hangul (which have none).
    palette = [*"กขภาษ", "\u0e31", "\u0e48", "\u0e4c", "\u0eb1", "カガぱ", "\u3099", "\u309a", "\u1000",
               "\u102d", "\u1780", "\u17b6", "\u17d2", "日本語", "한국", "\uf900"]  # fmt: skip
    rng = random.Random(11)
    for _ in range(4_000):
        run = "".join(rng.choices(palette, k=rng.randint(1, 20)))
        assert search._BIGRAM_SCRIPT.fullmatch(run)
        assert search._clusters(run) == _clusters_one_by_one(run), repr(run)
    # Every combining mark of these scripts is one the quick check knows (it looks only at the
    # scripts that have them).
    for lo, hi in search._BIGRAM_RANGES:
        marks = [chr(c) for c in range(lo, hi + 1) if unicodedata.category(chr(c))[0] == "M"]
        assert all(search._bigram_marks().fullmatch(m) for m in marks)
        assert not marks or (lo, hi) in search._BIGRAM_MARKED
    assert search._clusters("ภาษาไทย") == ["ภ", "า", "ษ", "า", "ไ", "ท", "ย"]
    assert search._clusters("ก\u0e48า") == ["ก\u0e48", "า"]


def _terms_one_word_at_a_time(text: str) -> list[tuple[str, str]]:
    """_terms of a non-ASCII text as it was first written: each word looked at for runs of a script
    written without spaces."""
    out: list[tuple[str, str]] = []
    for word in _words_one_by_one(text):
        if word.isascii():
            out.extend(search._ascii_terms(word))
            continue
        start = 0
        for run in search._BIGRAM_SCRIPT.finditer(word):
            if 0 < run.start() - start <= search._TERM_MAX:
                out.append((word[start : run.start()],) * 2)
            seg = _clusters_one_by_one(run.group())
            pairs = seg if len(seg) == 1 else [seg[i] + seg[i + 1] for i in range(len(seg) - 1)]
            out.extend((p, p) for p in pairs)
            start = run.end()
        if 0 < len(word) - start <= search._TERM_MAX:
            out.append((word[start:],) * 2)
    return search._phrases(out)


def test_terms_of_any_script_are_what_reading_a_word_at_a_time_gives() -> None:
    rng = random.Random(7)
    palette = [*SCRIPTS, "ｶﾞ", "㋐", "豈", "pull requests", "files", "the", "x" * 40, "Ж" * 32, " " + "ж" * 33]
    for _ in range(4_000):
        text = "".join(rng.choices(palette, k=rng.randint(1, 30)))
        if not text.isascii():
            assert search._terms(text) == _terms_one_word_at_a_time(text), repr(text)


def test_a_tool_in_another_script_is_read_once_with_the_terms_and_written_words_of_each_text() -> None:
    # _parse reads a tool whose text is not ASCII word by word once, for its fields and for its
    # written words: each field's terms are those of its text alone, and its written words those of
    # its name, description and keywords read together (a two-word name across two of them too).
    rng = random.Random(12)
    palette = [*SCRIPTS, "pull ", "requests ", "direct message ", "Привет ", "日本語", "createIssue "]
    text = lambda k: "".join(rng.choices(palette, k=rng.randint(0, k)))  # noqa: E731
    for _ in range(3_000):
        # Each text begins with a letter: a mark first would sit on the space joining it to the
        # text before it (and be taken off there), not on a letter of its own.
        doc = SearchDoc("a" + text(6), "b" + text(30), "app", "c" + text(6), text(10))
        fields, written = search._parse(doc)
        name = search._folded_ascii(doc.name[: search._NAME_CHARS])
        description = search._IDENTIFIER.sub(
            " ", search._folded_ascii(doc.description[: search._DESCRIPTION_CHARS])
        )
        keywords = search._folded_ascii(doc.keywords[: search._KEYWORD_CHARS])
        assert fields["description"] == search._index_terms(description)[: search._DESCRIPTION_TERMS]
        assert fields["keywords"] == search._index_terms(keywords)
        assert sorted(fields["action"] + fields["object"]) == sorted(search._index_terms(name)), repr(doc)
        joined = f"{name} {description} {keywords}"
        if joined.isascii():
            continue
        assert written == frozenset(w for _, w in search._terms(joined)), repr(doc)


def _phrases_pair_by_pair(terms: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """_phrases as it was first written: every pair of neighbours looked up."""
    out = list(terms)
    for (first, _), (second, written) in itertools.pairwise(terms):
        joined = search._PHRASES.get((first, second))
        if joined:
            out.append((joined, joined if written == second else joined + "s"))
    return out


def test_two_word_names_get_their_one_word_form_wherever_they_stand() -> None:
    rng = random.Random(13)
    words = [("pull", "pull"), ("request", "requests"), ("request", "request"), ("merge", "merge"),
             ("direct", "direct"), ("message", "messages"), ("message", "message"), ("x", "x")]  # fmt: skip
    for _ in range(4_000):
        terms = rng.choices(words, k=rng.randint(0, 12))
        assert search._phrases(terms) == _phrases_pair_by_pair(terms), terms
    assert search._phrases([("pull", "pull"), ("request", "requests")])[-1] == ("pr", "prs")
    assert search._phrases([("request", "request"), ("pull", "pull")]) == [
        ("request", "request"),
        ("pull", "pull"),
    ]


def test_folding_text_of_any_characters_is_what_reading_a_character_at_a_time_gives() -> None:
    # Characters from all over the first plane (compatibility forms, precomposed letters of every
    # script, marks of every kind), and Latin marks standing alone: _fold skips its mark-taking
    # when no character of a text can shed one, and must give the same text as when it looks.
    rng = random.Random(14)
    planes = [c for c in range(0xA0, 0xFFFF) if not 0xD800 <= c <= 0xDFFF]
    palette = [chr(c) for c in rng.sample(planes, 3_000)] + [chr(c) for c in range(0x300, 0x370)]
    palette += [*"aeiouAZ09 -", "日本語", "ガ", "한"]
    for _ in range(4_000):
        text = "".join(rng.choices(palette, k=rng.randint(1, 24)))
        assert search._fold(text) == _fold_one_by_one(text), repr(text)
        # A text of characters that cannot shed a mark loses none when each one is looked at.
        kept = "".join(c for c in text if not search._may_shed_marks(c))
        assert _fold_one_by_one(kept) == unicodedata.normalize("NFKC", kept), repr(kept)
