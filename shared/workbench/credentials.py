"""Provider credentials: stored encrypted per (user, integration), refreshed lazily on use, and
injected into each upstream call. The agent never sees them.

The decrypted credential is a dict:
  oauth2:  {"access_token", "refresh_token"?, "token_type"?, "scope"?}
  api_key: {<field name>: <value>, ...} as the manifest declares
  cookie:  {"cookies": [{"name", "value", "domain", "path", "expires"}]}
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import httpx

from workbench.crypto import Cipher
from workbench.errors import NotConnected, ReconnectRequired
from workbench.registry import ApiKeyAuth, CookieAuth, Manifest, NoAuth, OAuth2Auth
from workbench.stores import Connection, ConnectionStore

__all__ = ["REFRESH_MARGIN_SECONDS", "Credentials", "credential_context"]

REFRESH_MARGIN_SECONDS = 30


def credential_context(user_id: str, integration: str) -> dict[str, str]:
    return {"user": user_id, "integration": integration, "field": "credential"}


Refresher = Callable[[Manifest, dict[str, Any]], "asyncio.Future[dict[str, Any]] | Any"]


class Credentials:
    """Reads, writes and refreshes connections; builds the auth headers for upstream calls."""

    def __init__(
        self,
        store: ConnectionStore,
        cipher: Cipher,
        *,
        clock: Callable[[], float] = time.time,
        refresh: Callable[[Manifest, dict[str, Any]], Any] | None = None,
    ) -> None:
        self.store = store
        self.cipher = cipher
        self.clock = clock
        self._refresh = refresh
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    # -- storage -------------------------------------------------------------------------------

    def save(
        self, user_id: str, integration: str, credential: dict[str, Any], *, expires_at: float | None = None
    ) -> None:
        blob = self.cipher.encrypt_json(credential, credential_context(user_id, integration))
        current = self.store.get(user_id, integration)
        version = (current.version if current else 0) + 1
        self.store.put(Connection(user_id, integration, blob, "connected", expires_at, self.clock(), version))

    def load(self, conn: Connection) -> dict[str, Any]:
        value = self.cipher.decrypt_json(conn.credential, credential_context(conn.user_id, conn.integration))
        assert isinstance(value, dict)
        return value

    def is_connected(self, manifest: Manifest, conn: Connection | None) -> bool:
        if isinstance(manifest.auth, NoAuth):
            return True
        if conn is None or conn.status != "connected":
            return False
        if isinstance(manifest.auth, CookieAuth):
            return _cookies_live(self.load(conn), manifest.auth, self.clock())
        return True

    # -- use -----------------------------------------------------------------------------------

    async def access(self, manifest: Manifest, user_id: str, conn: Connection | None) -> dict[str, Any]:
        """The usable credential, refreshed first if it expires within the margin."""
        if conn is None:
            raise NotConnected(manifest.name)
        if conn.status == "reconnect_required":
            raise ReconnectRequired(manifest.name)
        cred = self.load(conn)
        if (
            isinstance(manifest.auth, OAuth2Auth)
            and conn.expires_at is not None
            and conn.expires_at - self.clock() <= REFRESH_MARGIN_SECONDS
        ):
            cred = await self._refresh_once(manifest, user_id, conn)
        return cred

    async def _refresh_once(self, manifest: Manifest, user_id: str, seen: Connection) -> dict[str, Any]:
        lock = self._locks.setdefault((user_id, manifest.name), asyncio.Lock())
        async with lock:
            latest = self.store.get(user_id, manifest.name)
            if latest is None:
                raise NotConnected(manifest.name)
            if (
                latest.version != seen.version
                and (latest.expires_at or 0) - self.clock() > REFRESH_MARGIN_SECONDS
            ):
                return self.load(latest)  # someone else refreshed meanwhile
            cred = self.load(latest)
            if not cred.get("refresh_token") or self._refresh is None:
                raise ReconnectRequired(
                    manifest.name, "the access token expired and no refresh token is stored"
                )
            result = self._refresh(manifest, cred)
            if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
                result = await result
            fresh: dict[str, Any] = dict(result)
            if fresh.get("error"):
                self.store.put(
                    replace(latest, status="reconnect_required", version=latest.version + 1),
                    expected_version=latest.version,
                )
                raise ReconnectRequired(manifest.name, str(fresh["error"]))
            new_cred = {**cred, **{k: v for k, v in fresh.items() if k != "expires_in"}}
            expires_at = self.clock() + float(fresh["expires_in"]) if fresh.get("expires_in") else None
            blob = self.cipher.encrypt_json(new_cred, credential_context(user_id, manifest.name))
            self.store.put(
                Connection(
                    user_id, manifest.name, blob, "connected", expires_at, self.clock(), latest.version + 1
                ),
                expected_version=latest.version,
            )
            return new_cred

    @staticmethod
    def headers_for(manifest: Manifest, cred: dict[str, Any]) -> dict[str, str]:
        auth = manifest.auth
        if isinstance(auth, OAuth2Auth):
            return {"Authorization": f"Bearer {cred['access_token']}"}
        if isinstance(auth, ApiKeyAuth):
            values = [str(cred.get(f.name, "")) for f in auth.fields]
            if auth.scheme == "Basic":
                raw = ":".join(values[:2]).encode()
                return {auth.header: "Basic " + base64.b64encode(raw).decode()}
            value = values[0] if values else ""
            return {auth.header: f"{auth.scheme} {value}" if auth.scheme else value}
        if isinstance(auth, CookieAuth):
            cookies = cred.get("cookies", [])
            return {"Cookie": "; ".join(f"{c['name']}={c['value']}" for c in cookies)}
        return {}


def _cookies_live(cred: dict[str, Any], auth: CookieAuth, now: float) -> bool:
    live = {
        c["name"]
        for c in cred.get("cookies", [])
        if not c.get("expires") or c["expires"] < 0 or c["expires"] > now
    }
    wanted = set(auth.session_cookies)
    return bool(live) and (not wanted or wanted <= live)


class InjectedAuth(httpx.Auth):
    """httpx auth flow that asks for the credential per request (so a refresh lands mid-batch)."""

    def __init__(self, headers: Callable[[], Any]) -> None:
        self._headers = headers

    async def async_auth_flow(self, request: httpx.Request):  # type: ignore[no-untyped-def]
        for name, value in (await self._headers()).items():
            request.headers[name] = value
        yield request
