"""Approval before a write, for `approve` grants (docs/grants.md).

A call of an `approve` grant to a tool that is not read-only does not run. Its item answers with a
sentence and a link to the portal page where the key's (or client's) own user sees the tool, its
title and annotations, the arguments as the call would send them (vault references unresolved,
literal secrets masked) and the requesting client, and approves or denies it. The agent waits with
`wait_for_connection` (the approval id is the connectionId) and runs the same call again: it then
runs once. The approval binds to the credential, the tool and the exact arguments (a salted
SHA-256 of them), is single use and expires (`approval_ttl`, a TTL record in the approvals store,
so every instance sees it); every step is audited (action APPROVAL).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from workbench.engine.executor import LITERAL_SECRET_TOOLS, ToolCall, mask_literal_secrets
from workbench.guard import deadline
from workbench.stores import Approval, ApprovalStore

if TYPE_CHECKING:
    from workbench.engine.blocking import BlockingPool
    from workbench.identity.auth import Principal
    from workbench.manifest import Manifest
    from workbench.stores import User
    from workbench.tools import Tool

__all__ = ["MAX_PENDING", "Approvals"]

MAX_PENDING = 50  # undecided approvals per user: past it, new calls are refused until some are decided
_ID_RE = re.compile(r"^apr_[A-Za-z0-9_-]{22}$")


def is_approval_id(value: str) -> bool:
    return bool(_ID_RE.match(value))


class Approvals:
    def __init__(
        self,
        store: ApprovalStore,
        *,
        public_url: str,
        clock: Callable[[], float],
        io: BlockingPool,
        audit: Callable[[dict[str, Any]], Awaitable[None]],
        ttl: float = 600,
        wait_block: float = 20,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.store = store
        self.public_url = public_url.rstrip("/")
        self.clock = clock
        self.io = io
        self.audit = audit
        self.ttl = ttl
        self.wait_block = wait_block
        self.sleep = sleep

    def link(self, approval_id: str) -> str:
        return f"{self.public_url}/portal/approvals/{approval_id}"

    @staticmethod
    def _credential(principal: Principal) -> str:
        return f"{principal.via}:{principal.credential_id or principal.client_id or ''}"

    @staticmethod
    def _digest(salt: str, principal: Principal, tool: str, written: Any) -> str:
        canonical = json.dumps(
            {"credential": Approvals._credential(principal), "tool": tool, "args": written},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )
        return hashlib.sha256(f"{salt}\x00{canonical}".encode()).hexdigest()

    # -- the engine's gate ----------------------------------------------------------------------

    async def gate(
        self,
        principal: Principal,
        tool: Tool,
        manifest: Manifest,
        annotations: Mapping[str, Any],
        call: ToolCall,
    ) -> dict[str, Any] | None:
        written = call.written if call.written is not None else call.args
        now = self.clock()
        mine = await self.io.run(self.store.list_for, principal.user.id, now=now)
        same = [
            a
            for a in mine
            if a.tool == tool.name and a.digest == self._digest(a.salt, principal, tool.name, written)
        ]
        for approval in same:
            if approval.status == "APPROVED" and await self.io.run(
                self.store.use, principal.user.id, approval.id, now=now
            ):
                await self._audit(principal, approval, "USED", success=True)
                return None  # approved: this run is the one it allows
        pending = next((a for a in same if a.status == "PENDING"), None)
        denied = next((a for a in same if a.status == "DENIED"), None)
        if pending is None and denied is not None:
            return {
                "error": f"{tool.name} was denied by the user ({denied.decided_by}); nothing was done. Do not "
                "retry it unless the user asks you to."
            }
        if pending is None:
            if sum(a.status == "PENDING" for a in mine) >= MAX_PENDING:
                return {
                    "error": f"{tool.name} needs the user's approval, and {MAX_PENDING} approvals already wait for "
                    "a decision; nothing was done. Ask the user to decide them at "
                    f"{self.public_url}/portal/approvals first."
                }
            shown = mask_literal_secrets(written) if tool.name.startswith(LITERAL_SECRET_TOOLS) else written
            salt = secrets.token_hex(16)
            pending = Approval(
                id="apr_" + secrets.token_urlsafe(16),
                user_id=principal.user.id,
                salt=salt,
                digest=self._digest(salt, principal, tool.name, written),
                tool=tool.name,
                integration=manifest.name,
                annotations=json.dumps(dict(annotations), sort_keys=True),
                arguments=json.dumps(shown, ensure_ascii=False, sort_keys=True, default=str),
                client=_client_label(principal),
                created_at=now,
                expires_at=now + self.ttl,
            )
            await self.io.run(self.store.put, pending)
            await self._audit(principal, pending, "REQUESTED", success=True)
        return {
            "error": f"{tool.name} needs the user's approval: {principal.grant_holder} runs only read-only tools "
            f"without it, so nothing was done. Ask the user to open {self.link(pending.id)} and approve it, then "
            f'call wait_for_connection with connectionId "{pending.id}" (it answers APPROVED or DENIED) and run '
            "exactly the same call again: it runs once. A call with other arguments needs a new approval. "
            f"The approval expires in {int(self.ttl // 60)} minutes."
        }

    # -- the person's side (portal) -------------------------------------------------------------

    def listing(self, user_id: str) -> list[Approval]:
        """The user's unexpired approvals, newest first (blocking)."""
        return self.store.list_for(user_id, now=self.clock())

    def get(self, user_id: str, approval_id: str) -> Approval | None:
        """Blocking. Another user's id reads as unknown."""
        if not is_approval_id(approval_id):
            return None
        return self.store.get(user_id, approval_id, now=self.clock())

    async def decide(self, user: User, approval_id: str, approve: bool) -> Approval | None:
        """The signed-in user's decision on their own pending approval; None if it is not theirs,
        already decided, or expired."""
        if not is_approval_id(approval_id):
            return None
        status = "APPROVED" if approve else "DENIED"
        done = await self.io.run(
            self.store.decide, user.id, approval_id, status, user.email, now=self.clock()
        )
        if done is not None:
            await self.audit(
                {
                    "action": "APPROVAL",
                    "user": user.id,
                    "tool": done.tool,
                    "integration": done.integration,
                    "approval": done.id,
                    "status": status,
                    "by": user.email,
                    "client": done.client,
                    "success": True,
                    "error": None,
                    "ts": self.clock(),
                    "via": "session",
                }
            )
        return done

    async def wait(self, user: User, approval_id: str, timeout_sec: int) -> dict[str, Any]:
        """wait_for_connection for an approval id: APPROVED, DENIED, EXPIRED, TIMEOUT or PENDING."""
        started = self.clock()
        block = self.wait_block
        left = deadline.remaining()
        if left is not None:
            block = min(block, max(0.0, left - 1.0))
        while True:
            now = self.clock()
            rec = await self.io.run(self.get, user.id, approval_id)
            if rec is None:
                return {"error": "Unknown connectionId"}
            if rec.status in ("APPROVED", "USED"):
                return {"status": "APPROVED", "message": "Run exactly the same call again: it runs once."}
            if rec.status in ("DENIED", "EXPIRED"):
                return {"status": rec.status}
            if now >= rec.created_at + timeout_sec:
                return {"status": "TIMEOUT"}
            if now - started >= block:
                return {
                    "status": "PENDING",
                    "message": "The user has not decided yet. Call wait_for_connection again with the same "
                    "connectionId.",
                    "retryAfterSec": 0,
                }
            await self.sleep(1.0)

    async def _audit(self, principal: Principal, approval: Approval, status: str, *, success: bool) -> None:
        await self.audit(
            {
                "action": "APPROVAL",
                "user": principal.user.id,
                "tool": approval.tool,
                "integration": approval.integration,
                "approval": approval.id,
                "status": status,
                "client": approval.client,
                "success": success,
                "error": None,
                "ts": self.clock(),
                "via": principal.via,
            }
        )


def _client_label(principal: Principal) -> str:
    if principal.via == "api_key":
        label = f" ({principal.credential_label})" if principal.credential_label else ""
        return f"API key wb_{principal.credential_id}_…{label}"
    if principal.via == "oauth":
        return f"MCP client {principal.credential_label or principal.client_id}"
    if principal.via == "schedule":
        return "a scheduled job"
    return principal.via
