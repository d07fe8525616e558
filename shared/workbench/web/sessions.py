"""Portal sessions: a signed cookie naming the user, with an expiry, readable by any Lambda instance.
Signing out also records the session (by its hash) in the store's session revocations, which every
instance consults: the old cookie, CSRF token and all, no longer signs anyone in anywhere.

Cookie: `__Host-wb_session` — Secure, HttpOnly, SameSite=Lax, Path=/, no Domain. The value is
`<user id>.<expires>.<nonce>.<HMAC-SHA256>`; the HMAC key is derived from the gateway's session secret.
CSRF: state-changing forms carry `csrf_token(session)`, an HMAC of the session value.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response

from workbench.errors import ConfigError

if TYPE_CHECKING:
    from workbench.stores import SessionRevocationStore, User

__all__ = ["FLASH_COOKIE", "SESSION_COOKIE", "SessionCodec"]

# workbench.mcp.app names it too (without importing this module): keep the two in step.
SESSION_COOKIE = "__Host-wb_session"
SESSION_SECONDS = 12 * 3600
# A one-shot value carried across a post/redirect/get (a new API key): sealed to the session.
FLASH_COOKIE = "__Host-wb_flash"
FLASH_SECONDS = 120


class SessionCodec:
    def __init__(
        self,
        secret: bytes | Callable[[], bytes],
        *,
        clock: Callable[[], float] = time.time,
        secure: bool = True,
        revocations: SessionRevocationStore | None = None,
    ) -> None:
        # A callable is asked on each use (it caches): on AWS the secret is read at run time, and a
        # rotated secret takes over (signing everyone out) without a restart. It raises ConfigError
        # when there is no secret to sign with; reading a cookie then finds no session.
        self._secret = secret
        self._derived: tuple[bytes, bytes, bytes, bytes] | None = None
        self.clock = clock
        self.revocations = revocations
        # A `__Host-` cookie is refused by browsers unless it is Secure, so it always is. Browsers
        # accept Secure cookies from http://localhost and http://127.0.0.1 (loopback counts as a
        # secure context), which keeps the local gateway working; `secure=False` is only recorded
        # for callers that want to know whether the public URL is https.
        self.public_https = secure
        self.secure = True

    def _keys(self) -> tuple[bytes, bytes, bytes]:
        """(session MAC key, CSRF key, flash encryption key), derived from the current secret."""
        secret = self._secret() if callable(self._secret) else self._secret
        derived = self._derived
        if derived is None or derived[0] != secret:
            derived = self._derived = (
                secret,
                hashlib.sha256(b"workbench-session\x00" + secret).digest(),
                hashlib.sha256(b"workbench-csrf\x00" + secret).digest(),
                hashlib.sha256(b"workbench-flash\x00" + secret).digest(),
            )
        return derived[1], derived[2], derived[3]

    def _mac(self, body: str) -> str:
        return hmac.new(self._keys()[0], body.encode(), hashlib.sha256).hexdigest()

    def issue(self, user_id: str, ttl: int = SESSION_SECONDS) -> str:
        # The nonce makes every sign-in its own session: one can be revoked without the next.
        body = f"{user_id}.{int(self.clock()) + ttl}.{secrets.token_urlsafe(12)}"
        return f"{body}.{self._mac(body)}"

    def read(self, value: str | None) -> str | None:
        """The user id of a valid, unexpired session value; None otherwise."""
        parsed = _parts(value)
        if parsed is None:
            return None
        body, mac, user_id, expires = parsed
        try:
            expected = self._mac(body)
        except ConfigError:
            return None
        if not hmac.compare_digest(mac, expected):
            return None
        try:
            if int(expires) <= self.clock():
                return None
        except ValueError:
            return None
        return user_id

    def current_user(self, request: Request, user: Callable[[str], User | None]) -> User | None:
        """The signed-in user, looked up by id with `user` (AuthService.user; blocking); None when
        there is no valid session, or it was signed out."""
        value = request.cookies.get(SESSION_COOKIE)
        user_id = self.read(value)
        if not user_id or value is None:
            return None
        if self.revocations is not None and self.revocations.is_revoked(_session_hash(value)):
            return None  # signed out (on whichever instance)
        return user(user_id)

    def revoke(self, request: Request) -> None:
        """End the request's session server-side (sign-out): recorded until the session would have
        expired, so the cookie is refused on every instance even if a copy of it is kept."""
        value = request.cookies.get(SESSION_COOKIE)
        parsed = _parts(value)
        if value is None or parsed is None or self.revocations is None or self.read(value) is None:
            return
        self.revocations.revoke(_session_hash(value), float(parsed[3]))

    def csrf_token(self, request: Request) -> str:
        session = request.cookies.get(SESSION_COOKIE, "")
        return hmac.new(self._keys()[1], session.encode(), hashlib.sha256).hexdigest()

    def check_csrf(self, request: Request, token: str | None) -> bool:
        try:
            expected = self.csrf_token(request)
        except ConfigError:
            return False
        return bool(token) and hmac.compare_digest(expected, token or "")

    def set_cookie(self, response: Response, user_id: str) -> None:
        response.set_cookie(
            SESSION_COOKIE,
            self.issue(user_id),
            max_age=SESSION_SECONDS,
            path="/",
            secure=self.secure,
            httponly=True,
            samesite="lax",
        )

    def clear_cookie(self, response: Response) -> None:
        response.delete_cookie(SESSION_COOKIE, path="/", secure=self.secure, httponly=True, samesite="lax")

    # -- flash: post/redirect/get for a value shown once ---------------------------------------------

    def set_flash(self, request: Request, response: Response, value: str) -> None:
        """Carry `value` to the next page of this session only: AES-GCM under a key derived from
        the session secret, bound to the session cookie (another session cannot open it)."""
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        nonce = os.urandom(12)
        aad = request.cookies.get(SESSION_COOKIE, "").encode()
        sealed = nonce + AESGCM(self._keys()[2]).encrypt(nonce, value.encode(), aad)
        response.set_cookie(
            FLASH_COOKIE,
            base64.urlsafe_b64encode(sealed).decode(),
            max_age=FLASH_SECONDS,
            path="/",
            secure=self.secure,
            httponly=True,
            samesite="strict",
        )

    def read_flash(self, request: Request) -> str | None:
        """The value the post before set, if it is this session's; pair with `clear_flash`."""
        raw = request.cookies.get(FLASH_COOKIE)
        if raw is None:
            return None
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        try:
            sealed = base64.urlsafe_b64decode(raw.encode())
            aad = request.cookies.get(SESSION_COOKIE, "").encode()
            return AESGCM(self._keys()[2]).decrypt(sealed[:12], sealed[12:], aad).decode()
        except (ValueError, InvalidTag, UnicodeDecodeError, ConfigError):
            return None

    def clear_flash(self, response: Response) -> None:
        """Shown once: the page that read the flash deletes it, so a reload shows nothing."""
        response.delete_cookie(FLASH_COOKIE, path="/", secure=self.secure, httponly=True, samesite="strict")


def _parts(value: str | None) -> tuple[str, str, str, str] | None:
    """(signed body, MAC, user id, expiry) of `<user id>.<expires>.<nonce>.<MAC>`; None if malformed."""
    if not value or value.count(".") < 3:
        return None
    body, _, mac = value.rpartition(".")
    user_id, _, expires = body.rpartition(".")[0].rpartition(".")
    return body, mac, user_id, expires


def _session_hash(value: str) -> str:
    return hashlib.sha256(b"workbench-session-id\x00" + value.encode()).hexdigest()
