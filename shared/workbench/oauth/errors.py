"""OAuth protocol errors (RFC 6749 §5.2, RFC 7591 §3.2.2, RFC 8707 §2): an error code, a
human-readable description and the HTTP status. Mapped to the wire in one place (routes.py)."""

from __future__ import annotations

from workbench.errors import WorkbenchError

__all__ = ["OAuthError", "RedirectableError", "TooManyRequests"]


class OAuthError(WorkbenchError):
    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.status = 401 if error == "invalid_client" and status == 400 else status

    def body(self) -> dict[str, str]:
        return {"error": self.error, "error_description": self.description}


class RedirectableError(OAuthError):
    """An /authorize error sent back to the client's (already verified) redirect URI (RFC 6749 §4.1.2.1)."""

    def __init__(self, error: str, description: str, *, redirect_uri: str, state: str | None) -> None:
        super().__init__(error, description)
        self.redirect_uri = redirect_uri
        self.state = state


class TooManyRequests(OAuthError):
    """429 with Retry-After: registration over its rate or the gateway's client cap."""

    def __init__(self, description: str, retry_after: int) -> None:
        super().__init__("temporarily_unavailable", description, 429)
        self.retry_after = retry_after
