"""Refresh tokens (rotation, family revocation), RFC 7009 revocation, confidential clients, and the
portal's MCP clients service."""

from __future__ import annotations

import base64
import logging
from typing import Any

import pytest

from tests.oauth.conftest import AS, MCP, REDIRECT, pkce
from tests.support.logs import events as log_events
from tests.support.logs import text as log_text


def refresh(auth: AS, token: str, client_id: str, **extra: str) -> Any:
    return auth.token(
        {"grant_type": "refresh_token", "refresh_token": token, "client_id": client_id, **extra}
    )


def test_every_refresh_rotates_and_reusing_a_rotated_token_revokes_the_family(
    auth: AS, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="workbench")
    client = auth.register()["client_id"]
    first = auth.tokens_for(client)
    r1 = refresh(auth, first["refresh_token"], client, resource=MCP)
    assert r1.status_code == 200, r1.text
    second = r1.json()
    assert second["refresh_token"] != first["refresh_token"]
    assert second["access_token"] != first["access_token"]
    assert second["scope"] == "mcp offline_access"
    assert auth.mcp(second["access_token"]).status_code == 200
    r2 = refresh(auth, second["refresh_token"], client)
    assert r2.status_code == 200
    third = r2.json()
    # An attacker (or a confused client) replays the first token: refused, and the family dies.
    replay = refresh(auth, first["refresh_token"], client)
    assert replay.status_code == 400
    assert replay.json() == {
        "error": "invalid_grant",
        "error_description": "the refresh token was already used; the grant is revoked",
    }
    dead = refresh(auth, third["refresh_token"], client)
    assert dead.json()["error"] == "invalid_grant"
    # The reuse is logged (who, which client, how many tokens died) and no token value is.
    reused = log_events(caplog.records, "oauth_refresh_reused")
    assert reused and reused[0]["client_id"] == client and reused[0]["user"] == auth.user.id
    assert reused[0]["revoked"] == 3
    assert not any(first["refresh_token"] in log_text(r) for r in caplog.records)
    assert auth.gw.stores.oauth_refresh.list_for(auth.user.id) == []  # type: ignore[union-attr]


def test_other_grants_of_the_same_client_survive_a_family_revocation(auth: AS) -> None:
    client = auth.register()["client_id"]
    laptop = auth.tokens_for(client)
    desktop = auth.tokens_for(client)
    assert refresh(auth, laptop["refresh_token"], client).status_code == 200
    assert refresh(auth, laptop["refresh_token"], client).status_code == 400  # reuse: laptop family revoked
    assert refresh(auth, desktop["refresh_token"], client).status_code == 200


def test_refresh_is_bound_to_client_scope_resource_and_lifetime(auth: AS) -> None:
    client = auth.register()["client_id"]
    other = auth.register()["client_id"]
    tokens = auth.tokens_for(client)
    r = refresh(auth, tokens["refresh_token"], client, scope="mcp admin")
    assert r.status_code == 400 and r.json()["error"] == "invalid_scope"
    r = refresh(auth, tokens["refresh_token"], client, resource="https://other.example/mcp")
    assert r.status_code == 400 and r.json()["error"] == "invalid_target"
    # Refusals above did not consume the token; narrowing the scope is allowed.
    r = refresh(auth, tokens["refresh_token"], client, scope="mcp")
    assert r.status_code == 200 and r.json()["scope"] == "mcp"
    current = r.json()["refresh_token"]
    # Presented by another client: refused, and the grant is revoked (the token leaked).
    r = refresh(auth, current, other)
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"
    assert refresh(auth, current, client).json()["error"] == "invalid_grant"
    # Expiry.
    tokens = auth.tokens_for(client)
    auth.clock.offset = 30 * 86400 + 1
    r = refresh(auth, tokens["refresh_token"], client)
    assert r.json() == {"error": "invalid_grant", "error_description": "the refresh token has expired"}
    r = refresh(auth, "wbr_" + "A" * 43, client)
    assert r.json()["error"] == "invalid_grant"


def test_no_refresh_token_for_a_client_registered_without_the_refresh_grant(auth: AS) -> None:
    client = auth.register(grant_types=["authorization_code"])["client_id"]
    tokens = auth.tokens_for(client)
    assert "refresh_token" not in tokens and tokens["scope"] == "mcp"


def test_revocation_endpoint(auth: AS) -> None:
    client = auth.register()["client_id"]
    other = auth.register()["client_id"]
    tokens = auth.tokens_for(client)
    # Another client's revocation has no effect (and answers like an unknown token).
    r = auth.http.post("/revoke", data={"token": tokens["refresh_token"], "client_id": other})
    assert r.status_code == 200
    assert refresh(auth, tokens["refresh_token"], client).status_code == 200
    tokens = auth.tokens_for(client)
    r = auth.http.post(
        "/revoke",
        data={"token": tokens["refresh_token"], "token_type_hint": "refresh_token", "client_id": client},
    )
    assert r.status_code == 200 and r.content == b""
    assert refresh(auth, tokens["refresh_token"], client).json()["error"] == "invalid_grant"
    # Unknown tokens are not an error (RFC 7009 §2.2); access tokens cannot be revoked, they lapse.
    assert auth.http.post("/revoke", data={"token": "nonsense", "client_id": client}).status_code == 200
    r = auth.http.post("/revoke", data={"token": tokens["access_token"], "client_id": client})
    assert r.status_code == 400 and r.json()["error"] == "unsupported_token_type"
    r = auth.http.post("/revoke", data={"token": "x"})
    assert r.status_code == 401 and r.json()["error"] == "invalid_client"
    r = auth.http.post("/revoke", data={"client_id": client})
    assert r.status_code == 400 and r.json()["error"] == "invalid_request"


def test_confidential_client_authenticates_with_its_secret(auth: AS) -> None:
    reg = auth.register(token_endpoint_auth_method="client_secret_basic")
    client, secret = reg["client_id"], reg["client_secret"]
    assert reg["client_secret_expires_at"] == 0
    stored = auth.gw.stores.oauth_clients.get(client)  # type: ignore[union-attr]
    assert stored is not None and secret not in repr(stored)
    verifier, challenge = pkce()
    code = auth.code_for(client, challenge)
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "code_verifier": verifier,
    }
    # Without a secret, and with a wrong one: 401 (with a Basic challenge when Basic was tried).
    r = auth.token({**form, "client_id": client})
    assert r.status_code == 401 and r.json()["error"] == "invalid_client"
    wrong = base64.b64encode(f"{client}:nope".encode()).decode()
    r = auth.token(form, headers={"Authorization": f"Basic {wrong}"})
    assert r.status_code == 401 and r.headers["www-authenticate"] == 'Basic realm="workbench"'
    # The failed attempts above never reached the code, so it is still good.
    good = base64.b64encode(f"{client}:{secret}".encode()).decode()
    r = auth.token(form, headers={"Authorization": f"Basic {good}"})
    assert r.status_code == 200, r.text
    r = refresh(auth, r.json()["refresh_token"], client, client_secret=secret)
    assert r.status_code == 200


def test_portal_lists_live_clients_and_revokes_tokens_and_outstanding_codes(auth: AS) -> None:
    oauth = auth.gw.oauth
    assert oauth is not None and auth.gw.oauth is oauth
    agent = auth.register(client_name="Claude Desktop")["client_id"]
    editor = auth.register(client_name="Cursor")["client_id"]
    a = auth.tokens_for(agent)
    auth.tokens_for(editor)
    listed = oauth.list_clients_with_live_tokens(auth.user.id)
    assert {(g.client_id, g.client_name) for g in listed} == {(agent, "Claude Desktop"), (editor, "Cursor")}
    assert all(g.created_at <= g.last_used_at for g in listed)
    # Someone else sees none of Ada's clients and cannot revoke them.
    eve, _ = auth.session_for("eve@example.com")
    assert oauth.list_for_user(eve.id) == []
    assert oauth.revoke_client(eve.id, agent) is False
    # An authorization code issued but not yet redeemed is revoked along with the refresh tokens.
    verifier, challenge = pkce()
    pending = auth.code_for(agent, challenge)
    assert oauth.revoke_for_user(auth.user.id, agent) is True
    assert [g.client_id for g in oauth.list_for_user(auth.user.id)] == [editor]
    assert refresh(auth, a["refresh_token"], agent).json()["error"] == "invalid_grant"
    r = auth.token(
        {
            "grant_type": "authorization_code",
            "code": pending,
            "redirect_uri": REDIRECT,
            "client_id": agent,
            "code_verifier": verifier,
        }
    )
    assert r.json()["error"] == "invalid_grant"
    # Access tokens already issued stop too (issue 29 item 6, stricter than seed 003's "lapse at
    # their TTL"): their grant is checked with them, within the auth cache's TTL on every instance.
    assert auth.mcp(a["access_token"]).status_code == 401
    assert oauth.revoke_client(auth.user.id, agent) is False


def test_a_revoked_clients_access_tokens_stop_at_the_next_check_on_every_instance(auth: AS) -> None:
    """Issue 29: they kept working until they expired (15 minutes); now an access token's grant is
    checked with the token, so they stop within the auth cache's TTL, as a revoked API key does."""
    from workbench.errors import AuthError

    client = auth.register()["client_id"]
    access = auth.tokens_for(client)["access_token"]
    assert auth.gw.auth.resolve_token(access).client_id == client
    assert auth.gw.oauth.revoke_client(auth.user.id, client) is True  # the portal's "Revoke"
    with pytest.raises(AuthError, match="grant was revoked"):
        auth.gw.auth.resolve_token(access)  # what every instance does when its cache entry lapses
