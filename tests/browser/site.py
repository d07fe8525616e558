"""A small website on loopback for the browser tests: plain pages for the browser tools, and a
service with a login form (session cookie `sid`) and a JSON API that needs that cookie."""

from __future__ import annotations

import html
import json
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

USER, PASSWORD = "ada", "correct horse"

# The login form sits at fixed places so a test can click it through the live frames.
# (left, top, width, height) in CSS pixels of the 1280x800 viewport.
USER_BOX = (100, 100, 300, 40)
PASSWORD_BOX = (100, 180, 300, 40)
SIGNIN_BOX = (100, 260, 200, 50)


def center(box: tuple[int, int, int, int]) -> tuple[float, float]:
    left, top, width, height = box
    return left + width / 2, top + height / 2


def _pos(box: tuple[int, int, int, int]) -> str:
    left, top, width, height = box
    return (
        f"position:absolute;left:{left}px;top:{top}px;width:{width}px;height:{height}px;box-sizing:border-box"
    )


PAGES = {
    "/": (
        "Home",
        "<h1>Welcome home</h1><p id=intro>A page for the browser tools.</p>"
        "<a href='/form'>Form page</a> "
        "<button id=retitle onclick=\"document.title='Changed'\">Change title</button> "
        "<a href='#below'>Jump below</a> <a href='/empty'>Nothing</a><p id=below>Below</p>",
    ),
    "/form": (
        "Form",
        "<h1>Say hello</h1><form action='/result' method=get>"
        "<label for=name>Your name</label> <input id=name name=name value='placeholder'>"
        "<button type=submit>Send</button></form>",
    ),
    "/login": (
        "Sign in",
        f"<form method=post action='/login'>"
        f"<input id=user name=user aria-label=User style='{_pos(USER_BOX)}'>"
        f"<input id=password name=password type=password aria-label=Password style='{_pos(PASSWORD_BOX)}'>"
        f"<button id=signin type=submit style='{_pos(SIGNIN_BOX)}'>Sign in</button></form>",
    ),
}


@dataclass
class Site:
    url: str
    sessions: dict[str, str] = field(default_factory=dict)  # sid -> user
    api_requests: list[dict[str, str]] = field(default_factory=list)


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(
            self, status: int, body: str, ctype: str = "text/html", headers: dict[str, str] | None = None
        ) -> None:
            raw = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", f"{ctype}; charset=utf-8")
            self.send_header("Content-Length", str(len(raw)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(raw)

        def _page(
            self, title: str, body: str, status: int = 200, headers: dict[str, str] | None = None
        ) -> None:
            doc = f"<!doctype html><html><head><title>{html.escape(title)}</title></head><body>{body}</body></html>"
            self._send(status, doc, headers=headers)

        def _cookies(self) -> dict[str, str]:
            jar = SimpleCookie(self.headers.get("Cookie", ""))
            return {k: m.value for k, m in jar.items()}

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if parts.path in PAGES:
                title, body = PAGES[parts.path]
                extra = {"Set-Cookie": "theme=dark; Path=/"} if parts.path == "/login" else None
                return self._page(title, body, headers=extra)
            if parts.path == "/result":
                name = parse_qs(parts.query).get("name", [""])[0]
                return self._page("Result", f"<p id=greeting>Hello, {html.escape(name)}!</p>")
            if parts.path == "/empty":
                return self._send(204, "")
            if parts.path == "/set-cookie":
                return self._page("Cookie set", "<p>ok</p>", headers={"Set-Cookie": "mark=user-a; Path=/"})
            if parts.path == "/cookies":
                return self._page(
                    "Cookies", f"<pre id=cookies>{html.escape(self.headers.get('Cookie', ''))}</pre>"
                )
            if parts.path == "/account":
                user = site.sessions.get(self._cookies().get("sid", ""))
                return self._page("Account", f"<p id=who>Signed in as {html.escape(user or 'nobody')}</p>")
            if parts.path == "/api/me":
                site.api_requests.append({"cookie": self.headers.get("Cookie", "")})
                user = site.sessions.get(self._cookies().get("sid", ""))
                if user is None:
                    return self._send(401, json.dumps({"error": "not signed in"}), "application/json")
                return self._send(200, json.dumps({"user": user}), "application/json")
            return self._page("Not found", "<p>nothing here</p>", status=404)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            form = parse_qs(self.rfile.read(length).decode())
            if urlsplit(self.path).path != "/login":
                return self._send(404, "")
            if form.get("user", [""])[0] == USER and form.get("password", [""])[0] == PASSWORD:
                sid = secrets.token_urlsafe(16)
                site.sessions[sid] = USER
                self.send_response(303)
                self.send_header("Location", "/account")
                self.send_header("Set-Cookie", f"sid={sid}; Path=/; HttpOnly; Max-Age=3600")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            return self._page("Sign in failed", "<p id=error>Wrong user or password</p>", status=401)

    return Handler


@contextmanager
def serve_site() -> Iterator[Site]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(Site("")))
    site = Site(f"http://127.0.0.1:{server.server_address[1]}")
    server.RequestHandlerClass = _handler(site)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
