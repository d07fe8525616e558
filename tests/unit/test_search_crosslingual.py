"""The cross-lingual lexicon (engine/crosslingual.py): foreign words read as the catalog's English
ones, function words dropped, English and identifiers left alone."""

from __future__ import annotations

import pytest
from workbench.composition import build_registry
from workbench.engine.crosslingual import translate
from workbench.engine.search import SearchIndex, catalog_docs


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("crea una incidencia en Jira", {"create", "issue", "jira"}),
        ("Lösche die Datei", {"delete", "file"}),
        ("envoie un message à l'équipe", {"send", "message", "team"}),
        ("envie uma mensagem", {"send", "message"}),
        ("Slackにメッセージを送って", {"slack", "message", "send"}),
        ("在GitHub上创建问题", {"github", "create", "issue"}),
        ("Slack 채널에 메시지를 보내줘", {"slack", "channel", "message", "send"}),
        ("Slack पर टीम को संदेश भेजो", {"slack", "team", "message", "send"}),
    ],
)
def test_foreign_words_read_as_the_catalogs_english(query: str, words: set[str]) -> None:
    assert set(translate(query).lower().split()) == words


@pytest.mark.parametrize("query", ["create jira issue", "send a message to #general", "ACME-12 status"])
def test_english_is_left_alone(query: str) -> None:
    assert translate(query) == query


def test_a_foreign_query_finds_its_tool_through_the_lexicon() -> None:
    index = SearchIndex(catalog_docs(build_registry()))
    assert index.search("Erstelle ein Ticket in Zendesk", 1)[0].doc.name == "zendesk_create_ticket"
    assert index.search("Notionでページを作成", 1)[0].doc.name == "notion_create_page"
    # An identifier keeps its meaning through the translation (its integration first).
    assert index.search("añade un comentario a ABC-123", 1)[0].doc.name == "jira_add_comment"


def test_a_korean_word_the_lexicon_does_not_know_is_kept() -> None:
    # Korean is written in words: one the lexicon does not know stays in the query (and counts
    # against the score), unlike the particles left of a Chinese or Japanese run.
    assert translate("오늘 뉴스 보여줘").split() == ["오늘", "뉴스", "show"]
