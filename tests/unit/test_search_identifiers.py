"""What the query names comes first (issue 27): an integration named in the query, or implied by an
identifier only it has, ranks its tools above every other integration's. One case per shape."""

from __future__ import annotations

import pytest
from workbench.composition import build_registry
from workbench.engine.search import SearchDoc, SearchIndex, catalog_docs, implied_integrations, stem


@pytest.fixture(scope="module")
def catalog() -> SearchIndex:
    return SearchIndex(catalog_docs(build_registry()))


@pytest.mark.parametrize(
    ("query", "integration"),
    [
        ("add a comment to ABC-123 saying it is fixed", "atlassian-jira"),
        ("who is working on MOB-7", "atlassian-jira"),
        ("list the open pull requests of acme/web-app", "github"),
        ("what changed in octocat/hello-world recently", "github"),
        ("refund ch_3MqLk2eZvKYlo2C0", "stripe"),
        ("details of cus_NffrFeUfNV2Hib", "stripe"),
        ("cancel sub_1MowQVLkdIwHu7ixeRlqHVzs", "stripe"),
        ("what happened to pi_3MtwBwLkdIwHu7ix28a3tqPa", "stripe"),
        ("post the release notes in C024BE91L", "slack"),
        ("what did U024BE7LH say", "slack"),
        ("update 0015g00000ABCDeAAH with the new phone number", "salesforce"),
        ("change recXyZ12345678901 to shipped", "airtable"),
        ("what is in appAbC12345678901", "airtable"),
        ("clear A1:C10 please", "google-sheets"),
        ("what's on https://github.com/acme/api/issues/3", "github"),
        ("summarize https://acme.atlassian.net/browse/ABC-1", "atlassian-jira"),
        ("fix the typo on https://acme.atlassian.net/wiki/spaces/ENG/pages/1", "atlassian-confluence"),
        ("read https://www.notion.so/Roadmap-0123", "notion"),
        ("open https://docs.google.com/spreadsheets/d/1abc/edit", "google-sheets"),
        ("who can see https://drive.google.com/file/d/1abc/view", "google-drive"),
        ("reply to https://mail.google.com/mail/u/0/#inbox/1", "google-gmail"),
        ("move https://calendar.google.com/event?eid=1", "google-calendar"),
        ("update https://app.hubspot.com/contacts/1/deal/2", "hubspot"),
        ("close https://acme.zendesk.com/agent/tickets/4", "zendesk"),
        ("assign https://linear.app/acme/issue/ENG-1", "linear"),
        ("what is https://acme.my.salesforce.com/001", "salesforce"),
        ("archive https://acme.slack.com/archives/C1/p2", "slack"),
        ("https://dashboard.stripe.com/payments/x refund it", "stripe"),
        ("rows of https://airtable.com/appX/tblY", "airtable"),
    ],
)
def test_an_identifier_implies_its_integration_and_its_tools_come_first(
    catalog: SearchIndex, query: str, integration: str
) -> None:
    assert integration in implied_integrations(query)
    hits = catalog.search(query, 5)
    assert hits and hits[0].doc.integration == integration and hits[0].named


@pytest.mark.parametrize(
    "query",
    [
        "make the doc read/write for the team",
        "and/or",
        "the meeting is 12/05 at 3",
        "set the ticket to in_progress",
        "the recommendations for Q3",
        "apply to COVID vaccine",
        "send it to bob@acme.com",
    ],
)
def test_ordinary_words_imply_no_integration(query: str) -> None:
    assert implied_integrations(query) == set()


@pytest.mark.parametrize(
    ("query", "integration"),
    [
        ("github issues about the login bug", "github"),  # a Linear tool came first last round
        ("create an issue in linear", "linear"),
        ("zendesk users named Ada", "zendesk"),
        ("notion comments", "notion"),
        ("search confluence for onboarding", "atlassian-confluence"),
    ],
)
def test_a_named_integration_ranks_its_tools_first(
    catalog: SearchIndex, query: str, integration: str
) -> None:
    hits = catalog.search(query, 10)
    named = [h.doc.integration == integration for h in hits]
    assert named[0] and named == sorted(named, reverse=True)  # all of them before any other
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)  # and the score never rises down the list


def test_named_comes_first_even_against_a_stronger_word_match() -> None:
    index = SearchIndex(
        [
            SearchDoc("tracker_add_comment", "Add a comment to an issue.", "tracker"),
            SearchDoc("code_create_issue_comment", "Create a comment on an issue.", "code"),
        ]
    )
    assert index.search("create a comment on an issue in tracker", 2)[0].doc.name == "tracker_add_comment"


# Words whose -s is not a plural's: stemming them would change what they mean.
NOT_PLURALS = [
    "news",
    "sales",
    "analytics",
    "status",
    "series",
    "physics",
    "aws",
    "sms",
    "dns",
    "ops",
    "canvas",
    "alias",
    "lens",
    "minutes",
    "customs",
    "means",
    "goods",
    "postgres",
    "devops",
    "saas",
    "odds",
    "dynamics",
    "sqs",
    "ecs",
]


@pytest.mark.parametrize("word", [*NOT_PLURALS, "data"])
def test_no_stemming_changes_a_words_meaning(word: str) -> None:
    assert stem(word) == word


def test_news_alone_finds_no_tool_with_confidence(catalog: SearchIndex) -> None:
    hits = catalog.search("news", 3)
    assert not hits or hits[0].score < 0.3  # was slack_create_channel at 0.80 ("news" → "new")
