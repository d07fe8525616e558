"""A test-only integration whose base URL is a recording server on loopback, for driving the curl
proxy inside a real `workbench serve`. Registered only through
WORKBENCH_EXTRA_PLUGINS=tests.proxy.e2e_plugin; the upstream comes from PROXY_E2E_UPSTREAM_URL."""

from __future__ import annotations

import os

from workbench.manifest import ApiKeyAuth, ApiKeyField, Manifest

__all__ = ["manifest"]

manifest = Manifest(
    name="loopback-api",
    version="1.0.0",
    display_name="Loopback API",
    description="A recording HTTP server on loopback (tests only).",
    auth=ApiKeyAuth(fields=(ApiKeyField("token", "Token"),)),
    base_url=os.environ.get("PROXY_E2E_UPSTREAM_URL", "http://127.0.0.1:9") + "/api",
    tool_prefix="loopback_api_",
    curl_proxy=True,
    tools_module="tests.proxy.e2e_plugin.tools",
)
