"""The MCP clients page over the real authorization server: list live clients, revoke one."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient
from workbench.web.app import create_web_app

from tests.oauth.conftest import make_as
from tests.web.conftest import csrf_of


def test_clients_holding_refresh_tokens_are_listed_and_revocation_kills_their_refresh(tmp_path: Path) -> None:
    auth = make_as(tmp_path)
    with auth.http:
        client_id = auth.register(client_name="Claude Code (test)")["client_id"]
        tokens = auth.tokens_for(client_id)
        assert "refresh_token" in tokens
        portal = TestClient(create_web_app(auth.gw), base_url="https://testserver", follow_redirects=False)
        portal.headers["cookie"] = auth.cookie

        page = portal.get("/portal/clients")
        assert page.status_code == 200
        assert "Claude Code (test)" in page.text and client_id in page.text
        assert 'aria-label="Revoke Claude Code (test)"' in page.text

        # Another user sees nothing of it, and cannot revoke it.
        _, bob_cookie = auth.session_for("bob@example.com")
        bob = TestClient(create_web_app(auth.gw), base_url="https://testserver", follow_redirects=False)
        bob.headers["cookie"] = bob_cookie
        bob_page = bob.get("/portal/clients")
        assert client_id not in bob_page.text and "No MCP client holds a live refresh token" in bob_page.text
        assert (
            bob.get(f"/portal/clients/{client_id}/revoke").headers["location"]
            == "/portal/clients?error=no-client"
        )
        denied = bob.post(f"/portal/clients/{client_id}/revoke", data={"csrf": csrf_of(bob_page.text)})
        assert "no live tokens on your account" in bob.get(denied.headers["location"]).text

        no_csrf = portal.post(f"/portal/clients/{client_id}/revoke", data={})
        assert no_csrf.status_code == 403

        confirm = portal.get(f"/portal/clients/{client_id}/revoke")
        assert confirm.status_code == 200 and "Revoke client" in confirm.text
        revoked = portal.post(f"/portal/clients/{client_id}/revoke", data={"csrf": csrf_of(confirm.text)})
        assert revoked.status_code == 303 and revoked.headers["location"] == "/portal/clients?revoked=1"
        after = portal.get(revoked.headers["location"]).text
        assert "The client was revoked." in after
        assert client_id not in after and "No MCP client holds a live refresh token" in after
        refresh = auth.token(
            {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": client_id}
        )
        assert refresh.status_code == 400 and refresh.json()["error"] == "invalid_grant"
