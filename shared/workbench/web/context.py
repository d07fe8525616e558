"""What every browser-facing handler needs: the signed-in user, CSRF checks, form parsing."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit

from starlette.requests import Request
from starlette.responses import Response

from workbench.guard.bodylimit import BodyTooLarge
from workbench.web.html import html_page, notices, redirect

if TYPE_CHECKING:
    from workbench.composition import Gateway
    from workbench.stores import User

__all__ = ["MAX_FORM_BYTES", "Endpoint", "WebContext", "safe_next"]

MAX_FORM_BYTES = 64 * 1024

Endpoint = Callable[[Request], Awaitable[Response]]


def safe_next(value: str | None, default: str = "/portal/integrations") -> str:
    """Only same-site paths: "/x?y" yes; "//evil", "https://evil", "/\\evil" no (open redirect)."""
    if not value or not value.startswith("/") or value.startswith(("//", "/\\")):
        return default
    if any(ch in value for ch in "\r\n\t"):
        return default
    return value


@dataclass(slots=True)
class WebContext:
    gw: Gateway
    # The local all-in-one gateway (`workbench serve`): sign-in is the printed one-time link.
    local: bool = False

    def user(self, request: Request) -> User | None:
        return self.gw.sessions.current_user(request, self.gw.auth.user)

    def csrf(self, request: Request) -> str:
        return self.gw.sessions.csrf_token(request)

    def same_origin(self, request: Request) -> bool:
        """A browser's Origin header, when sent, must be ours (a second line behind the CSRF token)."""
        origin = request.headers.get("origin")
        if not origin or origin == "null":
            return origin is None
        own = urlsplit(self.gw.settings.public_url)
        got = urlsplit(origin)
        return (got.scheme, got.netloc) == (own.scheme, own.netloc) or got.netloc == request.url.netloc

    async def form(self, request: Request) -> dict[str, str] | None:
        """The posted form as str -> str, or None when it is not a form. A body over MAX_FORM_BYTES
        stops being read at the cap (BodyLimit) and answers 413."""
        try:
            data = await request.form()
        except BodyTooLarge:
            raise
        except Exception:  # malformed multipart/urlencoded body
            return None
        return {k: v for k, v in data.items() if isinstance(v, str)}

    def signin_redirect(self, request: Request) -> Response:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return redirect("/portal/signin?next=" + quote(target, safe=""))

    def forbidden(self, request: Request, user: User | None) -> Response:
        return html_page(
            "Form expired",
            notices(("error", "This form has expired or did not come from this page. Reload and try again."))
            + '<p><a href="/portal/integrations">Back to the portal</a></p>',
            status=403,
            email=user.email if user else None,
            csrf=self.csrf(request),
        )

    async def checked_form(self, request: Request, user: User) -> dict[str, str] | Response:
        """The form of a state-changing post, after the CSRF token and Origin checks."""
        form = await self.form(request)
        if form is None:
            return html_page("Bad request", notices(("error", "The form could not be read.")), status=400)
        if not self.same_origin(request) or not self.gw.sessions.check_csrf(request, form.get("csrf")):
            return self.forbidden(request, user)
        return form

    # -- post/redirect/get: a notice for the next page, sealed to this session ----------------------

    def redirect_with_notice(
        self, request: Request, url: str, kind: str, message: str, *, target: str = ""
    ) -> Response:
        """Answer a form post with a redirect; the GET shows `message` once (a reload shows nothing,
        repeats nothing). The message rides a session-bound flash, so no link can forge one.
        `target` names what it is about (e.g. the integration whose form was refused)."""
        response = redirect(url)
        notice = {"notice": [kind, message[:1000]], "target": target}
        self.gw.sessions.set_flash(request, response, json.dumps(notice))
        return response

    def read_notice(self, request: Request) -> tuple[str, str, str] | None:
        """(kind, message, target) a post before left for this page; pair with `sessions.clear_flash`."""
        raw = self.gw.sessions.read_flash(request)
        if not raw:
            return None
        try:
            data = json.loads(raw)
            kind, message = data["notice"]
            target = data.get("target", "")
        except (ValueError, KeyError, TypeError, AttributeError):
            return None
        if kind not in ("ok", "error") or not isinstance(message, str) or not isinstance(target, str):
            return None
        return kind, message, target

    def take_notice(self, request: Request) -> str:
        """That notice rendered (empty when there is none)."""
        found = self.read_notice(request)
        return notices((found[0], found[1])) if found else ""

    # -- handler preambles: each handler states only its own work ---------------------------------

    def page(self, render: Callable[[Request, User], Response]) -> Endpoint:
        """A GET page for a signed-in user; anyone else goes to sign-in and comes back here."""

        async def endpoint(request: Request) -> Response:
            user = self.user(request)
            if user is None:
                return self.signin_redirect(request)
            return render(request, user)

        return endpoint

    def form_post(self, handle: Callable[[Request, User, dict[str, str]], Awaitable[Response]]) -> Endpoint:
        """A state-changing form post by a signed-in user, after the CSRF token and Origin checks.
        Its size cap is the BodyRule of its path (64 KiB unless a surface declares more)."""

        async def endpoint(request: Request) -> Response:
            user = self.user(request)
            if user is None:
                return redirect("/portal/signin")
            form = await self.checked_form(request, user)
            if isinstance(form, Response):
                return form
            return await handle(request, user, form)

        return endpoint
