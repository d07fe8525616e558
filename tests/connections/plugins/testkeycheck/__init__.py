"""A test-only API-key plugin whose key is checked when connecting (a Stripe-like probe).

Registered through WORKBENCH_EXTRA_PLUGINS=tests.connections.plugins.testkeycheck; its API is the
loopback provider (tests/connections/loopback_provider.py) at WB_TEST_KEY_API_URL.
"""

from __future__ import annotations

import os

from workbench.manifest import ApiKeyAuth, ApiKeyField, Manifest, Probe

__all__ = ["manifest"]

manifest = Manifest(
    name="testkeycheck",
    version="1.0.0",
    display_name="Key-Checked Service",
    description="Connected with a secret key that is checked before it is stored.",
    auth=ApiKeyAuth(fields=(ApiKeyField("api_key", "Secret key", help="Starts with sk_test_."),)),
    base_url=os.environ.get("WB_TEST_KEY_API_URL", "http://127.0.0.1:9"),
    tool_prefix="testkeycheck_",
    tools_module="tests.connections.plugins.testkeycheck.tools",
    probe=Probe("GET", "/v1/balance"),
)
