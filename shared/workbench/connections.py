"""connect / wait_for_connection: pending connect records in the TTL store.

A link minted by `connect` is a claim, not a capability: it names the user it was minted for and
carries no PKCE verifier; nothing is sent to the provider until the same user redeems it from a
portal session (see portal/ and oauth_client.py).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

from workbench.registry import Registry
from workbench.settings import Settings
from workbench.stores import PendingConnect, PendingStore, User

__all__ = ["ConnectFlow"]

UNKNOWN = {"error": "Unknown connectionId"}


class ConnectFlow:
    def __init__(
        self,
        settings: Settings,
        registry: Registry,
        pending: PendingStore,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.settings = settings
        self.registry = registry
        self.pending = pending
        self.clock = clock
        self.sleep = sleep

    def link(self, connection_id: str) -> str:
        return f"{self.settings.public_url.rstrip('/')}/connect/{connection_id}"

    def start(self, user: User, integration: str) -> dict[str, Any]:
        manifest = self.registry.manifest(integration)
        if manifest is None:
            return {"error": f"Unknown integration: {integration}"}
        kind = manifest.auth.type
        if kind == "none":
            return {"error": f"{integration} needs no connection; its tools work as they are."}
        if kind == "api_key":
            portal = f"{self.settings.public_url.rstrip('/')}/portal/integrations"
            return {
                "error": f"{integration} is connected with an API key, which only the user can enter: "
                f"ask them to open {portal} and connect it there."
            }
        now = self.clock()
        connection_id = "conn_" + secrets.token_urlsafe(24)
        self.pending.put(
            PendingConnect(
                id=connection_id,
                user_id=user.id,
                integration=integration,
                auth_type=kind,
                expires_at=now + self.settings.connect_ttl_seconds,
                created_at=now,
            )
        )
        return {"connectionId": connection_id, "type": kind, "url": self.link(connection_id)}

    async def wait(self, user: User, connection_id: str, timeout_sec: int) -> dict[str, Any]:
        """Poll once a second, for at most `wait_block_seconds` per call (API Gateway's limit)."""
        call_started = self.clock()
        while True:
            now = self.clock()
            rec = self.pending.get(connection_id, now=now)
            if rec is None or rec.user_id != user.id:
                return dict(UNKNOWN)  # no existence oracle: another user's id looks unknown
            if rec.status == "CONNECTED":
                return {"status": "CONNECTED"}
            if rec.status == "EXPIRED":
                self.pending.delete(connection_id)
                return {"status": "EXPIRED"}
            agent_deadline = rec.created_at + timeout_sec
            if now >= agent_deadline:
                self.pending.delete(connection_id)  # reap before answering
                return {"status": "TIMEOUT"}
            if now - call_started >= self.settings.wait_block_seconds:
                return {
                    "status": "PENDING",
                    "message": "The user has not finished connecting yet. Call wait_for_connection again "
                    "with the same connectionId.",
                    "retryAfterSec": 0,
                }
            await self.sleep(1.0)
