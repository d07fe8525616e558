"""The hostile portal tests' helpers: the whole local app (every surface on one port, as `workbench
serve` mounts it) over a real SQLite store, and browsers signed in as different users."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient
from workbench.composition import Gateway, build_gateway, build_registry
from workbench.settings import Settings

ORIGIN = "https://wb.example"
ADMIN = "admin@example.com"


def review_gateway(tmp_path: Path, **settings: Any) -> Gateway:
    """A gateway as `workbench serve` builds one, on its SQLite file (the store a local user has)."""
    base = Settings(
        store="sqlite",
        data_dir=tmp_path,
        public_url=ORIGIN,
        dev_login=True,
        session_secret="review-session-secret-0123456789",
        admin_emails=frozenset({ADMIN}),
    )
    for key, value in settings.items():
        object.__setattr__(base, key, value)
    return build_gateway(base, registry=build_registry(extra=base.extra_plugins))


@dataclass
class Browser:
    """One person's browser: their session cookie, the CSRF token of their pages, the same origin."""

    client: TestClient
    email: str

    def csrf(self, page: str = "/portal/api-keys") -> str:
        match = re.search(r'name="csrf" value="([0-9a-f]{64})"', self.client.get(page).text)
        assert match, f"{page} has no CSRF field"
        return match.group(1)

    def post(self, path: str, data: dict[str, str] | None = None, *, csrf: bool = True) -> Any:
        form = dict(data or {})
        if csrf:
            form["csrf"] = self.csrf()
        return self.client.post(path, data=form, headers={"origin": ORIGIN})

    def notices(self, page: str) -> list[str]:
        """The notices a page shows (text, unescaped)."""
        html = self.client.get(page).text
        return [
            unescape(n) for n in re.findall(r'<div class="notice [a-z]+" role="[a-z]+">(.*?)</div>', html)
        ]


def sign_in(app: Any, email: str) -> Browser:
    client = TestClient(app, base_url=ORIGIN, follow_redirects=False, raise_server_exceptions=False)
    r = client.post("/api/auth/dev-login", data={"email": email, "next": "/portal/integrations"})
    assert r.status_code == 303, r.text
    return Browser(client, email)
