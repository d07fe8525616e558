"""A test-only cookie integration for the local test site (tests/browser/site.py).

Registered only through WORKBENCH_EXTRA_PLUGINS=tests.browser.cookie_site_plugin, so it is never
part of the shipped catalog. The site's address comes from COOKIE_SITE_URL (a random loopback port).
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from workbench.manifest import CookieAuth, Manifest

__all__ = ["make_manifest", "manifest"]


def make_manifest(site_url: str) -> Manifest:
    return Manifest(
        name="cookie-site",
        version="1.0.0",
        display_name="Cookie Test Site",
        description="A local website whose API needs the session cookie of a signed-in user.",
        auth=CookieAuth(
            login_url=site_url + "/login",
            cookie_domain=urlsplit(site_url).hostname or "127.0.0.1",
            session_cookies=("sid",),
        ),
        base_url=site_url,
        tool_prefix="cookie_site_",
        tools_module="tests.browser.cookie_site_plugin.tools",
    )


manifest = make_manifest(os.environ.get("COOKIE_SITE_URL", "http://127.0.0.1:9"))
