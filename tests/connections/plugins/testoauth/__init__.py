"""A test-only OAuth2 plugin whose provider is the loopback OAuth server (infra/oidc/server.mjs).

Registered through WORKBENCH_EXTRA_PLUGINS=tests.connections.plugins.testoauth; the provider's URL
comes from WB_TEST_PROVIDER_URL in the gateway process (tests build the manifest directly).
"""

from __future__ import annotations

import os

from workbench.manifest import Manifest, OAuth2Auth

__all__ = ["make_manifest", "manifest"]


def make_manifest(provider_url: str) -> Manifest:
    base = provider_url.rstrip("/")
    return Manifest(
        name="testoauth",
        version="1.0.0",
        display_name="Test OAuth Provider",
        description="A loopback OAuth provider used by the connection tests.",
        auth=OAuth2Auth(
            authorize_url=f"{base}/auth",
            token_url=f"{base}/token",
            scopes=("openid", "offline_access", "api:read"),
            extra_authorize_params=(("prompt", "consent"),),
        ),
        base_url=base,
        tool_prefix="testoauth_",
        tools_module="tests.connections.plugins.testoauth.tools",
    )


manifest = make_manifest(os.environ.get("WB_TEST_PROVIDER_URL", "http://127.0.0.1:9"))
