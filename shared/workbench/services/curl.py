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

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from workbench.observability import log_event

if TYPE_CHECKING:
    from workbench.engine.registry import Registry
    from workbench.identity.auth import Principal
    from workbench.identity.tokens import TokenService
    from workbench.oauth.service import OAuthServer
    from workbench.services.auth import AuthService
    from workbench.services.runs import RunService
    from workbench.stores import ApiKeyRecord, Snapshot

__all__ = ["DEFAULT_TTL_SECONDS", "TOKEN_TYPE", "CurlSessions", "binding_key_id"]

TOKEN_TYPE = "curl_session"
DEFAULT_TTL_SECONDS = 900


class CurlSessions:
    def __init__(
        self,
        *,
        public_url: str,
        registry: Registry,
        auth: AuthService,
        runs: RunService,
        tokens: Callable[[], TokenService],
        oauth: Callable[[], OAuthServer],
        read_together: Callable[..., Snapshot],
        clock: Callable[[], float],
    ) -> None:
        # The proxy's audience: "<public_url>/c".
        self.audience = public_url.rstrip("/") + "/c"
        self._registry = registry
        self._auth = auth
        self._runs = runs
        self._tokens = tokens
        self._oauth = oauth
        self._read_together = read_together  # Stores.read_together
        self._clock = clock

    def mint(
        self, principal: Principal, integrations: list[str], expires_in: int = DEFAULT_TTL_SECONDS
    ) -> dict[str, Any]:
        """curl_session (blocking: the signing keys, one audit write)."""
        names = list(dict.fromkeys(integrations))
        failures = []
        for name in names:
            manifest = self._registry.manifest(name)
            if manifest is None:
                failures.append(f"Unknown integration: {name}")
            elif not manifest.curl_proxy or not manifest.base_url:
                failures.append(f"{name} does not have curl proxy enabled")
            elif not principal.grant.allows_integration(name):
                failures.append(
                    f"{principal.grant_holder} may not use {name} (its grant); the user can add it on "
                    f"{principal.grant_change}"
                )
        event: dict[str, Any] = {
            "action": "CURL_SESSION",
            "user": principal.user.id,
            "integrations": names,
            "expires_in": expires_in,
            "ts": self._clock(),
            "via": principal.via,
        }
        if failures:
            error = "; ".join(failures)
            self._runs.record({**event, "success": False, "error": error})
            return {"error": error}
        audience = self.audience
        tokens = self._tokens()
        claims: dict[str, Any] = {
            "sub": principal.user.id,
            "typ": TOKEN_TYPE,
            "integrations": names,
            "bind": _binding(principal),
        }
        methods = principal.grant.proxy_methods
        if methods is not None:  # the grant travels with the token: read-only and approve send reads only
            claims["methods"] = sorted(methods)
            claims["grant"] = principal.grant.access
        token = tokens.mint(
            claims,
            audience=audience,
            ttl_seconds=expires_in,
        )
        session_id = tokens.verify(token, audience=audience)["jti"]
        self._runs.record({**event, "success": True, "error": None, "session": session_id})
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

    def verify(self, token: str) -> dict[str, Any]:
        """The claims of a token signed for the proxy's audience (AuthError otherwise)."""
        return self._tokens().verify(token, audience=self.audience)

    def signing_kids(self) -> frozenset[str]:
        return frozenset(k.kid for k in self._tokens().source.signing_keys())

    def read_holder(self, claims: dict[str, Any], integration: str | None) -> Snapshot:
        """What a proxied request needs before it can act, in one round trip (blocking): the
        token's user, the API key that minted it (if one did) or the refresh token of the OAuth
        grant that did (if the access token named it), and the user's connection to `integration`
        (if given)."""
        sub = str(claims.get("sub"))
        return self._read_together(
            user_id=sub,
            key_id=binding_key_id(claims),
            connection=(sub, integration) if integration is not None else None,
            refresh_token=binding_grant_token(claims),
        )

    def binding_problem(
        self,
        claims: dict[str, Any],
        *,
        api_key: ApiKeyRecord | Literal[False] | None = False,
        grant_live: bool | None = None,
    ) -> str | None:
        """Why the credential that minted this token no longer stands behind it, or None. `api_key`:
        the minting key's record as the caller just read it (`read_holder`), None if absent; left
        out, it is read here (blocking: one store read, no cache). `grant_live`: likewise, whether
        the minting OAuth grant's refresh token is still stored (`read_holder`'s `refresh_token`)."""
        bind = claims.get("bind")
        if not isinstance(bind, dict):
            return "this curl_session token is not bound to a credential; mint a new one"
        via, cred = bind.get("via"), bind.get("id")
        if via == "api_key":
            if api_key is False:
                rec = self._auth.key(cred) if isinstance(cred, str) else None
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
            if not isinstance(cred, str):
                return _GRANT_REVOKED
            token = binding_grant_token(claims)
            if token is not None:  # the refresh token issued with the minting access token
                if grant_live is None:
                    grant_live = bool(self._read_together(refresh_token=token).refresh_token)
                return None if grant_live else _GRANT_REVOKED
            if not self._oauth().refresh.family_exists(cred):  # minted before tokens named it
                return _GRANT_REVOKED
            return None
        if cred is None:  # portal session or scheduled job: nothing separate to revoke
            return None
        return "this curl_session token is bound to an unknown credential; mint a new one"


_GRANT_REVOKED = "the OAuth grant that minted this curl_session token was revoked"


def binding_grant_token(claims: dict[str, Any]) -> str | None:
    """The refresh token (its hash) of the OAuth grant that minted this token, when the minting
    access token named it: while it is stored, the grant stands (None: another credential)."""
    bind = claims.get("bind")
    if isinstance(bind, dict) and bind.get("via") == "oauth" and isinstance(bind.get("token"), str):
        return str(bind["token"])
    return None


def binding_key_id(claims: dict[str, Any]) -> str | None:
    """The id of the API key that minted this token (None: another kind of credential)."""
    bind = claims.get("bind")
    if isinstance(bind, dict) and bind.get("via") == "api_key" and isinstance(bind.get("id"), str):
        return str(bind["id"])
    return None


def _binding(principal: Principal) -> dict[str, str]:
    bind = {"via": principal.via}
    if principal.credential_id:
        bind["id"] = principal.credential_id
    if principal.client_id:
        bind["client"] = principal.client_id
    if principal.via == "oauth" and principal.credential_id and principal.grant_token:
        bind["token"] = principal.grant_token  # checked by key, with the proxy's one batch read
    return bind
