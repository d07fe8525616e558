"""Registration rules that need no upstream: where a gateway may not send requests."""

from __future__ import annotations

from pathlib import Path

import pytest
from workbench.errors import InvalidInput

from tests.support.demo_plugins import demo_registry
from tests.support.gateways import make_gateway, principal_for


@pytest.mark.parametrize(
    "url",
    [
        "https://127.0.0.1:9001/2018-06-01/runtime/invocation/next",  # the Lambda runtime API
        "https://[::1]/mcp",
        "https://10.1.2.3/mcp",
        "https://192.168.0.10/mcp",
        "https://169.254.169.254/latest/meta-data",
        "https://0.0.0.0/mcp",
        "https://2130706433/mcp",
        "https://0x7f.1/mcp",
        "https://127.1/mcp",
        "https://100.64.0.1/mcp",
    ],
)
async def test_the_default_policy_refuses_internal_targets(tmp_path: Path, url: str) -> None:
    gw = make_gateway(tmp_path, registry=demo_registry())
    assert gw.external is not None
    me = principal_for(gw)
    with pytest.raises(InvalidInput, match=r"^url: Refused: "):
        await gw.external.register(me.user.id, name="x", url=url, enabled=False)
    assert gw.external.list_for(me.user.id) == []


@pytest.mark.parametrize("url", ["https://localhost/mcp", "https://api.localhost/mcp"])
async def test_names_that_resolve_to_loopback_are_refused(tmp_path: Path, url: str) -> None:
    async def resolver(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    gw = make_gateway(tmp_path, registry=demo_registry(), resolver=resolver)
    assert gw.external is not None
    me = principal_for(gw)
    with pytest.raises(InvalidInput, match=r"resolves to 127\.0\.0\.1, a loopback address"):
        await gw.external.register(me.user.id, name="x", url=url, enabled=False)
    assert gw.external.list_for(me.user.id) == []


async def test_public_https_targets_are_accepted(tmp_path: Path) -> None:
    gw = make_gateway(tmp_path, registry=demo_registry())
    assert gw.external is not None
    me = principal_for(gw)
    view = await gw.external.register(
        me.user.id, name="x", url="https://mcp.example.com/{workspaceCode}", enabled=False
    )
    assert view["url"] == "https://mcp.example.com/{workspaceCode}" and view["timeout"] == 30_000


async def test_vault_host_that_turns_private_is_refused_at_call_time(tmp_path: Path) -> None:
    gw = make_gateway(tmp_path, registry=demo_registry())
    assert gw.external is not None
    me = principal_for(gw)
    gw.vault.set(me.user.id, "HOST", "mcp.example.com")
    await gw.external.register(
        me.user.id, name="x", url="https://{{vault:HOST}}/mcp", enabled=True, timeout_ms=500
    )
    gw.vault.set(me.user.id, "HOST", "127.0.0.1")
    gw.external.invalidate(me.user.id, "x")
    assert await gw.external.catalog(me.user.id) == []
    with pytest.raises(RuntimeError, match="misconfigured: Refused: \\[REDACTED\\] is a loopback address"):
        await gw.external.call(me.user.id, "x", "x_tool", {})


async def test_vault_url_that_turns_to_plain_http_is_refused_at_call_time(tmp_path: Path) -> None:
    gw = make_gateway(tmp_path, registry=demo_registry())
    assert gw.external is not None
    me = principal_for(gw)
    gw.vault.set(me.user.id, "URL", "https://mcp.example.com/mcp")
    await gw.external.register(me.user.id, name="x", url="{{vault:URL}}", enabled=True, timeout_ms=500)
    gw.vault.set(me.user.id, "URL", "http://mcp.example.com/mcp")
    gw.external.invalidate(me.user.id, "x")
    with pytest.raises(RuntimeError, match="must use https"):
        await gw.external.call(me.user.id, "x", "x_tool", {})


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("https://[::1/mcp", "not a valid URL"),
        ("https://example.com:99999/mcp", "not a valid URL"),
        ("ftp://example.com/mcp", "must use https"),
        ("/relative/mcp", "must be absolute"),
        ("http://example.com/mcp", "must use https"),
        ("https://user:pw@example.com/mcp", "user:password"),
        ("https://example.com\\@evil.test/mcp", "backslash"),
    ],
)
async def test_malformed_urls_are_refused(tmp_path: Path, url: str, message: str) -> None:
    gw = make_gateway(tmp_path, registry=demo_registry())
    assert gw.external is not None
    me = principal_for(gw)
    with pytest.raises(InvalidInput, match=message.replace("(", r"\(").replace(")", r"\)")):
        await gw.external.register(me.user.id, name="x", url=url, enabled=False)
    assert gw.external.list_for(me.user.id) == []


async def test_auth_values_with_line_breaks_never_reach_a_header(tmp_path: Path) -> None:
    gw = make_gateway(tmp_path, registry=demo_registry())
    assert gw.external is not None
    user = principal_for(gw).user
    for auth in (
        {"type": "bearer", "token": "abc\r\nX-Injected: 1"},
        {"type": "header", "headerName": "X-Key", "value": "k\n"},
    ):
        with pytest.raises(InvalidInput, match="line breaks"):
            await gw.external.register(user.id, name="x", url="https://mcp.example.com/mcp", auth=auth)
    # A vault secret that changes after registration is checked again when used.
    gw.vault.set(user.id, "TOKEN", "fine")
    await gw.external.register(
        user.id,
        name="x",
        url="https://mcp.example.com/mcp",
        auth={"type": "bearer", "token": "{{vault:TOKEN}}"},
    )
    gw.vault.set(user.id, "TOKEN", "bad\r\nX-Injected: 1")
    with pytest.raises(RuntimeError, match="misconfigured: its auth value has a line break"):
        await gw.external.call(user.id, "x", "x_anything", {})
