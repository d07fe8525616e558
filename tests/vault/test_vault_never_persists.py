"""A resolved {{vault:}} value is never stored where it can be read again: a tool that keeps what it
is given (jots, and any built-in marked `keeps_arguments`) refuses a call that resolved one, nothing
written; registrations keep the reference, never the value; the browser page redacts what was typed
into it in every later read. The class is enforced over the built-in catalog."""

from __future__ import annotations

import json

import pytest
from workbench.composition import Gateway, build_registry

from tests.external.conftest import *  # noqa: F403  (the SDK upstreams, gateway and agents)
from tests.external.conftest import Agent
from tests.external.servers import Upstreams

pytestmark = pytest.mark.e2e

SECRET = "sk-live-9Pz4Kd2WqT8"
REFUSED = (
    "{tool} cannot take a {{{{vault:}}}} value: it stores what it is given where it can be read again "
    "(or shared), and a vault secret never leaves the vault that way. Pass the text without the reference."
)


def everything_stored(gw: Gateway, agent: Agent) -> str:
    """Every jot of the user (as get_jot and a share link would show it) and every audit row."""
    user = agent.principal.user.id
    jots = [vars(j) if hasattr(j, "__dict__") else repr(j) for j in gw.stores.jots.list_for(user)]
    return repr(jots) + json.dumps(gw.stores.audit.list_for(user, limit=1000))


async def test_a_jot_never_takes_a_vault_value(gw: Gateway, agent: Agent) -> None:
    await agent.run("vault_set", name="S", value=SECRET)
    for args in (
        {"title": "t", "body": "v={{vault:S}}", "shared": True},
        {"title": "{{vault:S}}", "body": "b"},
    ):
        assert await agent.run("create_jot", **args) == {"error": REFUSED.format(tool="create_jot")}
    assert (await agent.run("list_jots"))["result"]["jots"] == []

    made = (await agent.run("create_jot", title="t", body="plain"))["result"]
    out = await agent.run("update_jot", id=made["id"], body="v={{vault:S}}", shared=True)
    assert out == {"error": REFUSED.format(tool="update_jot")}
    got = (await agent.run("get_jot", id=made["id"]))["result"]
    assert got["body"] == "plain" and got.get("shareUrl") is None
    assert SECRET not in everything_stored(gw, agent)


async def test_compose_cannot_carry_a_vault_value_into_a_jot(gw: Gateway, agent: Agent) -> None:
    await agent.run("vault_set", name="S", value=SECRET)
    out = await agent.call(
        "execute_tools",
        compose=True,
        executions=[
            {"tool": "list_jots", "args": {}, "ref_id": "a"},
            {"tool": "create_jot", "args": {"title": "x", "body": "{{vault:S}}"}, "ref_id": "b"},
        ],
    )
    assert out["index"] == 1 and out["error"] == REFUSED.format(tool="create_jot")
    # A value that came out of an earlier step is what the agent saw: already redacted.
    out = await agent.call(
        "execute_tools",
        compose=True,
        executions=[
            {"tool": "whoami", "args": {"x": "{{vault:S}}"}, "ref_id": "a"},
            {"tool": "create_jot", "args": {"title": "x", "body": "{{step:a.email}}"}, "ref_id": "b"},
        ],
    )
    assert SECRET not in json.dumps(out)
    assert SECRET not in everything_stored(gw, agent)


async def test_registrations_keep_the_reference_never_the_value(
    gw: Gateway, agent: Agent, ups: Upstreams
) -> None:
    await agent.run("vault_set", name="K", value=SECRET)
    await agent.run("vault_set", name="H", value="10.9.8.7")
    out = await agent.run(
        "apps_register_server",
        name="plain",
        url=ups.url("plain"),
        auth={"type": "bearer", "token": "{{vault:K}}"},
    )
    assert "error" not in out, out
    listed = await agent.run("apps_list")
    assert SECRET not in json.dumps(listed) and SECRET not in json.dumps(out)
    assert gw.external is not None and gw.external.store is not None
    # The app's row (the user's '#'-named rows, like the cap's slot, hold no configuration).
    (row,) = [r for r in gw.external.store.list_for(agent.principal.user.id) if not r.name.startswith("#")]
    config = gw.external.cipher.decrypt_json(
        row.config, {"user": row.user_id, "external_server": "plain", "field": "config"}
    )
    assert config["auth"] == "{{vault:K}}" and SECRET not in json.dumps(config)
    # A refusal that would quote the resolved URL names the reference, not the value.
    refused = await agent.run("apps_register_server", name="inward", url="https://{{vault:H}}/mcp")
    assert "error" in refused and "10.9.8.7" not in refused["error"], refused


def test_every_builtin_that_stores_its_input_is_marked() -> None:
    """The class, over the catalog: a built-in tool either takes its arguments literally (vault_*,
    apps_*: references are stored as references), keeps them and is marked (refuses vault values),
    or is listed here as one that stores nothing an agent or a link can read back."""
    from workbench.engine.runs import LITERAL_TOOL_PREFIX

    stores_nothing = {
        "get_jot", "list_jots", "search_jots", "delete_jot",  # reads and deletes
        # The browser page is the site's (like a provider): what is typed there is redacted in every
        # later read of the page (test below), not refused: signing in with a vault password is its use.
        "browser_navigate", "browser_click", "browser_type", "browser_read", "browser_screenshot",
        "browser_close",
    }  # fmt: skip
    registry = build_registry()
    builtins = [t for m in registry.manifests() if m.name in ("jots", "vault", "apps", "browser")
                for t in registry.tools_of(m.name).values()]  # fmt: skip
    assert builtins
    for tool in builtins:
        literal = tool.name.startswith(LITERAL_TOOL_PREFIX)
        assert literal or tool.keeps_arguments or tool.name in stores_nothing, tool.name
    keeps = {t.name for t in builtins if t.keeps_arguments}
    assert keeps == {"create_jot", "update_jot"}


async def test_a_vault_ref_deep_in_large_arguments_is_still_found(gw: Gateway, agent: Agent) -> None:
    """Arguments past the engine's on-loop budget are walked on a thread: a {{vault:}} ref at their
    very end is found there, and the jot is refused as for small arguments."""
    from workbench.engine.executor import LOOP_VALUES

    await agent.run("vault_set", name="S", value=SECRET)
    rows = [["a", 1]] * (LOOP_VALUES + 10) + [["{{vault:S}}", 2]]
    out = await agent.run("create_jot", title="t", body="b", rows=rows)
    assert out == {"error": REFUSED.format(tool="create_jot")}
    assert SECRET not in everything_stored(gw, agent)
