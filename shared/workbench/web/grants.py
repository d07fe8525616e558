"""Grants and approvals in the portal (docs/grants.md).

  GET  /portal/api-keys/{id}/access     a key's grant; POST changes it
  GET  /portal/clients/{id}/access      an MCP client's grant; POST changes it
  GET  /portal/approvals                calls waiting for your approval (and recent decisions)
  GET  /portal/approvals/{id}           one call: integration, tool, title, annotations, arguments
                                        (vault references unresolved, secrets masked), the client
  POST /portal/approvals/{id}/approve   the decision (CSRF-checked, your own approvals only)
  POST /portal/approvals/{id}/deny

`grant_fields` / `grant_from_form` are the grant choice, shared by the API key page (mint), the
pages above and the OAuth consent page.
"""

from __future__ import annotations

import json
import re
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from workbench.errors import InvalidInput
from workbench.identity.grants import FULL, Grant
from workbench.web.html import csrf_field, e, notices, redirect

if TYPE_CHECKING:
    from workbench.composition import Gateway
    from workbench.stores import Approval, User
    from workbench.web.context import WebContext

__all__ = ["grant_fields", "grant_from_form", "grant_routes", "grant_summary"]

_KEY_ID_RE = re.compile(r"^[A-Za-z0-9]{12}$")
_ACCESS = (
    ("full", "Full", "every tool it is offered, as you could yourself"),
    (
        "read-only",
        "Read-only",
        "only tools that only read; its curl proxy sessions allow GET, HEAD and OPTIONS",
    ),
    ("approve", "Approve writes", "tools that only read run; every other call waits for your approval here"),
)
_HINTS = (
    ("readOnlyHint", "Only reads", "Changes things"),
    ("destructiveHint", "May delete or overwrite", "Only adds"),
    ("idempotentHint", "Repeating it changes nothing more", "Repeating it repeats the effect"),
    ("openWorldHint", "Reaches a service outside Workbench", "Stays inside Workbench"),
)


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts)) if ts else "—"


def integration_names(gw: Gateway, user_id: str) -> list[tuple[str, str]]:
    """(name, display name) of every integration the user could grant (blocking)."""
    return gw.catalog.grantable(user_id)


def grant_fields(gw: Gateway, user_id: str, grant: Grant = FULL, *, prefix: str = "grant") -> str:
    """The grant choice as form fields (no <form>): access, integrations, denied tools."""
    access = "".join(
        f'<label class="choice"><input type="radio" name="access" value="{value}" id="{prefix}-access-{value}"'
        f"{' checked' if grant.access == value else ''}> <strong>{label}</strong>: {e(text)}</label>"
        for value, label, text in _ACCESS
    )
    chosen = set(grant.integrations or ())
    boxes = "".join(
        f'<label class="choice"><input type="checkbox" name="integration:{e(name)}" id="{prefix}-int-{e(name)}"'
        f"{' checked' if name in chosen else ''}> {e(display)} <code>{e(name)}</code></label>"
        for name, display in integration_names(gw, user_id)
    )
    every = grant.integrations is None
    return (
        f'<fieldset id="{prefix}-access"><legend>Access</legend>{access}</fieldset>'
        f'<fieldset id="{prefix}-integrations"><legend>Integrations</legend>'
        f'<label class="choice"><input type="radio" name="scope" value="all" id="{prefix}-scope-all"'
        f"{' checked' if every else ''}> All integrations</label>"
        f'<label class="choice"><input type="radio" name="scope" value="some" id="{prefix}-scope-some"'
        f"{'' if every else ' checked'}> Only the ones ticked:</label>"
        f'<div class="choices">{boxes}</div></fieldset>'
        f'<label for="{prefix}-deny">Tools it may never call (optional, comma-separated)</label>'
        f'<input id="{prefix}-deny" name="deny_tools" type="text" maxlength="2000" '
        f'value="{e(", ".join(grant.denied_tools))}" placeholder="e.g. github_merge_pr, stripe_create_refund">'
    )


def grant_from_form(gw: Gateway, user_id: str, form: dict[str, str]) -> Grant:
    """The grant the person chose; InvalidInput (a sentence for them) when it is not one."""
    access = form.get("access") or "full"
    if access not in ("full", "read-only", "approve"):
        raise InvalidInput("Choose full, read-only or approve writes.")
    integrations: list[str] | None = None
    if form.get("scope") == "some":
        integrations = [k.removeprefix("integration:") for k in form if k.startswith("integration:")]
        if not integrations:
            raise InvalidInput("Tick at least one integration, or choose all integrations.")
    return gw.catalog.choose_grant(
        user_id, access=access, integrations=integrations, denied_tools=form.get("deny_tools")
    )


def grant_summary(grant: Grant) -> str:
    """Short HTML for a table cell."""
    access = {"full": "Full", "read-only": "Read-only", "approve": "Approve writes"}[grant.access]
    scope = (
        "all integrations"
        if grant.integrations is None
        else ", ".join(grant.integrations) or "no integration"
    )
    never = f"; never {', '.join(grant.denied_tools)}" if grant.denied_tools else ""
    return f"<strong>{access}</strong><br><span class=muted>{e(scope)}{e(never)}</span>"


def _hints_list(annotations: dict[str, Any]) -> str:
    items = "".join(
        f"<li>{e(yes if annotations.get(key) else no)} <code>{key}: {str(bool(annotations.get(key))).lower()}</code></li>"
        for key, yes, no in _HINTS
    )
    return f'<ul id="approval-annotations">{items}</ul>'


def grant_routes(web: WebContext) -> list[BaseRoute]:
    gw = web.gw

    def page(request: Request, user: User, title: str, body: str, active: str, status: int = 200) -> Response:
        from workbench.web.html import html_page

        return html_page(title, body, status=status, email=user.email, csrf=web.csrf(request), active=active)

    def access_form(
        request: Request,
        user: User,
        *,
        title: str,
        intro: str,
        action: str,
        grant: Grant,
        back: str,
        active: str,
    ) -> Response:
        error = web.take_notice(request)
        body = (
            error
            + f'<section class="card"><p>{intro}</p>'
            + f'<form method="post" action="{e(action)}">{csrf_field(web.csrf(request))}'
            + grant_fields(gw, user.id, grant, prefix="edit")
            + f'<p class="actions"><button type="submit">Save access</button> <a href="{e(back)}">Cancel</a></p>'
            + "</form></section>"
        )
        response = page(request, user, title, body, active)
        gw.sessions.clear_flash(response)
        return response

    # -- API keys ------------------------------------------------------------------------------

    def own_key(user: User, key_id: str) -> Any:
        return gw.auth.own_active_key(user, key_id) if _KEY_ID_RE.match(key_id) else None

    def key_access_page(request: Request, user: User) -> Response:
        key_id = str(request.path_params["key_id"])
        rec = own_key(user, key_id)
        if rec is None:
            return redirect("/portal/api-keys?error=no-such-key")
        return access_form(
            request,
            user,
            title=f"Access of wb_{key_id}_…",
            intro=f"What an agent holding <code>wb_{e(key_id)}_…</code> may do as you. A change applies to its "
            "next call.",
            action=f"/portal/api-keys/{key_id}/access",
            grant=Grant.loads(rec.grant),
            back="/portal/api-keys",
            active="api-keys",
        )

    @web.form_post
    async def key_access(request: Request, user: User, form: dict[str, str]) -> Response:
        key_id = str(request.path_params["key_id"])
        if own_key(user, key_id) is None:
            return redirect("/portal/api-keys?error=no-such-key")
        try:
            grant = await gw.store_io.run(grant_from_form, gw, user.id, form)
        except InvalidInput as exc:
            return web.redirect_with_notice(request, f"/portal/api-keys/{key_id}/access", "error", str(exc))
        if not await gw.store_io.run(gw.auth.set_key_grant, user.id, key_id, grant):
            return redirect("/portal/api-keys?error=no-such-key")
        await gw.runs.audit(
            {
                "action": "GRANT",
                "user": user.id,
                "key": key_id,
                "grant": grant.describe(),
                "success": True,
                "error": None,
                "ts": gw.clock(),
                "via": "session",
            }
        )
        return web.redirect_with_notice(
            request, "/portal/api-keys", "ok", f"wb_{key_id}_… now has: {grant.describe()}."
        )

    # -- MCP clients ---------------------------------------------------------------------------

    def client_access_page(request: Request, user: User) -> Response:
        port = gw.oauth
        client_id = str(request.path_params["client_id"])
        mine = [c for c in port.list_for_user(user.id) if c.client_id == client_id] if port else []
        if not mine or port is None:
            return redirect("/portal/clients?error=no-client")
        return access_form(
            request,
            user,
            title=f"Access of {mine[0].client_name}",
            intro=f"What <strong>{e(mine[0].client_name)}</strong> may do as you. Its next access token carries "
            f"the change: within {gw.settings.oauth_access_token_ttl // 60} minutes.",
            action=f"/portal/clients/{quote(client_id, safe='')}/access",
            grant=port.client_grant(user.id, client_id),
            back="/portal/clients",
            active="clients",
        )

    @web.form_post
    async def client_access(request: Request, user: User, form: dict[str, str]) -> Response:
        port = gw.oauth
        client_id = str(request.path_params["client_id"])
        if port is None:
            return redirect("/portal/clients?error=no-client")
        try:
            grant = await gw.store_io.run(grant_from_form, gw, user.id, form)
        except InvalidInput as exc:
            url = f"/portal/clients/{quote(client_id, safe='')}/access"
            return web.redirect_with_notice(request, url, "error", str(exc))
        if not await gw.store_io.run(port.set_client_grant, user.id, client_id, grant):
            return redirect("/portal/clients?error=no-client")
        return web.redirect_with_notice(
            request, "/portal/clients", "ok", f"The client now has: {grant.describe()}."
        )

    # -- approvals -----------------------------------------------------------------------------

    def approvals_page(request: Request, user: User) -> Response:
        approvals = gw.approvals
        found = approvals.listing(user.id) if approvals is not None else []
        rows = "".join(
            f'<tr><td data-label="Tool"><a href="/portal/approvals/{e(a.id)}">{e(_title(a))}</a><br>'
            f'<code class=muted>{e(a.tool)}</code></td><td data-label="Integration">{e(a.integration)}</td>'
            f'<td data-label="Asked by">{e(a.client)}</td><td data-label="Asked">{_when(a.created_at)}</td>'
            f'<td data-label="Status">{_status(a)}</td></tr>'
            for a in found
        )
        table = (
            '<table class="stack" id="approvals"><thead><tr><th scope="col">Call</th><th scope="col">Integration</th>'
            '<th scope="col">Asked by</th><th scope="col">Asked</th><th scope="col">Status</th></tr></thead>'
            f"<tbody>{rows}</tbody></table>"
            if rows
            else '<p class="muted">No call is waiting for your approval.</p>'
        )
        body = (
            web.take_notice(request)
            + '<section class="card"><p>Keys and clients with <strong>approve writes</strong> access ask here '
            "before a call that is not read-only. An approval lets that exact call (same tool, same arguments) "
            "run once, and expires.</p>" + table + "</section>"
        )
        response = page(request, user, "Approvals", body, "approvals")
        gw.sessions.clear_flash(response)
        return response

    def approval_page(request: Request, user: User) -> Response:
        approvals = gw.approvals
        approval = approvals.get(user.id, str(request.path_params["approval_id"])) if approvals else None
        if approval is None:  # another user's approval reads like an unknown one
            body = notices(("error", "This approval does not exist, or it is not yours.")) + (
                '<p><a href="/portal/approvals">All approvals</a></p>'
            )
            return page(request, user, "Approval not found", body, "approvals", status=404)
        annotations = json.loads(approval.annotations or "{}")
        arguments = json.dumps(json.loads(approval.arguments or "{}"), indent=2, ensure_ascii=False)
        csrf = csrf_field(web.csrf(request))
        decide = ""
        if approval.status == "PENDING":
            decide = (
                '<div class="actions">'
                f'<form class="inline" method="post" action="/portal/approvals/{e(approval.id)}/approve">{csrf}'
                '<button type="submit" id="approve">Approve this call</button></form> '
                f'<form class="inline" method="post" action="/portal/approvals/{e(approval.id)}/deny">{csrf}'
                '<button class="danger" type="submit" id="deny">Deny</button></form></div>'
                f'<p class="help">Approving lets this exact call run once, until {_when(approval.expires_at)}. '
                "Arguments are shown as the agent wrote them: <code>{{vault:NAME}}</code> is replaced by your "
                "secret only when the call runs.</p>"
            )
        body = (
            web.take_notice(request)
            + '<section class="card" aria-labelledby="approval-title">'
            + f'<h2 id="approval-title">{e(_title(approval))}</h2>'
            + '<dl class="facts">'
            + f'<dt>Status</dt><dd id="approval-status">{_status(approval)}</dd>'
            + f'<dt>Integration</dt><dd id="approval-integration">{e(approval.integration)}</dd>'
            + f'<dt>Tool</dt><dd><code id="approval-tool">{e(approval.tool)}</code></dd>'
            + f'<dt>Asked by</dt><dd id="approval-client">{e(approval.client)}</dd>'
            + f"<dt>Asked</dt><dd>{_when(approval.created_at)}</dd>"
            + (
                f"<dt>Decided</dt><dd>{_when(approval.decided_at)} by {e(approval.decided_by)}</dd>"
                if approval.decided_at
                else ""
            )
            + "</dl><h3>What the tool does</h3>"
            + _hints_list(annotations)
            + f'<h3>Arguments</h3><pre id="approval-arguments">{e(arguments)}</pre>'
            + decide
            + '<p><a href="/portal/approvals">All approvals</a></p></section>'
        )
        response = page(request, user, "Approve a call?", body, "approvals")
        gw.sessions.clear_flash(response)
        return response

    def decision(approve: bool) -> Any:
        @web.form_post
        async def handle(request: Request, user: User, form: dict[str, str]) -> Response:
            approval_id = str(request.path_params["approval_id"])
            approvals = gw.approvals
            done = await approvals.decide(user, approval_id, approve) if approvals is not None else None
            url = f"/portal/approvals/{quote(approval_id, safe='')}"
            if done is None:
                return web.redirect_with_notice(
                    request,
                    url,
                    "error",
                    "This approval is no longer waiting for a decision (or is not yours).",
                )
            verb = "approved: the agent's next identical call runs once" if approve else "denied"
            return web.redirect_with_notice(request, url, "ok", f"{done.tool} was {verb}.")

        return handle

    return [
        Route("/portal/api-keys/{key_id}/access", web.page(key_access_page), methods=["GET"]),
        Route("/portal/api-keys/{key_id}/access", key_access, methods=["POST"]),
        Route("/portal/clients/{client_id}/access", web.page(client_access_page), methods=["GET"]),
        Route("/portal/clients/{client_id}/access", client_access, methods=["POST"]),
        Route("/portal/approvals", web.page(approvals_page), methods=["GET"]),
        Route("/portal/approvals/{approval_id}", web.page(approval_page), methods=["GET"]),
        Route("/portal/approvals/{approval_id}/approve", decision(True), methods=["POST"]),
        Route("/portal/approvals/{approval_id}/deny", decision(False), methods=["POST"]),
    ]


def _title(approval: Approval) -> str:
    try:
        title = json.loads(approval.annotations or "{}").get("title")
    except ValueError:
        title = None
    return str(title or approval.tool)


def _status(approval: Approval) -> str:
    label = {
        "PENDING": ("warn", "Waiting for you"),
        "APPROVED": ("ok", "Approved (not run yet)"),
        "USED": ("ok", "Approved and run"),
        "DENIED": ("off", "Denied"),
        "EXPIRED": ("off", "Expired"),
    }.get(approval.status, ("off", approval.status))
    return f'<span class="status {label[0]}">{e(label[1])}</span>'
