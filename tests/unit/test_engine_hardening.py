"""Issue 12: the engine under hostile input. Every path answers a documented shape and writes its
EXECUTE audit event (seed 000): step-ref indexes, deep arguments and results, upstream timeouts,
undecryptable connection and vault rows, a failing audit store, BAD_REF next to failed writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import BaseModel
from workbench.composition import Gateway
from workbench.engine.executor import MAX_ARGS_DEPTH, MAX_RESULT_DEPTH
from workbench.engine.meta import MetaTools
from workbench.errors import UpstreamTimeout, upstream_timeout_message
from workbench.guard.jsontext import dumps
from workbench.identity.auth import Principal
from workbench.manifest import CookieAuth, Manifest, NoAuth
from workbench.stores import Connection
from workbench.tools import tool

from tests.support.demo_plugins import demo_registry, item
from tests.support.demo_plugins import run_execute as run
from tests.support.gateways import make_gateway, principal_for

COOKIE = Manifest(
    name="crumbs",
    version="1.0.0",
    display_name="Crumbs",
    auth=CookieAuth(login_url="https://crumbs.test/login", cookie_domain="crumbs.test"),
    base_url="https://crumbs.test",
    tool_prefix="crumbs_",
)

PROBE = Manifest(name="probe", version="1.0.0", display_name="Probe", auth=NoAuth(), tool_prefix="probe_")


class Depth(BaseModel):
    levels: int


@tool("crumbs_ping", "Needs the cookie credential.", Depth)
async def crumbs_ping(args: Depth, ctx: Any) -> Any:
    return {"cookie": (await ctx.credential())["cookies"][0]["name"]}


def _nested(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = [value]
    return value


@tool("probe_deep", "Returns a value nested `levels` deep (no credential needed).", Depth)
def probe_deep(args: Depth, ctx: Any) -> Any:
    return _nested(args.levels)


class Nothing(BaseModel):
    pass


@tool("probe_wrapped", "Wraps a timeout in its own message.", Nothing)
async def probe_wrapped(args: Nothing, ctx: Any) -> Any:
    try:
        raise UpstreamTimeout(7)
    except UpstreamTimeout as exc:
        raise RuntimeError("the crumbs export did not finish") from exc


@tool("probe_silent", "Re-raises a timeout as an exception without a message.", Nothing)
async def probe_silent(args: Nothing, ctx: Any) -> Any:
    request = httpx.Request("GET", "https://crumbs.test/x", extensions={"timeout": {"read": 3.5}})
    try:
        raise httpx.ReadTimeout("", request=request)
    except httpx.ReadTimeout as exc:
        raise RuntimeError() from exc


def _registry() -> Any:
    registry = demo_registry()
    registry.add(COOKIE, lambda: [crumbs_ping])
    registry.add(PROBE, lambda: [probe_deep, probe_wrapped, probe_silent])
    return registry


def _timeout_upstream(request: httpx.Request) -> httpx.Response:
    # what httpcore raises, as httpx maps it: the exception carries the request (and its timeouts)
    if request.url.path == "/echo":
        raise httpx.ReadTimeout("", request=request)
    raise httpx.ConnectTimeout("", request=request)


@pytest.fixture
def gw(tmp_path: Path) -> Gateway:
    return make_gateway(tmp_path, registry=_registry(), transport=httpx.MockTransport(_timeout_upstream))


@pytest.fixture
def me(gw: Gateway) -> Principal:
    return principal_for(gw)


def events(gw: Gateway, me: Principal) -> list[dict]:
    return list(reversed(gw.stores.audit.list_for(me.user.id)))


# -- step-ref indexes --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "index",
    ["01", "00", "²", "٣", "１", "߁", "+1", "-1", " 1", "1 ", "1_0", "0x1", "1e0", "9" * 5000],
)
async def test_a_list_index_other_than_plain_ascii_digits_is_bad_ref(
    gw: Gateway, me: Principal, index: str
) -> None:
    values = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"]
    out = await run(
        gw, me, compose=True, executions=[item("s", values), item("t", f"{{{{step:s.value.{index}}}}}")]
    )
    assert out["error"] == "BAD_REF" and out["index"] == 1 and out["ref_id"] == "t"
    assert "is not an index of the list" in out["message"]
    # the refusal is an audited path of its own; the first step ran
    assert [(e["tool"], e["success"], e["error"]) for e in events(gw, me)] == [
        ("free_item", True, None),
        ("free_item", False, "BAD_REF"),
    ]
    projected = await run(
        gw, me, executions=[item("s", values)], **{"return": f"{{{{step:s.value.{index}}}}}"}
    )
    assert projected["error"] == "BAD_REF"


async def test_plain_ascii_indexes_resolve_and_digit_keys_stay_keys(gw: Gateway, me: Principal) -> None:
    values = {"list": [f"v{i}" for i in range(12)], "01": "key-01", "²": "key-sq"}
    out = await run(
        gw,
        me,
        executions=[item("s", values)],
        **{
            "return": [
                "{{step:s.value.list.0}}",
                "{{step:s.value.list.11}}",
                "{{step:s.value.01}}",
                "{{step:s.value.²}}",
            ]
        },
    )
    assert out == {"result": ["v0", "v11", "key-01", "key-sq"]}


# -- return projection exactness (seed 001) ----------------------------------------------------


async def test_bad_ref_in_plain_return_still_lists_every_failed_execution(gw: Gateway, me: Principal) -> None:
    out = await run(
        gw,
        me,
        executions=[
            item("ok", 1),
            {"tool": "free_throw", "args": {}},  # a failed write without a ref_id
            {"tool": "missing_tool", "args": {}},
            {"ref_id": "w", "tool": "free_throw", "args": {}},
        ],
        **{"return": {"v": "{{step:ok.value}}", "broken": "{{step:ok.value.nope}}"}},
    )
    assert out == {
        "error": "BAD_REF",
        "message": "{{step:ok.value.nope}}: 'nope' cannot be read from a int in step 'ok'",
        "errors": [
            {"index": 1, "error": "kaboom"},
            {"index": 2, "error": "Tool not found"},
            {"index": 3, "ref_id": "w", "error": "kaboom"},
        ],
    }


async def test_bad_ref_in_plain_return_without_failures_has_no_errors_key(gw: Gateway, me: Principal) -> None:
    out = await run(gw, me, executions=[item("ok", 1)], **{"return": "{{step:gone.x}}"})
    assert out == {"error": "BAD_REF", "message": "{{step:gone.x}}: no result for step 'gone'"}


# -- depth -------------------------------------------------------------------------------------


async def test_arguments_deeper_than_the_cap_are_invalid_arguments_and_audited(
    gw: Gateway, me: Principal
) -> None:
    fine = _nested(MAX_ARGS_DEPTH - 1)  # the args object itself is one level
    deep = _nested(MAX_ARGS_DEPTH)
    out = await run(gw, me, executions=[item(None, fine), item(None, deep)])
    assert out["results"][0]["result"]["value"] == fine
    assert out["results"][1] == {
        "error": f"Invalid arguments for free_item: (root): nested deeper than {MAX_ARGS_DEPTH} levels"
    }
    # A batch's items run concurrently: their audit rows come in completion order.
    last = next(e for e in reversed(events(gw, me)) if not e["success"])
    assert (last["tool"], last["integration"], last["success"]) == ("free_item", "free", False)
    assert last["error"].startswith("Invalid arguments for free_item")


async def test_a_deep_step_result_inserted_into_args_is_invalid_arguments(gw: Gateway, me: Principal) -> None:
    out = await run(
        gw,
        me,
        compose=True,
        executions=[
            {"ref_id": "d", "tool": "probe_deep", "args": {"levels": 100}},
            item("use", "{{step:d}}"),
        ],
    )
    assert out["index"] == 1 and out["error"].startswith(
        "Invalid arguments for free_item: (root): nested deeper"
    )


async def test_a_result_deeper_than_the_cap_is_an_error_not_a_crash(gw: Gateway, me: Principal) -> None:
    out = await gw.runs.execute(
        me,
        [
            {"tool": "probe_deep", "args": {"levels": MAX_RESULT_DEPTH}, "ref_id": None},
            {"tool": "probe_deep", "args": {"levels": 900}, "ref_id": None},
        ],
    )
    assert out["results"][0]["result"] == _nested(MAX_RESULT_DEPTH)
    assert out["results"][1] == {
        "error": f"The result of probe_deep is nested deeper than {MAX_RESULT_DEPTH} levels"
    }
    json.loads(dumps(out))
    # The two run side by side: their audit rows are written in the order they finish.
    audited = sorted((json.loads(e["args"])["levels"], e["success"]) for e in events(gw, me))
    assert audited == [(MAX_RESULT_DEPTH, True), (900, False)]


# -- upstream timeouts -------------------------------------------------------------------------


async def test_an_upstream_timeout_names_the_limit_that_applied(gw: Gateway, me: Principal) -> None:
    gw.credentials.save(me.user.id, "demo", {"access_token": "tok"})
    out = await gw.runs.execute(
        me,
        [
            {"tool": "demo_echo", "args": {"text": "x"}, "ref_id": None},  # read timeout (25 s)
            {"tool": "demo_fail", "args": {}, "ref_id": None},  # connect timeout (5 s)
            {"tool": "probe_wrapped", "args": {}, "ref_id": None},
            {"tool": "probe_silent", "args": {}, "ref_id": None},
        ],
    )
    assert out == {
        "results": [
            {"error": "Upstream timed out after 25 s"},
            {"error": "Upstream timed out after 5 s"},
            {"error": "the crumbs export did not finish"},  # the tool's own wording wins
            {"error": "Upstream timed out after 3.5 s"},  # an empty message says what happened
        ]
    }
    audited = [e["error"] for e in events(gw, me)]  # in the order the executions finished
    assert sorted(audited) == sorted(r["error"] for r in out["results"])
    assert upstream_timeout_message(None) == "Upstream timed out"


# -- undecryptable rows ------------------------------------------------------------------------


async def test_an_undecryptable_connection_is_an_item_error_naming_the_integration(
    gw: Gateway, me: Principal
) -> None:
    gw.stores.connections.put(
        Connection(me.user.id, "demo", b"\x01\x05junk-not-a-blob", "connected", None, 0.0, 1)
    )
    gw.stores.connections.put(Connection(me.user.id, "crumbs", b"garbage", "connected", None, 0.0, 1))
    out = await gw.runs.execute(
        me,
        [
            {"tool": "demo_echo", "args": {"text": "x"}, "ref_id": None},
            {"tool": "crumbs_ping", "args": {"levels": 1}, "ref_id": None},
            {"tool": "free_item", "args": {"value": 1}, "ref_id": None},
        ],
    )
    assert out["results"][0] == {
        "error": "demo credential cannot be decrypted (it was stored under another key or is damaged). "
        "Use connect('demo') to reconnect."
    }
    assert out["results"][1]["error"].startswith("crumbs credential cannot be decrypted")
    assert out["results"][2]["result"]["value"] == 1
    audited = {e["tool"]: e for e in events(gw, me)}
    assert audited["demo_echo"]["integration"] == "demo" and audited["demo_echo"]["success"] is False
    assert audited["crumbs_ping"]["integration"] == "crumbs"
    # the status views do not crash on it either
    status = await MetaTools(gw).call("list_integrations", me, {})
    assert {i["name"]: i["connected"] for i in status["integrations"]}["crumbs"] is True


async def test_an_undecryptable_vault_row_is_an_item_error_naming_the_secret(
    gw: Gateway, me: Principal
) -> None:
    gw.vault.set(me.user.id, "good", "fine-secret")
    gw.stores.vault.put(me.user.id, "broken", b"\x01\x00not-a-real-blob")
    out = await run(
        gw, me, executions=[item(None, "{{vault:broken}}"), item(None, "{{vault:good}}"), item(None, 3)]
    )
    assert out["results"][0] == {
        "error": "Vault secret 'broken' cannot be decrypted; set it again with vault_set"
    }
    assert out["results"][1]["result"]["value"] == "[REDACTED]"
    assert out["results"][2]["result"]["value"] == 3
    composed = await run(gw, me, compose=True, executions=[item("a", 1), item("b", "x {{vault:broken}}")])
    assert composed == {
        "index": 1,
        "ref_id": "b",
        "error": "Vault secret 'broken' cannot be decrypted; set it again with vault_set",
    }
    assert (
        events(gw, me)[-1]["error"]
        == "Vault secret 'broken' cannot be decrypted; set it again with vault_set"
    )


# -- the audit store itself failing ------------------------------------------------------------


async def test_a_failing_audit_store_does_not_turn_results_into_a_crash(gw: Gateway, me: Principal) -> None:
    def broken(event: dict) -> None:
        raise OSError("disk full")

    gw.engine.audit.append = broken  # type: ignore[method-assign]
    out = await gw.runs.execute(me, [{"tool": "free_item", "args": {"value": 5}, "ref_id": None}])
    assert out["results"][0]["result"]["value"] == 5


async def test_odd_strings_reach_sqlite_audit_rows_without_an_encoding_error(tmp_path: Path) -> None:
    """A lone surrogate cannot be encoded as UTF-8; a tool name or error holding one (from a path
    that skipped strict parsing, or an upstream error text) is still answered and audited."""
    import os

    from workbench.composition import build_gateway
    from workbench.identity.crypto import LocalKeyProvider
    from workbench.settings import Settings

    gw = build_gateway(
        Settings(store="sqlite", data_dir=tmp_path / "data"),
        registry=_registry(),
        key_provider=LocalKeyProvider.from_secret(os.urandom(32)),
    )
    me = principal_for(gw)
    out = await gw.runs.execute(
        me,
        [
            {"tool": "free_\ud800", "args": {}, "ref_id": None},
            {"tool": "free_item", "args": {"value": "\udfff\x00\u2028"}, "ref_id": None},
        ],
    )
    assert out["results"][0] == {"error": "Tool not found"}
    assert out["results"][1]["result"]["value"] == "\udfff\x00\u2028"
    rows = gw.stores.audit.list_for(me.user.id)
    assert {r["tool"] for r in rows} == {"free_\ud800", "free_item"}
    json.loads(dumps(out).encode("utf-8"))  # the wire form is encodable


async def test_an_undecryptable_custom_app_row_is_named_and_says_to_register_it_again(
    gw: Gateway, me: Principal
) -> None:
    """A custom app's config row that does not decrypt: its tools answer a per-item error naming
    the app, and everything that lists apps (search, list_integrations, apps_list) still answers."""
    from workbench.stores import ExternalServer

    assert gw.stores.external_servers is not None
    gw.stores.external_servers.put(ExternalServer(me.user.id, "legacy", "legacy_", b"\x01\x00not-a-blob"))
    out = await gw.runs.execute(
        me,
        [
            {"tool": "legacy_echo", "args": {}, "ref_id": None},
            {"tool": "apps_list", "args": {}, "ref_id": None},
            {"tool": "free_item", "args": {"value": 1}, "ref_id": None},
        ],
    )
    message = (
        "Custom app 'legacy' cannot be decrypted (it was stored under another key or is damaged), so its "
        "tools are unavailable: register it again (apps_register_server or apps_register_openapi with name "
        "'legacy')."
    )
    assert out["results"][0] == {"error": message}
    listed = {a["name"]: a for a in out["results"][1]["result"]["apps"]}
    assert listed["legacy"]["status"] == "unreadable" and listed["legacy"]["message"] == message
    assert out["results"][2]["result"]["value"] == 1
    audited = {e["tool"]: e for e in events(gw, me)}
    assert audited["legacy_echo"]["integration"] == "legacy" and audited["legacy_echo"]["error"] == message
    meta = MetaTools(gw)
    assert "tools" in await meta.call("search_tools", me, {"query": "echo"})
    status = await meta.call("list_integrations", me, {})
    assert {"name": "legacy", "version": "mcp", "connected": False} in status["integrations"]
