"""Run-time secrets: the plugins' OAuth clients, the SSO client secret, the session secret.

One port (`SecretSource`), two adapters:
- `EnvSecrets` (the local gateway, tests): the values the process environment gave Settings.
- `aws_secrets.SecretsManagerSecrets` (AWS): one JSON secret in Secrets Manager, read at run time
  with a per-instance cache, so a rotation reaches every warm instance within the cache TTL and no
  stack update is needed. Nothing secret is in the Lambda environment, and a key that is absent
  only leaves its feature "not configured".

Keys (the JSON keys of the Secrets Manager secret; the local environment variable in brackets):
  session_secret                          [WORKBENCH_SESSION_SECRET]
  sso_client_secret                       [WORKBENCH_OIDC_CLIENT_SECRET]
  <PLUGIN>_CLIENT_ID, <PLUGIN>_CLIENT_SECRET   [the same names]; google-gmail -> GOOGLE_GMAIL_...
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from workbench.settings import Settings

__all__ = [
    "SESSION_SECRET",
    "SSO_CLIENT_SECRET",
    "EnvSecrets",
    "SecretSource",
    "plugin_client_keys",
]

SESSION_SECRET = "session_secret"
SSO_CLIENT_SECRET = "sso_client_secret"
# Where the local gateway reads the two non-plugin keys from.
_ENV_NAMES = {SESSION_SECRET: "WORKBENCH_SESSION_SECRET", SSO_CLIENT_SECRET: "WORKBENCH_OIDC_CLIENT_SECRET"}


def plugin_client_keys(integration: str) -> tuple[str, str]:
    """The client id and secret keys of a plugin: `google-gmail` -> GOOGLE_GMAIL_CLIENT_ID/_SECRET."""
    stem = integration.upper().replace("-", "_")
    return f"{stem}_CLIENT_ID", f"{stem}_CLIENT_SECRET"


def plugin_redirect_uri(public_url: str, integration: str) -> str:
    """The redirect URI an operator registers with a plugin's OAuth app (the connect callback)."""
    return f"{public_url.rstrip('/')}/api/auth/plugin/{integration}/callback"


def missing_plugin_client(secrets: SecretSource, integration: str) -> str | None:
    """The setting an operator must add before the OAuth plugin `integration` can be connected; None
    when it is set. Raises ConfigError when the secret store cannot be read."""
    id_key, _ = plugin_client_keys(integration)
    return None if secrets.get(id_key) else secrets.setting_name(id_key)


class SecretSource(Protocol):
    """Where the gateway's secrets live. `get` is called on the request path: adapters cache."""

    def get(self, key: str) -> str | None:
        """The value of `key`; None when it is not set (that feature is then "not configured").

        Raises `errors.ConfigError` when the store cannot be read at all (nothing cached yet)."""
        ...

    def setting_name(self, key: str) -> str:
        """What an operator sets to provide `key` (an environment variable or a secret's JSON key)."""
        ...

    def where(self) -> str:
        """Where such settings go, for messages: "the environment", "the gateway's Secrets Manager secret"."""
        ...


class EnvSecrets:
    """The local gateway's secrets: read once from the environment, through Settings."""

    def __init__(self, values: Mapping[str, str | None]) -> None:
        self._values = {k: v for k, v in values.items() if v}

    @classmethod
    def from_settings(cls, settings: Settings) -> EnvSecrets:
        return cls(
            {
                **settings.plugin_env,
                SESSION_SECRET: settings.session_secret,
                SSO_CLIENT_SECRET: settings.oidc_client_secret,
            }
        )

    def get(self, key: str) -> str | None:
        return self._values.get(key)

    def setting_name(self, key: str) -> str:
        return _ENV_NAMES.get(key, key)

    def where(self) -> str:
        return "the gateway's environment (then restart it)"
