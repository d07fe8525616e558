"""One exception tree for the engine. Each surface maps it to wire errors in one place.

WorkbenchError
├── AuthError                 no/bad credential for Workbench itself (MCP -32001, HTTP 401)
├── NotFound                  a thing that does not exist *for this caller*
├── InvalidInput              bad input from a caller (HTTP 400, MCP -32602)
├── RegistryError             a plugin refused at load (reserved name, bad manifest)
├── ConflictError             a conditional write lost a race, or a name is taken
├── CryptoError               a blob that does not decrypt for its row
└── CredentialError           a provider credential that cannot be used
    ├── NotConnected          no stored credential for (user, integration)
    └── ReconnectRequired     the provider rejected the refresh; the user must connect again
"""

from __future__ import annotations

__all__ = [
    "AuthError",
    "ConflictError",
    "CredentialError",
    "CryptoError",
    "InvalidInput",
    "NotConnected",
    "NotFound",
    "ReconnectRequired",
    "RegistryError",
    "WorkbenchError",
]


class WorkbenchError(Exception):
    """Base of every error the engine raises on purpose."""


class AuthError(WorkbenchError):
    pass


class NotFound(WorkbenchError):
    pass


class InvalidInput(WorkbenchError):
    pass


class RegistryError(WorkbenchError):
    pass


class ConflictError(WorkbenchError):
    pass


class CryptoError(WorkbenchError):
    pass


class CredentialError(WorkbenchError):
    def __init__(self, integration: str, message: str) -> None:
        super().__init__(message)
        self.integration = integration


class NotConnected(CredentialError):
    def __init__(self, integration: str) -> None:
        super().__init__(
            integration, f"{integration} not connected. Use connect('{integration}') to connect."
        )


class ReconnectRequired(CredentialError):
    def __init__(self, integration: str, detail: str = "") -> None:
        tail = f" ({detail})" if detail else ""
        super().__init__(
            integration,
            f"{integration} credential was rejected by the provider{tail}. "
            f"Use connect('{integration}') to reconnect.",
        )
