"""curl_session (seed 001): mint a short-lived proxy token for curl-proxy-enabled integrations.

The token is an ES256 JWT for the audience "<public_url>/c" carrying the user (`sub`), the
integrations it grants, and the credential that minted it (`bind`: the API key's id, or the OAuth
client and grant). Minting checks only what the seed lists (each name exists and has the curl
proxy enabled); whether the user is connected is answered by the proxy on use, with the engine's
NOT_CONNECTED shape. On every request the proxy also checks that the minting credential is still
live (an API key is read with the user and the connection in one round trip; no cache), so revoking
the API key or the OAuth grant stops its curl_session tokens at once, on every instance.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from workbench.observability import log_event

if TYPE_CHECKING:
    from workbench.composition import Gateway
    from workbench.identity.auth import Principal
    from workbench.stores import ApiKeyRecord

__all__ = [
    "DEFAULT_TTL_SECONDS",
    "TOKEN_TYPE",
    "binding_key_id",
    "binding_problem",
    "mint_curl_session",
    "proxy_audience",
]

TOKEN_TYPE = "curl_session"
DEFAULT_TTL_SECONDS = 900


def proxy_audience(gw: Gateway) -> str:
    return gw.settings.public_url.rstrip("/") + "/c"


def mint_curl_session(
    gw: Gateway, principal: Principal, integrations: list[str], expires_in: int = DEFAULT_TTL_SECONDS
) -> dict[str, Any]:
    names = list(dict.fromkeys(integrations))
    failures = []
    for name in names:
        manifest = gw.registry.manifest(name)
        if manifest is None:
            failures.append(f"Unknown integration: {name}")
        elif not manifest.curl_proxy or not manifest.base_url:
            failures.append(f"{name} does not have curl proxy enabled")
    event: dict[str, Any] = {
        "action": "CURL_SESSION",
        "user": principal.user.id,
        "integrations": names,
        "expires_in": expires_in,
        "ts": gw.clock(),
        "via": principal.via,
    }
    if failures:
        error = "; ".join(failures)
        gw.stores.audit.append({**event, "success": False, "error": error})
        return {"error": error}
    audience = proxy_audience(gw)
    token = gw.tokens.mint(
        {"sub": principal.user.id, "typ": TOKEN_TYPE, "integrations": names, "bind": _binding(principal)},
        audience=audience,
        ttl_seconds=expires_in,
    )
    session_id = gw.tokens.verify(token, audience=audience)["jti"]
    gw.stores.audit.append({**event, "success": True, "error": None, "session": session_id})
    log_event(
        "curl_session_minted",
        user=principal.user.id,
        integrations=names,
        expires_in=expires_in,
        session=session_id,
    )
    return {
        "token": token,
        "expiresIn": expires_in,
        "proxyBaseUrl": audience,
        "usage": f"Send requests to {audience}/<integration>/<path> with Authorization: Bearer <token>",
    }


def _binding(principal: Principal) -> dict[str, str]:
    bind = {"via": principal.via}
    if principal.credential_id:
        bind["id"] = principal.credential_id
    if principal.client_id:
        bind["client"] = principal.client_id
    return bind


def binding_key_id(claims: dict[str, Any]) -> str | None:
    """The id of the API key that minted this token (None: another kind of credential)."""
    bind = claims.get("bind")
    if isinstance(bind, dict) and bind.get("via") == "api_key" and isinstance(bind.get("id"), str):
        return str(bind["id"])
    return None


def binding_problem(
    gw: Gateway, claims: dict[str, Any], *, api_key: ApiKeyRecord | Literal[False] | None = False
) -> str | None:
    """Why the credential that minted this token no longer stands behind it, or None. `api_key`:
    the minting key's record as the caller just read it (`binding_key_id`), None if absent;
    left out, it is read here."""
    bind = claims.get("bind")
    if not isinstance(bind, dict):
        return "this curl_session token is not bound to a credential; mint a new one"
    via, cred = bind.get("via"), bind.get("id")
    if via == "api_key":
        if api_key is False:
            rec = gw.stores.api_keys.get(cred) if isinstance(cred, str) else None
        else:
            rec = api_key if isinstance(cred, str) else None
        if rec is None or rec.revoked or rec.user_id != claims.get("sub"):
            return "the API key that minted this curl_session token was revoked"
        return None
    if via == "oauth":
        if cred is None:
            # A grant without refresh tokens cannot be revoked (it is not listed in the portal);
            # its tokens lapse on their own.
            return None
        refresh = gw.oauth.refresh if gw.oauth is not None else None
        if not isinstance(cred, str) or refresh is None or not refresh.family_exists(cred):
            return "the OAuth grant that minted this curl_session token was revoked"
        return None
    if cred is None:  # portal session or scheduled job: nothing separate to revoke
        return None
    return "this curl_session token is bound to an unknown credential; mint a new one"
