"""Settings as the environment gives them."""

from __future__ import annotations

import json

from workbench.settings import Settings


def test_the_repr_of_settings_shows_none_of_the_secrets_they_hold() -> None:
    secrets = {
        "WORKBENCH_LOCAL_KEY": "bG9jYWwta2V5LW1hdGVyaWFsLXNlY3JldC0wMDAwMDA=",
        "WORKBENCH_SESSION_SECRET": "session-secret-1f6b",
        "WORKBENCH_OIDC_CLIENT_SECRET": "oidc-secret-77aa",
        "GITHUB_CLIENT_SECRET": "github-secret-93c1",
        "ACME_TOKEN": "acme-env-token-5d2e",
    }
    servers = [
        {
            "name": "acme",
            "url": "https://mcp.acme.example/mcp",
            "auth": {"type": "bearer", "envVar": "ACME_TOKEN"},
            "headers": {"X-Inline": "inline-header-secret-0c4d"},
        }
    ]
    settings = Settings.from_env(
        {**secrets, "WORKBENCH_OIDC_CLIENT_ID": "portal", "WORKBENCH_EXTERNAL_SERVERS": json.dumps(servers)}
    )
    # What they hold is read as before ...
    assert settings.session_secret == secrets["WORKBENCH_SESSION_SECRET"]
    assert settings.oidc_client_secret == secrets["WORKBENCH_OIDC_CLIENT_SECRET"]
    assert settings.plugin_env["GITHUB_CLIENT_SECRET"] == secrets["GITHUB_CLIENT_SECRET"]
    assert settings.external_env == {"ACME_TOKEN": secrets["ACME_TOKEN"]}
    assert settings.external_servers[0]["headers"] == {"X-Inline": "inline-header-secret-0c4d"}
    # ... and none of it is in the repr a log line or a traceback would show.
    shown = repr(settings)
    assert "oidc_client_id='portal'" in shown
    for value in [*secrets.values(), "inline-header-secret-0c4d"]:
        assert value not in shown
