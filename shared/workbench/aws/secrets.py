"""The gateway's secrets from one Secrets Manager secret (a JSON object), read at run time.

The value is kept in this instance's memory for a TTL (`WORKBENCH_SECRET_CACHE_SECONDS`, 300 s), so
a warm instance calls Secrets Manager at most once per TTL and picks up a rotation (a new secret
version) within it, with no stack update. Nothing is read during init (SnapStart, cold start): the
first `get` fetches.

This is the caching Powertools Parameters' `get_secret(max_age=...)` does, kept here instead:
importing `aws_lambda_powertools.utilities.parameters` imports boto3, and the functions' AWS calls
go through the engine's own SigV4 client (`workbench.aws.client`) so that no cold start pays for it.

Failures never turn into "not configured" by accident: when Secrets Manager cannot be read, the last
value read is served (and the failure logged) for a while before asking again; with nothing read
yet, `ConfigError` says why. A secret that does not exist is the one failure that means "nothing is
configured", remembered for a TTL like a value.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from workbench.aws.clients import LazyClient, client_error_code
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
        self._last: Mapping[str, Any] | None = None
        # What to answer without asking Secrets Manager until _hold_until: the value within its TTL,
        # a missing secret, the last value during an outage, or (briefly) the error.
        self._held: Mapping[str, Any] | ConfigError = {}
        self._hold_until = float("-inf")
        self.fetches = 0  # GetSecretValue calls this instance made

    @classmethod
    def from_settings(cls, settings: Settings, *, client: Any | None = None) -> SecretsManagerSecrets:
        if not settings.secret_id:
            raise ConfigError("WORKBENCH_SECRET_ID is not set")
        return cls(
            settings.secret_id, settings=settings, ttl_seconds=settings.secret_cache_seconds, client=client
        )

    def _values(self) -> Mapping[str, Any]:
        with self._lock:  # one fetch at a time per instance; the others then meet the cache
            now = self._clock()
            if now < self._hold_until:
                if isinstance(self._held, ConfigError):
                    raise self._held
                return self._held
            self.fetches += 1
            try:
                answer = self._client.get().get_secret_value(SecretId=self.secret_id)
            except Exception as exc:
                code = client_error_code(exc)
                if code == "ResourceNotFoundException":
                    log_event("secret_missing", secret=self.secret_id)
                    value: Any = {}
                else:
                    return self._failed(now, code or type(exc).__name__)
            else:
                try:
                    value = json.loads(answer.get("SecretString") or "")
                except ValueError:
                    value = None
                if not isinstance(value, dict):
                    return self._failed(now, "the secret's value is not a JSON object")
            values: Mapping[str, Any] = value
            self._last = values
            self._held, self._hold_until = values, now + self.ttl
            return values

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
