"""curl_session (seed 001): the verbatim description, all-or-nothing validation, lifetimes, the
response shape, the token's claims, and the audit trail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from workbench.composition import Gateway
from workbench.engine.meta import META_TOOLS, MetaTools
from workbench.errors import InvalidInput

from tests.proxy.conftest import proxy_gateway
from tests.support.gateways import principal_for

SEED_DESCRIPTION = (
    "HIGH RISK — do not call without explicit user approval. Mints a short-lived proxy token (15 min by "
    "default; set expiresInSeconds for 60s–1h, and ask for no longer than the task needs) granting ARBITRARY "
    "API calls (GET/POST/PUT/PATCH/DELETE), including destructive writes, against the listed integration(s) — "
    "the proxy injects the user's real credential transparently at /c/<integration>/<path>, so anything "
    "reachable via that credential is reachable through this token. Before invoking, tell the user exactly "
    "which integration(s) and what action you intend to perform, and wait for their explicit go-ahead; do not "
    "mint speculatively or as a default first step. Only integrations that have curl proxy enabled are accepted."
)


@pytest.fixture
def gw(tmp_path: Path) -> Gateway:
    return proxy_gateway(tmp_path, 9, public_url="https://wb.example.com")


async def _call(gw: Gateway, **args: object) -> dict[str, object]:
    out = await MetaTools(gw).call("curl_session", principal_for(gw), dict(args))
    assert isinstance(out, dict)
    return out


def test_description_is_the_seed_text_verbatim() -> None:
    [tool] = [t for t in META_TOOLS if t.name == "curl_session"]
    assert tool.description == SEED_DESCRIPTION


async def test_mint_answers_the_seed_shape_with_the_default_lifetime(gw: Gateway) -> None:
    out = await _call(gw, integrations=["acme"])
    assert set(out) == {"token", "expiresIn", "proxyBaseUrl", "usage"}
    assert out["expiresIn"] == 900
    assert out["proxyBaseUrl"] == "https://wb.example.com/c"
    assert out["usage"] == (
        "Send requests to https://wb.example.com/c/<integration>/<path> with Authorization: Bearer <token>"
    )
    claims = gw.tokens.verify(str(out["token"]), audience="https://wb.example.com/c")
    assert claims["integrations"] == ["acme"]
    assert claims["typ"] == "curl_session"
    assert claims["sub"] == principal_for(gw).user.id
    assert claims["exp"] - claims["iat"] == 900


@pytest.mark.parametrize("seconds", [60, 61, 1800, 3600])
async def test_lifetime_within_bounds_is_honoured(gw: Gateway, seconds: int) -> None:
    out = await _call(gw, integrations=["acme", "other"], expiresInSeconds=seconds)
    assert out["expiresIn"] == seconds
    claims = gw.tokens.verify(str(out["token"]), audience="https://wb.example.com/c")
    assert claims["exp"] - claims["iat"] == seconds
    assert claims["integrations"] == ["acme", "other"]


@pytest.mark.parametrize("bad", [59, 3601, 0, -5, "900", 900.5, True, None])
async def test_lifetime_out_of_bounds_is_a_schema_error(gw: Gateway, bad: object) -> None:
    if bad is None:  # explicit null means "not given"
        assert (await _call(gw, integrations=["acme"], expiresInSeconds=bad))["expiresIn"] == 900
        return
    with pytest.raises(InvalidInput):
        await _call(gw, integrations=["acme"], expiresInSeconds=bad)


async def test_validation_is_all_or_nothing_with_failures_joined(gw: Gateway) -> None:
    out = await _call(gw, integrations=["acme", "nope", "noproxy", "jots"])
    assert out == {
        "error": "Unknown integration: nope; noproxy does not have curl proxy enabled; "
        "jots does not have curl proxy enabled"
    }


async def test_not_connected_integrations_can_still_be_minted(gw: Gateway) -> None:
    """The seed's only rule is 'curl proxy enabled'; the proxy answers NOT_CONNECTED on use."""
    assert gw.stores.connections.list_for(principal_for(gw).user.id) == []
    assert "token" in await _call(gw, integrations=["acme"])


async def test_minting_is_audited_without_the_token(gw: Gateway) -> None:
    ok = await _call(gw, integrations=["acme"], expiresInSeconds=120)
    await _call(gw, integrations=["nope"])
    events = [e for e in gw.stores.audit.list_for(principal_for(gw).user.id) if e["action"] == "CURL_SESSION"]
    failed, succeeded = events
    assert (succeeded["success"], succeeded["integrations"], succeeded["expires_in"]) == (True, ["acme"], 120)
    jti = gw.tokens.verify(str(ok["token"]), audience="https://wb.example.com/c")["jti"]
    assert succeeded["session"] == jti
    assert (failed["success"], failed["error"]) == (False, "Unknown integration: nope")
    assert str(ok["token"]) not in json.dumps(events)
