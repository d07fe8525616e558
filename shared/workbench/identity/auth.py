"""Workbench API keys: `wb_<key id>_<secret>`, stored only as a hash of the secret, shown once.

Resolving a bearer token reads the store (API key, user), so a warm instance keeps what it resolved
for a short time (`AuthCache`, WORKBENCH_AUTH_CACHE_SECONDS, 15 s by default, 30 s at most). Only
successes are kept: a key minted a moment ago is never refused from the cache. Once that time has
passed, the key is checked again, and since the cache still remembers whose key it was, the key and
its user come back in one round trip (`Stores.read_together`) instead of two in a row; a caller that
reads a batch first thing anyway (search_tools) takes them along with it (`KeyRecheck`). A revocation made
through this instance takes effect at once (`KeysThatForget` drops the key's entries); another
instance (another Lambda, or the CLI beside `workbench serve`) may accept a revoked key for up to
the cache time. OAuth access tokens are never kept past their own `exp`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from workbench.errors import AuthError, InvalidInput
from workbench.identity.grants import FULL, Grant
from workbench.stores import ApiKeyRecord, ApiKeyStore, Snapshot, User, UserStore

__all__ = [
    "MAX_AUTH_CACHE_SECONDS",
    "AccessTokenVerifier",
    "ApiKeys",
    "AuthCache",
    "KeyRecheck",
    "KeysThatForget",
    "Principal",
    "looks_like_api_key",
]

MAX_AUTH_CACHE_SECONDS = 30

_KEY_RE = re.compile(r"^wb_([A-Za-z0-9]{12})_([A-Za-z0-9_-]{43})$")


def looks_like_api_key(token: str) -> bool:
    return token.startswith("wb_")


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the Workbench user, and through which credential."""

    user: User
    via: str  # "api_key" | "oauth" | "session" | "schedule"
    client_id: str | None = None
    # The credential itself, so what it mints can be revoked with it: the API key's id, or the
    # OAuth grant (refresh-token family) when the grant has one.
    credential_id: str | None = None
    # What this credential may do with the user's power (workbench.identity.grants).
    grant: Grant = FULL
    # How the person knows the credential: the API key's label, the OAuth client's name.
    credential_label: str = ""
    # Set only on a credential whose cache time ran out (an API key, an OAuth access token whose
    # grant may have been revoked), taken on trust until its check (read with the request's first
    # batch) settles; see KeyRecheck.
    recheck: KeyRecheck | None = field(default=None, compare=False, repr=False)
    # An OAuth access token's refresh token (its SHA-256), issued with it: while that token is
    # stored, the grant stands (revoking the grant or signing the client out deletes it).
    grant_token: str | None = field(default=None, compare=False, repr=False)

    @property
    def grant_holder(self) -> str:
        """The credential a grant refusal names."""
        if self.via == "api_key":
            return f"this API key (wb_{self.credential_id}_…)" if self.credential_id else "this API key"
        if self.via == "oauth":
            return f"this MCP client ({self.client_id})" if self.client_id else "this MCP client"
        if self.via == "schedule":
            return "this scheduled job"
        return "this session"

    @property
    def grant_change(self) -> str:
        """Where the user changes the grant a refusal names."""
        if self.via == "api_key":
            return "the portal's API keys page (/portal/api-keys)"
        if self.via == "oauth":
            return "the portal's MCP clients page (/portal/clients)"
        if self.via == "schedule":
            return "the job's schedule (the grant in its event)"
        return "the portal"


class AccessTokenVerifier:
    """The authorization server's access tokens checked without the server itself (whose module
    and ClientResolver an MCP request never needs): a signature, audience and expiry check by the
    token service, then the claims it carries. No store read."""

    def __init__(self, tokens: Callable[[], Any], public_url: str) -> None:
        self._tokens = tokens  # () -> workbench.identity.tokens.TokenService, made on first use
        self.audience = public_url.rstrip("/") + "/mcp"

    def __call__(self, token: str) -> Principal | None:
        """A Principal for our access tokens, AuthError for a JWT that is not one (wrong audience,
        expired, unknown key), None for anything else."""
        if token.count(".") != 2:
            return None
        claims = self._tokens().verify(token, audience=self.audience)
        client_id, sub = claims.get("client_id"), claims.get("sub")
        if not isinstance(client_id, str) or not isinstance(sub, str) or not sub:
            raise AuthError("not an access token")
        email = claims.get("email")
        grant = claims.get("grant")
        grant_token = claims.get("grant_token")
        try:  # the client's grant, chosen on the consent page (signed with the token)
            scoped = Grant.from_json(claims["wb_grant"]) if "wb_grant" in claims else FULL
        except InvalidInput as exc:  # never read as full access
            raise AuthError("not an access token") from exc
        return Principal(
            user=User(id=sub, email=email if isinstance(email, str) else "", created_at=0.0),
            via="oauth",
            client_id=client_id,
            credential_id=grant if isinstance(grant, str) else None,
            grant=scoped,
            credential_label=str(claims.get("client_name") or "")[:100],
            grant_token=grant_token if isinstance(grant, str) and isinstance(grant_token, str) else None,
        )


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class ApiKeys:
    def __init__(
        self,
        users: UserStore,
        keys: ApiKeyStore,
        read_together: Callable[..., Snapshot] | None = None,
    ) -> None:
        self.users = users
        self.keys = keys
        # Stores.read_together: the key and a user already known to hold it, in one round trip.
        self._read_together = read_together

    def mint(self, user: User, label: str = "", grant: Grant = FULL) -> str:
        """Create a key for `user` with `grant` and return it; only its hash is kept."""
        key_id = "".join(
            secrets.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789") for _ in range(12)
        )
        secret = secrets.token_urlsafe(32)  # 256 bits
        stored = "" if grant.is_full else grant.dumps()
        self.keys.add(ApiKeyRecord(key_id, user.id, _hash(secret), time.time(), False, label, stored))
        return f"wb_{key_id}_{secret}"

    def resolve(self, token: str, *, holder: str | None = None, found: Snapshot | None = None) -> Principal:
        """The principal behind an API key; AuthError for a malformed, unknown or revoked key.

        `holder`: the user id this key belonged to when it was last resolved. Both records are then
        read together (one round trip); the key is still checked exactly as on a first resolve.
        `found`: those two records, already read with another batch (KeyRecheck)."""
        match = _KEY_RE.match(token)
        if not match:
            raise AuthError("malformed API key")
        user: User | None = None
        if found is None and holder is not None and self._read_together is not None:
            found = self._read_together(user_id=holder, key_id=match.group(1))
        if found is not None:
            rec, user = found.api_key, found.user
        else:
            rec = self.keys.get(match.group(1))
        if rec is None or rec.revoked or not hmac.compare_digest(rec.secret_hash, _hash(match.group(2))):
            raise AuthError("invalid API key")
        if user is None or user.id != rec.user_id:
            user = self.users.get(rec.user_id)
        if user is None:
            raise AuthError("invalid API key")
        try:
            grant = Grant.loads(rec.grant)
        except (InvalidInput, ValueError) as exc:  # an unreadable grant never widens to full access
            raise AuthError("invalid API key") from exc
        return Principal(
            user=user, via="api_key", credential_id=rec.key_id, grant=grant, credential_label=rec.label
        )


def key_id_of(token: str) -> str | None:
    match = _KEY_RE.match(token)
    return match.group(1) if match else None


def _jwt_exp(token: str) -> float | None:
    """The `exp` claim of a JWT that has already been verified (so its payload is trusted)."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return float(exp) if isinstance(exp, int | float) and not isinstance(exp, bool) else None


class KeyRecheck:
    """A credential whose check is due — an API key this instance resolved before, whose cache time
    has run out; an OAuth access token's grant — checked with the first batch read the request makes
    anyway (search_tools' first round trip) instead of a round trip of its own: its records (`reads`:
    the key and its user; the grant's refresh token) ride along and are checked there exactly as on
    a resolve.

    Until it settles, the principal it came with is only the last known answer: whoever takes one
    must settle it before anything is written, started or answered for the caller (the MCP
    surface settles it after the call in any case, and answers 401 if it fails)."""

    __slots__ = ("_check", "_outcome", "reads")

    def __init__(self, reads: dict[str, str], check: Callable[[Snapshot | None], Principal]) -> None:
        self.reads = reads  # what to add to a `Stores.read_together` call for `settle`
        self._check = check  # (found, or None to read them now) -> Principal; AuthError
        self._outcome: Principal | str | None = None

    @property
    def settled(self) -> bool:
        return self._outcome is not None

    def settle(self, found: Snapshot | None = None) -> Principal:
        """The checked principal (its grant as stored now); AuthError when the credential no longer
        stands. `found`: a read that included `reads`; None reads the records now (blocking).
        Settles once: later calls give the same outcome."""
        if self._outcome is None:
            try:
                self._outcome = self._check(found)
            except AuthError as exc:
                self._outcome = str(exc) or "invalid API key"
        if isinstance(self._outcome, str):
            raise AuthError(self._outcome)
        return self._outcome


class _Entry:
    # A plain class: every cold start builds this module's classes (a dataclass costs about 1 ms).
    __slots__ = ("key_id", "principal", "until")

    def __init__(self, principal: Principal, until: float, key_id: str | None) -> None:
        self.principal, self.until, self.key_id = principal, until, key_id


class AuthCache:
    """Bearer token -> principal, per warm instance, for at most `ttl` seconds.

    Keyed by the token's SHA-256 (the token itself is not kept). A lookup that started before a
    revocation is never stored after it (`generation`), so a revoke cannot race a resolve back in.
    """

    def __init__(
        self, ttl: float, *, clock: Callable[[], float] = time.time, max_entries: int = 10_000
    ) -> None:
        self.ttl = max(0.0, min(float(ttl), MAX_AUTH_CACHE_SECONDS))
        self.clock = clock
        self.max_entries = max_entries
        self._entries: dict[bytes, _Entry] = {}
        self._lock = threading.Lock()
        self.generation = 0

    @staticmethod
    def _key(token: str) -> bytes:
        return hashlib.sha256(token.encode()).digest()

    def get(self, token: str) -> Principal | None:
        if self.ttl <= 0:
            return None
        entry = self._entries.get(self._key(token))
        if entry is None or entry.until <= self.clock():
            return None
        return entry.principal

    def holder(self, token: str) -> str | None:
        """Whose API key this was when it was last resolved here, even if that has expired: a hint
        for reading the key and its user together, never a reason to accept the key."""
        lapsed = self.lapsed(token)
        return lapsed.user.id if lapsed is not None else None

    def lapsed(self, token: str) -> Principal | None:
        """What an API key resolved to when it was last resolved here, even if that has expired:
        the guess a KeyRecheck starts from, never a reason to accept the key."""
        entry = self._entries.get(self._key(token))
        return entry.principal if entry is not None and entry.key_id is not None else None

    def put(self, token: str, principal: Principal, generation: int) -> None:
        """Keep a successful resolve (started at `generation`), for the TTL or until the token's exp."""
        if self.ttl <= 0:
            return
        now = self.clock()
        key_id = key_id_of(token)
        until = now + self.ttl
        if key_id is None:  # an OAuth access token: never past its own expiry
            exp = _jwt_exp(token)
            until = min(until, exp) if exp is not None else now
        if until <= now:
            return
        with self._lock:
            if generation != self.generation:
                return  # a revocation happened while this lookup ran
            if len(self._entries) >= self.max_entries:
                self._entries = {k: e for k, e in self._entries.items() if e.until > now}
                if len(self._entries) >= self.max_entries:
                    self._entries.clear()
            self._entries[self._key(token)] = _Entry(principal, until, key_id)

    def forget_key(self, key_id: str) -> None:
        """An API key was revoked: drop it, and refuse to store lookups that began before now."""
        with self._lock:
            self.generation += 1
            self._entries = {k: e for k, e in self._entries.items() if e.key_id != key_id}


class KeysThatForget:
    """An ApiKeyStore whose `revoke` also drops the key from this instance's AuthCache, whoever
    calls it (portal revoke and rotate, the CLI), so a revocation here takes effect at once."""

    def __init__(self, inner: ApiKeyStore, cache: AuthCache) -> None:
        self.inner = inner
        self.cache = cache

    def add(self, record: ApiKeyRecord) -> None:
        self.inner.add(record)

    def get(self, key_id: str) -> ApiKeyRecord | None:
        return self.inner.get(key_id)

    def list_for(self, user_id: str) -> list[ApiKeyRecord]:
        return self.inner.list_for(user_id)

    def revoke(self, user_id: str, key_id: str) -> bool:
        try:
            return self.inner.revoke(user_id, key_id)
        finally:  # after the write: a lookup that starts from here on reads the revoked record
            self.cache.forget_key(key_id)

    def set_grant(self, user_id: str, key_id: str, grant: str) -> bool:
        try:
            return self.inner.set_grant(user_id, key_id, grant)
        finally:  # a narrowed grant takes effect at once on this instance
            self.cache.forget_key(key_id)
