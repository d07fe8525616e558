"""AWS KMS as the master key of envelope encryption (crypto.KeyProvider).

A data key is generated per row context under the symmetric KMS key, with the row context as the
KMS EncryptionContext: KMS itself refuses to unwrap a data key for another row, and CloudTrail
records which row each Decrypt was for. The Cipher caches plaintext data keys for a bounded time,
so a warm instance calls KMS at most once per key per window. Key rotation (KMS automatic rotation,
or pointing WORKBENCH_KMS_KEY_ID at a new key) needs no re-encryption: each blob names the key that
wrapped its data key, and KMS keeps old key material for decryption.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from workbench.aws.clients import LazyClient, client_error_code
from workbench.errors import CryptoError, Unavailable, as_unavailable

if TYPE_CHECKING:
    from workbench.settings import Settings

__all__ = ["KmsKeyProvider"]

# The only answers that mean "this blob is not for this row/key" (its context or key differs, or it
# is damaged): a credential that gets one must be connected (a vault secret set) again. Anything
# else (a throttle, a 5xx, a timeout, a dropped connection, a key that is disabled or that this
# function may not use) is KMS not helping this time: Unavailable, and the stored blob is kept.
_REFUSED = {"InvalidCiphertextException", "IncorrectKeyException"}


def _unavailable(operation: str, exc: Exception) -> Unavailable:
    outage = as_unavailable(exc)
    detail = (
        outage.detail if outage is not None else f"{operation} {client_error_code(exc) or type(exc).__name__}"
    )
    return Unavailable("key service", detail)


class KmsKeyProvider:
    def __init__(self, key_id: str, *, settings: Settings | None = None, client: Any | None = None) -> None:
        if not key_id:
            raise CryptoError("WORKBENCH_KMS_KEY_ID is required with the kms key backend")
        if settings is None and client is None:
            raise ValueError("KmsKeyProvider needs settings (to create a client) or a client")
        self.key_id = key_id
        self.calls = 0
        self._lock = threading.Lock()
        if client is not None:
            self._client: LazyClient | None = None
            self._injected: Any = client
        else:
            assert settings is not None
            self._client = LazyClient("kms", settings)
            self._injected = None

    @classmethod
    def from_settings(cls, settings: Settings, *, client: Any | None = None) -> KmsKeyProvider:
        return cls(settings.kms_key_id or "", settings=settings, client=client)

    @property
    def client(self) -> Any:
        return self._injected if self._client is None else self._client.get()

    def _count(self) -> None:
        with self._lock:
            self.calls += 1

    def generate_data_key(self, context: Mapping[str, str]) -> tuple[bytes, bytes]:
        self._count()
        try:
            out = self.client.generate_data_key(
                KeyId=self.key_id, KeySpec="AES_256", EncryptionContext=dict(context)
            )
        except Exception as exc:
            if client_error_code(exc) is None and as_unavailable(exc) is None:
                raise  # not an answer from KMS, nor a failure to get one: a bug, not an outage
            raise _unavailable("GenerateDataKey", exc) from exc
        # Blobs record the key ARN KMS answered with, even when configured by alias.
        self.key_id = str(out.get("KeyId") or self.key_id)
        return bytes(out["Plaintext"]), bytes(out["CiphertextBlob"])

    def decrypt_data_key(self, key_id: str, wrapped: bytes, context: Mapping[str, str]) -> bytes:
        self._count()
        try:
            out = self.client.decrypt(CiphertextBlob=wrapped, KeyId=key_id, EncryptionContext=dict(context))
        except Exception as exc:
            code = client_error_code(exc)
            if code in _REFUSED:
                raise CryptoError("data key does not unwrap for this row") from exc
            if code is None and as_unavailable(exc) is None:
                raise
            raise _unavailable("Decrypt", exc) from exc
        return bytes(out["Plaintext"])
