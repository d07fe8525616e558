"""Grants: what one API key, OAuth client or scheduled job may do with its user's power.

A grant names
- the integrations it may use: all (None), or a list of names as `list_integrations` gives them;
- its access: `full`; `read-only` (only tools annotated read-only run, and the curl proxy allows
  only GET, HEAD and OPTIONS); or `approve` (read-only tools run, every other call waits for the
  user's approval in the portal);
- tools it may never call.

The default grant is full access to everything: keys and clients made before grants existed keep
working as they did. Every door (execute_tools items, compose steps, REST, search_tools,
list_integrations, curl_session and the proxy) asks the same grant; see docs/grants.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from workbench.errors import InvalidInput

__all__ = ["ACCESS_LEVELS", "FULL", "READ_METHODS", "Grant", "parse_names"]

ACCESS_LEVELS = ("full", "read-only", "approve")
# What a read-only (or approve) curl_session token may send through the proxy.
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_MAX_NAMES = 200


def parse_names(value: str | Iterable[str] | None) -> tuple[str, ...]:
    """'github, slack' or ['github', 'slack'] -> ('github', 'slack'): trimmed, unique, in order."""
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else list(value)
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise InvalidInput("names must be strings")
        name = item.strip()
        if name and name not in out:
            if len(name) > 100:
                raise InvalidInput(f"name too long: {name[:40]}…")
            out.append(name)
    if len(out) > _MAX_NAMES:
        raise InvalidInput(f"at most {_MAX_NAMES} names")
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Grant:
    access: str = "full"
    integrations: tuple[str, ...] | None = None  # None: every integration
    denied_tools: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.access not in ACCESS_LEVELS:
            raise InvalidInput(f"access must be one of {', '.join(ACCESS_LEVELS)}")

    # -- what it allows -------------------------------------------------------------------------

    @property
    def is_full(self) -> bool:
        return self.access == "full" and self.integrations is None and not self.denied_tools

    @property
    def writes_need_approval(self) -> bool:
        return self.access == "approve"

    @property
    def proxy_methods(self) -> frozenset[str] | None:
        """The HTTP methods a curl_session token of this grant may send (None: any)."""
        return None if self.access == "full" else READ_METHODS

    def allows_integration(self, integration: str) -> bool:
        return self.integrations is None or integration in self.integrations

    def refusal(self, tool: str, integration: str, read_only: bool, holder: str, change: str) -> str | None:
        """Why this grant refuses the call, as a sentence naming the grant and what the user can
        change (None: allowed, possibly after approval). `holder` names the key/client/job,
        `change` where the user changes its grant."""
        if not self.allows_integration(integration):
            allowed = ", ".join(self.integrations or ()) or "none"
            return (
                f"{tool} was refused: {holder} may use only these integrations: {allowed}; "
                f"{integration} is not one of them. The user can add {integration} to its grant on {change}."
            )
        if tool in self.denied_tools:
            return (
                f"{tool} was refused: {holder} may never call {tool} (its grant denies it). "
                f"The user can lift that on {change}."
            )
        if self.access == "read-only" and not read_only:
            return (
                f"{tool} was refused: {holder} is read-only, so it runs only read-only tools and {tool} "
                f"is not one. The user can change its access to full or approve on {change}."
            )
        return None

    # -- stored and shown -----------------------------------------------------------------------

    def as_json(self) -> dict[str, Any]:
        return {
            "access": self.access,
            "integrations": list(self.integrations) if self.integrations is not None else "all",
            "deniedTools": list(self.denied_tools),
        }

    def dumps(self) -> str:
        return json.dumps(self.as_json(), separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, value: Any) -> Grant:
        """A grant from its JSON form; InvalidInput for anything else."""
        if not isinstance(value, Mapping):
            raise InvalidInput("a grant must be an object")
        unknown = set(value) - {"access", "integrations", "deniedTools"}
        if unknown:
            raise InvalidInput(f"unknown grant fields: {', '.join(sorted(unknown))}")
        access = value.get("access", "full")
        if not isinstance(access, str):
            raise InvalidInput("access must be a string")
        raw = value.get("integrations", "all")
        if isinstance(raw, str) and raw != "all":
            raise InvalidInput('integrations must be "all" or a list of names')
        integrations = None if raw in ("all", None) else parse_names(raw)
        return cls(access, integrations, parse_names(value.get("deniedTools")))

    @classmethod
    def loads(cls, text: str | None) -> Grant:
        """A stored grant; a row stored before grants existed ("" / None) is full access."""
        if not text:
            return FULL
        return cls.from_json(json.loads(text))

    def describe(self) -> str:
        """'read-only; integrations: github, slack; never: github_merge_pr'."""
        parts = [self.access]
        parts.append(
            "all integrations"
            if self.integrations is None
            else "integrations: " + ", ".join(self.integrations)
        )
        if self.denied_tools:
            parts.append("never: " + ", ".join(self.denied_tools))
        return "; ".join(parts)


FULL = Grant()
