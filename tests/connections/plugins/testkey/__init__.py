"""A test-only API-key plugin (two declared fields) for the portal's API-key form."""

from __future__ import annotations

from workbench.manifest import ApiKeyAuth, ApiKeyField, Manifest

__all__ = ["manifest"]

manifest = Manifest(
    name="testkey",
    version="1.0.0",
    display_name="Test Key Service",
    description="Connected with a key and a secret the user types into the portal.",
    auth=ApiKeyAuth(
        fields=(
            ApiKeyField("key_id", "Key ID", secret=False, help="Shown in the service's settings page."),
            ApiKeyField("key_secret", "Key secret"),
        ),
        scheme="Basic",
    ),
    base_url="http://127.0.0.1:9",
    tool_prefix="testkey_",
    tools_module="tests.connections.plugins.testkey.tools",
)
