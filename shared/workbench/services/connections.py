"""A user's connections to integrations: the connect flow, the records, the status of each.

The credentials themselves (encryption, refresh leases, upstream headers) are
`workbench.connections.credentials.Credentials`; the flow that creates them (links, provider
consent, cookie capture, waiting) is `workbench.connections.flow.ConnectFlow`, built on first use
(it brings provider OAuth and custom apps with it).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workbench.connections.credentials import Credentials
    from workbench.connections.flow import ConnectFlow, Redeemed
    from workbench.engine.blocking import BlockingPool
    from workbench.engine.executor import Engine
    from workbench.engine.registry import Registry
    from workbench.manifest import Manifest
    from workbench.stores import Connection, PendingConnect, PendingStore, Snapshot, User

__all__ = ["ConnectionService"]


class ConnectionService:
    def __init__(
        self,
        *,
        registry: Registry,
        credentials: Credentials,
        pending: PendingStore,
        engine: Engine,
        flow: Callable[[], ConnectFlow],
        io: BlockingPool,
        clock: Callable[[], float],
        read_together: Callable[..., Snapshot] | None = None,
    ) -> None:
        self._registry = registry
        self._read_together = read_together  # Stores.read_together: several connections, one read
        self._credentials = credentials
        self._pending = pending
        self._engine = engine
        self._flow = flow
        self.io = io  # blocking store calls of a request run here, never on the loop
        self._clock = clock

    @property
    def flow(self) -> ConnectFlow:
        return self._flow()

    # -- the connect flow --------------------------------------------------------------------------

    def start(self, user: User, integration: str) -> dict[str, Any]:
        """connect / get_auth_url: a fresh connect link (blocking: one store write)."""
        return self.flow.start(user, integration)

    async def wait(self, user: User, connection_id: str, timeout_sec: int) -> dict[str, Any]:
        return await self.flow.wait(user, connection_id, timeout_sec)

    async def redeem(self, user: User, connection_id: str, *, login_host: str | None = None) -> Redeemed:
        return await self.flow.redeem(user, connection_id, login_host=login_host)

    async def complete(
        self,
        user: User | None,
        integration: str,
        *,
        state: str | None,
        code: str | None,
        error: str | None = None,
    ) -> str:
        return await self.flow.complete(user, integration, state=state, code=code, error=error)

    def pending(self, connection_id: str) -> PendingConnect | None:
        """A connect link's record (status EXPIRED once past its expiry), any user's: callers
        check `user_id` against the signed-in user."""
        return self._pending.get(connection_id, now=self._clock())

    def mark_connected(self, connection_id: str) -> bool:
        return self._pending.mark_connected(connection_id)

    # -- connections (blocking) --------------------------------------------------------------------

    def connection(self, user_id: str, integration: str) -> Connection | None:
        return self._credentials.store.get(user_id, integration)

    def connections_of(self, user_id: str) -> dict[str, Connection]:
        """The user's connections by integration, in one store read."""
        return {c.integration: c for c in self._credentials.store.list_for(user_id)}

    def status(
        self,
        user_id: str,
        only: Collection[str] | None = None,
        *,
        known: Mapping[str, Connection] | None = None,
    ) -> dict[str, bool]:
        """Whether the user is connected to each integration (or to those in `only`). Blocking: a
        store read (none when `known` holds the user's connections to those of `only` that
        `stored` names, as `read` found them), and a cookie integration's check decrypts its
        stored cookies."""
        if known is None:
            known = self.connections_of(user_id) if only is None else self.read(user_id, self.stored(only))
        return {
            m.name: self._credentials.is_connected(m, known.get(m.name))
            for m in self._registry.manifests()
            if only is None or m.name in only
        }

    def stored(self, integrations: Collection[str]) -> list[str]:
        """Those of `integrations` whose status depends on a stored connection (installed, and
        with an auth type other than none)."""
        from workbench.manifest import NoAuth

        out = []
        for name in integrations:
            manifest = self._registry.manifest(name)
            if manifest is not None and not isinstance(manifest.auth, NoAuth):
                out.append(name)
        return out

    def read(self, user_id: str, integrations: Collection[str]) -> dict[str, Connection]:
        """The user's connections to `integrations` (those found), in one read of their keys (one
        round trip where the store batches reads). Blocking."""
        if not integrations:
            return {}
        if self._read_together is None:
            store = self._credentials.store
            return {i: c for i in integrations if (c := store.get(user_id, i)) is not None}
        found = self._read_together(connections=[(user_id, i) for i in integrations]).connections
        return {i: c for (u, i), c in found.items() if u == user_id}

    async def verify(self, user: User, manifest: Manifest, credential: dict[str, Any]) -> bool:
        """Check a credential with the manifest's probe before storing it (raises VerificationFailed)."""
        from workbench.connections.verify import verify_credential

        return await verify_credential(self._engine, user, manifest, credential)
