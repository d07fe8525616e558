"""The REST form of execute_tools (seed 000): plain JSON, same engine, same result and error shapes,
no JSON-RPC envelope and no result cap. Shared by POST /rest/:integration and scheduled jobs.

Body: {"tool": "...", "args": {...}} for one tool (answered with that execution's own {result} or
error object) or {"executions": [...]} for a batch (answered with {"results": [...]}).
Request-level problems (malformed body, compose/return, a tool of another integration) are HTTP
400, an unknown integration 404 — all as {"error": "..."}. Per-tool failures are data: HTTP 200,
except when every execution failed for want of the store or KMS (an outage): 503
{"error": "TEMPORARILY_UNAVAILABLE", "message": ...} with Retry-After, as for any outage on /rest.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbench.engine.runs import parse_executions
from workbench.errors import InvalidInput, JobFailed, Unavailable
from workbench.identity.auth import Principal
from workbench.identity.grants import FULL, Grant
from workbench.observability import log_event

if TYPE_CHECKING:
    from workbench.composition import Gateway

__all__ = [
    "COMPOSE_REFUSED",
    "SCHEDULE_SOURCE",
    "RestReply",
    "handle_direct_event",
    "handle_schedule_event",
    "run_rest",
    "run_scheduled_job",
]

COMPOSE_REFUSED = (
    "compose and return are MCP-only; the REST batch form does not accept them. "
    "Send plain executions, or use execute_tools over MCP."
)
SCHEDULE_SOURCE = "workbench.schedule"
_SINGLE_KEYS = frozenset({"tool", "args"})
_BATCH_KEYS = frozenset({"executions"})


@dataclass(frozen=True, slots=True)
class RestReply:
    status: int
    body: dict[str, Any]


def _bad(message: str, status: int = 400) -> RestReply:
    return RestReply(status, {"error": message})


def _parse(payload: Any) -> tuple[list[dict[str, Any]], bool]:
    """(executions, whether the single-tool form was used); InvalidInput for a malformed body."""
    if not isinstance(payload, dict):
        raise InvalidInput(
            'The body must be a JSON object: {"tool": "...", "args": {...}} or {"executions": [...]}'
        )
    if "compose" in payload or "return" in payload:
        raise InvalidInput(COMPOSE_REFUSED)
    single, batch = "tool" in payload, "executions" in payload
    if single == batch:
        raise InvalidInput('Send either "tool" (one tool, with optional "args") or "executions" (a batch)')
    allowed = _SINGLE_KEYS if single else _BATCH_KEYS
    unknown = sorted(k for k in payload if k not in allowed)
    if unknown:
        raise InvalidInput(f"Unknown field(s): {', '.join(unknown)}")
    if single:
        tool, args = payload["tool"], payload.get("args", {})
        if not isinstance(tool, str) or not tool:
            raise InvalidInput("'tool' must be a non-empty string")
        if args is not None and not isinstance(args, dict):
            raise InvalidInput("'args' must be an object")
        executions, _, _, _ = parse_executions({"executions": [{"tool": tool, "args": args or {}}]})
        return executions, True
    # compose/return were refused above, with the REST wording
    executions, _, _, _ = parse_executions(payload)
    return executions, False


async def _check_integration(
    gw: Gateway, principal: Principal, integration: str, executions: list[dict[str, Any]]
) -> RestReply | None:
    """Every tool that exists must belong to `integration`; unknown tools are left to the engine,
    which answers (and audits) them as "Tool not found", exactly as execute_tools does."""
    owners: dict[str, str] = {}
    # Once per distinct tool: a custom-app lookup reads the user's server registrations.
    for tool in dict.fromkeys(ex["tool"] for ex in executions):
        hit = await gw.catalog.lookup(principal, tool)
        if hit is not None:
            owners[tool] = hit[1].name
    if gw.registry.manifest(integration) is None and integration not in owners.values():
        return _bad(f"Unknown integration: {integration}", 404)
    wrong = [
        f"Tool '{t}' belongs to integration '{o}', not '{integration}'"
        for t, o in owners.items()
        if o != integration
    ]
    if wrong:
        return _bad("; ".join(wrong))
    return None


async def run_rest(gw: Gateway, principal: Principal, integration: str, payload: Any) -> RestReply:
    try:
        executions, single = _parse(payload)
    except InvalidInput as exc:
        return _bad(str(exc))
    refused = await _check_integration(gw, principal, integration, executions)
    if refused is not None:
        return refused
    grant = principal.grant
    if not grant.allows_integration(integration):
        why = (
            f"{principal.grant_holder} may not use {integration} (its grant); the user can add it on "
            f"{principal.grant_change}"
        )
        await gw.runs.audit(
            {
                "action": "EXECUTE",
                "user": principal.user.id,
                "integration": integration,
                "tool": ", ".join(dict.fromkeys(ex["tool"] for ex in executions)),
                "success": False,
                "error": why,
                "ts": gw.clock(),
                "via": principal.via,
            }
        )
        return _bad(why, 403)
    outcome = await gw.runs.execute(principal, executions)
    results: list[dict[str, Any]] = outcome["results"]
    if single and "error" in results[0] and not grant.is_full:
        hit = await gw.catalog.lookup(principal, executions[0]["tool"])
        if hit is not None and not gw.catalog.offers(principal, hit[0], hit[1]):
            return RestReply(403, results[0])  # refused by the grant (audited by the engine)
    outages = [Unavailable.in_outcome(r) for r in results]
    if results and all(outages):  # nothing ran for want of the store or KMS: 503, try again
        return RestReply(503, {"error": "TEMPORARILY_UNAVAILABLE", "message": str(outages[0])})
    return RestReply(200, results[0] if single else {"results": results})


async def run_scheduled_job(gw: Gateway, event: dict[str, Any]) -> dict[str, Any]:
    """A direct EventBridge Scheduler invocation:
    {"source": "workbench.schedule", "user": "<email>", "integration": "...", "executions": [...]}.

    Trusted without a credential because only IAM principals can invoke the function directly (the
    HTTP API always adds requestContext). Never raises: every outcome is answered, logged and audited
    (executions with via="schedule", plus one SCHEDULE summary); `handle_schedule_event` turns a
    failed outcome into a failed invocation.
    """
    started = time.perf_counter()
    email, integration = event.get("user"), event.get("integration")
    summary: dict[str, Any] = {"integration": integration, "user_email": email}
    if event.get("source") != SCHEDULE_SOURCE:
        log_event("scheduled_job_rejected", reason="unknown event source", source=event.get("source"))
        return {"error": f"Unsupported event: expected source '{SCHEDULE_SOURCE}'"}
    if not isinstance(email, str) or not isinstance(integration, str) or not integration:
        log_event("scheduled_job_rejected", reason="user and integration are required", **summary)
        return {"error": "A scheduled job needs 'user' (an email) and 'integration'"}
    user = await gw.store_io.run(gw.auth.user_by_email, email)
    if user is None:
        log_event("scheduled_job_rejected", reason="unknown user", **summary)
        return {"error": f"Unknown user: {email}"}
    try:  # a job may carry a grant of its own; without one it acts with its user's full power
        grant = Grant.from_json(event["grant"]) if "grant" in event else FULL
    except InvalidInput as exc:
        log_event("scheduled_job_rejected", reason=f"bad grant: {exc}", **summary)
        return {"error": f"The job's grant is invalid: {exc}"}
    principal = Principal(user=user, via="schedule", grant=grant)
    payload = {k: v for k, v in event.items() if k not in ("source", "user", "integration", "grant")}
    reply = await run_rest(gw, principal, integration, payload)
    results = reply.body.get("results", [reply.body]) if reply.status == 200 else []
    failures = [r.get("error") for r in results if "error" in r]
    error = reply.body.get("error") if reply.status != 200 else (failures[0] if failures else None)
    await gw.runs.audit(
        {
            "action": "SCHEDULE",
            "user": user.id,
            "integration": integration,
            "success": reply.status == 200 and not failures,
            "executions": len(results),
            "failures": len(failures),
            "error": error,
            "duration_ms": round((time.perf_counter() - started) * 1000, 3),
            "ts": gw.clock(),
            "via": "schedule",
        }
    )
    log_event(
        "scheduled_job",
        user=user.id,
        integration=integration,
        status=reply.status,
        executions=len(results),
        failures=len(failures),
        error=error,
    )
    return reply.body


async def handle_direct_event(gateway: Gateway, event: dict[str, Any]) -> dict[str, Any]:
    """The REST function's events that did not come through API Gateway: a batch from the audit
    queue (workbench.aws.audit_queue, written with the invocation's remaining time), else a
    scheduled job."""
    from workbench.aws.audit_queue import is_audit_queue_event
    from workbench.guard import deadline

    if is_audit_queue_event(event):
        left = deadline.remaining()
        until = time.monotonic() + (left if left is not None else 20.0)
        return await gateway.store_io.run(gateway.runs.redrive_audit, event, until)
    return await handle_schedule_event(gateway, event)


async def handle_schedule_event(gateway: Gateway, event: dict[str, Any]) -> dict[str, Any]:
    """The Lambda handler's entry for a direct event, run on the instance's one event loop (never a
    loop of its own: the plugins' pooled connections belong to that loop). A job that did not fully
    succeed raises JobFailed, failing the invocation: Scheduler's invocation is asynchronous, so
    Lambda retries it and then hands it to the dead-letter queue (template.yaml), where the alarm
    sees it. A returned job succeeded."""
    body = await run_scheduled_job(gateway, event)
    errors = (
        [body["error"]] if "error" in body else [r["error"] for r in body.get("results", []) if "error" in r]
    )
    if errors:
        total = len(body.get("results", [])) or 1
        raise JobFailed(
            f"Scheduled job failed ({event.get('integration')} as {event.get('user')}): "
            f"{len(errors)} of {total} failed; first error: {errors[0]}",
            body,
        )
    return body
