"""Workbench API keys: `wb_<key id>_<secret>`, stored only as a hash of the secret, shown once."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from dataclasses import dataclass

from workbench.errors import AuthError
from workbench.stores import ApiKeyRecord, ApiKeyStore, User, UserStore

__all__ = ["ApiKeys", "Principal", "looks_like_api_key"]

_KEY_RE = re.compile(r"^wb_([A-Za-z0-9]{12})_([A-Za-z0-9_-]{43})$")


def looks_like_api_key(token: str) -> bool:
    return token.startswith("wb_")


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the Workbench user, and through which credential."""

    user: User
    via: str  # "api_key" | "oauth" | "session" | "schedule"
    client_id: str | None = None


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class ApiKeys:
    def __init__(self, users: UserStore, keys: ApiKeyStore) -> None:
        self.users = users
        self.keys = keys

    def mint(self, user: User, label: str = "") -> str:
        """Create a key for `user` and return it; only its hash is kept."""
        key_id = "".join(
            secrets.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789") for _ in range(12)
        )
        secret = secrets.token_urlsafe(32)  # 256 bits
        self.keys.add(ApiKeyRecord(key_id, user.id, _hash(secret), time.time(), False, label))
        return f"wb_{key_id}_{secret}"

    def resolve(self, token: str) -> Principal:
        """The principal behind an API key; AuthError for a malformed, unknown or revoked key."""
        match = _KEY_RE.match(token)
        if not match:
            raise AuthError("malformed API key")
        rec = self.keys.get(match.group(1))
        if rec is None or rec.revoked or not hmac.compare_digest(rec.secret_hash, _hash(match.group(2))):
            raise AuthError("invalid API key")
        user = self.users.get(rec.user_id)
        if user is None:
            raise AuthError("invalid API key")
        return Principal(user=user, via="api_key")
