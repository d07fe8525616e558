"""The gateway's secrets from one Secrets Manager secret (a JSON object), read at run time.

Powertools Parameters (`SecretsProvider.get(..., transform="json", max_age=TTL)`) keeps the value
in this instance's memory for the TTL, so a warm instance calls Secrets Manager at most once per
TTL and picks up a rotation (a new secret version) within it. Nothing is read during init (SnapStart,
cold start): the first `get` fetches.

Failures never turn into "not configured" by accident: when Secrets Manager cannot be read, the last
value read is served (and the failure logged) for a while before asking again; with nothing read yet, `ConfigError` says why. A
secret that does not exist is the one failure that means "nothing is configured", remembered for a
TTL like a value.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from workbench._aws import LazyClient, client_error_code
from workbench.errors import ConfigError
from workbench.observability import log_event

if TYPE_CHECKING:
    from workbench.settings import Settings

__all__ = ["SecretsManagerSecrets"]

# After a failed read: serve the last value this long before asking again; with no value, the error.
_RETRY_SECONDS = 30.0
_ERROR_HOLD_SECONDS = 5.0


class SecretsManagerSecrets:
    def __init__(
        self,
        secret_id: str,
        *,
        settings: Settings,
        ttl_seconds: int = 300,
        client: Any | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.secret_id = secret_id
        self.ttl = max(0, ttl_seconds)
        self._client = LazyClient("secretsmanager", settings, client)
        self._clock = clock
        self._lock = threading.Lock()
        self._provider: Any = None
        self._last: Mapping[str, Any] | None = None
        # What to answer without asking Secrets Manager until _hold_until (a missing secret, an outage).
        self._held: Mapping[str, Any] | ConfigError = {}
        self._hold_until = 0.0

    @classmethod
    def from_settings(cls, settings: Settings, *, client: Any | None = None) -> SecretsManagerSecrets:
        assert settings.secret_id
        return cls(
            settings.secret_id, settings=settings, ttl_seconds=settings.secret_cache_seconds, client=client
        )

    def _values(self) -> Mapping[str, Any]:
        from aws_lambda_powertools.utilities.parameters import SecretsProvider
        from aws_lambda_powertools.utilities.parameters.exceptions import (
            GetParameterError,
            TransformParameterError,
        )

        with self._lock:  # one fetch at a time per instance; the others then meet the cache
            now = self._clock()
            if now < self._hold_until:
                if isinstance(self._held, ConfigError):
                    raise self._held
                return self._held
            if self._provider is None:
                self._provider = SecretsProvider(boto3_client=self._client.get())
            try:
                value = self._provider.get(self.secret_id, max_age=self.ttl, transform="json")
            except TransformParameterError:
                return self._failed(now, "the secret is not a JSON object")
            except GetParameterError as exc:
                cause = exc.__context__  # powertools re-raises without chaining; the SDK error is here
                code = (client_error_code(cause) if cause else None) or type(cause).__name__
                if code != "ResourceNotFoundException":
                    return self._failed(now, code)
                log_event("secret_missing", secret=self.secret_id)
                value = {}
                self._held, self._hold_until = value, now + self.ttl
            if not isinstance(value, dict):
                return self._failed(now, "the secret is not a JSON object")
            self._last = value
            return value

    def _failed(self, now: float, reason: str) -> Mapping[str, Any]:
        """Serve the last value read for a while (or the error, briefly): a Secrets Manager outage
        must neither make every request wait on it nor look like "not configured"."""
        log_event(
            "secret_unreadable", secret=self.secret_id, reason=reason, serving_cached=self._last is not None
        )
        if self._last is not None:
            self._held, self._hold_until = self._last, now + _RETRY_SECONDS
            return self._last
        error = ConfigError(f"the gateway's secret could not be read ({reason})")
        self._held, self._hold_until = error, now + _ERROR_HOLD_SECONDS
        raise error

    def get(self, key: str) -> str | None:
        value = self._values().get(key)
        if value is None or value == "":
            return None
        return value if isinstance(value, str) else str(value)

    def setting_name(self, key: str) -> str:
        return key

    def where(self) -> str:
        return "the gateway's Secrets Manager secret (stack output SecretArn)"
