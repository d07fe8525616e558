"""Running tools for a principal, and the audit trail of what ran.

`execute` is the one way a surface runs tools (execute_tools, the REST surface, scheduled jobs):
a plain batch runs concurrently, a composed one in order with each step reading earlier results
(workbench.engine.runs). Every surface's audit event goes through `audit` (off the loop, grouped
with the engine's own rows) or `record` (already on a store thread).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workbench.engine.executor import Engine
    from workbench.identity.auth import Principal
    from workbench.identity.vault import Vault
    from workbench.stores import ActivityPage, ActivityQuery, AuditStore

__all__ = ["RunService"]


class RunService:
    def __init__(self, *, engine: Engine, vault: Vault, audit: AuditStore) -> None:
        self._engine = engine
        self._vault = vault
        self._audit = audit

    async def execute(
        self,
        principal: Principal,
        executions: list[dict[str, Any]],
        *,
        compose: bool = False,
        template: Any = None,
        has_return: bool = False,
    ) -> dict[str, Any]:
        from workbench.engine.runs import run_compose, run_plain

        runner = run_compose if compose else run_plain
        vault = self._vault.reader(principal.user.id)
        return await runner(self._engine, vault, principal, executions, template, has_return)

    async def audit(self, event: dict[str, Any]) -> None:
        """Write one audit event off the loop; never raises (a refused row is logged, not lost)."""
        await self._engine.audit_writes.write([event])

    def record(self, event: dict[str, Any]) -> None:
        """Write one audit event now (blocking: callers already on a store thread)."""
        self._audit.append(event)

    def redrive_audit(self, event: dict[str, Any], until: float) -> dict[str, Any]:
        """Write a batch of audit rows the audit queue held back (workbench.aws.audit_queue) before
        `until` (time.monotonic()); blocking."""
        from workbench.aws.audit_queue import redrive

        return redrive(self._audit, event, until=until)

    def activity(self, user_id: str, query: ActivityQuery) -> ActivityPage:
        """One page of this user's own audit events (blocking)."""
        return self._audit.activity(user_id, query)
