"""The portal: the human half of Workbench (seed 003, "What the portal is for").

  GET  /, /portal                                -> /portal/integrations
  GET  /portal/integrations                      status of every integration, connect/disconnect
  POST /portal/integrations/{name}/connect       OAuth2/cookie: start + redeem, go to the consent page
  POST /portal/integrations/{name}/api-key       API-key integrations: the manifest's declared fields,
                                                 checked with its probe before they are stored
  GET  /portal/integrations/{name}/disconnect    confirm; POST deletes the stored credential
  GET  /portal/api-keys                          list; POST mint (the new key and client setup shown once)
  GET  /portal/api-keys/{id}/rotate|revoke       confirm; POST does it
  GET  /portal/clients                           MCP clients holding live refresh tokens
  GET  /portal/clients/{id}/revoke               confirm; POST revokes

Every page needs a portal session (else: to the sign-in page and back); every post is CSRF-checked
and answers with a redirect (post/redirect/get), so a reload never repeats it: a new key travels to
the next page in a one-shot flash cookie sealed to the session, and is shown once.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from workbench.errors import ConfigError, InvalidInput, VerificationFailed
from workbench.identity.grants import Grant
from workbench.identity.secrets import missing_plugin_client, plugin_redirect_uri
from workbench.manifest import ApiKeyAuth, CookieAuth, Manifest, NoAuth, OAuth2Auth
from workbench.web.client_setup import setup_section
from workbench.web.connect import login_host_fields, login_host_from
from workbench.web.context import WebContext
from workbench.web.grants import grant_fields, grant_from_form, grant_summary
from workbench.web.html import button_link, csrf_field, e, html_page, notices, redirect

if TYPE_CHECKING:
    from workbench.composition import Gateway
    from workbench.guard.egress import EgressPolicy
    from workbench.stores import ApiKeyRecord, Connection, User

__all__ = ["portal_routes", "why_unavailable"]

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_KEY_ID_RE = re.compile(r"^[A-Za-z0-9]{12}$")
_MAX_FIELD = 4096
_NO_SUCH_KEY = "That key does not exist or is revoked."
# Where an operator registers Workbench as an OAuth app, by the integration name's first part.
_PROVIDER_CONSOLES = {
    "github": "https://github.com/settings/developers",
    "google": "https://console.cloud.google.com/apis/credentials",
    "slack": "https://api.slack.com/apps",
    "atlassian": "https://developer.atlassian.com/console/myapps/",
    "notion": "https://www.notion.so/profile/integrations",
    "linear": "https://linear.app/settings/api/applications/new",
    "hubspot": "https://developers.hubspot.com/",
    "airtable": "https://airtable.com/create/oauth",
    "stripe": "https://dashboard.stripe.com/apikeys",
}
_AUTH_LABEL = {"oauth2": "OAuth", "api_key": "API key", "cookie": "Browser session", "none": "No sign-in"}


def _when(ts: float | None) -> str:
    if not ts:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ts))


async def _refused_destination(egress: EgressPolicy, template: str, value: str) -> str | None:
    """Why the URL this field's value makes may not be called (a sentence), or None."""
    from workbench.guard.egress import EgressRefused  # loaded with `egress` (and httpx) by now

    try:
        await egress.check(template.replace("{}", value), unresolvable_ok=True)
    except EgressRefused as exc:
        return str(exc).removeprefix("Refused: ") + "."
    return None


def why_unavailable(gw: Gateway, m: Manifest) -> str | None:
    """Why an OAuth integration cannot be connected on this gateway (no OAuth client); None if it can."""
    if not isinstance(m.auth, OAuth2Auth):
        return None
    try:  # without building the OAuth client (httpx, the egress transport): a page never needs it
        missing = missing_plugin_client(gw.secrets, m.name)
    except ConfigError:
        return "Its settings cannot be read right now."
    return f"Not configured on this gateway: {missing} is not set." if missing else None


def _integration_item(m: Manifest) -> str:
    """One integration as a list item: its name and what it does."""
    description = f' <span class="muted">— {e(m.description)}</span>' if m.description else ""
    return f"<li><strong>{e(m.display_name)}</strong>{description}</li>"


def portal_routes(web: WebContext) -> list[BaseRoute]:
    gw = web.gw

    def page(request: Request, user: User, title: str, body: str, active: str, status: int = 200) -> Response:
        return html_page(title, body, status=status, email=user.email, csrf=web.csrf(request), active=active)

    # -- integrations ------------------------------------------------------------------------------

    def unavailable(m: Manifest) -> str | None:
        return why_unavailable(gw, m)

    def integration_card(m: Manifest, conn: Connection | None, csrf: str, error: str | None) -> str:
        connected = gw.credentials.is_connected(m, conn)
        why_not = unavailable(m)
        if conn is not None and conn.status == "reconnect_required":
            status = '<span class="status warn">Needs reconnecting</span>'
        elif connected:
            status = '<span class="status ok">Connected</span>'
        elif conn is not None and isinstance(m.auth, CookieAuth):
            status = '<span class="status warn">Session expired</span>'
        elif why_not is not None:
            status = '<span class="status off">Not available</span>'
        else:
            status = '<span class="status off">Not connected</span>'
        name = e(m.name)
        actions = []
        if isinstance(m.auth, OAuth2Auth | CookieAuth) and why_not is None:
            label = "Reconnect" if conn is not None else "Connect"
            hosts = login_host_fields(m, f"{m.name}-connect")
            actions.append(
                f'<form class="inline" method="post" action="/portal/integrations/{name}/connect">{csrf}{hosts}'
                f'<button type="submit" aria-label="{label} {e(m.display_name)}">{label}</button></form>'
            )
        if conn is not None:  # a confirmation page first, then the post
            actions.append(
                button_link(
                    f"/portal/integrations/{name}/disconnect",
                    "Disconnect…",
                    kind="danger",
                    aria_label=f"Disconnect {m.display_name}",
                )
            )
        form = ""
        if isinstance(m.auth, ApiKeyAuth):
            fields = []
            for f in m.auth.fields:
                fid = f"{name}-{e(f.name)}"
                help_id = f"{fid}-help"
                described = f' aria-describedby="{help_id}"' if f.help else ""
                invalid = ' aria-invalid="true"' if error else ""
                fields.append(
                    f'<label for="{fid}">{e(f.label)}</label>'
                    f'<input id="{fid}" name="{e(f.name)}" type="{"password" if f.secret else "text"}" '
                    f'required autocomplete="off" maxlength="{_MAX_FIELD}"{described}{invalid}>'
                    + (f'<p class="help" id="{help_id}">{e(f.help)}</p>' if f.help else "")
                )
            verb = "Replace key" if conn is not None else "Connect"
            form = (
                f'<form method="post" action="/portal/integrations/{name}/api-key" '
                f'aria-label="Connect {e(m.display_name)} with an API key">{csrf}'
                + (notices(("error", error)) if error else "")
                + "".join(fields)
                + f'<p><button type="submit">{verb}</button></p></form>'
            )
        desc = f'<p class="muted">{e(m.description)}</p>' if m.description else ""
        if why_not is not None:
            desc += f'<p class="muted">{e(why_not)}</p>'
        return (
            f'<section class="card" aria-labelledby="int-{name}" id="integration-{name}">'
            f'<div class="row"><div><h2 id="int-{name}">{e(m.display_name)}</h2>'
            f'<span class="muted">{e(_AUTH_LABEL.get(m.auth.type, m.auth.type))} · </span>{status}</div>'
            f'<div class="actions">{" ".join(actions)}</div></div>{connection_facts(m, conn)}{desc}{form}</section>'
        )

    def connection_facts(m: Manifest, conn: Connection | None) -> str:
        """When the stored credential was checked, and the last failure using it (if any)."""
        if conn is None:
            return ""
        verified = (
            f"Verified {_when(conn.verified_at)}"
            if conn.verified_at
            else ("Not verified" if m.probe is not None else "")
        )
        facts = f'<p class="muted" id="verified-{e(m.name)}">{e(verified)}</p>' if verified else ""
        if conn.last_error:
            facts += (
                f'<p class="help" id="last-error-{e(m.name)}">Last error ({_when(conn.last_error_at)}): '
                f"{e(conn.last_error)}</p>"
            )
        return facts

    def sort_integrations(
        conns: dict[str, Connection],
    ) -> tuple[list[Manifest], list[Manifest], list[tuple[Manifest, str]]]:
        """(connected, ready to connect, needing the operator's setup with the reason), each by name."""
        connected: list[Manifest] = []
        ready: list[Manifest] = []
        needs_setup: list[tuple[Manifest, str]] = []
        for m in sorted(gw.registry.manifests(), key=lambda m: m.display_name.lower()):
            if m.builtin or isinstance(m.auth, NoAuth):
                continue
            why_not = unavailable(m)
            if m.name in conns:
                connected.append(m)
            elif why_not is None:
                ready.append(m)
            else:
                needs_setup.append((m, why_not))
        return connected, ready, needs_setup

    def built_in_section() -> str:
        """What works at once, with no connection: the built-in tools and no-sign-in integrations."""
        items = "".join(
            _integration_item(m)
            for m in sorted(gw.registry.manifests(), key=lambda m: m.display_name.lower())
            if m.builtin or isinstance(m.auth, NoAuth)
        )
        if not items:
            return ""
        return (
            '<section class="card" aria-labelledby="sec-builtin"><h2 id="sec-builtin">Built in: ready now</h2>'
            '<p class="muted">These tools need no connection; your agents can use them already '
            '(try one in the <a href="/portal/playground">playground</a>).</p>'
            f'<ul class="result-list">{items}</ul></section>'
        )

    def setup_section_for(needs_setup: list[tuple[Manifest, str]]) -> str:
        """Integrations the operator has not set up, folded into one section saying how to enable each."""
        if not needs_setup:
            return ""
        rows = []
        for m, why_not in needs_setup:
            setting = why_not.removeprefix("Not configured on this gateway: ").removesuffix(" is not set.")
            console = _PROVIDER_CONSOLES.get(m.name.split("-", 1)[0])
            redirect_uri = plugin_redirect_uri(gw.settings.public_url, m.name)
            secret_name = setting.replace("_CLIENT_ID", "_CLIENT_SECRET")
            steps = [
                "Register an OAuth app at the provider"
                + (f' (<a href="{e(console)}" rel="noreferrer">{e(console)}</a>)' if console else ""),
                f"with the redirect URI <code>{e(redirect_uri)}</code>" if redirect_uri else "",
                f"then set <code>{e(setting)}</code> (and <code>{e(secret_name)}</code>) for the gateway"
                if setting.endswith("_CLIENT_ID")
                else e(why_not),
            ]
            rows.append(
                f'<li id="setup-{e(m.name)}"><strong>{e(m.display_name)}</strong>: '
                + ", ".join(s for s in steps if s)
                + ".</li>"
            )
        return (
            '<section class="card" aria-labelledby="sec-setup"><details>'
            f'<summary><h2 id="sec-setup" class="inline">Needs setup on this gateway ({len(needs_setup)})</h2>'
            "</summary>"
            '<p class="muted">The operator enables these by registering Workbench as an OAuth app at each '
            "provider: locally as environment variables before <code>workbench serve</code>, on AWS in the "
            "stack's secret. docs/connections.md and docs/deploy.md in the Workbench repository have every "
            "step.</p>"
            f'<ul class="result-list">{"".join(rows)}</ul></details></section>'
        )

    def integrations_page(request: Request, user: User) -> Response:
        q = request.query_params
        # A refused form comes back here (post/redirect/get) with its notice, sealed to the session so
        # no link can show one: an API-key form's error in its own card, anything else at the top.
        notice = web.read_notice(request)
        errors = {notice[2]: notice[1]} if notice and notice[0] == "error" and notice[2] else {}
        general = notices((notice[0], notice[1])) if notice and not notice[2] else ""
        flash = general + notices(
            ("ok", f"{q['connected']} is connected." if _NAME_RE.match(q.get("connected", "")) else None),
            (
                "ok",
                f"{q['disconnected']} was disconnected."
                if _NAME_RE.match(q.get("disconnected", ""))
                else None,
            ),
        )
        conns = gw.connections.connections_of(user.id)  # one read, not one each
        csrf = csrf_field(web.csrf(request))
        connected, ready, needs_setup = sort_integrations(conns)

        def section(heading: str, slug: str, manifests: list[Manifest], intro: str = "") -> str:
            if not manifests:
                return ""
            cards = "".join(
                integration_card(m, conns.get(m.name), csrf, errors.get(m.name)) for m in manifests
            )
            return (
                f'<section aria-labelledby="sec-{slug}"><h2 id="sec-{slug}">{e(heading)}</h2>{intro}{cards}'
                "</section>"
            )

        body = (
            flash
            + section("Connected", "connected", connected)
            + section(
                "Ready to connect",
                "ready",
                ready,
                '<p class="muted">Connect one and its tools appear to your agents at once.</p>',
            )
            + built_in_section()
            + setup_section_for(needs_setup)
        )
        if not (connected or ready or needs_setup):
            body += '<p class="muted">No integrations are installed on this gateway.</p>'
        response = page(request, user, "Integrations", body, "integrations")
        gw.sessions.clear_flash(response)
        return response

    def back_with_error(request: Request, message: str) -> Response:
        """Back to the integrations page, which shows the message (its first 300 characters) once."""
        return web.redirect_with_notice(request, "/portal/integrations", "error", message[:300])

    def manifest_for(request: Request) -> Manifest | None:
        name = str(request.path_params["name"])
        m = gw.registry.manifest(name) if _NAME_RE.match(name) else None
        return m if m is not None and not m.builtin else None

    @web.form_post
    async def connect(request: Request, user: User, form: dict[str, str]) -> Response:
        m = manifest_for(request)
        if m is None or not isinstance(m.auth, OAuth2Auth | CookieAuth):
            return back_with_error(request, "That integration cannot be connected here.")
        started = gw.connections.start(user, m.name)
        if "error" in started:
            return back_with_error(request, str(started.get("message") or started["error"]))
        redeemed = await gw.connections.redeem(
            user, str(started["connectionId"]), login_host=login_host_from(form)
        )
        if redeemed.status != 200:
            message = str(redeemed.body.get("message") or redeemed.body.get("error"))
            return back_with_error(request, f"{m.display_name}: {message}")
        return redirect(str(redeemed.body["url"]))

    def form_error(request: Request, m: Manifest, error: str) -> Response:
        """Post/redirect/get for a rejected API-key form: the error shows once, in that integration's card."""
        url = f"/portal/integrations#integration-{m.name}"
        return web.redirect_with_notice(request, url, "error", error[:300], target=m.name)

    @web.form_post
    async def api_key(request: Request, user: User, form: dict[str, str]) -> Response:
        m = manifest_for(request)
        if m is None or not isinstance(m.auth, ApiKeyAuth):
            return back_with_error(request, "That integration does not use an API key.")
        values: dict[str, Any] = {}
        missing = []
        for f in m.auth.fields:
            value = (form.get(f.name) or "").strip()
            if not value or len(value) > _MAX_FIELD:
                missing.append(f.label)
            values[f.name] = value
        if missing:
            error = "Enter " + ", ".join(missing) + "."
            return form_error(request, m, error)
        for f in m.auth.fields:
            refused = await _refused_destination(gw.egress, f.url, values[f.name]) if f.url else None
            if refused is not None:
                return form_error(request, m, f"{f.label}: {refused}")
        try:  # the manifest's probe, before anything is stored
            checked = await gw.connections.verify(user, m, values)
        except VerificationFailed as exc:
            return form_error(request, m, str(exc))
        verified_at = gw.clock() if checked else None
        gw.credentials.save(
            user.id, m.name, values, verified_at=verified_at
        )  # encrypted under (user, integration)
        return redirect(f"/portal/integrations?connected={m.name}")

    def confirm(
        request: Request, user: User, *, title: str, text: str, action: str, verb: str, back: str, active: str
    ) -> Response:
        """The confirmation step of a destructive action: a GET page whose form posts the action."""
        body = (
            f'<section class="card"><p>{e(text)}</p>'
            f'<form method="post" action="{e(action)}" class="actions">{csrf_field(web.csrf(request))}'
            f'<button class="danger" type="submit">{e(verb)}</button>'
            f'<a href="{e(back)}">Cancel</a></form></section>'
        )
        return page(request, user, title, body, active)

    def confirm_disconnect(request: Request, user: User) -> Response:
        m = manifest_for(request)
        if m is None:
            return back_with_error(request, "Unknown integration.")
        return confirm(
            request,
            user,
            title=f"Disconnect {m.display_name}?",
            text=f"Workbench deletes the stored {m.display_name} credential. Your agents' {m.name} tools "
            "stop working until you connect it again.",
            action=f"/portal/integrations/{m.name}/disconnect",
            verb="Disconnect",
            back="/portal/integrations",
            active="integrations",
        )

    @web.form_post
    async def disconnect(request: Request, user: User, form: dict[str, str]) -> Response:
        m = manifest_for(request)
        if m is None:
            return back_with_error(request, "Unknown integration.")
        gw.credentials.delete(user.id, m.name)
        return redirect(f"/portal/integrations?disconnected={m.name}")

    # -- API keys ------------------------------------------------------------------------------------

    def keys_page(request: Request, user: User) -> Response:
        keys = gw.auth.keys_of(user.id)
        revealed = gw.sessions.read_flash(request)  # the key the post before minted: shown once
        q = request.query_params
        done = {"revoked": "was revoked.", "rotated": "was revoked and replaced."}
        flash = "".join(
            notices(("ok", f"Key wb_{q[k]}_… {msg}"))
            for k, msg in done.items()
            if _KEY_ID_RE.match(q.get(k, ""))
        ) + notices(("error", _NO_SUCH_KEY if q.get("error") == "no-such-key" else None))
        notice = web.read_notice(request) if not (revealed and revealed.startswith("wb_")) else None
        if notice is not None:
            flash += notices((notice[0], notice[1]))
        reveal = ""
        if revealed and revealed.startswith("wb_"):
            reveal = (
                '<section class="card" aria-labelledby="new-key"><h2 id="new-key">Your new API key</h2>'
                '<p role="status"><strong>Copy it now: it is shown only once.</strong> Workbench keeps only a '
                "hash of it. Use it as <code>Authorization: Bearer &lt;key&gt;</code> on "
                f"<code>{e(gw.settings.mcp_url)}</code>.</p>"
                f'<div class="row"><code class="secret" id="revealed-key" tabindex="0">{e(revealed)}</code></div>'
                '<p class="actions"><button class="secondary" type="button" data-copy="revealed-key" '
                ">Copy key</button></p>"
                '<div class="copy-status" role="status" data-copy-status="revealed-key"></div></section>'
                + setup_section(gw.settings.mcp_url, revealed, heading="Set up a client with this key")
            )
        rows = []
        for k in reversed(keys):
            state = (
                '<span class="status off">Revoked</span>'
                if k.revoked
                else '<span class="status ok">Active</span>'
            )
            actions = ""
            if not k.revoked:
                kid = e(k.key_id)
                actions = (
                    '<div class="actions">'
                    + button_link(
                        f"/portal/api-keys/{kid}/access",
                        "Access…",
                        aria_label=f"Change the access of key wb_{kid}",
                    )
                    + button_link(
                        f"/portal/api-keys/{kid}/rotate", "Rotate…", aria_label=f"Rotate key wb_{kid}"
                    )
                    + button_link(
                        f"/portal/api-keys/{kid}/revoke",
                        "Revoke…",
                        kind="danger",
                        aria_label=f"Revoke key wb_{kid}",
                    )
                    + "</div>"
                )
            try:
                access = grant_summary(Grant.loads(k.grant))
            except (InvalidInput, ValueError):
                access = "Unreadable: the key is refused"
            rows.append(
                f'<tr><td data-label="Key"><code>wb_{e(k.key_id)}_…</code></td>'
                f'<td data-label="Label">{e(k.label) or "—"}</td>'
                f'<td data-label="Access" id="access-{e(k.key_id)}">{access}</td>'
                f'<td data-label="Created">{_when(k.created_at)}</td><td data-label="Status">{state}</td>'
                f'<td data-label="Actions">{actions}</td></tr>'
            )
        table = (
            '<table class="stack"><caption class="muted" style="text-align:left">Your keys</caption><thead><tr>'
            '<th scope="col">Key</th><th scope="col">Label</th><th scope="col">Access</th><th scope="col">Created</th>'
            '<th scope="col">Status</th><th scope="col">Actions</th></tr></thead><tbody>'
            + "".join(rows)
            + "</tbody></table>"
            if rows
            else '<p class="muted">You have no API keys yet.</p>'
        )
        csrf = csrf_field(web.csrf(request))
        mint = (
            '<section class="card" aria-labelledby="mint"><h2 id="mint">Create a key</h2>'
            f'<form method="post" action="/portal/api-keys">{csrf}'
            '<label for="key-label">Label (optional)</label>'
            '<input id="key-label" name="label" type="text" maxlength="100" placeholder="e.g. laptop">'
            + grant_fields(gw, user.id, prefix="mint")
            + '<p><button type="submit">Create key</button></p></form>'
            '<p class="help">Clients that sign in with OAuth need no key: see '
            '<a href="/portal/connect-client">Connect a client</a>.</p></section>'
        )
        body = flash + reveal + f'<section class="card">{table}</section>' + mint
        response = page(request, user, "API key", body, "api-keys")
        gw.sessions.clear_flash(response)
        return response

    def key_minted(request: Request, key: str, query: str = "") -> Response:
        """Post/redirect/get: the new key rides a one-shot flash cookie to the GET that shows it."""
        response = redirect("/portal/api-keys" + query + "#new-key")
        gw.sessions.set_flash(request, response, key)
        return response

    @web.form_post
    async def mint(request: Request, user: User, form: dict[str, str]) -> Response:
        label = (form.get("label") or "").strip()[:100]
        try:
            grant = await gw.store_io.run(grant_from_form, gw, user.id, form)
        except InvalidInput as exc:
            return web.redirect_with_notice(request, "/portal/api-keys#mint", "error", str(exc))
        return key_minted(request, gw.auth.mint_key(user, label=label, grant=grant))

    def own_active_key(user: User, key_id: str) -> ApiKeyRecord | None:
        rec = gw.auth.key(key_id)
        return rec if rec is not None and rec.user_id == user.id and not rec.revoked else None

    def confirm_key(request: Request, user: User) -> Response:
        key_id = str(request.path_params["key_id"])
        action = str(request.path_params["action"])
        if action not in ("rotate", "revoke") or own_active_key(user, key_id) is None:
            return redirect("/portal/api-keys?error=no-such-key")
        kid = f"wb_{key_id}_…"
        if action == "rotate":
            text = f"A new key replaces {kid}: the new one is shown once, and {kid} stops working at once."
            verb = "Rotate key"
        else:
            text = f"{kid} stops working at once. Agents and clients that use it lose access."
            verb = "Revoke key"
        if (
            gw.settings.auth_cache_seconds > 0
        ):  # workbench.identity.auth: each instance keeps a key it checked
            text += (
                f" A gateway that runs as several instances (AWS Lambda) may still accept it on the "
                f"others for up to {gw.settings.auth_cache_seconds} seconds."
            )
        return confirm(
            request,
            user,
            title=f"{verb.split()[0]} {kid}?",
            text=text,
            action=f"/portal/api-keys/{key_id}/{action}",
            verb=verb,
            back="/portal/api-keys",
            active="api-keys",
        )

    @web.form_post
    async def rotate(request: Request, user: User, form: dict[str, str]) -> Response:
        rec = own_active_key(user, str(request.path_params["key_id"]))
        if rec is None:
            return redirect("/portal/api-keys?error=no-such-key")
        key = gw.auth.mint_key(user, label=rec.label, grant=Grant.loads(rec.grant))  # keeps its grant
        gw.auth.revoke_key(user.id, rec.key_id)
        return key_minted(request, key, f"?rotated={rec.key_id}")

    @web.form_post
    async def revoke(request: Request, user: User, form: dict[str, str]) -> Response:
        key_id = str(request.path_params["key_id"])
        if own_active_key(user, key_id) is None or not gw.auth.revoke_key(user.id, key_id):
            return redirect("/portal/api-keys?error=no-such-key")
        return redirect(f"/portal/api-keys?revoked={key_id}")

    # -- MCP clients -------------------------------------------------------------------------------

    def clients_page(request: Request, user: User) -> Response:
        q = request.query_params
        flash = web.take_notice(request) + notices(
            ("ok", "The client was revoked." if q.get("revoked") == "1" else None),
            (
                "error",
                "That client has no live tokens on your account." if q.get("error") == "no-client" else None,
            ),
        )
        rows = []
        for c in gw.oauth.list_for_user(user.id):
            cid = e(c.client_id)
            name = e(c.client_name)
            rows.append(
                f'<tr><td data-label="Client">{name}<br><code class=muted>{cid}</code></td>'
                f'<td data-label="Access">{grant_summary(gw.oauth.client_grant(user.id, c.client_id))}</td>'
                f'<td data-label="Authorized">{_when(c.created_at)}</td>'
                f'<td data-label="Last used">{_when(c.last_used_at)}</td>'
                "<td>"
                + button_link(
                    f"/portal/clients/{quote(c.client_id, safe='')}/access",
                    "Access…",
                    aria_label=f"Change the access of {c.client_name}",
                )
                + button_link(
                    f"/portal/clients/{quote(c.client_id, safe='')}/revoke",
                    "Revoke…",
                    kind="danger",
                    aria_label=f"Revoke {c.client_name}",
                )
                + "</td></tr>"
            )
        table = (
            '<table class="stack"><thead><tr><th scope="col">Client</th><th scope="col">Access</th>'
            '<th scope="col">Authorized</th>'
            '<th scope="col">Last used</th><th scope="col">Actions</th></tr></thead><tbody>'
            + "".join(rows)
            + "</tbody></table>"
            if rows
            else '<p class="muted">No MCP client holds a live refresh token on your account.</p>'
        )
        body = (
            flash
            + '<section class="card"><p>These clients signed in to Workbench with OAuth and can keep working '
            "until you revoke them. Revoking deletes their refresh tokens and outstanding authorization codes; "
            "access tokens already issued lapse at their expiry.</p>" + table + "</section>"
        )
        response = page(request, user, "MCP clients", body, "clients")
        gw.sessions.clear_flash(response)
        return response

    def confirm_revoke_client(request: Request, user: User) -> Response:
        client_id = str(request.path_params["client_id"])
        mine = [c for c in gw.oauth.list_for_user(user.id) if c.client_id == client_id]
        if not mine:
            return redirect("/portal/clients?error=no-client")
        return confirm(
            request,
            user,
            title=f"Revoke {mine[0].client_name}?",
            text=f"{mine[0].client_name} loses its refresh tokens and outstanding codes now; an access token "
            "it already holds lapses at its expiry (minutes). It can ask you to sign in again.",
            action=f"/portal/clients/{quote(client_id, safe='')}/revoke",
            verb="Revoke client",
            back="/portal/clients",
            active="clients",
        )

    @web.form_post
    async def revoke_client(request: Request, user: User, form: dict[str, str]) -> Response:
        client_id = str(request.path_params["client_id"])
        if not gw.oauth.revoke_for_user(user.id, client_id):
            return redirect("/portal/clients?error=no-client")
        return redirect("/portal/clients?revoked=1")

    def welcome_page(request: Request, user: User) -> Response:
        """Where sign-in lands: what to do next, and what already works."""
        conns = gw.connections.connections_of(user.id)
        connected, ready, needs_setup = sort_integrations(conns)
        integrations = f"{len(connected)} connected, {len(ready)} ready to connect" + (
            f", {len(needs_setup)} need the operator's setup" if needs_setup else ""
        )
        steps = (
            '<section class="card" aria-labelledby="next-steps"><h2 id="next-steps">Next steps</h2><ol>'
            '<li><a href="/portal/connect-client">Connect a client</a>: Claude Code, Claude Desktop, Cursor, '
            "VS Code, the Python and TypeScript SDKs or curl, to the MCP endpoint "
            f"<code>{e(gw.settings.mcp_url)}</code>. From a terminal, "
            "<code>workbench client add claude-code</code> writes the configuration for you.</li>"
            '<li><a href="/portal/playground">Try a tool in the playground</a>: search the catalog and run a '
            "tool by hand, as an agent would.</li>"
            f'<li><a href="/portal/integrations">Connect an integration</a> ({e(integrations)}): its tools '
            "appear to your agents at once.</li></ol></section>"
        )
        ready_now = "".join(
            _integration_item(m)
            for m in sorted(gw.registry.manifests(), key=lambda m: m.display_name.lower())
            if m.builtin or isinstance(m.auth, NoAuth) or m.name in conns
        )
        now = (
            '<section class="card" aria-labelledby="ready-now"><h2 id="ready-now">Ready now</h2>'
            '<p class="muted">Your agents can use these tools already.</p>'
            f'<ul class="result-list">{ready_now}</ul></section>'
            if ready_now
            else ""
        )
        return page(request, user, "Welcome to Workbench", steps + now, "welcome")

    home = web.page(welcome_page)

    async def root(request: Request) -> Response:
        return redirect("/portal")

    return [
        Route("/", root, methods=["GET"]),
        Route("/portal", home, methods=["GET"]),
        Route("/portal/", home, methods=["GET"]),
        Route("/portal/welcome", home, methods=["GET"]),
        Route("/portal/integrations", web.page(integrations_page), methods=["GET"]),
        Route("/portal/integrations/{name}/connect", connect, methods=["POST"]),
        Route("/portal/integrations/{name}/api-key", api_key, methods=["POST"]),
        Route("/portal/integrations/{name}/disconnect", web.page(confirm_disconnect), methods=["GET"]),
        Route("/portal/integrations/{name}/disconnect", disconnect, methods=["POST"]),
        Route("/portal/api-keys", web.page(keys_page), methods=["GET"]),
        Route("/portal/api-keys", mint, methods=["POST"]),
        Route("/portal/api-keys/{key_id}/{action:str}", web.page(confirm_key), methods=["GET"]),
        Route("/portal/api-keys/{key_id}/rotate", rotate, methods=["POST"]),
        Route("/portal/api-keys/{key_id}/revoke", revoke, methods=["POST"]),
        Route("/portal/clients", web.page(clients_page), methods=["GET"]),
        Route("/portal/clients/{client_id}/revoke", web.page(confirm_revoke_client), methods=["GET"]),
        Route("/portal/clients/{client_id}/revoke", revoke_client, methods=["POST"]),
    ]
