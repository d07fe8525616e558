"""Envelope encryption of credentials and secrets, bound to the row they belong to.

Stored layout of a blob (all integers big-endian):

    version    1 byte   = 1
    key_id_len 1 byte   length of the master key id (KMS key ARN or local key id)
    key_id     n bytes  which master key wrapped the data key (rotation: old blobs name old keys)
    wrapped_len 2 bytes length of the wrapped data key
    wrapped    m bytes  the data key, wrapped by the master key under the row's encryption context
    nonce      12 bytes fresh random per encryption
    ciphertext+tag      AES-256-GCM, additional authenticated data = the row's context

The context is the row identity, e.g. {"user": "usr_…", "integration": "github", "field":
"credential"}. It is both the KMS encryption context of the data key and the GCM AAD, so a blob
copied to another row fails to decrypt. One data key per row context; decrypted data keys are
cached in memory for `cache_seconds`, so a warm instance makes at most one master-key call per
key per window. Rotating the master key only changes which key wraps *new* data keys.

cryptography is imported where a key is used, not with this module: a request that decrypts
nothing (an auth-none tool) does not pay for it on a cold start.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import struct
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from workbench.errors import CryptoError

__all__ = ["Cipher", "KeyProvider", "LocalKeyProvider", "load_or_create_local_key"]

_VERSION = 1
Context = Mapping[str, str]


def _aad(context: Context) -> bytes:
    return json.dumps(dict(sorted(context.items())), separators=(",", ":")).encode()


class KeyProvider(Protocol):
    """A master key service: KMS in production, a local key file on a laptop."""

    key_id: str
    calls: int  # master-key operations performed (for benchmarks and tests)

    def generate_data_key(self, context: Context) -> tuple[bytes, bytes]:
        """A fresh 32-byte data key: (plaintext, wrapped)."""
        ...

    def decrypt_data_key(self, key_id: str, wrapped: bytes, context: Context) -> bytes: ...


class LocalKeyProvider:
    """Wraps data keys with AES-256-GCM under a local 32-byte master key.

    Several keys may be held (id → key): the newest wraps, any of them unwraps (rotation).
    """

    def __init__(self, keys: Mapping[str, bytes], current: str) -> None:
        if current not in keys:
            raise CryptoError("current local key id is not among the keys")
        self._keys = dict(keys)
        self.key_id = current
        self.calls = 0

    @classmethod
    def from_secret(cls, secret: bytes) -> LocalKeyProvider:
        key_id = "local:" + hashlib.sha256(secret).hexdigest()[:16]
        return cls({key_id: secret}, key_id)

    def generate_data_key(self, context: Context) -> tuple[bytes, bytes]:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self.calls += 1
        plain = secrets.token_bytes(32)
        nonce = secrets.token_bytes(12)
        wrapped = nonce + AESGCM(self._keys[self.key_id]).encrypt(nonce, plain, _aad(context))
        return plain, wrapped

    def decrypt_data_key(self, key_id: str, wrapped: bytes, context: Context) -> bytes:
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self.calls += 1
        key = self._keys.get(key_id)
        if key is None:
            raise CryptoError("unknown master key")
        try:
            return AESGCM(key).decrypt(wrapped[:12], wrapped[12:], _aad(context))
        except InvalidTag as exc:
            raise CryptoError("data key does not unwrap for this row") from exc


def _parts(blob: bytes) -> tuple[str, bytes, bytes, bytes]:
    """(key id, wrapped data key, nonce, ciphertext) of a blob `Cipher.encrypt` made."""
    try:
        version, kid_len = struct.unpack_from(">BB", blob, 0)
        if version != _VERSION:
            raise CryptoError(f"unknown blob version {version}")
        kid = blob[2 : 2 + kid_len].decode()
        (wlen,) = struct.unpack_from(">H", blob, 2 + kid_len)
        start = 4 + kid_len
        wrapped = blob[start : start + wlen]
        nonce = blob[start + wlen : start + wlen + 12]
        body = blob[start + wlen + 12 :]
    except (struct.error, UnicodeDecodeError) as exc:
        raise CryptoError("malformed blob") from exc
    return kid, wrapped, nonce, body


class _CachedKey:
    # A plain class: building a dataclass costs about 1 ms of every cold start (issue 24).
    __slots__ = ("at", "key_id", "plain", "wrapped")

    def __init__(self, plain: bytes, wrapped: bytes, key_id: str, at: float) -> None:
        self.plain, self.wrapped, self.key_id, self.at = plain, wrapped, key_id, at


class Cipher:
    """Encrypt/decrypt blobs bound to a row context, with a bounded-age data key cache."""

    def __init__(
        self, provider: KeyProvider, *, cache_seconds: float = 300.0, max_entries: int = 10_000
    ) -> None:
        self.provider = provider
        self.cache_seconds = cache_seconds
        self.max_entries = max_entries
        self._by_context: dict[bytes, _CachedKey] = {}  # for encryption: reuse a row's data key
        self._by_wrapped: dict[bytes, _CachedKey] = {}  # for decryption
        self._lock = threading.Lock()
        self._unwrapping: dict[bytes, threading.Lock] = {}  # data keys being unwrapped right now

    def encrypt(self, plaintext: bytes, context: Context) -> bytes:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        aad = _aad(context)
        key = self._fresh(self._by_context.get(aad))
        if key is None:
            plain, wrapped = self.provider.generate_data_key(context)
            key = _CachedKey(plain, wrapped, self.provider.key_id, time.monotonic())
            self._remember(aad, key)
        nonce = secrets.token_bytes(12)
        body = AESGCM(key.plain).encrypt(nonce, plaintext, aad)
        kid = key.key_id.encode()
        return (
            struct.pack(">BB", _VERSION, len(kid))
            + kid
            + struct.pack(">H", len(key.wrapped))
            + key.wrapped
            + nonce
            + body
        )

    def decrypt(self, blob: bytes, context: Context) -> bytes:
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        kid, wrapped, nonce, body = _parts(blob)
        aad = _aad(context)
        key = self._fresh(self._by_wrapped.get(wrapped))
        if key is None:
            key = self._unwrap(kid, wrapped, context, aad)
        try:
            return AESGCM(key.plain).decrypt(nonce, body, aad)
        except InvalidTag as exc:
            raise CryptoError("blob does not decrypt for this row") from exc

    def unwrap_ahead(self, blob: bytes, context: Context) -> None:
        """Unwrap the data key of `blob` into the cache now (the master-key call its `decrypt` would
        make), so that a decrypt soon after finds it there; nothing is decrypted or returned."""
        kid, wrapped, _, _ = _parts(blob)
        if self._fresh(self._by_wrapped.get(wrapped)) is None:
            self._unwrap(kid, wrapped, context, _aad(context))

    def encrypt_json(self, value: object, context: Context) -> bytes:
        return self.encrypt(json.dumps(value, separators=(",", ":")).encode(), context)

    def decrypt_json(self, blob: bytes, context: Context) -> object:
        return json.loads(self.decrypt(blob, context))

    def _unwrap(self, kid: str, wrapped: bytes, context: Context, aad: bytes) -> _CachedKey:
        """One master-key call per data key, however many threads need it at once (a batch's
        executions decrypt the same row in parallel): the others wait and take the cached key."""
        with self._lock:
            flight = self._unwrapping.setdefault(wrapped, threading.Lock())
        try:
            with flight:
                key = self._fresh(self._by_wrapped.get(wrapped))
                if key is None:
                    plain = self.provider.decrypt_data_key(kid, wrapped, context)
                    key = _CachedKey(plain, wrapped, kid, time.monotonic())
                    self._remember(aad, key)
                return key
        finally:
            with self._lock:
                self._unwrapping.pop(wrapped, None)

    def _fresh(self, key: _CachedKey | None) -> _CachedKey | None:
        if key is None or time.monotonic() - key.at > self.cache_seconds:
            return None
        return key

    def _remember(self, aad: bytes, key: _CachedKey) -> None:
        with self._lock:
            if len(self._by_wrapped) >= self.max_entries:
                self._by_wrapped.clear()
                self._by_context.clear()
            self._by_wrapped[key.wrapped] = key
            # Encryption reuses a key only if it was minted under the current master key.
            if key.key_id == self.provider.key_id:
                self._by_context[aad] = key


def load_or_create_local_key(path: Path, env_value: str | None = None) -> bytes:
    """The local master key: from the environment (base64) or a 0600 file created on first run."""
    if env_value:
        raw = base64.b64decode(env_value)
        if len(raw) != 32:
            raise CryptoError("WORKBENCH_LOCAL_KEY must be 32 bytes, base64-encoded")
        return raw
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path.parent, 0o700)  # the data directory: owner-only even if it existed with wider modes
    if path.exists():
        os.chmod(path, 0o600)
        raw = base64.b64decode(path.read_bytes().strip())
        if len(raw) != 32:
            raise CryptoError(f"{path} does not hold a 32-byte base64 key")
        return raw
    raw = secrets.token_bytes(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(base64.b64encode(raw) + b"\n")
    return raw
