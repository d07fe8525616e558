"""Portal pages for custom apps: external MCP servers and OpenAPI apps (seed 004, issue 16).

  GET  /portal/apps                         every app the user sees: theirs and the operator's, each
                                            with its tools, last discovery, last error, connection state
  POST /portal/apps/mcp                     add (or replace) an MCP server
  POST /portal/apps/openapi                 add (or replace) an OpenAPI app from a pasted document
  POST /portal/apps/{name}/refresh          test/refresh: forget the cache and discover again now
  POST /portal/apps/{name}/remove           remove one of the user's own apps
  POST /portal/apps/workspace-code          the user's workspace code ({workspaceCode})
  POST /portal/apps/clear-cache             admins only: clear every user's discovery cache
  POST /portal/apps/{name}/connect          an OAuth app: start + redeem, then to the server's consent page
  GET  /api/auth/apps/callback              the OAuth apps' redirect URI: exchange the code, store tokens
  GET  /oauth/apps/client-metadata.json     Workbench's client ID metadata document (CIMD)

The pages call the same service as the `apps_*` tools, so a registration made here and one made by
an agent are the same thing. Secrets typed here are stored like the tools store them (encrypted, and
best as `{{vault:NAME}}` references), and never shown again.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from workbench.errors import ConflictError, InvalidInput, NotFound
from workbench.external.paths import CALLBACK_PATH, CLIENT_METADATA_PATH
from workbench.guard.bodylimit import BodyRule
from workbench.web.context import WebContext
from workbench.web.html import (
    connection_failed_page,
    csrf_field,
    e,
    html_page,
    json_response,
    notices,
    redirect,
    too_large_page,
)

if TYPE_CHECKING:
    from workbench.external import ExternalServers
    from workbench.stores import User

__all__ = ["BODY_RULES", "OPENAPI_FORM_BYTES", "apps_routes"]

# An OpenAPI document is pasted into the form: allow documents up to the service's own limit.
OPENAPI_FORM_BYTES = 6 * 1024 * 1024
# The one form that takes a pasted document reads up to OPENAPI_FORM_BYTES; every other form 64 KiB.
BODY_RULES = [BodyRule("/portal/apps/openapi", OPENAPI_FORM_BYTES, too_large_page)]
_STATUS = {
    "ok": '<span class="status ok">Connected</span>',
    "off": '<span class="status off">Disabled</span>',
    "reconnect": '<span class="status warn">Needs reconnecting</span>',
    "error": '<span class="status warn">Last discovery failed</span>',
    "new": '<span class="status off">Not contacted yet</span>',
}


def _when(ts: Any) -> str:
    import time

    if not isinstance(ts, int | float) or not ts:
        return "never"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))


def _auth_from(form: dict[str, str]) -> dict[str, Any] | None:
    kind = form.get("auth_type", "none")
    value = form.get("auth_value", "")
    if kind == "bearer":
        return {"type": "bearer", "token": value}
    if kind == "header":
        return {"type": "header", "headerName": form.get("auth_name", ""), "value": value}
    if kind == "query":
        return {"type": "query", "name": form.get("auth_name", ""), "value": value}
    if kind == "oauth2":
        scopes = [x for x in form.get("oauth_scopes", "").replace(",", " ").split() if x]
        return {
            "type": "oauth2",
            "clientId": form.get("oauth_client_id", "").strip(),
            "clientSecret": form.get("oauth_client_secret", ""),
            **({"scopes": scopes} if scopes else {}),
        }
    if kind in ("none", ""):
        return None
    return {"type": kind}  # refused by the service with the list of types it takes


def _timeout(form: dict[str, str]) -> int:
    raw = form.get("timeout", "").strip()
    if not raw:
        return 30_000
    if not re.fullmatch(r"\d{1,6}", raw):
        raise InvalidInput("timeout must be a whole number of milliseconds")
    return int(raw)


def apps_routes(web: WebContext) -> list[BaseRoute]:
    gw = web.gw

    def service() -> ExternalServers:
        assert gw.external is not None  # always built by the composition root
        return gw.external

    def card(app: dict[str, Any], csrf: str) -> str:
        name = str(app["name"])
        oauth = app.get("auth", {}).get("type") == "oauth"
        if not app.get("enabled", True):
            state = _STATUS["off"]
        elif oauth and not app.get("connected"):
            state = '<span class="status off">Not connected</span>'
        elif not app.get("connected", True):
            state = _STATUS["reconnect"]
        elif app.get("lastError") and not app.get("lastDiscovery"):
            state = _STATUS["error"]
        elif not app.get("lastDiscovery"):  # registered or configured, never asked for its tools yet
            state = _STATUS["new"]
        else:
            state = _STATUS["ok"]
        kind = "OpenAPI app" if app.get("kind") == "openapi" else "MCP server"
        owner = "from the operator" if app.get("operator") else "yours"
        tools = app.get("tools") or []
        tool_list = (
            f"<details><summary>{len(tools)} tool{'s' if len(tools) != 1 else ''}</summary><ul>"
            + "".join(f"<li><code>{e(t)}</code></li>" for t in tools)
            + "</ul></details>"
            if tools
            else '<p class="muted">No tools discovered yet.</p>'
        )
        error = (
            f'<p class="help" role="status"><strong>Last error:</strong> {e(app["lastError"])}'
            f" ({_when(app.get('lastErrorAt'))})</p>"
            if app.get("lastError")
            else ""
        )
        path = quote(name, safe="")
        actions = ""
        if oauth:
            label = "Reconnect" if app.get("connected") else "Connect"
            actions += (
                f'<form class="inline" method="post" action="/portal/apps/{path}/connect">{csrf}'
                f'<button type="submit" aria-label="{label} {e(name)}">{label}</button></form> '
            )
        actions += (
            f'<form class="inline" method="post" action="/portal/apps/{path}/refresh">{csrf}'
            f'<button class="secondary" type="submit" aria-label="Test and refresh {e(name)}">Test &amp; refresh'
            "</button></form>"
        )
        if not app.get("operator"):
            actions += (
                f' <form class="inline" method="post" action="/portal/apps/{path}/remove">{csrf}'
                f'<button class="danger" type="submit" aria-label="Remove {e(name)}">Remove</button></form>'
            )
        return (
            f'<section class="card" aria-labelledby="app-{e(name)}"><div class="row">'
            f'<h2 id="app-{e(name)}">{e(name)} <span class="muted">· {kind}, {owner}</span></h2>{state}</div>'
            f'<p class="muted">{e(app.get("url", ""))} · prefix <code>{e(app.get("toolPrefix", ""))}</code> · '
            f"auth {e(app.get('auth', {}).get('type', 'none'))}</p>"
            f"<p>Last discovery: {_when(app.get('lastDiscovery'))}</p>{error}{tool_list}"
            f"<p>{actions}</p></section>"
        )

    def auth_fields(prefix: str, query: bool) -> str:
        options = '<option value="none">None</option><option value="bearer">Bearer token</option>'
        options += '<option value="header">API key in a header</option>'
        if query:
            options += '<option value="query">API key in the query string</option>'
            options += '<option value="oauth2">OAuth2 (the document\'s authorization-code flow)</option>'
        else:
            options += '<option value="oauth">OAuth (each user signs in to the server)</option>'
        return (
            f'<label for="{prefix}-auth-type">Authentication</label>'
            f'<select id="{prefix}-auth-type" name="auth_type">{options}</select>'
            f'<label for="{prefix}-auth-name">Header or query parameter name</label>'
            f'<input id="{prefix}-auth-name" name="auth_name" type="text" placeholder="X-Api-Key">'
            f'<label for="{prefix}-auth-value">Token or key</label>'
            f'<input id="{prefix}-auth-value" name="auth_value" type="password" autocomplete="off">'
            '<p class="help">Best as a reference to your vault, e.g. <code>{{vault:LINEAR_TOKEN}}</code>; '
            "a literal value is stored encrypted and never shown again.</p>"
        )

    def apps_page(request: Request, user: User, flash: str = "", status: int = 200) -> Response:
        ext = service()
        csrf = csrf_field(web.csrf(request))
        apps = ext.overview(user.id)
        listing = "".join(card(a, csrf) for a in apps) or (
            '<section class="card"><p class="muted">No custom apps yet. Add an MCP server or an OpenAPI '
            "document below; its tools then show up in your agent's search_tools.</p></section>"
        )
        code = ext.workspace_code(user.id)
        workspace = (
            '<section class="card"><h2>Workspace code</h2>'
            "<p>Servers whose URL contains <code>{workspaceCode}</code> receive this code, so each user sees "
            "the tools the server scopes to them. Leave it empty to use your Workbench user id.</p>"
            f'<form method="post" action="/portal/apps/workspace-code">{csrf}'
            '<label for="ws-code">Workspace code</label>'
            f'<input id="ws-code" name="code" type="text" value="{e(code if code != user.id else "")}" '
            f'placeholder="{e(user.id)}" maxlength="128">'
            '<p><button type="submit">Save</button></p></form></section>'
        )
        add_mcp = (
            '<section class="card"><h2>Add an MCP server</h2>'
            f'<form method="post" action="/portal/apps/mcp">{csrf}'
            '<label for="mcp-name">Name</label><input id="mcp-name" name="name" type="text" required '
            'pattern="[a-z][a-z0-9_-]{0,39}" placeholder="linear">'
            '<label for="mcp-url">MCP endpoint URL</label><input id="mcp-url" name="url" type="text" required '
            'placeholder="https://mcp.example.com/{workspaceCode}/mcp">'
            + auth_fields("mcp", query=False)
            + '<label for="mcp-prefix">Tool prefix (optional)</label>'
            '<input id="mcp-prefix" name="tool_prefix" type="text" placeholder="name_">'
            '<label for="mcp-timeout">Timeout in milliseconds</label>'
            '<input id="mcp-timeout" name="timeout" type="text" inputmode="numeric" value="30000">'
            '<p><button type="submit">Add and discover</button></p></form></section>'
        )
        add_openapi = (
            '<section class="card"><h2>Add an OpenAPI app</h2>'
            "<p>Each operation of an OpenAPI 3.0 or 3.1 document becomes a tool named after its "
            "<code>operationId</code>. Operations without one are listed as dropped.</p>"
            f'<form method="post" action="/portal/apps/openapi">{csrf}'
            '<label for="oa-name">Name</label><input id="oa-name" name="name" type="text" required '
            'pattern="[a-z][a-z0-9_-]{0,39}" placeholder="petstore">'
            '<label for="oa-doc">OpenAPI document (JSON or YAML)</label>'
            '<textarea id="oa-doc" name="document" rows="10" cols="80" required></textarea>'
            '<label for="oa-base">Base URL (optional: the document\'s first server)</label>'
            '<input id="oa-base" name="base_url" type="text" placeholder="https://api.example.com/v1">'
            + auth_fields("oa", query=True)
            + '<label for="oa-client-id">OAuth2 client id (for OAuth2)</label>'
            '<input id="oa-client-id" name="oauth_client_id" type="text">'
            '<label for="oa-client-secret">OAuth2 client secret (for OAuth2; empty for a public client)</label>'
            '<input id="oa-client-secret" name="oauth_client_secret" type="password" autocomplete="off">'
            '<label for="oa-scopes">OAuth2 scopes (optional: every scope the flow lists)</label>'
            '<input id="oa-scopes" name="oauth_scopes" type="text">'
            '<p class="help">Register Workbench with the API as an OAuth client whose redirect URI is '
            f"<code>{e(gw.settings.public_url.rstrip('/') + CALLBACK_PATH)}</code>; each user then "
            "connects their own account with <strong>Connect</strong>.</p>"
            + '<label for="oa-ops">Only these operationIds or tags (optional, comma-separated)</label>'
            '<input id="oa-ops" name="operations" type="text">'
            '<label for="oa-prefix">Tool prefix (optional)</label>'
            '<input id="oa-prefix" name="tool_prefix" type="text" placeholder="name_">'
            '<label for="oa-timeout">Timeout in milliseconds</label>'
            '<input id="oa-timeout" name="timeout" type="text" inputmode="numeric" value="30000">'
            '<p><button type="submit">Add</button></p></form></section>'
        )
        admin = ""
        if gw.settings.is_admin(user.email):
            admin = (
                '<section class="card"><h2>Admin</h2><p>Clear every user\'s cached tool lists and failure '
                "back-offs on every instance; the next search discovers again.</p>"
                f'<form method="post" action="/portal/apps/clear-cache">{csrf}'
                '<button class="danger" type="submit">Clear the discovery cache for everyone</button>'
                "</form></section>"
            )
        body = flash + listing + workspace + add_mcp + add_openapi + admin
        return html_page(
            "Custom apps", body, status=status, email=user.email, csrf=web.csrf(request), active="apps"
        )

    def done(request: Request, user: User, message: str, ok: bool = True) -> Response:
        """Post/redirect/get: back to the apps page, which shows the message once."""
        return web.redirect_with_notice(request, "/portal/apps", "ok" if ok else "error", message)

    def apps_get(request: Request, user: User) -> Response:
        response = apps_page(request, user, web.take_notice(request))
        gw.sessions.clear_flash(response)
        return response

    def result_message(name: str, out: dict[str, Any]) -> tuple[str, bool]:
        if out.get("error"):
            return f"{name}: {out['error']}", False
        tools = out.get("tools")
        if tools is not None:
            return f"{name} is connected: {len(tools)} tool{'s' if len(tools) != 1 else ''} discovered.", True
        return f"{name} was saved.", True

    @web.form_post
    async def add_mcp(request: Request, user: User, form: dict[str, str]) -> Response:
        name = form.get("name", "").strip()
        try:
            await service().register(
                user.id,
                name=name,
                url=form.get("url", "").strip(),
                auth=_auth_from(form),
                tool_prefix=form.get("tool_prefix", "").strip() or None,
                timeout_ms=_timeout(form),
            )
            out = await service().reconnect(user.id, name)
        except (InvalidInput, ConflictError) as exc:
            return done(request, user, str(exc), ok=False)
        return done(request, user, *result_message(name, out))

    async def add_openapi_handler(request: Request, user: User, form: dict[str, str]) -> Response:
        name = form.get("name", "").strip()
        ops = [o.strip() for o in form.get("operations", "").split(",") if o.strip()]
        try:
            view = await service().register_openapi(
                user.id,
                name=name,
                document=form.get("document", ""),
                base_url=form.get("base_url", "").strip() or None,
                auth=_auth_from(form),
                tool_prefix=form.get("tool_prefix", "").strip() or None,
                timeout_ms=_timeout(form),
                operations=ops or None,
            )
        except (InvalidInput, ConflictError) as exc:
            return done(request, user, str(exc), ok=False)
        count = view.get("operations", 0)
        message = f"{name} was added with {count} tool{'s' if count != 1 else ''}."
        dropped = view.get("dropped") or []
        if dropped:
            message += f" {len(dropped)} operation(s) were dropped: " + "; ".join(
                f"{d['operation']} ({d['reason']})" for d in dropped[:10]
            )
        return done(request, user, message)

    add_openapi = web.form_post(add_openapi_handler)  # its cap: BODY_RULES

    @web.form_post
    async def refresh(request: Request, user: User, form: dict[str, str]) -> Response:
        name = str(request.path_params["name"])
        try:
            out = await service().reconnect(user.id, name)
        except NotFound as exc:
            return done(request, user, str(exc), ok=False)
        return done(request, user, *result_message(name, out))

    @web.form_post
    async def remove(request: Request, user: User, form: dict[str, str]) -> Response:
        name = str(request.path_params["name"])
        try:
            service().remove(user.id, name)
        except NotFound as exc:
            return done(request, user, str(exc), ok=False)
        return done(request, user, f"{name} was removed.")

    @web.form_post
    async def workspace_code(request: Request, user: User, form: dict[str, str]) -> Response:
        try:
            code = service().set_workspace_code(user.id, form.get("code", "").strip() or None)
        except (InvalidInput, ConflictError) as exc:
            return done(request, user, str(exc), ok=False)
        return done(request, user, f"Your workspace code is now {code}.")

    @web.form_post
    async def clear_cache(request: Request, user: User, form: dict[str, str]) -> Response:
        if not gw.settings.is_admin(user.email):
            return html_page(
                "Forbidden",
                notices(("error", "Only a Workbench admin can clear every user's discovery cache.")),
                status=403,
                email=user.email,
                csrf=web.csrf(request),
            )
        dropped = service().clear_cache(None)
        return done(request, user, f"The discovery cache was cleared for everyone ({dropped} entries here).")

    @web.form_post
    async def connect(request: Request, user: User, form: dict[str, str]) -> Response:
        name = str(request.path_params["name"])
        problem = await service().before_connect(user.id, name)
        if problem is not None:
            return done(request, user, problem, ok=False)
        started = gw.connections.start(user, name)
        if "error" in started:
            return done(request, user, str(started["error"]), ok=False)
        result = await gw.connections.redeem(user, str(started["connectionId"]))
        if result.status != 200:
            return done(request, user, str(result.body.get("message") or result.body.get("error")), ok=False)
        return redirect(str(result.body["url"]))

    async def callback(request: Request) -> Response:
        from workbench.connections.flow import CallbackError

        user = web.user(request)
        ext = service()
        q = request.query_params
        try:
            assert ext.oauth is not None
            name = await ext.oauth.complete(
                user,
                ext.owner_of,
                state=q.get("state"),
                code=q.get("code"),
                iss=q.get("iss"),
                error=q.get("error"),
            )
        except CallbackError as exc:
            return connection_failed_page(
                str(exc),
                back="/portal/apps",
                back_label="Go to your custom apps",
                email=user.email if user else None,
                csrf=web.csrf(request),
            )
        ext.invalidate_for(user.id if user else "", name)
        return redirect(f"/portal/apps?connected={quote(name, safe='')}")

    async def client_metadata(request: Request) -> Response:
        assert gw.external is not None and gw.external.oauth is not None
        return json_response(gw.external.oauth.client_metadata())

    return [
        Route(CLIENT_METADATA_PATH, client_metadata, methods=["GET"]),
        Route(CALLBACK_PATH, callback, methods=["GET"]),
        Route("/portal/apps/{name}/connect", connect, methods=["POST"]),
        Route("/portal/apps", web.page(apps_get), methods=["GET"]),
        Route("/portal/apps/mcp", add_mcp, methods=["POST"]),
        Route("/portal/apps/openapi", add_openapi, methods=["POST"]),
        Route("/portal/apps/workspace-code", workspace_code, methods=["POST"]),
        Route("/portal/apps/clear-cache", clear_cache, methods=["POST"]),
        Route("/portal/apps/{name}/refresh", refresh, methods=["POST"]),
        Route("/portal/apps/{name}/remove", remove, methods=["POST"]),
    ]
