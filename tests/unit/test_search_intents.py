"""A situation or symptom read as the action it calls for (engine/search.py _SYMPTOMS): an agent
passes on what its user said ("the page is out of date", "X isn't in the CRM yet"), not a verb."""

from __future__ import annotations

import pytest
from workbench.engine.search import SearchDoc, SearchIndex

DOCS = [
    SearchDoc("tracker_list_issues", "List issues in a project, newest first.", "tracker"),
    SearchDoc("tracker_get_issue", "Get one issue with its description.", "tracker"),
    SearchDoc("tracker_search_issues", "Search issues by words.", "tracker"),
    SearchDoc("tracker_create_issue", "Create a new issue in a project.", "tracker"),
    SearchDoc("tracker_update_issue", "Update an issue's title, description or status.", "tracker"),
    SearchDoc("tracker_archive_issue", "Archive an issue.", "tracker"),
    SearchDoc("tracker_add_comment", "Add a comment to an issue.", "tracker"),
    SearchDoc("files_read_file", "Read a file's text.", "files"),
    SearchDoc("files_share_file", "Share a file with people or a group.", "files"),
    SearchDoc("files_copy_file", "Copy a file.", "files"),
    SearchDoc("files_delete_file", "Delete a file.", "files"),
    SearchDoc("files_upload", "Upload a file from your computer.", "files"),
    SearchDoc("pay_list_charges", "List charges made to customers.", "pay"),
    SearchDoc("pay_create_refund", "Refund a charge, in full or in part.", "pay"),
    SearchDoc("pay_cancel_subscription", "Cancel a customer's subscription.", "pay"),
    SearchDoc("ci_list_runs", "List workflow runs.", "ci"),
    SearchDoc("ci_rerun_run", "Re-run a workflow run.", "ci"),
    SearchDoc("tracker_assign_issue", "Assign an issue to a person.", "tracker"),
    SearchDoc("apps_list", "List your registered apps.", "apps"),
    SearchDoc("apps_refresh", "Refresh an app's tools from its server.", "apps"),
    SearchDoc("code_create_pr", "Open a pull request from a branch.", "code"),
    SearchDoc("code_list_branches", "List a repository's branches.", "code"),
    SearchDoc("mail_send_email", "Send an email.", "mail"),
    SearchDoc("mail_create_draft", "Save an email as a draft, to send later.", "mail"),
    SearchDoc("web_read", "Read the text of the open page.", "web"),
    SearchDoc("web_screenshot", "Take a screenshot of the open page.", "web"),
    SearchDoc("code_merge_pr", "Merge a pull request.", "code"),
    SearchDoc("tracker_get_create_fields", "Get the fields needed to create an issue.", "tracker"),
    SearchDoc("chat_send_message", "Send a message to a channel.", "chat"),
    SearchDoc("chat_get_channel_history", "Get the recent messages of a channel.", "chat"),
    SearchDoc("desk_create_ticket", "Create a support ticket.", "desk"),
    SearchDoc("desk_create_contact", "Create a contact.", "desk"),
]


@pytest.fixture(scope="module")
def index() -> SearchIndex:
    return SearchIndex(DOCS)


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("the tracker issue about login still says it is open", "tracker_update_issue"),
        ("the login issue in the tracker is out of date", "tracker_update_issue"),
        ("the crash from yesterday isn't tracked anywhere in the tracker", "tracker_create_issue"),
        ("there is no issue in the tracker for the crash yet", "tracker_create_issue"),
        ("I can't find the tracker issue about the login crash", "tracker_search_issues"),
        ("I have no idea which issues the tracker has", "tracker_list_issues"),
        ("that old tracker issue about IE11 is obsolete", "tracker_archive_issue"),
        ("the customer is waiting on the tracker issue without a reply", "tracker_add_comment"),
        ("the team can't read the file I made", "files_share_file"),
        ("the report is only on my laptop, the files space doesn't have it", "files_upload"),
        ("the customer was charged twice", "pay_create_refund"),
        ("the customer doesn't want to pay next month", "pay_cancel_subscription"),
        ("the ci run failed, a flaky test, one more try should do it", "ci_rerun_run"),
        ("nobody is working on the tracker issue about login, Priya should take it", "tracker_assign_issue"),
        ("I added the app but its new tools don't show up", "apps_refresh"),
        ("the fix is on my branch and ready for review in code", "code_create_pr"),
        ("write the email to Tom, my manager should check it before it goes out", "mail_create_draft"),
        ("I want to see what the open page in the web looks like right now", "web_screenshot"),
        ("the pull request in code was approved and is ready to go in", "code_merge_pr"),
        ("the channel still thinks the release is blocked, chat with them", "chat_send_message"),
        ("what did people say in the chat channel while I was away", "chat_get_channel_history"),
        ("a customer complained by phone and it is not logged at the desk", "desk_create_ticket"),
        ("the crash on login isn't tracked in the tracker yet", "tracker_create_issue"),
        ("the tracker issue has the old title, it should say login", "tracker_update_issue"),
    ],
)
def test_a_symptom_finds_the_action_it_calls_for(index: SearchIndex, query: str, first: str) -> None:
    assert index.search(query, 3)[0].doc.name == first


def test_a_word_a_symptom_uses_keeps_its_meaning_as_a_command(index: SearchIndex) -> None:
    # "duplicate" as the verb is a copy; "duplicates" (the noun) are in the way.
    assert index.search("duplicate the file", 3)[0].doc.name == "files_copy_file"
    assert index.search("the files space has duplicates of the file", 3)[0].doc.name == "files_delete_file"
    # "can't read" is not a read; "read the file" is.
    assert index.search("read the file", 3)[0].doc.name == "files_read_file"


def test_a_symptom_alone_is_no_confident_match(index: SearchIndex) -> None:
    # An action read from a symptom, with nothing to act on, is no tool's evident match.
    hits = index.search("it's out of date", 3)
    assert not hits or hits[0].score < 0.3


def test_a_symptom_that_tells_what_to_do_is_evidence_for_the_score(index: SearchIndex) -> None:
    # "charged twice" says refund as plainly as the verb would; "out of date" (update what?) does not.
    hits = index.search("the customer was charged twice", 3)
    assert hits[0].doc.name == "pay_create_refund" and hits[0].score >= 0.3


def test_a_symptom_reads_as_the_tools_action_not_a_word_of_its_object(index: SearchIndex) -> None:
    # "create" is what tracker_get_create_fields is about, not what it does.
    hits = [h.doc.name for h in index.search("the crash on login isn't tracked in the tracker yet", 20)]
    assert hits[0] == "tracker_create_issue"
    assert "tracker_get_create_fields" not in hits[:3]


@pytest.mark.parametrize(
    ("name", "integration", "actions"),
    [
        ("jira_get_create_fields", "atlassian-jira", {"get"}),
        ("github_create_or_update_file", "github", {"create", "update"}),
        ("stripe_create_refund", "stripe", {"create", "refund"}),
        ("google_drive_upload", "google-drive", {"upload"}),
        ("createIssue", "custom", {"create"}),
        ("weather_forecast", "custom", set()),
    ],
)
def test_a_tools_actions_by_its_name(name: str, integration: str, actions: set[str]) -> None:
    from workbench.engine.search import _name_actions

    assert _name_actions(name, integration) == actions


@pytest.mark.parametrize(
    ("word", "bases"),
    [
        ("emailed", ("email", "emaile")),
        ("charged", ("charg", "charge")),
        ("planned", ("plann", "planne", "plan")),
        ("copied", ("copi", "copie", "copy")),
        ("sharing", ("shar", "share")),
        ("red", ()),
        ("need", ()),
    ],
)
def test_an_unknown_inflected_word_is_read_as_its_base(word: str, bases: tuple[str, ...]) -> None:
    from workbench.engine.search import _bases

    assert _bases(word) == bases


def test_an_inflected_word_finds_the_tool_of_its_base(index: SearchIndex) -> None:
    assert index.search("emailed", 1)[0].doc.name == "mail_send_email"


def test_a_three_letter_word_is_corrected_only_for_swapped_letters() -> None:
    index = SearchIndex(DOCS)
    # "met" is a word, not "get" mistyped; "gte" is "get" with two letters swapped.
    assert "get" not in index._expand("met", "met")
    assert "get" in index._expand("gte", "gte")


def test_what_a_container_holds_is_its_contents() -> None:
    index = SearchIndex(
        [
            SearchDoc("calendar_list_calendars", "List your calendars.", "google-calendar"),
            SearchDoc("calendar_list_events", "List events in a time window.", "google-calendar"),
        ]
    )
    assert index.search("what is on my calendar today", 1)[0].doc.name == "calendar_list_events"
    assert index.search("list my calendars", 1)[0].doc.name == "calendar_list_calendars"


def test_symptoms_tried_at_word_boundaries_find_what_a_full_scan_finds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pathlib import Path

    from workbench.engine import search

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "bench"))
    from search_queries import CLEAN, FRESH  # the tuning sets only
    from search_queries_tuning import INDIRECT_C
    from search_queries_untuned import INDIRECT, NO_TOOL

    def full_scan(text: str) -> tuple[str, list[str]]:
        found: list[str] = []
        kept: list[str] = []
        at = 0
        for match in search._symptom_pattern().finditer(text.lower()):
            if match.lastgroup and match.lastgroup not in found:
                found.append(match.lastgroup)
            kept += (text[at : match.start()], " ")
            at = match.end()
        return ("".join(kept) + text[at:] if found else text), found

    queries = [q for q, _ in [*CLEAN, *INDIRECT, *INDIRECT_C, *(x for g in FRESH.values() for x in g)]]
    queries += [*NO_TOOL, "she's not in hubspot yet, charged twice", "what's on my calendar in my inbox"]
    long = [q for q in queries if len(q.split()) >= 4 and len(q.lower()) == len(q)]
    assert len(long) > 150
    for query in long:
        assert search._symptoms(query) == full_scan(query), query
