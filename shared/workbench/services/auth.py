"""Who is calling, and the users and credentials behind it.

`authenticate` resolves a bearer token (an API key, or an OAuth access token of the authorization
server) through this instance's `AuthCache`; a revocation made here drops the key from it at once
(`KeysThatForget` wraps the key store below). Sign-in states (SSO, local sign-in links, the OAuth
consent transaction) are one-time: a second `take_state` gets None.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from workbench.errors import AuthError
from workbench.identity.auth import (
    AccessTokenVerifier,
    ApiKeys,
    AuthCache,
    KeyRecheck,
    Principal,
    key_id_of,
    looks_like_api_key,
)
from workbench.identity.grants import FULL, Grant

if TYPE_CHECKING:
    from workbench.engine.blocking import BlockingPool
    from workbench.stores import (
        ApiKeyRecord,
        ApiKeyStore,
        OAuthState,
        PendingStore,
        Snapshot,
        User,
        UserStore,
    )

__all__ = ["AuthService"]

_GRANT_REVOKED = "the access token's grant was revoked"


class AuthService:
    def __init__(
        self,
        *,
        users: UserStore,
        keys: ApiKeyStore,
        read_together: Callable[..., Snapshot],
        pending: PendingStore,
        cache: AuthCache,
        io: BlockingPool,
        access_tokens: AccessTokenVerifier,
        clock: Callable[[], float],
        grant_live: Callable[[str], bool] | None = None,
    ) -> None:
        self._users = users
        self._keys = keys
        self._pending = pending
        self._read_together = read_together
        self.api_keys = ApiKeys(
            users, keys, read_together
        )  # minting and resolving `wb_` keys (workbench.identity.auth)
        # The OAuth server's access tokens, checked without building (or importing) the server.
        self._access_tokens = access_tokens
        # Whether an OAuth grant (refresh-token family) still exists: a client the user revoked in
        # the portal loses its access tokens on the next check (at most the auth cache's TTL later,
        # on every instance), as a revoked API key does. An access token that names the refresh
        # token issued with it (`grant_token`) is checked by that token's record instead, read by
        # key (so it can ride in a batch); this family Query is for tokens issued before that.
        self._grant_live = grant_live
        self._io = io
        self._clock = clock
        self.cache = cache

    # -- bearer tokens ---------------------------------------------------------------------------

    async def authenticate(self, token: str, *, defer: bool = False) -> Principal:
        """The principal behind a bearer token (API key, or an OAuth access token), from this
        instance's AuthCache when it resolved the token moments ago; AuthError if none.

        `defer`: the caller makes a batch read anyway and settles a KeyRecheck: for an API key
        resolved here before whose cache time ran out, the last answer comes back with `recheck`
        set, its two records to be read with that batch, not in a round trip first; for an OAuth
        access token (its signature checked here), its grant's refresh token likewise."""
        cached = self.cache.get(token)
        if cached is not None:
            return cached
        generation = self.cache.generation
        lapsed = self.cache.lapsed(token)  # an API key resolved here before: one read, not two
        key_id = key_id_of(token)
        if defer and lapsed is not None and key_id is not None:

            def check(found: Snapshot | None) -> Principal:
                principal = self.api_keys.resolve(token, holder=lapsed.user.id, found=found)
                self.cache.put(token, principal, generation)
                return principal

            reads = {"user_id": lapsed.user.id, "key_id": key_id}
            return replace(lapsed, recheck=KeyRecheck(reads, check))
        if defer and not looks_like_api_key(token):
            verified = await self._io.run(self._access_tokens, token)  # no store read
            if verified is not None and verified.grant_token is not None:
                grant_token = verified.grant_token

                def check_grant(found: Snapshot | None) -> Principal:
                    self._check_grant(grant_token, found)
                    self.cache.put(token, verified, generation)
                    return verified

                return replace(verified, recheck=KeyRecheck({"refresh_token": grant_token}, check_grant))
        holder = lapsed.user.id if lapsed is not None else None
        principal = await self._io.run(self.resolve_token, token, holder)
        self.cache.put(token, principal, generation)
        return principal

    def _check_grant(self, grant_token: str, found: Snapshot | None = None) -> None:
        """AuthError unless the refresh token issued with an access token is still stored (`found`:
        a batch that read it; otherwise read now, blocking). Revoking the grant (its family) or the
        client deletes it, as `family_exists` would then answer False."""
        if found is None or found.refresh_token is None:
            found = self._read_together(refresh_token=grant_token)
        if not found.refresh_token:
            raise AuthError(_GRANT_REVOKED)

    async def confirm(self, principal: Principal) -> Principal:
        """`principal` as checked: settles its KeyRecheck (reading the key alone when no batch
        carried it; off the loop); AuthError when the key no longer stands."""
        recheck = principal.recheck
        if recheck is None:
            return principal
        if recheck.settled:
            return recheck.settle()
        return await self._io.run(recheck.settle)

    def resolve_token(self, token: str, holder: str | None = None) -> Principal:
        """`authenticate` without the cache, blocking (store reads; the signing keys). `holder`:
        whose API key the token was last time (AuthCache.holder)."""
        if looks_like_api_key(token):
            return self.api_keys.resolve(token, holder=holder)
        principal = self._access_tokens(token)
        if principal is None:
            raise AuthError("invalid token")
        grant = principal.credential_id
        if principal.grant_token is not None:
            self._check_grant(principal.grant_token)
        elif grant is not None and self._grant_live is not None and not self._grant_live(grant):
            raise AuthError(_GRANT_REVOKED)
        return principal

    # -- users (blocking) ------------------------------------------------------------------------

    def user(self, user_id: str) -> User | None:
        return self._users.get(user_id)

    def user_by_email(self, email: str) -> User | None:
        return self._users.by_email(email)

    def sign_in(self, email: str) -> User:
        """The user with this (verified) email, created on first sign-in."""
        return self._users.get_or_create(email)

    # -- API keys (blocking) ---------------------------------------------------------------------

    def mint_key(self, user: User, label: str = "", grant: Grant = FULL) -> str:
        """A new API key for `user` with `grant`, returned once; only its hash is kept."""
        return self.api_keys.mint(user, label=label, grant=grant)

    def set_key_grant(self, user_id: str, key_id: str, grant: Grant) -> bool:
        """Change the grant of `user_id`'s own key; this instance's cache forgets the key at once (its
        next call reads the new grant). False for another user's or an unknown key."""
        return self._keys.set_grant(user_id, key_id, "" if grant.is_full else grant.dumps())

    def keys_of(self, user_id: str) -> list[ApiKeyRecord]:
        return self._keys.list_for(user_id)

    def key(self, key_id: str) -> ApiKeyRecord | None:
        """Any user's key record by id (the CLI's revoke; the curl proxy's binding check)."""
        return self._keys.get(key_id)

    def own_active_key(self, user: User, key_id: str) -> ApiKeyRecord | None:
        """`user`'s unrevoked key with this id; None for another user's key, as for an unknown one."""
        rec = self._keys.get(key_id)
        return rec if rec is not None and rec.user_id == user.id and not rec.revoked else None

    def revoke_key(self, user_id: str, key_id: str) -> bool:
        """Revoke `user_id`'s key; this instance's cache forgets it at once. False if not theirs."""
        return self._keys.revoke(user_id, key_id)

    # -- one-time sign-in states (blocking) ------------------------------------------------------

    def put_state(self, state: OAuthState) -> None:
        self._pending.put_state(state)

    def take_state(self, state: str) -> OAuthState | None:
        """Return and delete the state atomically (None if unknown, taken or expired)."""
        return self._pending.take_state(state, now=self._clock())
