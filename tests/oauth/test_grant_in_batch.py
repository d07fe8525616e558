"""An OAuth access token's grant checked with the request's first batch read (issue 24).

An access token names the refresh token issued with it (`grant_token`, its hash: the key of its
record). Revoking the grant (a replayed refresh token, RFC 7009 revocation) or signing the client out
in the portal deletes that record, so once this instance's auth cache has lapsed, the record read by
key says whether the grant stands: for search_tools and execute_tools in the batch they read first
anyway (no Query of the refresh-token family before it), for any other call on its own. What users
rely on: a grant revoked on another instance is refused on the very next check here, with nothing
run, and a grant that stands costs no extra round trip."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest
from workbench.composition import Gateway, build_gateway, build_registry
from workbench.identity.crypto import LocalKeyProvider
from workbench.settings import Settings

from tests.oauth.conftest import AS, BASE, make_as


class Reads:
    """Stores.read_together, recording what each call asked for."""

    def __init__(self, gw: Gateway) -> None:
        self.inner = gw.stores.read_together
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **asked: Any) -> Any:
        self.calls.append(asked)
        return self.inner(**asked)


@pytest.fixture
def auth(tmp_path: Path) -> Any:
    server = make_as(tmp_path / "here", auth_cache_seconds=15)
    with server.http:
        yield server


def _elsewhere(auth: AS, tmp_path: Path) -> Gateway:
    """Another instance on the same store: its writes are not seen by this one's caches."""
    base = Settings(store="memory", data_dir=tmp_path / "there", public_url=BASE)
    return build_gateway(
        base,
        stores=auth.gw.stores,
        registry=build_registry(),
        key_provider=LocalKeyProvider.from_secret(os.urandom(32)),
    )


def _claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


def _wire(auth: AS) -> tuple[Reads, list[str]]:
    """Record every batch read, and every Query of a refresh-token family (which must not happen)."""
    gw = auth.gw
    reads = Reads(gw)
    gw.auth._read_together = reads
    gw.engine.read_together = reads
    assert gw.external is not None
    gw.external._read_together = reads
    families: list[str] = []
    real = gw.auth._grant_live
    assert real is not None

    def family_exists(family_id: str) -> bool:
        families.append(family_id)
        return real(family_id)

    gw.auth._grant_live = family_exists
    return reads, families


def _execute(auth: AS, token: str, *executions: dict[str, Any]) -> Any:
    return auth.mcp(token, params={"name": "execute_tools", "arguments": {"executions": list(executions)}})


JOT = {"tool": "create_jot", "args": {"title": "t", "body": "b"}}


def _lapse(auth: AS) -> None:
    auth.clock.offset += 16  # past the auth cache's 15 s


def _refused(resp: Any) -> None:
    assert resp.status_code == 401, resp.text
    assert resp.json()["error"]["message"] == "Unauthorized: the access token's grant was revoked"


def test_the_access_token_names_the_refresh_token_issued_with_it(auth: AS) -> None:
    import hashlib

    client = auth.register()["client_id"]
    issued = auth.tokens_for(client)
    claims = _claims(issued["access_token"])
    assert claims["grant_token"] == hashlib.sha256(issued["refresh_token"].encode()).hexdigest()
    refreshed = auth.token(
        {"grant_type": "refresh_token", "refresh_token": issued["refresh_token"], "client_id": client}
    ).json()
    assert _claims(refreshed["access_token"])["grant_token"] == (
        hashlib.sha256(refreshed["refresh_token"].encode()).hexdigest()
    )
    assert _claims(refreshed["access_token"])["grant"] == claims["grant"]  # the same family


def test_a_lapsed_grant_is_checked_in_the_executions_batch(auth: AS) -> None:
    client = auth.register()["client_id"]
    access = auth.tokens_for(client)["access_token"]
    assert _execute(auth, access, JOT).status_code == 200
    reads, families = _wire(auth)
    _lapse(auth)
    resp = _execute(auth, access, JOT, {"tool": "github_list_repos", "args": {}})
    assert resp.status_code == 200, resp.text
    # One batch: the grant's refresh token beside the connection the executions need.
    assert len(reads.calls) == 1, reads.calls
    assert reads.calls[0]["refresh_token"] == _claims(access)["grant_token"]
    assert reads.calls[0]["connections"]
    assert families == []
    # Kept as any check: the next call within the cache's time reads no grant.
    reads.calls.clear()
    assert _execute(auth, access, JOT).status_code == 200
    assert all("refresh_token" not in asked for asked in reads.calls)


def test_a_lapsed_grant_is_checked_in_the_searchs_batch(auth: AS) -> None:
    client = auth.register()["client_id"]
    access = auth.tokens_for(client)["access_token"]
    search = {"name": "search_tools", "arguments": {"query": "create a jot"}}
    assert auth.mcp(access, params=search).status_code == 200
    reads, families = _wire(auth)
    _lapse(auth)
    resp = auth.mcp(access, params=search)
    assert resp.status_code == 200 and "create_jot" in resp.text, resp.text
    assert [asked.get("refresh_token") for asked in reads.calls] == [_claims(access)["grant_token"]]
    assert families == []


@pytest.mark.parametrize("how", ["client signed out", "refresh token revoked", "refresh token replayed"])
@pytest.mark.parametrize("call", ["execute_tools", "search_tools", "tools/list"])
def test_a_grant_revoked_on_another_instance_is_refused_at_the_next_check(
    auth: AS, tmp_path: Path, how: str, call: str
) -> None:
    client = auth.register()["client_id"]
    issued = auth.tokens_for(client)
    access = issued["access_token"]
    assert _execute(auth, access, JOT).status_code == 200
    there = _elsewhere(auth, tmp_path)
    if how == "client signed out":
        assert there.oauth.revoke_client(auth.user.id, client) is True  # the portal's "Revoke"
    elif how == "refresh token revoked":
        there.oauth.revoke([("token", issued["refresh_token"]), ("client_id", client)], None)
    else:  # rotated once, then the first one used again: the family is revoked
        again = {"grant_type": "refresh_token", "refresh_token": issued["refresh_token"], "client_id": client}
        assert auth.token(again).status_code == 200
        assert auth.token(again).status_code == 400
    _, families = _wire(auth)
    jots_before = len(auth.gw.stores.jots.list_for(auth.user.id))
    _lapse(auth)
    if call == "execute_tools":
        resp = _execute(auth, access, JOT)
    elif call == "search_tools":
        resp = auth.mcp(access, params={"name": "search_tools", "arguments": {"query": "create a jot"}})
    else:
        resp = auth.mcp(access, "tools/list")
    _refused(resp)
    assert len(auth.gw.stores.jots.list_for(auth.user.id)) == jots_before  # nothing ran
    assert families == []
    _refused(_execute(auth, access, JOT))  # and from then on


def test_a_token_issued_before_a_rotation_stands_while_its_grant_does(auth: AS) -> None:
    """Rotation keeps the used refresh token's record (to recognise a replay): the access tokens
    issued with it stand as long as the grant does, as the family's check answered."""
    client = auth.register()["client_id"]
    issued = auth.tokens_for(client)
    access = issued["access_token"]
    again = {"grant_type": "refresh_token", "refresh_token": issued["refresh_token"], "client_id": client}
    fresh = auth.token(again).json()["access_token"]
    _lapse(auth)
    assert _execute(auth, access, JOT).status_code == 200
    assert _execute(auth, fresh, JOT).status_code == 200
    assert auth.token(again).status_code == 400  # a replay: the whole grant goes
    _lapse(auth)
    _refused(_execute(auth, access, JOT))
    _refused(_execute(auth, fresh, JOT))


def test_a_token_without_grant_token_is_still_checked_by_its_family(auth: AS) -> None:
    """Access tokens issued before tokens named their refresh token: the family's Query, as before."""
    client = auth.register()["client_id"]
    issued = auth.tokens_for(client)
    claims = _claims(issued["access_token"])
    older = auth.gw.tokens.mint(
        {
            k: v
            for k, v in claims.items()
            if k not in ("grant_token", "exp", "iat", "nbf", "iss", "aud", "jti")
        },
        audience=claims["aud"],
        ttl_seconds=600,
    )
    assert _execute(auth, older, JOT).status_code == 200
    _, families = _wire(auth)
    assert auth.gw.oauth.revoke_client(auth.user.id, client) is True
    _lapse(auth)
    _refused(_execute(auth, older, JOT))
    assert families == [claims["grant"]]
