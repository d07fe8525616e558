"""Playground: try a tool by hand before wiring an agent.

  GET /portal/playground    search_tools, get_tool_schema and execute_tools, run by the page's
                            script through POST /mcp with the portal session (seed 003's session
                            path: same origin, the session's CSRF token in X-CSRF-Token)

Everything runs as the signed-in user, exactly as an agent of theirs would, and is audited (via
"session"), so it shows on the activity page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from workbench.web.html import e, html_page

if TYPE_CHECKING:
    from workbench.stores import User
    from workbench.web.context import WebContext

__all__ = ["playground_routes"]


def playground_routes(web: WebContext) -> list[BaseRoute]:
    def page(request: Request, user: User) -> Response:
        body = (
            f'<div id="playground" data-csrf="{e(web.csrf(request))}">'
            '<noscript><div class="notice error" role="alert">The playground needs JavaScript.</div></noscript>'
            '<p class="muted">Runs as you, through the same <code>/mcp</code> endpoint your agents use. '
            'Tools really run: a write is a write. Every run shows on the <a href="/portal/activity">activity</a> '
            "page.</p>"
            '<section class="card" aria-labelledby="pg-1"><h2 id="pg-1">1. Find a tool</h2>'
            '<form id="pg-search" class="filters" aria-label="search_tools">'
            '<div><label for="pg-query">What do you want to do?</label>'
            '<input id="pg-query" type="text" required placeholder="e.g. create a jot"></div>'
            '<div><label for="pg-limit">Results</label>'
            '<input id="pg-limit" type="number" min="1" max="50" value="5"></div>'
            '<div><button type="submit">Search</button></div></form>'
            '<ul id="pg-search-results" class="result-list" aria-live="polite"></ul>'
            '<details><summary>Raw answer</summary><pre class="snippet" id="pg-search-raw"></pre></details>'
            "</section>"
            '<section class="card" aria-labelledby="pg-2"><h2 id="pg-2">2. Read its schema</h2>'
            '<form id="pg-schema" class="filters" aria-label="get_tool_schema">'
            '<div><label for="pg-schema-tool">Tool</label>'
            '<input id="pg-schema-tool" data-tool-field type="text" required></div>'
            '<div><button type="submit">Get schema</button></div></form>'
            '<pre class="snippet" id="pg-schema-out" aria-live="polite"></pre></section>'
            '<section class="card" aria-labelledby="pg-3"><h2 id="pg-3">3. Run it</h2>'
            '<form id="pg-execute" aria-label="execute_tools">'
            '<label for="pg-execute-tool">Tool</label>'
            '<input id="pg-execute-tool" data-tool-field type="text" required>'
            '<fieldset id="pg-form" class="args"><legend>Arguments</legend>'
            '<p class="muted">Get the schema (or press “Use” on a search result) for a form.</p></fieldset>'
            '<p><label class="inline-check"><input id="pg-raw" type="checkbox"> Edit the arguments as JSON</label></p>'
            '<div id="pg-raw-block" hidden><label for="pg-args">Arguments (JSON)</label>'
            '<textarea id="pg-args" spellcheck="false">{}</textarea></div>'
            '<p><button type="submit">Run</button></p></form>'
            '<pre class="snippet" id="pg-execute-out" aria-live="polite"></pre></section>'
            '<section class="card" aria-labelledby="pg-4"><h2 id="pg-4">This session’s runs</h2>'
            '<p class="muted" id="pg-history-empty">Nothing run yet in this tab.</p>'
            '<ul id="pg-history" class="result-list"></ul></section></div>'
        )
        return html_page("Playground", body, email=user.email, csrf=web.csrf(request), active="playground")

    return [Route("/portal/playground", web.page(page), methods=["GET"])]
