"""Activity: what the signed-in user's agents ran, from the audit store (never anyone else's).

  GET /portal/activity?integration=&outcome=&cursor=   a page of executions, newest first, with
                                                        a per-day per-integration chart (inline SVG)
                                                        and p50/p95 duration per tool
  GET /portal/activity/{id}?at=<ts>                     one execution: caller, arguments (redacted
                                                        when written), outcome, the error in full

Paging is the audit store's opaque cursor; the user is always the session's, so a cursor copied
from someone else's URL reads only this user's events.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from workbench.stores import ActivityQuery
from workbench.web.html import e, html_page

if TYPE_CHECKING:
    from workbench.stores import User
    from workbench.web.context import WebContext

__all__ = ["activity_chart", "activity_routes"]

PAGE_SIZE = 25
CHART_DAYS = 14
CHART_MAX_EVENTS = 2000  # the chart reads at most this many recent executions
_PALETTE = ("#2f5bd3", "#067647", "#b54708", "#7a2e98", "#0e7090", "#c11574", "#4e5ba6", "#854a0e")
_OUTCOMES = {"success": True, "failure": False}


def _day(ts: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ts))


UNKNOWN_TOOL = "unknown tool"
DETAIL_PAGES = 40  # how many pages of 100 the detail page reads to find one execution
_EVENT_ID = re.compile(r"^[0-9a-f]{16}$")


def integration_label(ev: dict[str, Any]) -> str:
    """The integration an execution ran in; a call to a tool no catalog has is labelled as such."""
    if ev.get("integration"):
        return str(ev["integration"])
    return UNKNOWN_TOOL if str(ev.get("error") or "").startswith("Tool not found") else "—"


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by the nearest-rank method."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def durations_by_tool(events: list[dict[str, Any]]) -> str:
    """A table of p50/p95 duration per tool over `events`, slowest p95 first."""
    by_tool: dict[str, list[float]] = defaultdict(list)
    for ev in events:
        if isinstance(ev.get("duration_ms"), int | float):
            by_tool[str(ev.get("tool") or "—")].append(float(ev["duration_ms"]))
    if not by_tool:
        return ""
    rows = sorted(
        ((tool, len(v), percentile(v, 50), percentile(v, 95)) for tool, v in by_tool.items()),
        key=lambda r: -r[3],
    )
    body = "".join(
        f'<tr><th scope="row" data-label="Tool"><code>{e(tool)}</code></th><td data-label="Calls">{n}</td>'
        f'<td data-label="p50">{p50:.0f} ms</td><td data-label="p95">{p95:.0f} ms</td></tr>'
        for tool, n, p50, p95 in rows
    )
    return (
        '<table class="stack" id="durations"><caption class="visually-hidden">Duration per tool</caption>'
        '<thead><tr><th scope="col">Tool</th><th scope="col">Calls</th><th scope="col">p50</th>'
        f'<th scope="col">p95</th></tr></thead><tbody>{body}</tbody></table>'
    )


class Callers:
    """Names for who ran an execution: the API key's label, the OAuth client's name, the playground
    (the portal's session) or a schedule. Each key and client is looked up once per page."""

    def __init__(self, gw: Any, user: User) -> None:
        self.gw, self.user = gw, user
        self._keys: dict[str, str] | None = None
        self._clients: dict[str, str] = {}

    def name(self, ev: dict[str, Any]) -> str:
        via = ev.get("via")
        if via == "session":
            return "Playground"
        if via == "schedule":
            return "Schedule"
        if via == "api_key":
            key_id = str(ev.get("key_id") or "")
            if self._keys is None:
                self._keys = {k.key_id: k.label for k in self.gw.auth.keys_of(self.user.id)}
            label = self._keys.get(key_id, "")
            if not key_id:
                return "An API key"
            return f"API key {label!r} (wb_{key_id}_…)" if label else f"API key wb_{key_id}_…"
        if via == "oauth":
            client_id = str(ev.get("client_id") or "")
            if client_id and client_id not in self._clients:
                client = self.gw.oauth.clients.registered(client_id)
                self._clients[client_id] = client.client_name if client is not None else ""
            name = self._clients.get(client_id, "")
            return f"OAuth client {name}" if name else "An OAuth client"
        return str(via or "—")


def activity_chart(events: list[dict[str, Any]], now: float, days: int = CHART_DAYS) -> str:
    """Executions per day per integration as stacked bars: an inline SVG with a text equivalent."""
    day_list = [_day(now - 86_400 * i) for i in range(days - 1, -1, -1)]
    counts: Counter[tuple[str, str]] = Counter()
    for ev in events:
        day = _day(float(ev.get("ts") or 0))
        if day in day_list:
            counts[(day, integration_label(ev))] += 1
    integrations = sorted({name for _, name in counts})
    colour = {name: _PALETTE[i % len(_PALETTE)] for i, name in enumerate(integrations)}
    per_day = {d: sum(counts[(d, n)] for n in integrations) for d in day_list}
    peak = max(per_day.values(), default=0) or 1
    width, height, pad_b, pad_l = 700, 180, 24, 28
    slot = (width - pad_l) / days
    bars = []
    for i, day in enumerate(day_list):
        x = pad_l + i * slot + slot * 0.15
        y = float(height - pad_b)
        for name in integrations:
            n = counts[(day, name)]
            if not n:
                continue
            h = (height - pad_b - 10) * n / peak
            y -= h
            bars.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{slot * 0.7:.1f}" height="{h:.1f}" fill="{colour[name]}">'
                f"<title>{e(day)}: {n} × {e(name)}</title></rect>"
            )
        if (days - 1 - i) % 2 == 0 or days <= 7:  # every other day, ending with today
            bars.append(
                f'<text x="{pad_l + i * slot + slot / 2:.1f}" y="{height - 6}" font-size="11" '
                f'text-anchor="middle" fill="#5b6475">{e(day[5:])}</text>'
            )
    axis = (
        f'<line x1="{pad_l}" y1="{height - pad_b}" x2="{width}" y2="{height - pad_b}" stroke="#d9dde5"/>'
        f'<text x="0" y="14" font-size="11" fill="#5b6475">{peak}</text>'
    )
    total = sum(per_day.values())
    summary = f"{total} executions in the last {days} days" + (
        ", by integration: " + ", ".join(f"{n} {sum(counts[(d, n)] for d in day_list)}" for n in integrations)
        if integrations
        else ""
    )
    svg = (
        f'<svg viewBox="0 0 {width} {height}" role="img" aria-labelledby="chart-title chart-desc" '
        f'xmlns="http://www.w3.org/2000/svg"><title id="chart-title">Executions per day</title>'
        f'<desc id="chart-desc">{e(summary)}</desc>{axis}{"".join(bars)}</svg>'
    )
    legend = "".join(
        f'<li><span class="swatch" style="background:{colour[n]}"></span>{e(n)}</li>' for n in integrations
    )
    rows = "".join(
        f'<tr><td data-label="Day">{e(d)}</td>'
        + "".join(f'<td data-label="{e(n)}">{counts[(d, n)]}</td>' for n in integrations)
        + "</tr>"
        for d in day_list
        if per_day[d]
    )
    table = (
        '<details><summary>The numbers</summary><table class="stack"><thead><tr><th scope="col">Day</th>'
        + "".join(f'<th scope="col">{e(n)}</th>' for n in integrations)
        + f"</tr></thead><tbody>{rows}</tbody></table></details>"
        if rows
        else ""
    )
    return (
        f'<div class="chart">{svg}</div><ul class="legend" aria-label="Integrations">{legend}</ul>'
        f'<p class="help">{e(summary)}.</p>{table}'
    )


def _detail_href(ev: dict[str, Any]) -> str | None:
    event_id = str(ev.get("id") or "")
    if not _EVENT_ID.match(event_id):
        return None  # written before executions had ids
    return f"/portal/activity/{event_id}?{urlencode({'at': repr(float(ev.get('ts') or 0))})}"


def _row(ev: dict[str, Any], callers: Callers) -> str:
    ok = ev.get("success") is True
    outcome = '<span class="status ok">Succeeded</span>' if ok else '<span class="status warn">Failed</span>'
    if ev.get("grant") == "refused":
        outcome = '<span class="status off">Refused by the grant</span>'
    elif ev.get("grant") == "approval":
        outcome = '<span class="status warn">Waiting for approval</span>'
    error = str(ev.get("error") or "")
    duration = ev.get("duration_ms")
    return (
        f'<tr><td data-label="Time">{e(time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(float(ev.get("ts") or 0))))}</td>'
        + (
            f'<td data-label="Tool"><a href="{e(href)}"><code>{e(ev.get("tool") or "—")}</code></a></td>'
            if (href := _detail_href(ev))
            else f'<td data-label="Tool"><code>{e(ev.get("tool") or "—")}</code></td>'
        )
        + f'<td data-label="Integration">{e(integration_label(ev))}</td>'
        f'<td data-label="Caller">{e(callers.name(ev))}</td>'
        f'<td data-label="Outcome">{outcome}</td>'
        f'<td data-label="Duration">{e(f"{float(duration):.0f} ms") if isinstance(duration, int | float) else "—"}</td>'
        f'<td data-label="Error">{e(error[:300]) + ("…" if len(error) > 300 else "") if error else "—"}</td></tr>'
    )


_APPROVAL_STEP = {
    "REQUESTED": "Asked for approval",
    "APPROVED": "Approved",
    "DENIED": "Denied",
    "USED": "Ran once, approved",
}


def _approvals_section(events: list[dict[str, Any]]) -> str:
    """Approvals asked for, decided and used (action APPROVAL), newest first."""
    if not events:
        return ""
    rows = "".join(
        f'<tr><td data-label="Time">{e(time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(float(ev.get("ts") or 0))))}</td>'
        f'<td data-label="Tool"><code>{e(ev.get("tool") or "—")}</code></td>'
        f'<td data-label="Integration">{e(ev.get("integration") or "—")}</td>'
        f'<td data-label="Step">{e(_APPROVAL_STEP.get(str(ev.get("status")), str(ev.get("status"))))}</td>'
        f'<td data-label="Who">{e(ev.get("by") or ev.get("client") or "—")}</td>'
        f'<td data-label="Approval"><a href="/portal/approvals/{e(ev.get("approval") or "")}">details</a></td></tr>'
        for ev in events
    )
    return (
        '<section class="card" aria-labelledby="approvals-h"><h2 id="approvals-h">Approvals</h2>'
        '<table class="stack" id="approval-events"><thead><tr><th scope="col">Time (UTC)</th>'
        '<th scope="col">Tool</th><th scope="col">Integration</th><th scope="col">Step</th>'
        f'<th scope="col">Who</th><th scope="col"></th></tr></thead><tbody>{rows}</tbody></table></section>'
    )


def activity_routes(web: WebContext) -> list[BaseRoute]:
    gw = web.gw

    def page(request: Request, user: User) -> Response:
        q = request.query_params
        names = sorted(m.name for m in gw.registry.manifests())
        integration = q.get("integration") if q.get("integration") in names else None
        outcome = q.get("outcome") if q.get("outcome") in _OUTCOMES else None
        cursor = q.get("cursor") or None
        if cursor is not None and (len(cursor) > 64 or not cursor.isascii()):
            cursor = None
        query = ActivityQuery(
            integration=integration,
            success=_OUTCOMES.get(outcome or ""),
            limit=PAGE_SIZE,
            cursor=cursor,
        )
        listing = gw.runs.activity(user.id, query)
        callers = Callers(gw, user)
        now = gw.clock()
        recent = gw.runs.activity(
            user.id,
            ActivityQuery(integration=integration, since=now - CHART_DAYS * 86_400, limit=CHART_MAX_EVENTS),
        )
        options = "".join(
            f'<option value="{e(n)}"{" selected" if n == integration else ""}>{e(n)}</option>' for n in names
        )
        outcome_options = "".join(
            f'<option value="{v}"{" selected" if v == outcome else ""}>{label}</option>'
            for v, label in (("success", "Succeeded"), ("failure", "Failed"))
        )
        filters = (
            '<form method="get" action="/portal/activity" class="filters" aria-label="Filter activity">'
            '<div><label for="f-integration">Integration</label><select id="f-integration" name="integration">'
            f'<option value="">All</option>{options}</select></div>'
            '<div><label for="f-outcome">Outcome</label><select id="f-outcome" name="outcome">'
            f'<option value="">All</option>{outcome_options}</select></div>'
            '<div><button type="submit">Show</button></div></form>'
        )
        chart_note = (
            f'<p class="help">The chart counts your latest {CHART_MAX_EVENTS} executions.</p>'
            if recent.next_cursor
            else ""
        )
        durations = durations_by_tool(recent.events)
        chart = (
            f'<section class="card" aria-labelledby="chart-h"><h2 id="chart-h">Last {CHART_DAYS} days</h2>'
            f"{activity_chart(recent.events, now)}{chart_note}"
            + (f'<h3 id="durations-h">Duration per tool</h3>{durations}' if durations else "")
            + "</section>"
        )
        if listing.events:
            table = (
                '<table class="stack" id="executions"><caption class="visually-hidden">Executions, newest first</caption><thead><tr>'
                '<th scope="col">Time (UTC)</th><th scope="col">Tool</th><th scope="col">Integration</th>'
                '<th scope="col">Caller</th><th scope="col">Outcome</th><th scope="col">Duration</th>'
                '<th scope="col">Error</th></tr></thead><tbody>'
                + "".join(_row(ev, callers) for ev in listing.events)
                + "</tbody></table>"
            )
        else:
            table = (
                '<p class="muted">No executions yet'
                + (" match these filters" if integration or outcome else "")
                + '. Run a tool from an agent or the <a href="/portal/playground">playground</a>.</p>'
            )
        keep = {k: v for k, v in (("integration", integration), ("outcome", outcome)) if v}
        pager = []
        if cursor:
            pager.append(f'<a href="/portal/activity?{e(urlencode(keep))}">← Newest</a>')
        if listing.next_cursor:
            older = urlencode({**keep, "cursor": listing.next_cursor})
            pager.append(f'<a href="/portal/activity?{e(older)}" rel="next">Older →</a>')
        body = (
            chart
            + f'<section class="card" aria-labelledby="list-h"><h2 id="list-h">Executions</h2>{filters}{table}'
            + (f'<nav class="pager" aria-label="Pages">{"".join(pager)}</nav>' if pager else "")
            + "</section>"
            + _approvals_section(
                gw.runs.activity(user.id, ActivityQuery(action="APPROVAL", limit=PAGE_SIZE)).events
            )
        )
        return html_page("Activity", body, email=user.email, csrf=web.csrf(request), active="activity")

    def find(user: User, event_id: str, at: float) -> dict[str, Any] | None:
        """One of this user's executions by id: its partition read from `at` on, newest first, a
        bounded number of pages (never another user's partition, never a scan)."""
        cursor = None
        for _ in range(DETAIL_PAGES):
            found = gw.runs.activity(user.id, ActivityQuery(since=at - 0.001, limit=100, cursor=cursor))
            for ev in found.events:
                if ev.get("id") == event_id:
                    return ev
            cursor = found.next_cursor
            if cursor is None:
                return None
        return None

    def detail(request: Request, user: User) -> Response:
        event_id = str(request.path_params["event_id"])
        try:
            at = float(request.query_params.get("at", ""))
        except ValueError:
            at = math.nan
        ev = find(user, event_id, at) if _EVENT_ID.match(event_id) and math.isfinite(at) else None
        if ev is None:
            body = (
                '<p class="notice error" role="alert">No such execution in your activity.</p>'
                '<p><a href="/portal/activity">Back to Activity</a></p>'
            )
            return html_page(
                "Execution not found",
                body,
                status=404,
                email=user.email,
                csrf=web.csrf(request),
                active="activity",
            )
        ok = ev.get("success") is True
        duration = ev.get("duration_ms")
        facts = [
            ("Tool", f"<code>{e(ev.get('tool') or '—')}</code>"),
            ("Integration", e(integration_label(ev))),
            ("Caller", e(Callers(gw, user).name(ev))),
            ("When (UTC)", e(time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(float(ev.get("ts") or 0))))),
            (
                "Outcome",
                '<span class="status ok">Succeeded</span>'
                if ok
                else '<span class="status warn">Failed</span>',
            ),
            ("Duration", e(f"{float(duration):.1f} ms") if isinstance(duration, int | float) else "—"),
        ]
        rows = "".join(f'<tr><th scope="row">{k}</th><td>{v}</td></tr>' for k, v in facts)
        args = str(ev.get("args") or "")
        error = str(ev.get("error") or "")
        body = (
            f'<section class="card"><table id="execution">{rows}</table></section>'
            + (
                '<section class="card" aria-labelledby="error-h"><h2 id="error-h">Error</h2>'
                f'<pre class="snippet" tabindex="0" id="execution-error">{e(error)}</pre></section>'
                if error
                else ""
            )
            + '<section class="card" aria-labelledby="args-h"><h2 id="args-h">Arguments</h2>'
            + (
                f'<pre class="snippet" tabindex="0" id="execution-args">{e(args)}</pre>'
                '<p class="help">As the call sent them, with vault values and secret fields redacted.</p>'
                if args
                else '<p class="muted">Not recorded for this execution.</p>'
            )
            + '</section><p><a href="/portal/activity">Back to Activity</a></p>'
        )
        return html_page("Execution", body, email=user.email, csrf=web.csrf(request), active="activity")

    return [
        Route("/portal/activity", web.page(page), methods=["GET"]),
        Route("/portal/activity/{event_id}", web.page(detail), methods=["GET"]),
    ]
