"""curl_session (seed 001): mint a short-lived proxy token for curl-proxy-enabled integrations.

The token is an ES256 JWT for the audience "<public_url>/c" carrying the user (`sub`) and the
integrations it grants; the proxy verifies it without a database read. Minting checks only what
the seed lists (each name exists and has the curl proxy enabled); whether the user is connected is
answered by the proxy on use, with the engine's NOT_CONNECTED shape.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.observability import log_event

if TYPE_CHECKING:
    from workbench.auth import Principal
    from workbench.composition import Gateway

__all__ = ["DEFAULT_TTL_SECONDS", "TOKEN_TYPE", "mint_curl_session", "proxy_audience"]

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
        {"sub": principal.user.id, "typ": TOKEN_TYPE, "integrations": names},
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
