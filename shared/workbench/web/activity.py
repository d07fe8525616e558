"""Activity: what the signed-in user's agents ran, from the audit store (never anyone else's).

  GET /portal/activity?integration=&outcome=&cursor=   a page of executions, newest first, with
                                                        a per-day per-integration chart (inline SVG)

Paging is the audit store's opaque cursor; the user is always the session's, so a cursor copied
from someone else's URL reads only this user's events.
"""

from __future__ import annotations

import time
from collections import Counter
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


def activity_chart(events: list[dict[str, Any]], now: float, days: int = CHART_DAYS) -> str:
    """Executions per day per integration as stacked bars: an inline SVG with a text equivalent."""
    day_list = [_day(now - 86_400 * i) for i in range(days - 1, -1, -1)]
    counts: Counter[tuple[str, str]] = Counter()
    for ev in events:
        day = _day(float(ev.get("ts") or 0))
        if day in day_list:
            counts[(day, str(ev.get("integration") or "other"))] += 1
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


def _row(ev: dict[str, Any]) -> str:
    ok = ev.get("success") is True
    outcome = '<span class="status ok">Succeeded</span>' if ok else '<span class="status warn">Failed</span>'
    error = str(ev.get("error") or "")
    duration = ev.get("duration_ms")
    return (
        f'<tr><td data-label="Time">{e(time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(float(ev.get("ts") or 0))))}</td>'
        f'<td data-label="Tool"><code>{e(ev.get("tool") or "—")}</code></td>'
        f'<td data-label="Integration">{e(ev.get("integration") or "—")}</td>'
        f'<td data-label="Outcome">{outcome}</td>'
        f'<td data-label="Duration">{e(f"{float(duration):.0f} ms") if isinstance(duration, int | float) else "—"}</td>'
        f'<td data-label="Error">{e(error[:300]) + ("…" if len(error) > 300 else "") if error else "—"}</td></tr>'
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
        listing = gw.stores.audit.activity(user.id, query)
        now = gw.clock()
        recent = gw.stores.audit.activity(
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
        chart = (
            f'<section class="card" aria-labelledby="chart-h"><h2 id="chart-h">Last {CHART_DAYS} days</h2>'
            f"{activity_chart(recent.events, now)}{chart_note}</section>"
        )
        if listing.events:
            table = (
                '<table class="stack" id="executions"><caption class="visually-hidden">Executions, newest first</caption><thead><tr>'
                '<th scope="col">Time (UTC)</th><th scope="col">Tool</th><th scope="col">Integration</th>'
                '<th scope="col">Outcome</th><th scope="col">Duration</th><th scope="col">Error</th>'
                "</tr></thead><tbody>" + "".join(_row(ev) for ev in listing.events) + "</tbody></table>"
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
        )
        return html_page("Activity", body, email=user.email, csrf=web.csrf(request), active="activity")

    return [Route("/portal/activity", web.page(page), methods=["GET"])]
