"""Catalog: every integration and tool a signed-in user can reach, searchable.

  GET /portal/catalog?q=    each integration (its connection state) with its tools: name, title,
                            the MCP hints (read-only, destructive, idempotent, open world) and what
                            the tool does; with `q`, search_tools' answer for this user first

The search is the very search_tools an agent calls (the same ranking, the user's own custom apps
included); the page only lays it out. Tool modules are imported and connection states read on the
store pool, never on the event loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from workbench.identity.auth import Principal
from workbench.manifest import Manifest, NoAuth
from workbench.web.html import e, html_page
from workbench.web.portal import why_unavailable

if TYPE_CHECKING:
    from workbench.stores import User
    from workbench.web.context import WebContext

__all__ = ["catalog_routes", "hint_badges"]

QUERY_CHARS = 200
RESULTS = 20
_HINTS = (
    ("readOnlyHint", True, "read-only"),
    ("destructiveHint", True, "destructive"),
    ("idempotentHint", True, "idempotent"),
    ("openWorldHint", True, "open world"),
)


def hint_badges(annotations: dict[str, Any]) -> str:
    """The MCP hints that hold for a tool, as small labels (destructive ones stand out)."""
    shown = [label for key, value, label in _HINTS if annotations.get(key) is value]
    if annotations.get("readOnlyHint") is True:  # a read-only tool's destructive hint means nothing
        shown = [s for s in shown if s != "destructive"]
    return " ".join(
        f'<span class="badge{" bad" if label == "destructive" else ""}">{e(label)}</span>' for label in shown
    )


def catalog_routes(web: WebContext) -> list[BaseRoute]:
    gw = web.gw

    def state(m: Manifest, connected: dict[str, bool]) -> str:
        if m.builtin or isinstance(m.auth, NoAuth):
            return '<span class="status ok">Built in</span>'
        if connected.get(m.name):
            return '<span class="status ok">Connected</span>'
        if why_unavailable(gw, m) is not None:
            return '<span class="status off">Needs setup on this gateway</span>'
        return '<span class="status off">Not connected</span>'

    def sections(user: User) -> str:
        """Every integration with its tools (blocking: imports tool modules, reads connections)."""
        connected = gw.connections.status(user.id)
        manifests = sorted(gw.registry.manifests(), key=lambda m: (not m.builtin, m.display_name.lower()))
        out = []
        for m in manifests:
            tools = sorted(gw.registry.tools_of(m.name).values(), key=lambda t: t.name)
            rows = "".join(
                f'<tr id="tool-{e(t.name)}"><th scope="row" data-label="Tool"><code>{e(t.name)}</code></th>'
                f'<td data-label="Title">{e((t.annotations or {}).get("title") or "")}</td>'
                f'<td data-label="Hints">{hint_badges(t.annotations or m.annotations(t.name))}</td>'
                f'<td data-label="What it does">{e(t.description)}</td></tr>'
                for t in tools
            )
            count = f"{len(tools)} tool{'s' if len(tools) != 1 else ''}"
            out.append(
                f'<section class="card" aria-labelledby="cat-{e(m.name)}" id="integration-{e(m.name)}">'
                f'<div class="row"><h2 id="cat-{e(m.name)}">{e(m.display_name)}</h2>'
                f'<span><span class="muted">{count} · </span>{state(m, connected)}</span></div>'
                + (f'<p class="muted">{e(m.description)}</p>' if m.description else "")
                + f"<details><summary>Tools of {e(m.display_name)}</summary>"
                '<table class="stack"><thead><tr><th scope="col">Tool</th><th scope="col">Title</th>'
                '<th scope="col">Hints</th><th scope="col">What it does</th></tr></thead>'
                f"<tbody>{rows}</tbody></table></details></section>"
            )
        return "".join(out)

    async def page(request: Request) -> Response:
        user = web.user(request)
        if user is None:
            return web.signin_redirect(request)
        query = " ".join(request.query_params.get("q", "").split())[:QUERY_CHARS]
        found = ""
        if query:
            hits = await gw.catalog.search_tools(Principal(user=user, via="session"), query, RESULTS)
            items = "".join(
                f'<li><a href="#tool-{e(h["name"])}"><code>{e(h["name"])}</code></a> '
                f'<span class="muted">· {e(h["integration"])} · score {e(h["score"])}'
                f"{' · not connected' if h.get('connected') is False else ''}</span> "
                f'{hint_badges(h.get("annotations") or {})}<p class="help">{e(h["description"])}</p></li>'
                for h in hits
            )
            found = (
                f'<section class="card" aria-labelledby="found-h"><h2 id="found-h">Best matches for '
                f"“{e(query)}”</h2>"
                + (
                    f'<ul class="result-list" id="catalog-results">{items}</ul>'
                    if items
                    else '<p class="muted" id="catalog-results">No tool matches; try other words.</p>'
                )
                + '<p class="help">Ranked by <code>search_tools</code>, exactly as your agents see it.</p>'
                "</section>"
            )
        search = (
            '<form method="get" action="/portal/catalog" class="filters" role="search" aria-label="Search the catalog">'
            '<div><label for="catalog-q">Search the catalog</label>'
            f'<input id="catalog-q" name="q" type="text" value="{e(query)}" maxlength="{QUERY_CHARS}" '
            'placeholder="e.g. create an issue"></div><div><button type="submit">Search</button></div></form>'
        )
        body = search + found + await gw.connections.io.run(sections, user)
        return html_page("Catalog", body, email=user.email, csrf=web.csrf(request), active="catalog")

    return [Route("/portal/catalog", page, methods=["GET"])]
