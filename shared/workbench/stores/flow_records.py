"""The records of the flows a first tool call never touches: connecting an integration
(`PendingConnect`, `OAuthState`), approvals, custom apps (`ExternalServer`), the portal's activity
page, and the OAuth authorization server's clients, codes and refresh tokens.

They are `workbench.stores` records like the others (import them from there); they live here so
that a cold start that needs none of them does not build them (a frozen dataclass costs about 1 ms
to build on Python 3.12; tests/aws/test_cold_start_imports.py keeps this module off the first tool
call's path).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ActivityPage",
    "ActivityQuery",
    "Approval",
    "AuthorizationCode",
    "ExternalServer",
    "OAuthClient",
    "OAuthState",
    "PendingConnect",
    "RefreshToken",
]


@dataclass(frozen=True, slots=True)
class PendingConnect:
    id: str
    user_id: str
    integration: str
    auth_type: str
    expires_at: float
    status: str = "PENDING"  # PENDING | CONNECTED; reads report "EXPIRED" once expires_at has passed
    created_at: float = 0.0


@dataclass(frozen=True, slots=True)
class OAuthState:
    """A provider-consent `state`: single-use, short-lived, holds the PKCE verifier server-side."""

    state: str
    user_id: str
    integration: str
    connection_id: str
    code_verifier: str
    redirect_uri: str
    expires_at: float
    # The sign-in host the person chose (a manifest with LoginHosts); "" otherwise.
    login_host: str = ""


@dataclass(frozen=True, slots=True)
class Approval:
    """A call of an `approve` grant waiting for (or given) its user's decision. Single use, short-lived:
    reads report status "EXPIRED" once `expires_at` has passed, whatever was decided.

    It binds to one credential, one tool and one set of arguments: `digest` is the SHA-256 of `salt`
    and those (the arguments as the agent wrote them: vault references unresolved), so only the exact
    call runs. `arguments` is what the portal shows (JSON, vault references unresolved, literal
    secrets masked)."""

    id: str
    user_id: str
    salt: str
    digest: str
    tool: str
    integration: str
    annotations: str  # JSON: the tool's title and hints when the call was made
    arguments: str  # JSON, as shown
    client: str  # the requesting credential, as the person knows it ("API key wb_…_… (laptop)")
    created_at: float
    expires_at: float
    status: str = "PENDING"  # PENDING | APPROVED | DENIED | USED; reads add EXPIRED
    decided_at: float | None = None
    decided_by: str = ""  # the email of who approved or denied
    used_at: float | None = None


@dataclass(frozen=True, slots=True)
class ExternalServer:
    """A user's registered external MCP tool server (a custom app), keyed by (user, name).

    `config` is an encrypted blob (crypto.Cipher, bound to user + name) holding the URL template and
    the auth value; either may carry a literal secret or `{{vault:NAME}}` references.
    """

    user_id: str
    name: str
    tool_prefix: str
    config: bytes
    auth_type: str = "none"  # none | bearer | header
    header_name: str = ""
    enabled: bool = True
    timeout_ms: int = 30_000
    status: str = "ok"  # or "reconnect_required" after the server answered 401/403
    created_at: float = 0.0
    updated_at: float = 0.0
    # What the last discovery found, as non-secret JSON for the portal (tools, when, last error).
    # Written alone by `set_state`, so a discovery never overwrites a newer registration.
    state: str = ""


@dataclass(frozen=True, slots=True)
class ActivityQuery:
    """One page of a user's audit events, newest first. `cursor` is the opaque `next_cursor` of the
    page before (None: start at the newest). Filters: the event's action, integration, outcome,
    and events at or after `since` (epoch seconds)."""

    action: str | None = "EXECUTE"
    integration: str | None = None
    success: bool | None = None
    since: float | None = None
    limit: int = 50
    cursor: str | None = None

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise ValueError("limit must be at least 1")

    def matches(self, event: dict[str, Any]) -> bool:
        return (
            (self.action is None or event.get("action") == self.action)
            and (self.integration is None or event.get("integration") == self.integration)
            and (self.success is None or event.get("success") is self.success)
            and (self.since is None or float(event.get("ts") or 0) >= self.since)
        )


@dataclass(frozen=True, slots=True)
class ActivityPage:
    events: list[dict[str, Any]]
    next_cursor: str | None = None  # more (older) events may follow; pass it back as the cursor


@dataclass(frozen=True, slots=True)
class OAuthClient:
    """An MCP client registered through dynamic client registration (RFC 7591).

    Clients identified by a metadata-document URL (CIMD) are never stored: their document is
    fetched and cached instead. `metadata` is the registered RFC 7591 metadata as echoed back.
    """

    client_id: str
    client_name: str
    redirect_uris: tuple[str, ...]
    token_endpoint_auth_method: str  # "none" | "client_secret_post" | "client_secret_basic"
    grant_types: tuple[str, ...]
    created_at: float
    client_secret_hash: str | None = None  # sha256 hex; the secret itself is shown once
    metadata: dict[str, Any] = field(default_factory=dict)
    # A client that has not completed a grant yet is removed at this time; None once it has.
    expires_at: float | None = None


@dataclass(frozen=True, slots=True)
class AuthorizationCode:
    """An issued authorization code, stored by the SHA-256 of the code. Single-use: `consume`
    marks it used; a record that comes back already used is a replay."""

    code_hash: str
    client_id: str
    client_name: str
    user_id: str
    redirect_uri: str
    code_challenge: str  # S256 only
    resource: str  # the audience the tokens will carry (RFC 8707)
    scope: str
    family_id: str  # the refresh-token family this code starts (revoked if the code is replayed)
    offline: bool  # whether a refresh token is issued with the access token
    expires_at: float
    created_at: float
    used: bool = False
    # The grant the user chose on the consent page (JSON text; "" is full access).
    grant: str = ""


@dataclass(frozen=True, slots=True)
class RefreshToken:
    """One refresh token, stored by the SHA-256 of its value. Rotation marks it `rotated` and
    adds its successor in the same `family_id`; presenting a rotated token revokes the family."""

    token_hash: str
    family_id: str
    user_id: str
    client_id: str
    client_name: str
    resource: str
    scope: str
    created_at: float  # when this token was issued (last use of the family)
    granted_at: float  # when the user consented (start of the family)
    expires_at: float
    rotated: bool = False
    # The client's grant for this user (JSON text; "" is full access), copied into access tokens.
    grant: str = ""
