"""Google Calendar tools against a fake www.googleapis.com answering with the documented
Event / CalendarList / FreeBusy resources."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from workbench_plugins.google_calendar import tools as google_calendar_tools

from tests.plugins.catalog_support import ANY, Call, Case, Plugin, check_catalog, run_case, run_tool

PLUGIN = Plugin("google-calendar")

CAL = "https://www.googleapis.com/calendar/v3"
EV = f"{CAL}/calendars/primary/events"
EVENT = {
    "kind": "calendar#event",
    "id": "7cbh8rpc10lrc0ckih9tafss99",
    "status": "confirmed",
    "htmlLink": "https://www.google.com/calendar/event?eid=N2NiaDhycGMxMGxyYzBja2loOXRhZnNzOTk",
    "summary": "Design review",
    "description": "Walk through the Q4 roadmap",
    "location": "Room 4",
    "organizer": {"email": "ada@example.com", "self": True},
    "start": {"dateTime": "2024-10-01T09:00:00-07:00", "timeZone": "America/Los_Angeles"},
    "end": {"dateTime": "2024-10-01T10:00:00-07:00", "timeZone": "America/Los_Angeles"},
    "attendees": [
        {"email": "ada@example.com", "organizer": True, "self": True, "responseStatus": "accepted"},
        {"email": "bob@example.com", "responseStatus": "needsAction"},
    ],
    "hangoutLink": "https://meet.google.com/abc-defg-hij",
}
SHAPED = {
    "id": "7cbh8rpc10lrc0ckih9tafss99",
    "summary": "Design review",
    "status": "confirmed",
    "location": "Room 4",
    "htmlLink": EVENT["htmlLink"],
    "hangoutLink": "https://meet.google.com/abc-defg-hij",
    "organizer_email": "ada@example.com",
    "start": "2024-10-01T09:00:00-07:00",
    "end": "2024-10-01T10:00:00-07:00",
    "allDay": False,
    "description": "Walk through the Q4 roadmap",
    "attendees": [
        {"email": "ada@example.com", "responseStatus": "accepted"},
        {"email": "bob@example.com", "responseStatus": "needsAction"},
    ],
}
INVITE = {
    **EVENT,
    "organizer": {"email": "bob@example.com"},
    "attendees": [
        {"email": "bob@example.com", "organizer": True, "responseStatus": "accepted"},
        {"email": "ada@example.com", "self": True, "responseStatus": "needsAction"},
    ],
}


def expect_meet(request: httpx.Request) -> None:
    body = json.loads(request.content)
    create = body.pop("conferenceData")["createRequest"]
    assert create["conferenceSolutionKey"] == {"type": "hangoutsMeet"} and len(create["requestId"]) == 32
    assert body == {
        "summary": "Design review",
        "start": {"dateTime": "2024-10-01T09:00:00", "timeZone": "America/Los_Angeles"},
        "end": {"dateTime": "2024-10-01T10:00:00", "timeZone": "America/Los_Angeles"},
        "description": "Walk through the Q4 roadmap",
        "location": "Room 4",
        "attendees": [{"email": "bob@example.com"}],
    }


CASES = [
    Case(
        "calendar_list_calendars",
        {},
        [
            Call(
                "GET",
                f"{CAL}/users/me/calendarList",
                {"maxResults": 100},
                json=None,
                response={
                    "kind": "calendar#calendarList",
                    "nextSyncToken": "CPDAlvWDx70CEPDAlvWDx70CGAU=",
                    "items": [
                        {
                            "id": "ada@example.com",
                            "summary": "ada@example.com",
                            "timeZone": "America/Los_Angeles",
                            "accessRole": "owner",
                            "primary": True,
                        },
                        {
                            "id": "en.usa#holiday@group.v.calendar.google.com",
                            "summary": "Holidays in United States",
                            "timeZone": "America/Los_Angeles",
                            "accessRole": "reader",
                        },
                    ],
                },
            )
        ],
        {
            "calendars": [
                {
                    "id": "ada@example.com",
                    "summary": "ada@example.com",
                    "primary": True,
                    "accessRole": "owner",
                    "timeZone": "America/Los_Angeles",
                },
                {
                    "id": "en.usa#holiday@group.v.calendar.google.com",
                    "summary": "Holidays in United States",
                    "primary": None,
                    "accessRole": "reader",
                    "timeZone": "America/Los_Angeles",
                },
            ],
            "nextPageToken": None,
        },
    ),
    Case(
        "calendar_list_events",
        {"timeMin": "2024-10-01T00:00:00Z", "timeMax": "2024-10-02T00:00:00Z", "q": "review", "limit": 5},
        [
            Call(
                "GET",
                EV,
                {
                    "timeMin": "2024-10-01T00:00:00Z",
                    "timeMax": "2024-10-02T00:00:00Z",
                    "q": "review",
                    "maxResults": 5,
                    "singleEvents": "true",
                    "orderBy": "startTime",
                },
                response={
                    "kind": "calendar#events",
                    "summary": "ada@example.com",
                    "items": [
                        EVENT,
                        {
                            "id": "allday1",
                            "status": "confirmed",
                            "summary": "Offsite",
                            "start": {"date": "2024-10-01"},
                            "end": {"date": "2024-10-02"},
                        },
                    ],
                    "nextPageToken": "CigKGjdjYmg4",
                },
            )
        ],
        {
            "events": [
                SHAPED,
                {
                    "id": "allday1",
                    "summary": "Offsite",
                    "status": "confirmed",
                    "location": None,
                    "htmlLink": None,
                    "hangoutLink": None,
                    "organizer_email": None,
                    "start": "2024-10-01",
                    "end": "2024-10-02",
                    "allDay": True,
                    "description": None,
                    "attendees": [],
                },
            ],
            "timeMin": "2024-10-01T00:00:00Z",
            "nextPageToken": "CigKGjdjYmg4",
        },
    ),
    Case(
        "calendar_get_event",
        {"eventId": "7cbh8rpc10lrc0ckih9tafss99", "calendarId": "ada@example.com"},
        [Call("GET", f"{CAL}/calendars/ada@example.com/events/7cbh8rpc10lrc0ckih9tafss99", response=EVENT)],
        SHAPED,
    ),
    Case(
        "calendar_create_event",
        {
            "summary": "Design review",
            "start": "2024-10-01T09:00:00",
            "end": "2024-10-01T10:00:00",
            "timeZone": "America/Los_Angeles",
            "description": "Walk through the Q4 roadmap",
            "location": "Room 4",
            "attendees": ["bob@example.com"],
            "addMeet": True,
        },
        [
            Call(
                "POST",
                EV,
                {"sendUpdates": "all", "conferenceDataVersion": 1},
                json=ANY,
                response=EVENT,
                check=expect_meet,
            )
        ],
        SHAPED,
    ),
    Case(
        "calendar_update_event",
        {
            "eventId": "7cbh8rpc10lrc0ckih9tafss99",
            "start": "2024-10-02",
            "end": "2024-10-03",
            "sendUpdates": "none",
        },
        [
            Call(
                "PATCH",
                f"{EV}/7cbh8rpc10lrc0ckih9tafss99",
                {"sendUpdates": "none"},
                json={"start": {"date": "2024-10-02"}, "end": {"date": "2024-10-03"}},
                response={**EVENT, "start": {"date": "2024-10-02"}, "end": {"date": "2024-10-03"}},
            )
        ],
        {**SHAPED, "start": "2024-10-02", "end": "2024-10-03", "allDay": True},
    ),
    Case(
        "calendar_delete_event",
        {"eventId": "7cbh8rpc10lrc0ckih9tafss99"},
        [Call("DELETE", f"{EV}/7cbh8rpc10lrc0ckih9tafss99", {"sendUpdates": "all"}, json=None, status=204)],
        {"eventId": "7cbh8rpc10lrc0ckih9tafss99", "deleted": True},
    ),
    Case(
        "calendar_quick_add",
        {"text": "Design review tomorrow 9am-10am"},
        [
            Call(
                "POST",
                f"{EV}/quickAdd",
                {"text": "Design review tomorrow 9am-10am", "sendUpdates": "none"},
                json=None,
                response=EVENT,
            )
        ],
        SHAPED,
    ),
    Case(
        "calendar_find_free_busy",
        {
            "timeMin": "2024-10-01T08:00:00Z",
            "timeMax": "2024-10-01T18:00:00Z",
            "calendars": ["primary", "bob@example.com"],
        },
        [
            Call(
                "POST",
                f"{CAL}/freeBusy",
                json={
                    "timeMin": "2024-10-01T08:00:00Z",
                    "timeMax": "2024-10-01T18:00:00Z",
                    "items": [{"id": "primary"}, {"id": "bob@example.com"}],
                },
                response={
                    "kind": "calendar#freeBusy",
                    "timeMin": "2024-10-01T08:00:00.000Z",
                    "timeMax": "2024-10-01T18:00:00.000Z",
                    "calendars": {
                        "primary": {
                            "busy": [{"start": "2024-10-01T16:00:00Z", "end": "2024-10-01T17:00:00Z"}]
                        },
                        "bob@example.com": {
                            "errors": [{"domain": "global", "reason": "notFound"}],
                            "busy": [],
                        },
                    },
                },
            )
        ],
        {
            "calendars": {
                "primary": {
                    "busy": [{"start": "2024-10-01T16:00:00Z", "end": "2024-10-01T17:00:00Z"}],
                    "errors": [],
                },
                "bob@example.com": {"busy": [], "errors": ["notFound"]},
            }
        },
    ),
    Case(
        "calendar_respond_to_event",
        {"eventId": "7cbh8rpc10lrc0ckih9tafss99", "response": "declined"},
        [
            Call("GET", f"{EV}/7cbh8rpc10lrc0ckih9tafss99", response=INVITE),
            Call(
                "PATCH",
                f"{EV}/7cbh8rpc10lrc0ckih9tafss99",
                {"sendUpdates": "all"},
                json={
                    "attendees": [
                        {"email": "bob@example.com", "organizer": True, "responseStatus": "accepted"},
                        {"email": "ada@example.com", "self": True, "responseStatus": "declined"},
                    ]
                },
                response={
                    **INVITE,
                    "attendees": [
                        {"email": "bob@example.com", "organizer": True, "responseStatus": "accepted"},
                        {"email": "ada@example.com", "self": True, "responseStatus": "declined"},
                    ],
                },
            ),
        ],
        {
            **SHAPED,
            "organizer_email": "bob@example.com",
            "attendees": [
                {"email": "bob@example.com", "responseStatus": "accepted"},
                {"email": "ada@example.com", "responseStatus": "declined"},
            ],
        },
    ),
    Case(
        "calendar_move_event",
        {"eventId": "7cbh8rpc10lrc0ckih9tafss99", "destination": "team@group.calendar.google.com"},
        [
            Call(
                "POST",
                f"{EV}/7cbh8rpc10lrc0ckih9tafss99/move",
                {"destination": "team@group.calendar.google.com"},
                json=None,
                response=EVENT,
            )
        ],
        SHAPED,
    ),
]


WEEKLY = {
    "id": "rec1",
    "status": "confirmed",
    "summary": "Standup",
    "start": {"dateTime": "2024-10-07T09:00:00+02:00", "timeZone": "Europe/Paris"},
    "end": {"dateTime": "2024-10-07T09:15:00+02:00", "timeZone": "Europe/Paris"},
    "recurrence": ["RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=10"],
}
WEEKLY_SHAPED = {
    "id": "rec1",
    "summary": "Standup",
    "status": "confirmed",
    "location": None,
    "htmlLink": None,
    "hangoutLink": None,
    "organizer_email": None,
    "start": "2024-10-07T09:00:00+02:00",
    "end": "2024-10-07T09:15:00+02:00",
    "allDay": False,
    "description": None,
    "attendees": [],
    "recurrence": ["RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=10"],
}
OCCURRENCE = {**WEEKLY, "id": "rec1_20241014T070000Z", "recurringEventId": "rec1"}
del OCCURRENCE["recurrence"]
OCCURRENCE["start"] = {"dateTime": "2024-10-14T09:00:00+02:00"}
OCCURRENCE["end"] = {"dateTime": "2024-10-14T09:15:00+02:00"}

CASES += [
    Case(
        "calendar_list_event_instances",
        {"eventId": "rec1", "timeMin": "2024-10-10T00:00:00Z", "limit": 1},
        [
            Call(
                "GET",
                f"{EV}/rec1/instances",
                {"timeMin": "2024-10-10T00:00:00Z", "maxResults": 1},
                response={"kind": "calendar#events", "items": [OCCURRENCE], "nextPageToken": "p2"},
            )
        ],
        {
            "events": [
                {
                    **{k: v for k, v in WEEKLY_SHAPED.items() if k != "recurrence"},
                    "id": "rec1_20241014T070000Z",
                    "start": "2024-10-14T09:00:00+02:00",
                    "end": "2024-10-14T09:15:00+02:00",
                    "recurringEventId": "rec1",
                }
            ],
            "timeMin": "2024-10-10T00:00:00Z",
            "nextPageToken": "p2",
        },
    ),
]


def test_every_tool_has_a_case() -> None:
    from workbench_plugins.google_calendar.tools import TOOLS

    assert sorted(t.name for t in TOOLS) == sorted(c.tool for c in CASES)


def test_catalog_entries_are_well_formed() -> None:
    check_catalog("google-calendar", google_calendar_tools)


@pytest.mark.parametrize("case", CASES, ids=str)
async def test_tool_request_and_result(tmp_path: Path, case: Case) -> None:
    await run_case(PLUGIN, tmp_path, case)


async def test_rsvp_without_invitation_is_explained(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "calendar_respond_to_event",
        {"eventId": "e1", "response": "accepted"},
        [Call("GET", f"{EV}/e1", response={**EVENT, "attendees": [{"email": "bob@example.com"}]})],
    )
    assert out == {
        "results": [{"error": "You are not a guest of this event, so there is no invitation to answer."}]
    }


async def test_upstream_404_becomes_tool_error(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "calendar_get_event",
        {"eventId": "gone"},
        [
            Call(
                "GET",
                f"{EV}/gone",
                status=404,
                response={
                    "error": {
                        "errors": [{"domain": "global", "reason": "notFound", "message": "Not Found"}],
                        "code": 404,
                        "message": "Not Found",
                    }
                },
            )
        ],
    )
    assert out == {"results": [{"error": "google-calendar API error 404: Not Found"}]}


async def test_list_events_defaults_to_upcoming(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without timeMin, Google starts at the oldest event ever; the tool starts at now and says so."""
    monkeypatch.setattr(google_calendar_tools, "_now", lambda: "2025-03-04T05:06:07Z")
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "calendar_list_events",
        {},
        [
            Call(
                "GET",
                EV,
                {
                    "timeMin": "2025-03-04T05:06:07Z",
                    "maxResults": 25,
                    "singleEvents": "true",
                    "orderBy": "startTime",
                },
                response={"kind": "calendar#events", "items": []},
            )
        ],
    )
    assert out == {
        "results": [{"result": {"events": [], "timeMin": "2025-03-04T05:06:07Z", "nextPageToken": None}}]
    }


def test_now_is_an_rfc3339_utc_time() -> None:
    import re

    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", google_calendar_tools._now())


async def test_create_a_recurring_event(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "calendar_create_event",
        {
            "summary": "Standup",
            "start": "2024-10-07T09:00:00",
            "end": "2024-10-07T09:15:00",
            "timeZone": "Europe/Paris",
            "recurrence": ["RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=10"],
            "sendUpdates": "none",
        },
        [
            Call(
                "POST",
                EV,
                {"sendUpdates": "none"},
                json={
                    "summary": "Standup",
                    "start": {"dateTime": "2024-10-07T09:00:00", "timeZone": "Europe/Paris"},
                    "end": {"dateTime": "2024-10-07T09:15:00", "timeZone": "Europe/Paris"},
                    "recurrence": ["RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=10"],
                },
                response=WEEKLY,
            )
        ],
    )
    assert out == {"results": [{"result": WEEKLY_SHAPED}]}


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        (
            {"recurrence": ["FREQ=WEEKLY"], "timeZone": "UTC"},
            "Not an RFC 5545 recurrence line: 'FREQ=WEEKLY' (e.g. 'RRULE:FREQ=WEEKLY;COUNT=4').",
        ),
        (
            {"recurrence": ["RRULE:FREQ=DAILY"]},
            "A recurring event with a start time needs timeZone (e.g. 'Europe/Paris').",
        ),
    ],
)
async def test_bad_recurrence_is_refused_before_any_request(tmp_path: Path, extra: dict, error: str) -> None:
    args = {"summary": "x", "start": "2024-10-07T09:00:00", "end": "2024-10-07T10:00:00", **extra}
    out = await run_tool(PLUGIN, tmp_path, "calendar_create_event", args, [])
    assert out == {"results": [{"error": error}]}
