"""connect / wait_for_connection: pending connect records in the TTL store.

A link minted by `connect` is a claim, not a capability: it names the user it was minted for and
carries no PKCE verifier; nothing is sent to the provider until the same user redeems it from a
portal session (`redeem`, behind POST /api/connect/redeem). Only then are the PKCE verifier and the
single-use `state` created (kept server-side in the TTL store) and the provider consent URL built;
the provider's redirect lands on `complete`, which exchanges the code with the verifier, checks the
new token with the manifest's probe, stores the tokens encrypted and marks the pending record
CONNECTED. A failed check stores nothing.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbench.engine.blocking import BlockingPool
from workbench.engine.registry import Registry
from workbench.errors import InvalidInput, VerificationFailed, WorkbenchError
from workbench.guard import deadline
from workbench.manifest import Manifest, OAuth2Auth
from workbench.settings import Settings
from workbench.stores import OAuthState, PendingConnect, PendingStore, User

if TYPE_CHECKING:
    from workbench.connections.credentials import Credentials
    from workbench.connections.provider_oauth import ProviderOAuth
    from workbench.connections.verify import Verifier
    from workbench.guard.egress import EgressPolicy

__all__ = [
    "BROWSER_PAGE",
    "STATE_TTL_SECONDS",
    "CallbackError",
    "ConnectFlow",
    "Redeemed",
    "check_callback",
    "link_still_open",
]

UNKNOWN = {"error": "Unknown connectionId"}
# How long a provider-consent `state` (and the PKCE verifier it holds) stays usable.
STATE_TTL_SECONDS = 600
# The portal's live-browser page for cookie integrations (built by the browser surface).
BROWSER_PAGE = "/portal/browser/{connection_id}"


@dataclass(frozen=True, slots=True)
class Redeemed:
    """The answer to POST /api/connect/redeem: an HTTP status and its JSON body."""

    status: int
    body: dict[str, Any]


class CallbackError(WorkbenchError):
    """A provider callback that cannot complete; the message is shown to the person (HTTP 400)."""


class ConnectFlow:
    def __init__(
        self,
        settings: Settings,
        registry: Registry,
        pending: PendingStore,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        oauth: ProviderOAuth | None = None,
        credentials: Credentials | None = None,
        verify: Verifier | None = None,
        io: BlockingPool | None = None,
        egress: EgressPolicy | None = None,
    ) -> None:
        self.settings = settings
        self.registry = registry
        self.pending = pending
        self.clock = clock
        self.sleep = sleep
        self.oauth = oauth
        self.credentials = credentials
        # Checks a new credential before it is stored (the manifest's probe); None: not checked.
        self.verify = verify
        # Checks a sign-in host the person typed (Salesforce My Domain) before any request goes there.
        self.egress = egress
        # Custom apps behind OAuth (workbench.external): connected through the same flow. Set by
        # the composition root; it answers for app names the registry does not know.
        self.external: Any = None
        # wait()'s polls read the store off the event loop.
        self.io = io or BlockingPool(2, "workbench-store")

    @property
    def _base_url(self) -> str:
        return self.settings.public_url.rstrip("/")

    def link(self, connection_id: str) -> str:
        return f"{self._base_url}/connect/{connection_id}"

    def start(self, user: User, integration: str) -> dict[str, Any]:
        manifest = self.registry.manifest(integration)
        plugin = manifest is not None
        if manifest is None and self.external is not None:
            manifest = self.external.connect_manifest(user.id, integration)
        if manifest is None:
            return {"error": f"Unknown integration: {integration}"}
        kind = manifest.auth.type
        if kind == "none":
            return {"error": f"{integration} needs no connection; its tools work as they are."}
        if kind == "api_key":
            portal = f"{self._base_url}/portal/integrations"
            return {
                "error": f"{integration} is connected with an API key, which only the user can enter: "
                f"ask them to open {portal} and connect it there."
            }
        if kind == "oauth2" and self.oauth is not None and plugin:  # a custom app brings its own client
            refused = self._not_configured(manifest)
            if refused is not None:
                return refused
        now = self.clock()
        connection_id = "conn_" + secrets.token_urlsafe(24)
        self.pending.put(
            PendingConnect(
                id=connection_id,
                user_id=user.id,
                integration=integration,
                auth_type=kind,
                expires_at=now + self.settings.connect_ttl_seconds,
                created_at=now,
            )
        )
        return {"connectionId": connection_id, "type": kind, "url": self.link(connection_id)}

    def _not_configured(self, manifest: Manifest) -> dict[str, Any] | None:
        """Refuse at once, naming the missing setting, rather than mint a link that fails at redeem."""
        from workbench.connections.provider_oauth import ProviderError

        assert self.oauth is not None
        try:
            self.oauth.client(manifest)
        except ProviderError as exc:
            if exc.error == "not_configured":
                return {"error": "NOT_CONFIGURED", "integration": manifest.name, "message": exc.description}
            return {
                "error": f"{manifest.name} cannot be connected right now: {exc.description}. Try again shortly."
            }
        return None

    async def wait(self, user: User, connection_id: str, timeout_sec: int) -> dict[str, Any]:
        """Poll once a second, for at most `wait_block_seconds` per call (API Gateway's limit), and
        never past the request's deadline (less the one poll interval)."""
        call_started = self.clock()
        block: float = self.settings.wait_block_seconds
        left = deadline.remaining()
        if left is not None:
            block = min(block, max(0.0, left - 1.0))
        while True:
            now = self.clock()
            rec = await self.io.run(self.pending.get, connection_id, now=now)
            if rec is None or rec.user_id != user.id:
                return dict(UNKNOWN)  # no existence oracle: another user's id looks unknown
            if rec.status == "CONNECTED":
                return {"status": "CONNECTED"}
            if rec.status == "EXPIRED":
                await self.io.run(self.pending.delete, connection_id)
                return {"status": "EXPIRED"}
            agent_deadline = rec.created_at + timeout_sec
            if now >= agent_deadline:
                await self.io.run(self.pending.delete, connection_id)  # reap before answering
                return {"status": "TIMEOUT"}
            if now - call_started >= block:
                return {
                    "status": "PENDING",
                    "message": "The user has not finished connecting yet. Call wait_for_connection again "
                    "with the same connectionId.",
                    "retryAfterSec": 0,
                }
            await self.sleep(1.0)

    # -- redeem and callback (browser side) -----------------------------------------------------

    async def redeem(self, user: User, connection_id: str, *, login_host: str | None = None) -> Redeemed:
        """Turn a connect link into the next step, for the user it was minted for only.

        `login_host` is the sign-in host the person chose, for a manifest that asks for one; a host
        they typed must also pass the egress policy (the token request goes there)."""
        now = self.clock()
        rec = self.pending.get(connection_id, now=now) if connection_id else None
        if rec is None or rec.user_id != user.id:
            # An unknown id and another user's id answer alike: no existence oracle.
            return Redeemed(403, {"error": "ACCOUNT_MISMATCH"})
        if rec.status == "EXPIRED":
            return Redeemed(410, {"error": "EXPIRED"})
        if rec.status == "CONNECTED":
            return Redeemed(409, {"error": "ALREADY_CONNECTED"})
        manifest = self.registry.manifest(rec.integration)
        if manifest is None and self.external is not None:
            app = self.external.redeem(user, rec)
            if app is not None:
                return app  # type: ignore[no-any-return]
        if manifest is None:
            return Redeemed(404, {"error": f"Unknown integration: {rec.integration}"})
        if rec.auth_type == "cookie":
            url = self._base_url + BROWSER_PAGE.format(connection_id=rec.id)
            return Redeemed(200, {"type": "cookie", "url": url})
        if rec.auth_type != "oauth2" or self.oauth is None or not isinstance(manifest.auth, OAuth2Auth):
            return Redeemed(400, {"error": f"{rec.integration} cannot be connected through a link"})
        from workbench.connections.provider_oauth import ProviderError, login_host_for, pkce_verifier

        host = ""
        hosts = manifest.auth.login_hosts
        if hosts is not None:
            from workbench.guard.egress import EgressRefused  # httpx: only for a choice of sign-in host

            try:
                host = login_host_for(hosts, login_host)
                if self.egress is not None and host not in {h for _, h in hosts.choices}:
                    await self.egress.check(f"https://{host}/", unresolvable_ok=True)
            except InvalidInput as exc:
                return Redeemed(400, {"error": "INVALID_LOGIN_HOST", "message": str(exc)})
            except EgressRefused as exc:
                why = str(exc).removeprefix("Refused: ")
                return Redeemed(
                    400,
                    {"error": "INVALID_LOGIN_HOST", "message": f"The sign-in host {host} is refused: {why}."},
                )
        verifier = pkce_verifier()
        state = secrets.token_urlsafe(32)
        try:
            url = self.oauth.consent_url(manifest, state=state, verifier=verifier, login_host=host or None)
        except ProviderError as exc:
            return Redeemed(503, {"error": "NOT_CONFIGURED", "message": exc.description or str(exc)})
        self.pending.put_state(
            OAuthState(
                state=state,
                user_id=user.id,
                integration=rec.integration,
                connection_id=rec.id,
                code_verifier=verifier,
                redirect_uri=self.oauth.redirect_uri(rec.integration),
                expires_at=now + STATE_TTL_SECONDS,
                login_host=host,
            )
        )
        return Redeemed(200, {"type": "oauth2", "url": url})

    async def complete(
        self,
        user: User | None,
        integration: str,
        *,
        state: str | None,
        code: str | None,
        error: str | None = None,
    ) -> str:
        """Finish a provider consent; returns the integration name. Raises CallbackError, storing nothing.

        The new credential is checked with the manifest's probe before it is stored."""
        from workbench.connections.provider_oauth import ProviderError

        now = self.clock()
        # Take the state first: it is single-use whatever happens next.
        taken = self.pending.take_state(state, now=now) if state else None
        if taken is None or taken.integration != integration:
            raise CallbackError(
                "This sign-in response is not valid: it was already used, has expired, or was not started "
                "here. Open the connect link again to start over."
            )
        check_callback(self.pending, taken, user, now)
        assert user is not None
        if error:
            raise CallbackError(f"The provider did not grant access ({error}). Nothing was stored.")
        if not code:
            raise CallbackError("The provider's answer has no authorization code. Nothing was stored.")
        manifest = self.registry.manifest(integration)
        if manifest is None or self.oauth is None or self.credentials is None:
            raise CallbackError(f"{integration} cannot be connected on this gateway.")
        try:
            tokens = await self.oauth.exchange_code(
                manifest, code=code, verifier=taken.code_verifier, login_host=taken.login_host or None
            )
        except ProviderError as exc:
            raise CallbackError(
                f"The provider refused the authorization code ({exc.error}). Nothing was stored; "
                "open the connect link again to retry."
            ) from exc
        now = self.clock()
        credential = dict(tokens.credential)
        if taken.login_host:
            credential["login_host"] = taken.login_host  # refreshes go back to the same host
        user_token = tokens.user_credential(now)
        if user_token is not None:
            credential["user_token"] = user_token
        verified_at = await self._verified(user, manifest, credential)
        link_still_open(self.pending, taken, self.clock())  # it may have run out during the exchange
        self.credentials.save(
            user.id, integration, credential, expires_at=tokens.expires_at(now), verified_at=verified_at
        )
        self.pending.mark_connected(taken.connection_id)
        return integration

    async def _verified(self, user: User, manifest: Manifest, credential: dict[str, Any]) -> float | None:
        """When the manifest's probe passed (None: no probe); a failure stores nothing."""
        if self.verify is None:
            return None
        try:
            checked = await self.verify(user, manifest, credential)
        except VerificationFailed as exc:
            raise CallbackError(
                f"{manifest.display_name} signed you in, but checking the connection failed: {exc} "
                "Nothing was stored."
            ) from exc
        return self.clock() if checked else None


_EXPIRED_LINK = (
    "This connect link has expired, so nothing was stored. Ask for a new one: call connect() again."
)


def check_callback(pending: PendingStore, taken: OAuthState, user: User | None, now: float) -> None:
    """What every provider callback checks once its one-time state is taken: the account, then the
    connect link. A callback opened by another account gives the state back, so its owner's own
    callback still works; one that comes after the link expired stores nothing (wait_for_connection
    says EXPIRED, and so does the page)."""
    if user is None or user.id != taken.user_id:
        pending.put_state(taken)
        raise CallbackError("You are not signed in to Workbench as the account that started this connection.")
    link_still_open(pending, taken, now)


def link_still_open(pending: PendingStore, taken: OAuthState, now: float) -> None:
    if not taken.connection_id:
        return  # a consent started from the portal, without a connect link
    record = pending.get(taken.connection_id, now=now)
    if record is None or record.status == "EXPIRED" or record.expires_at <= now:
        raise CallbackError(_EXPIRED_LINK)
