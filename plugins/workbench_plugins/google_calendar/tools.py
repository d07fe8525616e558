"""Google Calendar API v3 tools (https://developers.google.com/calendar/api/v3/reference).

Times are RFC 3339 ("2024-10-01T09:00:00-07:00", or with a separate `timeZone`); a plain date
("2024-10-01") makes an all-day event. `calendarId` defaults to "primary", the user's own calendar.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import quote

from workbench.sdk import ToolError, api, compact, pick, pick_many, trim
from workbench.tools import ArgsModel, Field, ToolContext, tool

# Every tool works with the one scope the manifest asks for (the discovery document lists it
# for each method called; tests/plugins/test_definitions.py checks that).
_SCOPES = ("https://www.googleapis.com/auth/calendar",)

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
SendUpdates = Literal["all", "externalOnly", "none"]


def _events(calendar_id: str) -> str:
    return f"/calendar/v3/calendars/{quote(calendar_id, safe='@')}/events"


def _when(value: str, tz: str | None) -> dict[str, str]:
    if _DATE.match(value):
        return {"date": value}
    return {"dateTime": value, "timeZone": tz} if tz else {"dateTime": value}


_RULE = re.compile(r"^(RRULE|EXRULE|RDATE|EXDATE)[;:]\S+$")


def _check_recurrence(rules: list[str] | None, start: str | None, tz: str | None) -> None:
    if not rules:
        return
    bad = [r for r in rules if not _RULE.match(r)]
    if bad:
        raise ToolError(f"Not an RFC 5545 recurrence line: {bad[0]!r} (e.g. 'RRULE:FREQ=WEEKLY;COUNT=4').")
    if start and not _DATE.match(start) and not tz:
        raise ToolError("A recurring event with a start time needs timeZone (e.g. 'Europe/Paris').")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _time(t: Any) -> Any:
    return (t or {}).get("dateTime") or (t or {}).get("date")


def _event(e: Any) -> dict[str, Any]:
    return {
        **pick(e, "id", "summary", "status", "location", "htmlLink", "hangoutLink", "organizer.email"),
        "start": _time(e.get("start")),
        "end": _time(e.get("end")),
        "allDay": "date" in (e.get("start") or {}),
        "description": trim(e.get("description"), 4_000),
        "attendees": pick_many(e.get("attendees"), "email", "responseStatus"),
        **({"recurrence": e["recurrence"]} if e.get("recurrence") else {}),
        **({"recurringEventId": e["recurringEventId"]} if e.get("recurringEventId") else {}),
    }


class _Cal(ArgsModel):
    calendarId: str = Field(
        default="primary",
        description="Calendar id from calendar_list_calendars, or 'primary' (the user's calendar)",
    )


class ListCalendars(ArgsModel):
    limit: int = Field(default=100, ge=1, le=250, description="Calendars per page")
    pageToken: str | None = Field(default=None, description="Cursor from the previous page")


@tool(
    "calendar_list_calendars",
    "List the Google calendars the user has (own, shared, subscribed).",
    ListCalendars,
    scopes=_SCOPES,
    keywords=("shared", "subscribed", "show", "agendas"),
)
async def list_calendars(args: ListCalendars, ctx: ToolContext) -> Any:
    page = await api(
        ctx,
        "GET",
        "/calendar/v3/users/me/calendarList",
        params={"maxResults": args.limit, "pageToken": args.pageToken},
    )
    return {
        "calendars": pick_many(page.get("items"), "id", "summary", "primary", "accessRole", "timeZone"),
        "nextPageToken": page.get("nextPageToken"),
    }


class ListEvents(_Cal):
    timeMin: str | None = Field(
        default=None,
        description="Events ending after this RFC 3339 time (default: now, i.e. upcoming events)",
    )
    timeMax: str | None = Field(default=None, description="Events starting before this RFC 3339 time")
    q: str | None = Field(default=None, description="Free-text search in summary, description, attendees")
    limit: int = Field(default=25, ge=1, le=2500, description="Events per page")
    pageToken: str | None = Field(default=None, description="Cursor from the previous page")


@tool(
    "calendar_list_events",
    "List (find, search) Google Calendar events in a time window, soonest first, from now on unless "
    "timeMin says otherwise; recurring ones expanded.",
    ListEvents,
    scopes=_SCOPES,
    keywords=("upcoming", "appointments", "meetings", "today", "this week", "show", "plans"),
)
async def list_events(args: ListEvents, ctx: ToolContext) -> Any:
    # Without timeMin Google starts at the calendar's oldest event; "soonest first" means upcoming.
    time_min = args.timeMin or _now()
    page = await api(
        ctx,
        "GET",
        _events(args.calendarId),
        params={
            "timeMin": time_min,
            "timeMax": args.timeMax,
            "q": args.q,
            "maxResults": args.limit,
            "pageToken": args.pageToken,
            "singleEvents": "true",
            "orderBy": "startTime",
        },
    )
    return {
        "events": [_event(e) for e in page.get("items", [])],
        "timeMin": time_min,  # pass it again with nextPageToken: Google wants the same query per page
        "nextPageToken": page.get("nextPageToken"),
    }


class EventRef(_Cal):
    eventId: str = Field(description="Event id, from calendar_list_events")


@tool(
    "calendar_get_event",
    "Get one Google Calendar event with attendees and description.",
    EventRef,
    scopes=_SCOPES,
    keywords=("details", "show", "view", "info", "attendees", "who is coming", "location"),
)
async def get_event(args: EventRef, ctx: ToolContext) -> Any:
    return _event(await api(ctx, "GET", f"{_events(args.calendarId)}/{args.eventId}"))


class CreateEvent(_Cal):
    summary: str = Field(min_length=1, description="Event title")
    start: str = Field(description="Start: RFC 3339 time, or YYYY-MM-DD for an all-day event")
    end: str = Field(description="End (exclusive for all-day events: the day after)")
    timeZone: str | None = Field(default=None, description="IANA zone for start/end, e.g. 'Europe/Paris'")
    description: str | None = Field(default=None, description="Event description")
    location: str | None = Field(default=None, description="Place or address")
    attendees: list[str] | None = Field(default=None, description="Guest email addresses")
    addMeet: bool = Field(default=False, description="Attach a new Google Meet video link")
    sendUpdates: SendUpdates = Field(default="all", description="Email invitations to guests")
    recurrence: list[str] | None = Field(
        default=None,
        max_length=10,
        description="Make it recurring: RFC 5545 lines, e.g. ['RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=10'] "
        "(needs timeZone unless start is a date)",
    )


@tool(
    "calendar_create_event",
    "Create (schedule, book) a Google Calendar event or meeting, one-off or recurring, and invite guests.",
    CreateEvent,
    scopes=_SCOPES,
    keywords=(
        "new",
        "add",
        "set up",
        "plan",
        "arrange",
        "organise",
        "invite",
        "appointment",
        "meeting",
        "call",
    ),
)
async def create_event(args: CreateEvent, ctx: ToolContext) -> Any:
    _check_recurrence(args.recurrence, args.start, args.timeZone)
    body = compact(
        {
            "summary": args.summary,
            "start": _when(args.start, args.timeZone),
            "end": _when(args.end, args.timeZone),
            "description": args.description,
            "location": args.location,
            "attendees": [{"email": a} for a in args.attendees] if args.attendees else None,
            "recurrence": args.recurrence,
            "conferenceData": (
                {
                    "createRequest": {
                        "requestId": uuid.uuid4().hex,
                        "conferenceSolutionKey": {"type": "hangoutsMeet"},
                    }
                }
                if args.addMeet
                else None
            ),
        }
    )
    created = await api(
        ctx,
        "POST",
        _events(args.calendarId),
        params={"sendUpdates": args.sendUpdates, "conferenceDataVersion": 1 if args.addMeet else None},
        json=body,
    )
    return _event(created)


class UpdateEvent(EventRef):
    summary: str | None = Field(default=None, description="New title")
    start: str | None = Field(default=None, description="New start (RFC 3339 or YYYY-MM-DD)")
    end: str | None = Field(default=None, description="New end")
    timeZone: str | None = Field(default=None, description="IANA zone for start/end")
    description: str | None = Field(default=None, description="New description")
    location: str | None = Field(default=None, description="New location")
    attendees: list[str] | None = Field(default=None, description="Replace the guest list with these emails")
    sendUpdates: SendUpdates = Field(default="all", description="Email guests about the change")


@tool(
    "calendar_update_event",
    "Change a Google Calendar event: reschedule, rename, move place, change guests.",
    UpdateEvent,
    scopes=_SCOPES,
    keywords=("reschedule", "postpone", "delay", "change time", "edit", "shift", "later", "earlier"),
)
async def update_event(args: UpdateEvent, ctx: ToolContext) -> Any:
    body = compact(
        {
            "summary": args.summary,
            "start": _when(args.start, args.timeZone) if args.start else None,
            "end": _when(args.end, args.timeZone) if args.end else None,
            "description": args.description,
            "location": args.location,
            "attendees": [{"email": a} for a in args.attendees] if args.attendees is not None else None,
        }
    )
    if not body:
        raise ToolError("Nothing to change: give summary, start, end, description, location or attendees.")
    updated = await api(
        ctx,
        "PATCH",
        f"{_events(args.calendarId)}/{args.eventId}",
        params={"sendUpdates": args.sendUpdates},
        json=body,
    )
    return _event(updated)


class DeleteEvent(EventRef):
    sendUpdates: SendUpdates = Field(default="all", description="Email guests a cancellation")


@tool(
    "calendar_delete_event",
    "Delete (cancel) a Google Calendar event.",
    DeleteEvent,
    scopes=_SCOPES,
    keywords=("cancel", "remove", "call off", "drop", "meeting", "appointment"),
)
async def delete_event(args: DeleteEvent, ctx: ToolContext) -> Any:
    await api(
        ctx, "DELETE", f"{_events(args.calendarId)}/{args.eventId}", params={"sendUpdates": args.sendUpdates}
    )
    return {"eventId": args.eventId, "deleted": True}


class QuickAdd(_Cal):
    text: str = Field(min_length=1, description="e.g. 'Lunch with Ada at Noma tomorrow 12pm-1pm'")
    sendUpdates: SendUpdates = Field(default="none", description="Email guests")


@tool(
    "calendar_quick_add",
    "Create a Google Calendar event from a plain sentence, e.g. 'Dinner with Ada Friday 7pm'.",
    QuickAdd,
    scopes=_SCOPES,
    keywords=("natural language", "sentence", "text", "plain words", "fast"),
)
async def quick_add(args: QuickAdd, ctx: ToolContext) -> Any:
    created = await api(
        ctx,
        "POST",
        f"{_events(args.calendarId)}/quickAdd",
        params={"text": args.text, "sendUpdates": args.sendUpdates},
    )
    return _event(created)


class FreeBusy(ArgsModel):
    timeMin: str = Field(description="Window start (RFC 3339)")
    timeMax: str = Field(description="Window end (RFC 3339)")
    calendars: list[str] = Field(
        default_factory=lambda: ["primary"], description="Calendar ids or people's emails to check"
    )
    timeZone: str | None = Field(default=None, description="Zone of the answer, e.g. 'UTC'")


@tool(
    "calendar_find_free_busy",
    "Find when calendars (people) are busy or free in a time window, to pick a meeting slot.",
    FreeBusy,
    scopes=_SCOPES,
    keywords=("availability", "available", "free time", "open slots", "slot", "find time"),
)
async def find_free_busy(args: FreeBusy, ctx: ToolContext) -> Any:
    found = await api(
        ctx,
        "POST",
        "/calendar/v3/freeBusy",
        json=compact(
            {
                "timeMin": args.timeMin,
                "timeMax": args.timeMax,
                "timeZone": args.timeZone,
                "items": [{"id": c} for c in args.calendars],
            }
        ),
    )
    return {
        "calendars": {
            cid: {"busy": cal.get("busy", []), "errors": [e.get("reason") for e in cal.get("errors", [])]}
            for cid, cal in (found.get("calendars") or {}).items()
        }
    }


class Respond(EventRef):
    response: Literal["accepted", "declined", "tentative"] = Field(
        description="Your answer to the invitation"
    )
    sendUpdates: SendUpdates = Field(default="all", description="Tell the organizer")


@tool(
    "calendar_respond_to_event",
    "Accept, decline or tentatively accept (RSVP) a Google Calendar invitation.",
    Respond,
    scopes=_SCOPES,
    keywords=(
        "accept",
        "decline",
        "rsvp",
        "reply",
        "attend",
        "join",
        "going",
        "maybe",
        "invitation",
        "invite",
    ),
)
async def respond_to_event(args: Respond, ctx: ToolContext) -> Any:
    path = f"{_events(args.calendarId)}/{args.eventId}"
    event = await api(ctx, "GET", path)
    attendees = event.get("attendees") or []
    if not any(a.get("self") for a in attendees):
        raise ToolError("You are not a guest of this event, so there is no invitation to answer.")
    updated = [{**a, "responseStatus": args.response} if a.get("self") else a for a in attendees]
    done = await api(
        ctx, "PATCH", path, params={"sendUpdates": args.sendUpdates}, json={"attendees": updated}
    )
    return _event(done)


class MoveEvent(EventRef):
    destination: str = Field(description="Id of the calendar to move the event to")


@tool(
    "calendar_move_event",
    "Move a Google Calendar event to another calendar.",
    MoveEvent,
    scopes=_SCOPES,
    keywords=("transfer", "another", "different", "switch", "relocate"),
)
async def move_event(args: MoveEvent, ctx: ToolContext) -> Any:
    moved = await api(
        ctx,
        "POST",
        f"{_events(args.calendarId)}/{args.eventId}/move",
        params={"destination": args.destination},
    )
    return _event(moved)


class Instances(EventRef):
    timeMin: str | None = Field(
        default=None, description="Occurrences ending after this RFC 3339 time (default: now)"
    )
    timeMax: str | None = Field(default=None, description="Occurrences starting before this RFC 3339 time")
    limit: int = Field(default=25, ge=1, le=2500, description="Occurrences per page")
    pageToken: str | None = Field(default=None, description="Cursor from the previous page")


@tool(
    "calendar_list_event_instances",
    "List the occurrences of a recurring Google Calendar event, from now on unless timeMin says otherwise.",
    Instances,
    scopes=_SCOPES,
    keywords=("occurrences", "recurring", "series", "repeats", "each"),
)
async def list_event_instances(args: Instances, ctx: ToolContext) -> Any:
    time_min = args.timeMin or _now()
    page = await api(
        ctx,
        "GET",
        f"{_events(args.calendarId)}/{args.eventId}/instances",
        params={
            "timeMin": time_min,
            "timeMax": args.timeMax,
            "maxResults": args.limit,
            "pageToken": args.pageToken,
        },
    )
    return {
        "events": [_event(e) for e in page.get("items", [])],
        "timeMin": time_min,
        "nextPageToken": page.get("nextPageToken"),
    }


TOOLS = [
    list_calendars,
    list_events,
    get_event,
    create_event,
    update_event,
    delete_event,
    quick_add,
    find_free_busy,
    respond_to_event,
    move_event,
    list_event_instances,
]
