"""The stack's CodeDeploy PreTraffic hook (template.yaml, MigrateHookFunction): on every deploy, before
any traffic reaches the new code, bring the tables' data to its schema (workbench.stores.migrations),
then tell CodeDeploy whether that worked. A failed migration fails the hook, and CodeDeploy stops the
deploy: the previous version keeps all the traffic, on data it still understands (migrations are
additive)."""

from __future__ import annotations

import logging
from typing import Any

from workbench.aws.clients import make_client
from workbench.composition import build_stores
from workbench.runtime import coldgc
from workbench.services.schema import SchemaService
from workbench.settings import Settings

__all__ = ["handler"]

logger = logging.getLogger("workbench")


def handler(
    event: dict[str, Any], context: Any, *, codedeploy: Any | None = None, stores: Any = None
) -> dict[str, Any]:
    # Importing workbench.runtime on Lambda held collection back for a surface's cold start
    # (runtime/coldgc.py); a migration, which may walk whole tables, runs with it as usual.
    coldgc.resume()
    settings = Settings.from_env()
    status = "Succeeded"
    answer: dict[str, Any]
    try:
        applied = SchemaService(stores or build_stores(settings)).migrate()
        answer = {"status": status, "applied": applied}
        logger.info("migrations applied: %s", applied or "none")
    except Exception as exc:  # reported to CodeDeploy, which stops the deploy
        status = "Failed"
        answer = {"status": status, "error": f"{type(exc).__name__}: {exc}"}
        logger.exception("migration failed")
    client = codedeploy or make_client("codedeploy", settings)
    client.put_lifecycle_event_hook_execution_status(
        deploymentId=event["DeploymentId"],
        lifecycleEventHookExecutionId=event["LifecycleEventHookExecutionId"],
        status=status,
    )
    return answer
