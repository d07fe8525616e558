from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from workbench.composition import Gateway, build_registry
from workbench.web.app import create_web_app

from tests.support.gateways import make_gateway

TEST_PLUGINS = ("tests.connections.plugins.testkey", "tests.connections.plugins.testoauth")


@pytest.fixture
def web_gw(tmp_path: Path) -> Gateway:
    return make_gateway(
        tmp_path,
        registry=build_registry(extra=TEST_PLUGINS),
        dev_login=True,
        plugin_env={"TESTOAUTH_CLIENT_ID": "cid"},
    )


@pytest.fixture
def browser_for(web_gw: Gateway) -> Callable[[str], TestClient]:
    """A client signed in (development sign-in) as `email`, over https so Secure cookies flow."""

    def make(email: str) -> TestClient:
        client = TestClient(create_web_app(web_gw), base_url="https://testserver", follow_redirects=False)
        r = client.post("/api/auth/dev-login", data={"email": email, "next": "/portal/integrations"})
        assert r.status_code == 303 and r.headers["location"] == "/portal/integrations"
        return client

    return make


def csrf_of(html: str) -> str:
    match = re.search(r'name="csrf" value="([0-9a-f]{64})"', html)
    assert match, "page has no CSRF field"
    return match.group(1)
