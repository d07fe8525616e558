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


@pytest.mark.parametrize(
    ("query", "phrase"),
    [
        ("la página está desactualizada", "out of date"),
        ("der Kunde wurde zweimal belastet", "twice"),
        ("le client attend une réponse depuis lundi", "without reply"),
        ("o contato ainda não está no CRM", "missing"),
        ("Notionのページが古いままです", "out of date"),
        ("我找不到那封邮件", "cannot find"),
        ("회의가 다른 일정과 겹쳐요", "clashes"),
        ("ग्राहक से दो बार पैसे काट लिए", "twice"),
    ],
)
def test_a_situation_in_another_language_reads_as_the_english_the_symptoms_know(
    query: str, phrase: str
) -> None:
    assert phrase in translate(query)


def test_a_situation_in_another_language_finds_the_action_it_calls_for() -> None:
    index = SearchIndex(catalog_docs(build_registry()))
    # ASCII Spanish or Portuguese is read cross-lingually even when its English reading scored.
    assert index.search("el cliente dice que le cobraron dos veces en Stripe", 1)[0].doc.name == (
        "stripe_create_refund"
    )
    assert index.search("o contato novo ainda não está no HubSpot", 1)[0].doc.name == "hubspot_create_contact"
    assert index.search("le client attend une réponse sur Zendesk depuis lundi", 1)[0].doc.name == (
        "zendesk_add_comment"
    )
    assert index.search("der Termin am Freitag kollidiert mit einem anderen Termin", 1)[0].doc.name == (
        "calendar_update_event"
    )


def test_a_translated_word_has_no_number_so_no_tool_is_preferred_for_its_form() -> None:
    # "목록" (list) + "티켓": the English word is made up by the lexicon, singular; a tool that
    # has "ticket" written singular in its name is no better a match for it than one with "tickets".
    index = SearchIndex(catalog_docs(build_registry()))
    names = [h.doc.name for h in index.search("HubSpot 연락처 목록을 보여줘", 2)]
    assert names[0] == "hubspot_list_contacts"


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("Stripe में सभी ग्राहकों की सूची दिखाओ", {"stripe", "all", "customer", "list", "show"}),  # oblique plural
        # "lade" alone is load: upload, download or invite by its particle (herunter: down)
        ("Lade die Datei aus Google Drive herunter", {"lade", "download", "file", "google", "drive"}),
        ("qual é o histórico de mensagens", {"qual", "history", "message"}),
    ],
)
def test_everyday_words_and_hindi_plurals_read_as_english(query: str, words: set[str]) -> None:
    assert set(translate(query).lower().split()) == words


def test_a_name_in_capitals_is_a_value_not_words() -> None:
    index = SearchIndex(catalog_docs(build_registry()))
    # STRIPE_KEY names a secret: it does not name Stripe.
    assert index.search("supprime le secret STRIPE_KEY de mon coffre-fort", 1)[0].doc.name == "vault_delete"
    assert index.search("delete the secret STRIPE_KEY from my vault", 1)[0].doc.name == "vault_delete"
