"""The live browser session for cookie integrations: the origin-gated CDP bridge.

The user opens GET /portal/browser/{connectionId} (reached from the connect link once the portal
session matches the link's user). The page shows the capture browser, which starts at the
integration's login URL:

  frames down   GET  /portal/browser/{id}/frames   SSE of screencast JPEGs (Page.startScreencast)
  input up      POST /portal/browser/{id}/input    {"type": "click"|"text"|"key"|"scroll", ...}
  finish        POST /portal/browser/{id}/finish   capture cookies → encrypt, store, mark CONNECTED
  cancel        POST /portal/browser/{id}/cancel   close the capture browser

Every bridge request must come from the gateway's own origin (Origin header, or for a same-origin
GET where browsers omit Origin, `Sec-Fetch-Site: same-origin`), carry the portal session of the
user the link was minted for, and name a pending cookie connect. The capture browser is its own
browser context, separate from the user's agent browser, and is closed once the cookies are taken.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from workbench.errors import WorkbenchError
from workbench.guard.bodylimit import BodyRule, json_413
from workbench.guard.jsontext import JsonRejected, parse
from workbench.manifest import CookieAuth, Manifest
from workbench.stores import PendingConnect, User

if TYPE_CHECKING:
    from pydantic import ValidationError

    from workbench.browser.page import BrowserPage
    from workbench.browser.pool import BrowserPool
    from workbench.composition import Gateway

__all__ = [
    "BODY_RULES",
    "BROWSER_PAGE_PATH",
    "browser_bridge_routes",
    "browser_page_url",
    "cookies_for_domain",
    "same_origin",
]

BROWSER_PAGE_PATH = "/portal/browser/{connection_id}"
_MAX_INPUT_BYTES = 16 * 1024
# A quiet page sends no frames; a comment line keeps proxies from closing the stream.
_KEEPALIVE_SECONDS = 15.0

_NO_STORE = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
BODY_RULES = [
    BodyRule(
        "/portal/browser/",
        _MAX_INPUT_BYTES,
        json_413(lambda exc: {"error": "INVALID_INPUT", "message": str(exc)}, _NO_STORE),
    )
]


def browser_page_url(public_url: str, connection_id: str) -> str:
    return public_url.rstrip("/") + BROWSER_PAGE_PATH.format(connection_id=connection_id)


def _origin_of(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or {"http": 80, "https": 443}.get(scheme)
    return scheme, (parts.hostname or "").lower(), port


def same_origin(request: Request, public_url: str) -> bool:
    """True only for requests a page of the gateway's own origin made."""
    origin = request.headers.get("origin")
    if origin is not None:
        return origin != "null" and _origin_of(origin) == _origin_of(public_url)
    # Browsers leave Origin off same-origin GETs (an EventSource); they always send Sec-Fetch-Site.
    return request.method == "GET" and request.headers.get("sec-fetch-site") == "same-origin"


def cookies_for_domain(cookies: list[dict[str, Any]], domain: str) -> list[dict[str, Any]]:
    """The cookies a request to `domain` (or its subdomains) would carry, in the stored shape."""
    want = domain.lstrip(".").lower()
    out = []
    for c in cookies:
        raw = str(c.get("domain", "")).lower()
        host = raw.lstrip(".")
        # A leading dot marks a domain cookie (sent to subdomains too); without it, host-only.
        sent_to_want = host == want or (raw.startswith(".") and want.endswith("." + host))
        if sent_to_want or host.endswith("." + want):
            out.append(
                {
                    "name": c["name"],
                    "value": c["value"],
                    "domain": c.get("domain", ""),
                    "path": c.get("path", "/"),
                    "expires": c.get("expires", -1),
                }
            )
    return out


# -- the bridge ------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Claim:
    user: User
    record: PendingConnect
    manifest: Manifest
    auth: CookieAuth


class _Refused(WorkbenchError):
    def __init__(self, status: int, error: str, message: str) -> None:
        super().__init__(message)
        self.status, self.error, self.message = status, error, message


class _Bridge:
    def __init__(self, gateway: Gateway) -> None:
        self.gw = gateway
        self._viewers: dict[str, int] = {}

    @property
    def pool(self) -> BrowserPool:
        pool: BrowserPool | None = getattr(self.gw.engine.builtin_services, "browser", None)
        if pool is None:
            raise _Refused(503, "BROWSER_UNAVAILABLE", "The browser is not available on this gateway.")
        return pool

    def claim(self, request: Request, *, check_origin: bool) -> _Claim:
        if check_origin and not same_origin(request, self.gw.settings.public_url):
            raise _Refused(
                403, "FORBIDDEN_ORIGIN", "Requests to the browser bridge must come from Workbench itself."
            )
        connection_id = request.path_params["connection_id"]
        user = self.gw.sessions.current_user(request, self.gw.auth.user)
        record = self.gw.connections.pending(connection_id)
        if user is None or record is None or record.user_id != user.id:
            # No session, an unknown id and another user's id all look alike: no existence oracle.
            raise _Refused(
                403,
                "ACCOUNT_MISMATCH",
                "This link was created for a different Workbench account. Sign in to Workbench as the account "
                "that asked for the connection, then open the link again.",
            )
        if record.status == "EXPIRED":
            raise _Refused(410, "EXPIRED", "This connect link has expired. Ask your agent to connect again.")
        if record.status == "CONNECTED":
            raise _Refused(409, "ALREADY_CONNECTED", "This connection is already complete.")
        manifest = self.gw.registry.manifest(record.integration)
        if manifest is None or not isinstance(manifest.auth, CookieAuth):
            raise _Refused(400, "NOT_A_COOKIE_INTEGRATION", "This link does not open a browser session.")
        return _Claim(user, record, manifest, manifest.auth)

    # -- handlers ---------------------------------------------------------------------------------

    async def page(self, request: Request) -> Response:
        try:
            claim = self.claim(request, check_origin=False)  # a top-level navigation: no Origin to check
        except _Refused as refused:
            return _html_refusal(refused)
        return _live_page(claim)

    async def frames(self, request: Request) -> Response:
        claim = self.claim(request, check_origin=True)
        page = await self.pool.capture_page(claim.record.id, claim.auth.login_url)
        return StreamingResponse(
            self._stream(page, claim.record.id),
            media_type="text/event-stream",
            headers={**_NO_STORE, "X-Accel-Buffering": "no"},
        )

    async def _stream(self, page: BrowserPage, connection_id: str) -> AsyncIterator[str]:
        frames: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=2)
        acks: set[asyncio.Task[None]] = set()

        def on_event(method: str, params: dict[str, Any], session_id: str | None) -> None:
            if session_id != page.session_id:
                return
            if method == "Page.screencastFrame":
                task = asyncio.ensure_future(page.ack_frame(int(params["sessionId"])))
                acks.add(task)
                task.add_done_callback(acks.discard)
                task.add_done_callback(_quiet)
                event = {"event": "frame", "data": params["data"]}
            elif method == "Page.frameNavigated" and not (params.get("frame") or {}).get("parentId"):
                event = {"event": "url", "url": str(params["frame"].get("url", ""))}
            else:
                return
            if frames.full():  # the viewer is slow: drop the oldest, the newest frame matters
                with contextlib.suppress(asyncio.QueueEmpty):
                    frames.get_nowait()
            frames.put_nowait(event)

        remove = page.conn.listen(on_event)
        self._viewers[connection_id] = self._viewers.get(connection_id, 0) + 1
        try:
            yield "retry: 1000\n\n"
            async with page.lock:
                state = await page.state()
                first = await page.screenshot(fmt="jpeg", quality=70)
                await page.start_screencast()
            yield _sse("url", {"url": state.url})
            yield _sse("frame", {"data": first})
            while True:
                try:
                    event = await asyncio.wait_for(frames.get(), _KEEPALIVE_SECONDS)
                except TimeoutError:
                    if page.conn.closed or self.pool.existing_capture(connection_id) is not page:
                        yield _sse("end", {"reason": "the browser session closed"})
                        return
                    yield ": keepalive\n\n"
                    continue
                name = event.pop("event")
                yield _sse(name, event)
        finally:
            # No awaits here: when the viewer disconnects this generator is being cancelled.
            remove()
            for task in list(acks):
                task.cancel()
            left = self._viewers.get(connection_id, 1) - 1
            if left <= 0:
                self._viewers.pop(connection_id, None)
                if not page.conn.closed:  # the last viewer left: stop rendering frames for nobody
                    stop = asyncio.ensure_future(
                        page.conn.send("Page.stopScreencast", session_id=page.session_id)
                    )
                    stop.add_done_callback(_quiet)
            else:
                self._viewers[connection_id] = left

    async def input(self, request: Request) -> Response:
        claim = self.claim(request, check_origin=True)
        # The input shapes (pydantic) are imported on the first input, not with the portal's routes.
        from pydantic import ValidationError

        from workbench.web.bridge_input import Click, Key, Text, input_adapter

        try:  # at most _MAX_INPUT_BYTES: BodyLimit stops the read past it
            event = input_adapter().validate_python(parse(await request.body()))
        except JsonRejected as exc:
            return _json({"error": "INVALID_INPUT", "message": f"(body): {exc}"}, 400)
        except ValidationError as exc:
            return _json({"error": "INVALID_INPUT", "message": _first_error(exc)}, 400)
        from workbench.browser.page import KEY_NAMES, VIEWPORT

        if isinstance(event, Key) and event.key not in KEY_NAMES:
            return _json(
                {"error": "INVALID_INPUT", "message": f"key must be one of {', '.join(KEY_NAMES)}"}, 400
            )
        page = await self.pool.capture_page(claim.record.id, claim.auth.login_url)
        async with page.lock:
            page.touch()
            if isinstance(event, Click):
                await page.mouse_click(event.x * VIEWPORT[0], event.y * VIEWPORT[1])
            elif isinstance(event, Text):
                await page.insert_text(event.text)
            elif isinstance(event, Key):
                await page.press(event.key)
            else:
                await page.scroll(event.x * VIEWPORT[0], event.y * VIEWPORT[1], event.deltaY)
        return Response(status_code=204, headers=_NO_STORE)

    async def finish(self, request: Request) -> Response:
        claim = self.claim(request, check_origin=True)
        page = self.pool.existing_capture(claim.record.id)
        if page is None:
            return _json(
                {
                    "error": "NO_BROWSER_SESSION",
                    "message": "The browser session is gone. Reload the page to start over.",
                },
                409,
            )
        async with page.lock:
            cookies = cookies_for_domain(await page.cookies(), claim.auth.cookie_domain)
        names = {c["name"] for c in cookies}
        missing = [n for n in claim.auth.session_cookies if n not in names]
        if not cookies or missing:
            return _json(
                {
                    "error": "NOT_SIGNED_IN",
                    "message": f"No signed-in session for {claim.auth.cookie_domain} yet. Finish signing in, "
                    "then press Done again.",
                },
                409,
            )
        # Encrypted under the (user, integration) context; the agent never sees the values.
        self.gw.credentials.save(claim.user.id, claim.manifest.name, {"cookies": cookies})
        self.gw.connections.mark_connected(claim.record.id)
        await self.pool.close_capture(claim.record.id)
        return _json({"status": "CONNECTED", "integration": claim.manifest.name}, 200)

    async def cancel(self, request: Request) -> Response:
        claim = self.claim(request, check_origin=True)
        closed = await self.pool.close_capture(claim.record.id)
        return _json({"closed": closed}, 200)


def _quiet(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: a failed stop of a closed page is not worth a log line


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def _json(body: dict[str, Any], status: int) -> Response:
    return JSONResponse(body, status, headers=_NO_STORE)


def _first_error(exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    path = ".".join(str(p) for p in err["loc"]) or "(body)"
    return f"{path}: {err['msg']}"


def browser_bridge_routes(gateway: Gateway) -> list[Route]:
    bridge = _Bridge(gateway)

    def api(handler: Any) -> Any:
        async def run(request: Request) -> Response:
            try:
                response: Response = await handler(request)
            except _Refused as refused:
                return _json({"error": refused.error, "message": refused.message}, refused.status)
            except Exception as exc:
                from workbench.browser.page import BrowserError

                if isinstance(exc, BrowserError):
                    return _json({"error": "BROWSER_ERROR", "message": str(exc)}, 502)
                raise
            return response

        return run

    path = BROWSER_PAGE_PATH
    return [
        Route(path, bridge.page, methods=["GET"]),
        Route(path + "/frames", api(bridge.frames), methods=["GET"]),
        Route(path + "/input", api(bridge.input), methods=["POST"]),
        Route(path + "/finish", api(bridge.finish), methods=["POST"]),
        Route(path + "/cancel", api(bridge.cancel), methods=["POST"]),
    ]


# -- the page ----------------------------------------------------------------------------------------


def _headers(nonce: str = "") -> dict[str, str]:
    script = f"script-src 'nonce-{nonce}'; " if nonce else ""
    return {
        **_NO_STORE,
        "Content-Security-Policy": (
            f"default-src 'none'; {script}style-src 'unsafe-inline'; img-src data:; connect-src 'self'; "
            "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
        ),
        "X-Frame-Options": "DENY",
    }


_STYLE = """
body { margin:0; font: 16px/1.5 system-ui, sans-serif; color:#1d2330; background:#f6f7f9; }
main { max-width: 1320px; margin: 1rem auto; padding: 0 1rem; }
h1 { font-size: 1.4rem; margin: 0 0 .5rem; }
.bar { display:flex; gap:.75rem; align-items:center; flex-wrap:wrap; margin:.5rem 0; }
#url { font-family: ui-monospace, monospace; color:#5b6475; overflow-wrap:anywhere; }
#screen { display:block; width:100%; max-width:1280px; aspect-ratio: 1280 / 800; background:#fff;
  border:1px solid #98a2b3; cursor: default; }
#screen:focus { outline: 3px solid #f79009; outline-offset: 2px; }
button { font: inherit; padding:.45rem 1rem; border-radius:6px; border:1px solid #2f5bd3; background:#2f5bd3;
  color:#fff; cursor:pointer; }
button.secondary { background:#fff; color:#2f5bd3; }
input[type=text] { font: inherit; padding:.4rem; border:1px solid #98a2b3; border-radius:6px; min-width: 18rem; }
#status { font-weight:600; }
.notice { padding:.75rem 1rem; border-radius:6px; border:1px solid #fecdca; background:#fef3f2; color:#b42318; }
"""

_SCRIPT = """
const base = location.pathname;
const img = document.getElementById('screen');
const statusEl = document.getElementById('status');
const KEYS = %(keys)s;
let chain = Promise.resolve();
function say(text) { statusEl.textContent = text; }
function post(path, body) {
  return fetch(base + path, {method: 'POST', headers: {'Content-Type': 'application/json'},
    body: body === undefined ? '' : JSON.stringify(body)});
}
function send(body) {  // one at a time, in order: keystrokes must not overtake each other
  chain = chain.then(async () => {
    const r = await post('/input', body);
    if (!r.ok) { const b = await r.json().catch(() => ({})); say(b.message || ('Input failed: ' + r.status)); }
  }).catch(() => say('Input failed'));
  return chain;
}
const es = new EventSource(base + '/frames');
es.addEventListener('frame', (ev) => { img.src = 'data:image/jpeg;base64,' + JSON.parse(ev.data).data;
  img.dataset.frames = String(Number(img.dataset.frames || 0) + 1); });
es.addEventListener('url', (ev) => { document.getElementById('url').textContent = JSON.parse(ev.data).url; });
es.addEventListener('end', () => { es.close(); say('The browser session ended. Reload to start again.'); });
es.onopen = () => say('Live');
es.onerror = () => say('Reconnecting…');
function point(ev) { const r = img.getBoundingClientRect();
  return {x: Math.min(1, Math.max(0, (ev.clientX - r.left) / r.width)),
          y: Math.min(1, Math.max(0, (ev.clientY - r.top) / r.height))}; }
img.addEventListener('click', (ev) => { img.focus(); send({type: 'click', ...point(ev)}); });
img.addEventListener('keydown', (ev) => {
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  if (ev.key.length === 1) { send({type: 'text', text: ev.key}); ev.preventDefault(); }
  else if (KEYS.includes(ev.key)) { send({type: 'key', key: ev.key}); ev.preventDefault(); }
});
img.addEventListener('paste', (ev) => { const t = ev.clipboardData.getData('text'); if (t) send({type: 'text', text: t});
  ev.preventDefault(); });
img.addEventListener('wheel', (ev) => { send({type: 'scroll', ...point(ev), deltaY: ev.deltaY}); ev.preventDefault(); },
  {passive: false});
document.getElementById('typeform').addEventListener('submit', (ev) => { ev.preventDefault();
  const field = document.getElementById('typetext'); if (field.value) send({type: 'text', text: field.value});
  field.value = ''; img.focus(); });
document.getElementById('finish').addEventListener('click', async () => {
  await chain; say('Saving your session…');
  const r = await post('/finish'); const b = await r.json().catch(() => ({}));
  if (r.ok) { es.close(); document.getElementById('live').hidden = true; document.getElementById('done').hidden = false; }
  else { say(b.message || ('Could not finish: ' + r.status)); }
});
document.getElementById('cancel').addEventListener('click', async () => {
  es.close(); await post('/cancel'); say('Cancelled. Nothing was saved.'); });
"""


def _live_page(claim: _Claim) -> HTMLResponse:
    from workbench.browser.page import KEY_NAMES

    nonce = secrets.token_urlsafe(16)
    name = escape(claim.manifest.display_name)
    script = _SCRIPT % {"keys": json.dumps(list(KEY_NAMES))}
    body = f"""
<h1>Sign in to {name}</h1>
<div id="live">
<p>This is a browser running on Workbench. Sign in to {name} below, then press <strong>Done</strong>:
Workbench keeps the session cookies for {escape(claim.auth.cookie_domain)}, encrypted, and your agent can use
{name} on your behalf. Click the picture to focus it, then type.</p>
<div class="bar"><span id="status" role="status">Connecting…</span> <span id="url"></span></div>
<img id="screen" tabindex="0" alt="Live view of the sign-in browser for {name}" width="1280" height="800">
<div class="bar">
<form id="typeform"><label for="typetext">Type or paste into the page:</label>
<input id="typetext" type="text" autocomplete="off"> <button class="secondary" type="submit">Send</button></form>
</div>
<div class="bar"><button id="finish" type="button">Done: I'm signed in</button>
<button id="cancel" class="secondary" type="button">Cancel</button></div>
</div>
<div id="done" hidden role="status"><p><strong>Connected.</strong> {name} is connected; you can close this tab
and return to your agent.</p></div>
"""
    return _document(f"Sign in to {claim.manifest.display_name}", body, 200, nonce, script)


def _html_refusal(refused: _Refused) -> HTMLResponse:
    body = f'<p class="notice" role="alert"><strong>{escape(refused.error)}</strong>: {escape(refused.message)}</p>'
    return _document("Cannot open this browser session", body, refused.status)


def _document(title: str, body: str, status: int, nonce: str = "", script: str = "") -> HTMLResponse:
    script_tag = f'<script nonce="{nonce}">{script}</script>' if script else ""
    doc = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)} · Workbench</title><style>{_STYLE}</style></head>"
        f"<body><main>{body}</main>{script_tag}</body></html>"
    )
    return HTMLResponse(doc, status, headers=_headers(nonce))
