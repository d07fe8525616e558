"""execute_tools runs: the executions' shape, a plain concurrent batch and an ordered compose.

Shared by every surface that runs tools (MCP's execute_tools, REST, scheduled jobs): they parse
with `parse_executions` and run with `run_plain` / `run_compose`, given the engine and the caller's
vault reader. The {{step:}} / {{vault:}} substitution and the return projection are compose.py's.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from workbench.engine.compose import (
    BadRef,
    Resolution,
    VaultMissing,
    project,
    refs_within,
    resolve,
)
from workbench.engine.executor import LITERAL_SECRET_TOOLS, LOOP_VALUES, ToolCall, scrub
from workbench.errors import InvalidInput, as_unavailable

if TYPE_CHECKING:
    from workbench.engine.executor import Engine
    from workbench.identity.auth import Principal

__all__ = ["LITERAL_TOOL_PREFIX", "VaultReader", "parse_executions", "run_compose", "run_plain"]

# vault_* take names literally; apps_* store {{vault:NAME}} references unresolved (resolved per call).
LITERAL_TOOL_PREFIX = LITERAL_SECRET_TOOLS

# A user's vault: name -> secret (None when unset).
VaultReader = Callable[[str], "str | None"]


def parse_executions(args: dict[str, Any]) -> tuple[list[dict[str, Any]], bool, Any, bool]:
    """Validate execute_tools arguments against the meta-tool's schema rules.

    Returns (executions, compose, return template, whether return was given)."""
    executions = args.get("executions")
    if not isinstance(executions, list) or not executions:
        raise InvalidInput("'executions' must be a non-empty array")
    compose = args.get("compose", False)
    if not isinstance(compose, bool):
        raise InvalidInput("'compose' must be a boolean")
    has_return = "return" in args
    seen: set[str] = set()
    cleaned = []
    for i, ex in enumerate(executions):
        if not isinstance(ex, dict):
            raise InvalidInput(f"executions[{i}] must be an object")
        tool = ex.get("tool")
        if not isinstance(tool, str) or not tool:
            raise InvalidInput(f"executions[{i}].tool must be a non-empty string")
        tool_args = ex.get("args", {})
        if tool_args is None:
            tool_args = {}
        if not isinstance(tool_args, dict):
            raise InvalidInput(f"executions[{i}].args must be an object")
        ref_id = ex.get("ref_id")
        if ref_id is not None:
            if not isinstance(ref_id, str) or not ref_id:
                raise InvalidInput(f"executions[{i}].ref_id must be a non-empty string")
            if ref_id in seen:
                raise InvalidInput(f"executions[{i}].ref_id '{ref_id}' is used twice")
            seen.add(ref_id)
        elif compose:
            raise InvalidInput(f"executions[{i}].ref_id is required with compose")
        cleaned.append({"tool": tool, "args": tool_args, "ref_id": ref_id})
    if compose and len(cleaned) > 8:
        raise InvalidInput("compose runs at most 8 executions")
    return cleaned, compose, args.get("return"), has_return


def _resolve_args(ex: dict[str, Any], steps: dict[str, Any] | None, vault: Any) -> Resolution:
    if ex["tool"].startswith(LITERAL_TOOL_PREFIX):
        return Resolution(ex["args"])  # vault_* tools take names (and values) literally
    return resolve(ex["args"], steps=steps, vault=vault)


def _call_for(ex: dict[str, Any], steps: dict[str, Any] | None, vault: Any) -> ToolCall:
    """The execution with its refs substituted, or refused with BAD_REF / a missing-secret error."""
    try:
        res = _resolve_args(ex, steps, vault)
    except BadRef as exc:
        return ToolCall(ex["tool"], {}, ex["ref_id"], refused={"error": "BAD_REF", "message": str(exc)})
    except VaultMissing as exc:  # also VaultUnreadable: the row exists but does not decrypt
        return ToolCall(ex["tool"], {}, ex["ref_id"], refused={"error": str(exc)})
    except Exception as exc:  # a store failure while reading the vault: this item fails, audited
        outage = as_unavailable(exc)
        error = str(outage) if outage else f"Internal error: {type(exc).__name__}"
        return ToolCall(ex["tool"], {}, ex["ref_id"], refused={"error": error})
    return ToolCall(
        ex["tool"],
        res.value,
        ex["ref_id"],
        tuple(res.secrets),
        uses_vault=bool(res.secrets),
        written=_written(ex, steps, res),
    )


def _written(ex: dict[str, Any], steps: dict[str, Any] | None, res: Resolution) -> Any:
    """The args with step refs resolved and vault refs left as written (what an approval shows)."""
    if not res.secrets:
        return None  # nothing was substituted from the vault: the args themselves
    try:
        return project(ex["args"], steps or {})
    except BadRef:
        return scrub(res.value, res.secrets)


async def _resolved(engine: Engine, ex: dict[str, Any], steps: dict[str, Any] | None, vault: Any) -> ToolCall:
    """`_call_for`, in the store pool when the arguments hold a {{vault:}} ref (a store read and a
    decrypt); arguments without refs are plain in-memory work and stay on the loop. Arguments with no
    ref at all are taken as they are: substituting nothing would copy them whole for nothing."""
    if ex["tool"].startswith(LITERAL_TOOL_PREFIX):
        return _call_for(ex, steps, vault)
    found = refs_within(ex["args"], LOOP_VALUES)
    if found is None:  # large arguments: every walk over them runs on a thread, the loop goes on
        return await engine.tool_pool.run(_call_for_large, ex, steps, vault)
    refs, vault_refs = found
    if not refs:
        return ToolCall(ex["tool"], ex["args"], ex["ref_id"])
    if not vault_refs:
        return _call_for(ex, steps, vault)
    return await engine.store_io.run(_call_for, ex, steps, vault)


def _call_for_large(ex: dict[str, Any], steps: dict[str, Any] | None, vault: Any) -> ToolCall:
    # refs_within walks with one list (no object per value): no garbage collection starts over them.
    found = refs_within(ex["args"], sys.maxsize)
    if found is None or not found[0]:
        return ToolCall(ex["tool"], ex["args"], ex["ref_id"])
    return _call_for(ex, steps, vault)


async def run_compose(
    engine: Engine,
    vault: VaultReader,
    principal: Principal,
    executions: list[dict[str, Any]],
    template: Any,
    has_return: bool,
) -> dict[str, Any]:
    """Ordered execution; each step's args may read earlier results; a failure ends the run."""
    steps: dict[str, Any] = {}
    used_secrets: list[str] = []
    last: Any = None
    # The steps' audit rows: one write. Their tools are known now (a step's args may not be).
    async with engine.batch(principal, [ex["tool"] for ex in executions]) as scope:
        for index, ex in enumerate(executions):
            ref_id = ex["ref_id"]
            call = await _resolved(engine, ex, steps, vault)
            used_secrets.extend(call.secrets)
            outcome = await engine.run_one(
                scope,
                ToolCall(
                    call.tool,
                    call.args,
                    ref_id,
                    tuple(used_secrets),
                    call.refused,
                    call.uses_vault,
                    written=call.written,
                ),
            )
            if "error" in outcome:
                return {"index": index, "ref_id": ref_id, **outcome}
            steps[ref_id] = outcome["result"]
            last = outcome["result"]
    if not has_return:
        return {"result": last}
    try:
        projection = project(template, steps)
    except BadRef as exc:
        return {"error": "BAD_REF", "message": str(exc)}
    return {"result": projection}


async def run_plain(
    engine: Engine,
    vault: VaultReader,
    principal: Principal,
    executions: list[dict[str, Any]],
    template: Any,
    has_return: bool,
) -> dict[str, Any]:
    """Concurrent batch; optional `return` projection over successful results by ref_id."""
    results = await engine.run_batch(
        principal, [await _resolved(engine, ex, None, vault) for ex in executions]
    )
    if not has_return:
        return {"results": results}
    steps = {
        ex["ref_id"]: r["result"]
        for ex, r in zip(executions, results, strict=True)
        if ex["ref_id"] is not None and "error" not in r
    }
    errors = []
    for index, (ex, r) in enumerate(zip(executions, results, strict=True)):
        if "error" in r:
            entry: dict[str, Any] = {"index": index}
            if ex["ref_id"] is not None:
                entry["ref_id"] = ex["ref_id"]
            errors.append({**entry, **r})
    try:
        projection = project(template, steps)
    except BadRef as exc:  # the failures are still listed: a failed write is never hidden
        return {"error": "BAD_REF", "message": str(exc), **({"errors": errors} if errors else {})}
    response: dict[str, Any] = {"result": projection}
    if errors:
        response["errors"] = errors
    return response
