"""The top score an agent acts on (docs/plugins.md's bands): under 0.3 means no tool does this.
Issue 27: a question no tool answers scores under that band; a query that names an integration and
what to do there is never put in it."""

from __future__ import annotations

import pytest
from workbench.composition import build_registry
from workbench.engine.search import SearchDoc, SearchIndex, catalog_docs

DOCS = [
    SearchDoc(
        "cal_find_free_busy",
        "Find when people are busy or free in a time window, to pick a meeting slot.",
        "calendar",
        keywords="availability free time slot today",
    ),
    SearchDoc("cal_list_events", "List calendar events in a time window.", "calendar"),
    SearchDoc("crm_update_deal", "Update a deal's stage, amount or close date.", "crm"),
    SearchDoc("crm_list_deals", "List deals in the pipeline.", "crm"),
    SearchDoc("drive_search", "Search files in Google Drive.", "google-drive"),
    SearchDoc("mail_send", "Send an email from Google Mail.", "google-mail"),
]


@pytest.fixture(scope="module")
def index() -> SearchIndex:
    return SearchIndex(DOCS)


def top(index: SearchIndex, query: str) -> float:
    hits = index.search(query, 3)
    return hits[0].score if hits else 0.0


@pytest.mark.parametrize(
    "query",
    [
        "what is 17 times 23",  # "times" is only in a tool's text: no tool's name says it
        "what's my horoscope today",
        "it's out of date",  # a symptom with nothing to act on
        "predict the stock price for Google",  # "google" names several integrations: no lift
    ],
)
def test_a_question_no_tool_answers_scores_under_the_band(index: SearchIndex, query: str) -> None:
    assert top(index, query) < 0.3


@pytest.mark.parametrize(
    ("query", "first"),
    [
        # names the integration and, through a symptom, what to do: a weak match, never "no match"
        (
            "the Acme deal in the crm is still at the proposal stage although they signed last week",
            "crm_update_deal",
        ),
        ("list free time slots on my calendar", "cal_find_free_busy"),
    ],
)
def test_a_named_integration_and_its_action_score_at_least_weak(
    index: SearchIndex, query: str, first: str
) -> None:
    hits = index.search(query, 3)
    assert hits[0].doc.name == first
    assert hits[0].score >= 0.3


@pytest.mark.parametrize(
    "query",
    [
        "what is 17 times 23",
        "set an alarm for the morning",
        "what's my horoscope today",
        "latest news headlines",
        "how many legs does a spider have",  # "legs" is a word, not "logs" mistyped
        "buy a new laptop",  # nor is "buy" "bug"
        "오늘 뉴스 보여줘",  # "show today's news": only "show" is the catalog's
    ],
)
def test_everyday_questions_score_under_the_band_on_the_real_catalog(query: str) -> None:
    hits = SearchIndex(catalog_docs(build_registry())).search(query, 3)
    assert not hits or hits[0].score < 0.3, hits[0]
