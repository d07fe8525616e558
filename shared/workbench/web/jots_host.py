"""The jots host: a jot as a rendered web page.

- `GET /jots/{id}` — the owner, signed in to the portal, sees the jot and its share controls.
  Without a portal session the answer is the same 401 page for every id; with one, another user's
  jot and a jot that never existed give the same 404 page (no existence oracle).
- `POST /jots/{id}/share` and `/jots/{id}/unshare` — the owner makes or revokes the share link
  (CSRF-checked form posts). Agents do the same with `update_jot`'s `shared` option.
- `GET /jots/s/{token}` — anyone holding the share link reads the jot; a revoked or unknown token
  is the same 404.

Rendered markdown is sanitised (`jots_markdown`), and every page carries a CSP that allows no
script, no external resource, and inline styles only.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from workbench.guard.jsontext import replace_lone_surrogates

if TYPE_CHECKING:
    from workbench.composition import Gateway
    from workbench.stores import Jot, User

__all__ = ["CSP", "jots_routes"]

# No script at all; images only over https (a jot may embed one; Referrer-Policy keeps share links private).
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src https:; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # A share link's token must not leak to the sites a jot links to.
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store, private",
    "X-Robots-Tag": "noindex, nofollow",
}

_STYLE = """
body { margin:0; font: 16px/1.6 system-ui, -apple-system, "Segoe UI", sans-serif; color:#1d2330; background:#f6f7f9; }
main { max-width: 46rem; margin: 2rem auto; padding: 0 1rem; }
article { background:#fff; border:1px solid #d9dde5; border-radius:8px; padding: 1.25rem 1.5rem; overflow-wrap: anywhere; }
h1.title { font-size: 1.7rem; margin: 0 0 1rem; }
pre { background:#f1f3f6; padding:.75rem; border-radius:6px; overflow-x:auto; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .92em; }
blockquote { border-left: 3px solid #d9dde5; margin: 0; padding-left: 1rem; color:#5b6475; }
table { border-collapse: collapse; display:block; overflow-x:auto; max-width:100%; }
th, td { border: 1px solid #d9dde5; padding: .35rem .6rem; }
th { background:#f1f3f6; }
img { max-width: 100%; height: auto; }
.meta { color:#5b6475; font-size:.9rem; margin: 1rem 0; }
.meta form { display:inline; }
button { font: inherit; padding:.25rem .75rem; }
input[type=text] { font: inherit; width: 100%; }
"""


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    html = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="robots" content="noindex, nofollow">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body><main>{body}</main></body></html>"
    )
    return HTMLResponse(replace_lone_surrogates(html), status_code=status, headers=_HEADERS)


def _not_found() -> HTMLResponse:
    return _page("Jot not found", "<h1>Jot not found</h1><p>There is no jot at this address.</p>", 404)


def _jot_html(jot: Jot) -> str:
    # Imported by the first jot shown: the markdown parser is not part of every web cold start.
    from workbench.web.jots_markdown import render_markdown

    return f'<article><h1 class="title">{escape(jot.title)}</h1>{render_markdown(jot.body)}</article>'


def _same_origin(request: Request, base: str) -> bool:
    origin = request.headers.get("origin")
    if origin is None:
        return True
    own, got = urlsplit(base), urlsplit(origin)
    return (got.scheme, got.netloc) == (own.scheme, own.netloc) or got.netloc == request.url.netloc


def jots_routes(gateway: Gateway) -> list[BaseRoute]:
    jots = gateway.jots
    base = gateway.settings.public_url.rstrip("/")

    def signed_in(request: Request) -> User | None:
        return gateway.sessions.current_user(request, gateway.auth.user)

    def owner_controls(request: Request, jot: Jot) -> str:
        csrf = escape(gateway.sessions.csrf_token(request), quote=True)
        jot_id = escape(jot.id, quote=True)
        hidden = f'<input type="hidden" name="csrf" value="{csrf}">'
        if jot.share_token:
            link = escape(f"{base}/jots/s/{jot.share_token}", quote=True)
            return (
                '<div class="meta"><p>Anyone with this link can read this jot:</p>'
                f'<p><input type="text" readonly value="{link}" aria-label="Share link"></p>'
                f'<form method="post" action="/jots/{jot_id}/unshare">{hidden}'
                "<button>Stop sharing</button></form></div>"
            )
        return (
            '<div class="meta">Only you can see this jot. '
            f'<form method="post" action="/jots/{jot_id}/share">{hidden}'
            "<button>Create a share link</button></form></div>"
        )

    async def view(request: Request) -> Response:
        user = signed_in(request)
        if user is None:
            # Same answer for every id, so it says nothing about which jots exist.
            back = escape("/portal/signin?" + urlencode({"next": request.url.path}), quote=True)
            return _page(
                "Sign in",
                f'<h1>Sign in to open this jot</h1><p><a href="{back}">Sign in to Workbench</a> as its owner, '
                "or ask the owner for a share link.</p>",
                401,
            )
        jot = jots.get(user.id, request.path_params["jot_id"])
        if jot is None:
            return _not_found()
        return _page(jot.title, _jot_html(jot) + owner_controls(request, jot))

    async def set_sharing(request: Request) -> Response:
        if request.path_params["action"] not in ("share", "unshare"):
            return _not_found()
        user = signed_in(request)
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        csrf = (form.get("csrf") or [""])[0]
        # The portal's two checks: the session's CSRF token, and (when a browser sends one) our Origin.
        if user is None or not gateway.sessions.check_csrf(request, csrf) or not _same_origin(request, base):
            return _page("Forbidden", "<h1>Forbidden</h1><p>Reload the jot and try again.</p>", 403)
        jot = jots.get(user.id, request.path_params["jot_id"])
        if jot is None:
            return _not_found()
        jots.set_shared(user.id, jot.id, request.path_params["action"] == "share")
        return RedirectResponse(f"/jots/{jot.id}", status_code=303, headers=_HEADERS)

    async def shared(request: Request) -> Response:
        token = request.path_params["token"]
        jot = jots.shared(token)
        if jot is None:
            return _not_found()
        return _page(jot.title, _jot_html(jot))

    return [
        Route("/jots/s/{token}", shared, methods=["GET"]),
        Route("/jots/{jot_id}", view, methods=["GET"]),
        Route("/jots/{jot_id}/{action:str}", set_sharing, methods=["POST"]),
    ]
