"""Server-rendered HTML for the portal: one layout, escaping by default, security headers on every page.

No build step and no framework: every action is a plain form post (post/redirect/get), so the pages
work with a keyboard, a screen reader, or JavaScript disabled. One small same-origin script
(/portal/static/portal.js, see web/static.py) adds copy buttons, "test connection" and the
playground; the CSP allows no inline script and no other origin.
"""

from __future__ import annotations

from html import escape
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from workbench.guard.jsontext import replace_lone_surrogates

__all__ = [
    "SECURITY_HEADERS",
    "button_link",
    "copy_block",
    "csrf_field",
    "e",
    "html_page",
    "json_response",
    "notices",
    "redirect",
    "too_large_page",
]

# frame-ancestors 'none' on every portal page: nothing may frame the portal (clickjacking).
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; "
        "img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    # Connect links and OAuth states in URLs must not leak to the next site through Referer.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}

_STYLE = """
:root { color-scheme: light; --fg:#1d2330; --muted:#5b6475; --line:#d9dde5; --accent:#2f5bd3; --bad:#b42318;
  --ok:#067647; --warn:#b54708; }
* { box-sizing: border-box; }
body { margin:0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
  background:#f6f7f9; }
header { background:#fff; border-bottom:1px solid var(--line); }
header .bar { max-width: 80rem; margin: 0 auto; padding: .75rem 1rem; display:flex; gap:.5rem 1.5rem;
  align-items:center; flex-wrap: wrap; }
.skip-link { position:absolute; left:-100vw; top:.5rem; background:#fff; padding:.5rem 1rem; z-index:10;
  border:2px solid var(--accent); border-radius:6px; }
.skip-link:focus { left:.5rem; }
header .brand { font-weight: 700; }
fieldset { border:1px solid var(--line); border-radius:.4rem; margin:.75rem 0; padding:.5rem .9rem; }
label.choice { display:block; margin:.2rem 0; font-weight:400; }
.choices { display:grid; grid-template-columns: repeat(auto-fill, minmax(14rem, 1fr)); gap:0 1rem;
  margin-left:1.5rem; }
dl.facts { display:grid; grid-template-columns: max-content 1fr; gap:.25rem 1rem; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin:0; }
nav ul { list-style:none; display:flex; flex-wrap:wrap; gap:.25rem 1rem; margin:0; padding:0; }
nav a { color: var(--accent); }
nav a[aria-current="page"] { font-weight: 700; color: var(--fg); }
header form { margin-left:auto; }
main { max-width: 60rem; margin: 1.5rem auto; padding: 0 1rem; }
h1 { font-size: 1.6rem; margin: 0 0 1rem; }
h2 { font-size: 1.15rem; margin: 0 0 .5rem; }
.card { background:#fff; border:1px solid var(--line); border-radius: 8px; padding: 1rem 1.25rem;
  margin-bottom: 1rem; }
.row { display:flex; gap: 1rem; align-items: center; justify-content: space-between; flex-wrap: wrap; }
.muted { color: var(--muted); }
.status { font-weight: 600; }
.status.ok { color: var(--ok); } .status.off { color: var(--muted); } .status.warn { color: var(--warn); }
.notice { padding: .75rem 1rem; border-radius: 6px; margin-bottom: 1rem; border:1px solid; }
.notice.ok { background:#ecfdf3; border-color:#abefc6; }
.notice.error { background:#fef3f2; border-color:#fecdca; color: var(--bad); }
.notice.dev { background:#fffaeb; border-color:#fedf89; }
label { display:block; font-weight:600; margin: .5rem 0 .25rem; }
input[type=text], input[type=email], input[type=password] { width: 100%; max-width: 28rem; padding: .5rem;
  font: inherit; border:1px solid #98a2b3; border-radius: 6px; }
button { font: inherit; padding: .45rem 1rem; border-radius: 6px; border: 1px solid var(--accent);
  background: var(--accent); color: #fff; cursor: pointer; }
button.secondary { background:#fff; color: var(--accent); }
button.danger { background:#fff; color: var(--bad); border-color: var(--bad); }
:focus-visible { outline: 3px solid #f79009; outline-offset: 2px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align:left; padding: .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
code.secret { display:block; padding:.75rem; background:#101828; color:#fff; border-radius:6px;
  word-break: break-all; font-size: .95rem; }
.inline { display:inline; }
.help { font-size: .9rem; color: var(--muted); margin: .25rem 0 0; }
textarea, select { font: inherit; padding: .5rem; border:1px solid #98a2b3; border-radius: 6px; max-width: 100%; }
a.button { display:inline-block; text-decoration:none; font: inherit; padding: .45rem 1rem; border-radius: 6px;
  border: 1px solid var(--accent); background:#fff; color: var(--accent); }
a.button.danger { color: var(--bad); border-color: var(--bad); }
a.button.primary { background: var(--accent); color:#fff; }
.actions { display:flex; gap:.5rem; flex-wrap:wrap; align-items:center; }
pre.snippet:empty { display:none; }
pre.snippet { background:#101828; color:#f2f4f7; padding:.75rem; border-radius:6px; overflow-x:auto;
  white-space: pre; font-size:.85rem; margin:.25rem 0; max-width:100%; }
.snippet-block { margin: .75rem 0; }
.snippet-block .row { justify-content: space-between; }
details.client { border-top:1px solid var(--line); padding:.5rem 0; }
details.client > summary { cursor:pointer; font-weight:600; padding:.25rem 0; }
.copy-status { font-size:.85rem; color: var(--ok); min-height:1.2em; }
.badge.bad { color: var(--bad); border-color: var(--bad); }
.badge { display:inline-block; font-size:.8rem; padding:0 .4rem; border-radius:4px; border:1px solid var(--line); }
.chart svg { width:100%; height:auto; max-height: 16rem; }
.legend { list-style:none; display:flex; flex-wrap:wrap; gap:.75rem; padding:0; margin:.5rem 0 0; font-size:.9rem; }
.legend .swatch { display:inline-block; width:.8rem; height:.8rem; border-radius:2px; margin-right:.3rem;
  vertical-align:middle; }
.filters { display:flex; gap:1rem; flex-wrap:wrap; align-items:flex-end; }
.filters label { margin:0 0 .25rem; }
select, textarea, input[type=number] { font: inherit; padding:.45rem; border:1px solid #98a2b3; border-radius:6px;
  max-width:100%; }
textarea { width:100%; min-height: 8rem; font-family: ui-monospace, monospace; font-size:.9rem; }
.pager { display:flex; gap:1rem; justify-content:space-between; margin-top:.75rem; }
.visually-hidden { position:absolute; width:1px; height:1px; overflow:hidden; clip:rect(0 0 0 0); white-space:nowrap; }
fieldset.args { border:1px solid var(--line); border-radius:6px; margin:.75rem 0; padding:.25rem 1rem .75rem; }
fieldset.args legend { font-weight:600; padding:0 .25rem; }
label.inline-check { display:inline-flex; gap:.4rem; align-items:center; font-weight:normal; }
.result-list { list-style:none; padding:0; margin:.5rem 0; }
.result-list li { border-bottom:1px solid var(--line); padding:.5rem 0; }
/* Narrow screens (a 390 px phone): tables become labelled stacks; nothing scrolls sideways. */
@media (max-width: 40rem) {
  header .bar { gap:.5rem 1rem; }
  header form { margin-left:0; }
  main { margin-top: 1rem; }
  table.stack, table.stack tbody, table.stack tr, table.stack td, table.stack tbody th { display:block; width:100%; }
  table.stack caption { display:block; text-align:left; }
  table.stack thead { position:absolute; width:1px; height:1px; overflow:hidden; clip:rect(0 0 0 0); }
  table.stack tr { border-bottom:1px solid var(--line); padding:.5rem 0; }
  table.stack td { border:0; padding:.15rem 0; overflow-wrap:anywhere; }
  table.stack td[data-label]::before { content: attr(data-label) ": "; font-weight:600; color: var(--muted); }
  .card { padding: .75rem; }
}
main, .card, td { overflow-wrap: anywhere; }
th { overflow-wrap: normal; word-break: keep-all; hyphens: none; }
"""

_NAV = (
    ("welcome", "/portal", "Home"),
    ("integrations", "/portal/integrations", "Integrations"),
    ("catalog", "/portal/catalog", "Catalog"),
    ("connect-client", "/portal/connect-client", "Connect a client"),
    ("api-keys", "/portal/api-keys", "API key"),
    ("approvals", "/portal/approvals", "Approvals"),
    ("activity", "/portal/activity", "Activity"),
    ("playground", "/portal/playground", "Playground"),
    ("clients", "/portal/clients", "MCP clients"),
    ("apps", "/portal/apps", "Custom apps"),
)
SCRIPT = '<script src="/portal/static/portal.js" defer></script>'


def e(value: Any) -> str:
    """HTML-escape anything for text or a double-quoted attribute."""
    return escape(str(value), quote=True)


def csrf_field(token: str) -> str:
    return f'<input type="hidden" name="csrf" value="{e(token)}">'


def html_page(
    title: str,
    body: str,
    *,
    status: int = 200,
    email: str | None = None,
    csrf: str | None = None,
    active: str | None = None,
    headers: dict[str, str] | None = None,
) -> HTMLResponse:
    nav = ""
    if email is not None:
        items = "".join(
            f'<li><a href="{href}"{" aria-current=page" if key == active else ""}>{label}</a></li>'
            for key, href, label in _NAV
        )
        signout = (
            f'<form method="post" action="/portal/signout">{csrf_field(csrf or "")}'
            f'<span class="muted">{e(email)}</span> <button class="secondary" type="submit">Sign out</button></form>'
        )
        nav = f'<nav aria-label="Portal"><ul>{items}</ul></nav>{signout}'
    doc = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)} · Workbench</title><style>{_STYLE}</style>{SCRIPT if email else ''}</head><body>"
        '<a class="skip-link" href="#main">Skip to main content</a>'
        f'<header><div class="bar"><span class="brand">Workbench</span>{nav}</div></header>'
        f'<main id="main"><h1>{e(title)}</h1>{body}</main></body></html>'
    )
    # Upstream text (an app's tool names, a document's title) may hold a lone surrogate: U+FFFD.
    return HTMLResponse(replace_lone_surrogates(doc), status, headers={**SECURITY_HEADERS, **(headers or {})})


def copy_block(block_id: str, text: str, label: str) -> str:
    """A ready-to-paste snippet with a copy button (the script copies the <code>'s text). Spans of
    class "key-slot" inside may be refilled by the script with a pasted key."""
    return (
        f'<div class="snippet-block"><div class="row"><span class="muted">{e(label)}</span>'
        f'<button class="secondary" type="button" data-copy="{e(block_id)}" '
        f'aria-label="Copy {e(label)}">Copy</button></div>'
        f'<pre class="snippet" tabindex="0"><code id="{e(block_id)}">{text}</code></pre>'
        f'<div class="copy-status" role="status" data-copy-status="{e(block_id)}"></div></div>'
    )


def button_link(href: str, label: str, *, kind: str = "", aria_label: str | None = None) -> str:
    """A GET action that looks like a button (e.g. "Revoke…" opens its confirmation page)."""
    aria = f' aria-label="{e(aria_label)}"' if aria_label else ""
    return f'<a class="button {e(kind)}" href="{e(href)}"{aria}>{e(label)}</a>'


def notices(*pairs: tuple[str, str | None]) -> str:
    """Render (kind, message) notices; errors are announced to screen readers."""
    out = []
    for kind, message in pairs:
        if message:
            role = ' role="alert"' if kind == "error" else ' role="status"'
            out.append(f'<div class="notice {kind}"{role}>{e(message)}</div>')
    return "".join(out)


def redirect(url: str, *, status: int = 303) -> Response:
    return RedirectResponse(url, status, headers=SECURITY_HEADERS)


def json_response(body: dict[str, Any], status: int = 200) -> Response:
    return JSONResponse(body, status, headers=SECURITY_HEADERS)


def connection_failed_page(
    message: str, *, back: str, back_label: str, email: str | None, csrf: str
) -> Response:
    """The 400 page of an OAuth callback that could not complete (a plugin's or a custom app's)."""
    body = notices(("error", message)) + f'<p><a href="{e(back)}">{e(back_label)}</a></p>'
    return html_page("Connection failed", body, status=400, email=email, csrf=csrf)


def too_large_page(request: Request, exc: Exception) -> Response:
    """The 413 page of a browser-facing post over its size cap (see bodylimit.py)."""
    body = (
        notices(("error", f"{exc}. Nothing was saved."))
        + '<p><a href="/portal/integrations">Back to the portal</a></p>'
    )
    return html_page("Request too large", body, status=413)
