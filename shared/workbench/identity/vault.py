"""Per-user secrets, encrypted like credentials (bound to user + name)."""

from __future__ import annotations

from collections.abc import Callable

from workbench.engine.compose import VaultUnreadable
from workbench.errors import CryptoError
from workbench.identity.crypto import Cipher
from workbench.stores import VaultStore

__all__ = ["Vault"]


def _context(user_id: str, name: str) -> dict[str, str]:
    return {"user": user_id, "vault": name, "field": "secret"}


class Vault:
    def __init__(self, store: VaultStore, cipher: Cipher) -> None:
        self.store = store
        self.cipher = cipher

    def set(self, user_id: str, name: str, value: str) -> None:
        self.store.put(user_id, name, self.cipher.encrypt(value.encode(), _context(user_id, name)))

    def get(self, user_id: str, name: str) -> str | None:
        """The secret, None if there is none, VaultUnreadable if its row does not decrypt."""
        blob = self.store.get(user_id, name)
        if blob is None:
            return None
        try:
            return self.cipher.decrypt(blob, _context(user_id, name)).decode()
        except (CryptoError, UnicodeDecodeError) as exc:
            raise VaultUnreadable(name) from exc

    def delete(self, user_id: str, name: str) -> bool:
        return self.store.delete(user_id, name)

    def names(self, user_id: str) -> list[str]:
        return self.store.names(user_id)

    def reader(self, user_id: str) -> Callable[[str], str | None]:
        return lambda name: self.get(user_id, name)
