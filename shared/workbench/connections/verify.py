"""Connect-time credential checks: the manifest's `probe`, run on a credential before it is stored.

Connecting an API key (portal) or finishing an OAuth consent (callback) runs the probe with the
candidate credential injected exactly as tools would send it. A failure stores nothing and is
explained in plain words: the provider's own message for a refusal, a sentence for a network
failure (never the OS's "[Errno -2] ..."), the check's own message for a probe function.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import httpx

from workbench.errors import CredentialError, VerificationFailed
from workbench.guard.egress import EgressRefused
from workbench.guard.plain_errors import plain_text
from workbench.manifest import Manifest, Probe
from workbench.sdk import UpstreamError, error_detail
from workbench.tools import ToolContext, error_text

if TYPE_CHECKING:
    from workbench.engine.executor import Engine
    from workbench.stores import User

__all__ = ["PROBE_TIMEOUT_SECONDS", "Verifier", "verify_credential"]

PROBE_TIMEOUT_SECONDS = 15.0

# (user, manifest, candidate credential) -> True when checked, False when the manifest declares no
# probe; raises VerificationFailed.
Verifier = Callable[["User", Manifest, dict[str, Any]], Awaitable[bool]]


async def verify_credential(
    engine: Engine, user: User, manifest: Manifest, credential: dict[str, Any]
) -> bool:
    """Run `manifest.probe` with `credential` (not stored). False: there is no probe to run."""
    probe = manifest.probe
    if probe is None:
        return False
    from workbench.engine.executor import _Context

    ctx = _Context(engine, user, manifest, None, preset=credential)
    name = manifest.display_name
    try:
        async with asyncio.timeout(PROBE_TIMEOUT_SECONDS):
            if probe.function:
                await _function(probe.function)(ctx)
            else:
                await _request(ctx, manifest, probe)
    except VerificationFailed:
        raise
    except TimeoutError as exc:
        raise VerificationFailed(
            f"{name} did not answer within {PROBE_TIMEOUT_SECONDS:.0f} seconds. Check the address, or try again."
        ) from exc
    except UpstreamError as exc:
        raise VerificationFailed(refusal(name, exc.status, exc.detail)) from exc
    except httpx.TransportError as exc:
        raise VerificationFailed(plain_text(exc)) from exc
    except CredentialError as exc:
        raise VerificationFailed(str(exc)) from exc
    except EgressRefused as exc:  # an address no server-side request may reach (workbench.guard.egress)
        why = str(exc).removeprefix("Refused: ").rstrip(".")
        raise VerificationFailed(f"Workbench will not connect there: {why}.") from exc
    except Exception as exc:  # a probe function's own explanation (bad subdomain, no URL, ...)
        raise VerificationFailed(
            error_text(exc) or f"{name}: the check failed ({type(exc).__name__})."
        ) from exc
    return True


def refusal(name: str, status: int, detail: str) -> str:
    """A provider's refusal of a credential, in words, with the provider's own message."""
    said = f": {detail}" if detail else "."
    if status in (401, 403):
        return f"{name} did not accept these credentials ({status}){said}"
    if status == 404:
        return f"{name} has nothing at this address (404){said} Check the address or account name."
    if status >= 500:
        return f"{name} answered with an error ({status}){said} Try again in a moment."
    return f"{name} refused the check ({status}){said}"


async def _request(ctx: ToolContext, manifest: Manifest, probe: Probe) -> None:
    params = {probe.token_param: await ctx.get_token()} if probe.token_param else None
    headers = dict(probe.headers)
    if probe.json:
        headers["Content-Type"] = "application/json"
    resp = await ctx.http.request(
        probe.method, probe.path, params=params, headers=headers, content=probe.json or None
    )
    if resp.status_code >= 300:
        raise UpstreamError(manifest.name, resp.status_code, error_detail(resp))
    if probe.ok_field:
        try:
            body: Any = resp.json()
        except ValueError:
            body = {}
        if not isinstance(body, dict) or body.get(probe.ok_field) is not True:
            detail = str(body.get("error") or "") if isinstance(body, dict) else ""
            raise VerificationFailed(
                f"{manifest.display_name} did not accept these credentials"
                + (f": {detail}" if detail else ".")
            )


def _function(path: str) -> Callable[[ToolContext], Awaitable[None]]:
    module_name, _, attr = path.partition(":")
    fn: Callable[[ToolContext], Awaitable[None]] = getattr(importlib.import_module(module_name), attr)
    return fn
