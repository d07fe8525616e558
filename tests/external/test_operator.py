"""Operator servers from configuration: every user sees them, scoped per user by the workspace code
(a per-user setting); `envVar` auth; start-up errors name the entry; the admin clear from the CLI
reaches a running gateway through the store."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest
from workbench.cli import main
from workbench.composition import Gateway, build_gateway
from workbench.errors import ConflictError, InvalidInput
from workbench.external.operator import OperatorConfigError
from workbench.settings import Settings

from tests.external.conftest import Agent
from tests.external.servers import BEARER_TOKEN, Upstreams
from tests.support.demo_plugins import demo_registry
from tests.support.gateways import principal_for

pytestmark = pytest.mark.e2e


def config(ups: Upstreams) -> list[dict[str, Any]]:
    return [
        {
            "name": "team",
            "url": ups.base + "/w/{workspaceCode}/mcp",
            "toolPrefix": "tm_",
            "timeout": 5000,
        },
        {
            "name": "guarded",
            "url": ups.url("bearer"),
            "auth": {"type": "bearer", "envVar": "OP_MCP_TOKEN"},
        },
        {"name": "off", "url": ups.url("plain"), "enabled": False},
    ]


def gateway(tmp_path: Path, ups: Upstreams, key: str, **extra: str) -> Gateway:
    env = {
        "WORKBENCH_STORE": "sqlite",
        "WORKBENCH_DATA_DIR": str(tmp_path),
        "WORKBENCH_LOCAL_KEY": key,
        "WORKBENCH_EXTERNAL_SERVERS": json.dumps(config(ups)),
        "OP_MCP_TOKEN": BEARER_TOKEN,
        "WORKBENCH_EGRESS_ALLOW": "loopback",  # the test's MCP servers listen on loopback
        **extra,
    }
    settings = Settings.from_env(env)
    return build_gateway(settings, registry=demo_registry())


@pytest.fixture
def key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


async def test_every_user_sees_operator_servers_scoped_by_their_workspace_code(
    tmp_path: Path, ups: Upstreams, key: str
) -> None:
    gw = gateway(tmp_path, ups, key)
    ada, bob = (
        Agent(gw, principal_for(gw, "ada@example.com")),
        Agent(gw, principal_for(gw, "bob@example.com")),
    )
    assert gw.external is not None
    gw.external.set_workspace_code(ada.principal.user.id, "team-a")
    ups.script.by_code.update({"team-a": ["deploy", "rollback"], bob.principal.user.id: ["status"]})

    assert {"tm_deploy", "tm_rollback"} <= set(await ada.search("workspace tool deploy rollback"))
    assert "tm_status" not in await ada.search("workspace tool status")
    assert "tm_status" in await bob.search("workspace tool status")
    assert await ada.run("tm_deploy") == {"result": "deploy for team-a"}
    assert await bob.run("tm_status") == {"result": f"status for {bob.principal.user.id}"}
    assert {s.path for s in ups.recorders["w"].seen} == {"/w/team-a/mcp", f"/w/{bob.principal.user.id}/mcp"}

    # envVar auth: the operator's token reaches the server; users never see it.
    assert await ada.run("guarded_secret_report", topic="q3") == {"result": "report on q3"}
    assert {s.headers["authorization"] for s in ups.recorders["bearer"].seen} == {f"Bearer {BEARER_TOKEN}"}
    overview = gw.external.overview(ada.principal.user.id)
    assert BEARER_TOKEN not in json.dumps(overview)
    guarded = next(v for v in overview if v["name"] == "guarded")
    assert guarded["operator"] is True and guarded["auth"] == {
        "type": "bearer",
        "value": "(set by the operator)",
    }

    # list_integrations: the seed's shape; a disabled server is not offered.
    listed = (await bob.call("list_integrations"))["integrations"]
    names = {i["name"]: i for i in listed}
    assert set(names["team"]) == {"name", "version", "connected"} and names["team"]["connected"] is True
    assert "off" not in names and ups.recorders["plain"].seen == []

    # A user app may not take an operator server's name or overlap its prefix.
    out = await ada.run("apps_register_server", name="team", url=ups.url("plain"))
    assert "operator" in out["error"]
    out = await ada.run("apps_register_server", name="mine", url=ups.url("plain"), toolPrefix="tm_x")
    assert "overlaps the prefix 'tm_'" in out["error"]

    with pytest.raises(InvalidInput):
        gw.external.set_workspace_code(ada.principal.user.id, "has space")


async def test_a_workspace_code_is_one_users_at_a_time(tmp_path: Path, ups: Upstreams, key: str) -> None:
    """An operator's server scopes its catalog and calls by the code: a second user choosing the first
    one's code (in any case), or a user id, would act as them there. It is refused; a code left is free."""
    gw = gateway(tmp_path, ups, key)
    assert gw.external is not None
    ext = gw.external
    ada, bob = principal_for(gw, "ada@example.com").user.id, principal_for(gw, "bob@example.com").user.id
    assert ext.set_workspace_code(ada, "team-a") == "team-a"
    for taken in ("team-a", "TEAM-A", ada, ada.upper(), "usr_someone"):
        with pytest.raises(ConflictError, match=r"^That workspace code is not available; choose another\.$"):
            ext.set_workspace_code(bob, taken)
        assert ext.workspace_code(bob) == bob  # nothing changed
    assert ext.set_workspace_code(bob, bob) == bob  # one's own id is the default, always free
    assert ext.set_workspace_code(ada, "Team-A") == "Team-A"  # the holder may change its case

    ups.script.by_code.update({"team-a": ["deploy"], bob: ["status"]})
    bob_agent = Agent(gw, principal_for(gw, "bob@example.com"))
    assert "tm_deploy" not in await bob_agent.search("workspace tool deploy")

    # Leaving a code (for another, or back to the default) frees it.
    assert ext.set_workspace_code(ada, "team-b") == "team-b"
    assert ext.set_workspace_code(bob, "team-a") == "team-a"
    assert ext.set_workspace_code(ada, None) == ada
    assert ext.set_workspace_code(bob, "team-b") == "team-b"
    with pytest.raises(ConflictError):
        ext.set_workspace_code(ada, "team-b")
    assert ext.set_workspace_code(ada, "team-a") == "team-a"  # bob left it for team-b


async def test_a_code_changed_on_another_instance_scopes_the_next_search(
    tmp_path: Path, ups: Upstreams, key: str
) -> None:
    """An instance remembers that a user holds their code (the claim is not read on every search),
    but only for the settings row it read it from: a change made on another instance, and another
    user taking the code that was left, are both in the next answer of each user."""
    gw, other_instance = gateway(tmp_path, ups, key), gateway(tmp_path, ups, key)
    assert gw.external is not None and other_instance.external is not None
    ada, bob = principal_for(gw, "ada@example.com"), principal_for(gw, "bob@example.com")
    ups.script.by_code.update({"team-a": ["deploy"], "team-b": ["rollback"], bob.user.id: ["status"]})
    assert other_instance.external.set_workspace_code(ada.user.id, "team-a") == "team-a"
    ada_here, bob_here = Agent(gw, ada), Agent(gw, bob)
    for _ in range(2):
        assert "tm_deploy" in await ada_here.search("workspace tool deploy")

    assert other_instance.external.set_workspace_code(ada.user.id, "team-b") == "team-b"
    assert other_instance.external.set_workspace_code(bob.user.id, "team-a") == "team-a"
    assert "tm_deploy" not in await ada_here.search("workspace tool deploy")
    assert "tm_rollback" in await ada_here.search("workspace tool rollback")
    assert "tm_deploy" in await bob_here.search("workspace tool deploy")
    assert await ada_here.run("tm_rollback") == {"result": "rollback for team-b"}


def test_a_code_two_users_stored_before_codes_were_claimed_serves_only_one(
    tmp_path: Path, ups: Upstreams, key: str
) -> None:
    """Codes stored before claims existed have no claim row: the first user to use one claims it,
    and any other user who stored it gets their own id, never the holder's catalog."""
    gw = gateway(tmp_path, ups, key)
    assert gw.external is not None and gw.stores.external_servers is not None
    ext, rows = gw.external, gw.stores.external_servers
    ada, bob = principal_for(gw, "ada@example.com").user.id, principal_for(gw, "bob@example.com").user.id
    ext.set_workspace_code(ada, "legacy")
    assert rows.delete("#workspace", "legacy") is True  # as a deployment from before claims has it
    ext.set_workspace_code(bob, "Legacy")
    assert rows.delete("#workspace", "legacy") is True
    assert ext.workspace_code(ada) == "legacy"  # the first to use it claims it
    assert ext.workspace_code(bob) == bob  # the other acts as themself
    assert ext.workspace_code(ada) == "legacy"
    held = rows.get("#workspace", "legacy")
    assert held is not None and held.state == ada


async def test_cli_admin_clear_reaches_a_running_gateway(
    tmp_path: Path,
    ups: Upstreams,
    key: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    gw = gateway(tmp_path, ups, key)
    ada = Agent(gw, principal_for(gw, "ada@example.com"))
    ups.script.by_code[ada.principal.user.id] = ["deploy"]
    assert "tm_deploy" in await ada.search("workspace tool deploy")
    ups.script.by_code[ada.principal.user.id] = ["deploy", "fresh"]
    assert "tm_fresh" not in await ada.search("workspace tool fresh")  # cached for 10 minutes

    for name, value in {
        "WORKBENCH_STORE": "sqlite",
        "WORKBENCH_DATA_DIR": str(tmp_path),
        "WORKBENCH_LOCAL_KEY": key,
        "WORKBENCH_EXTERNAL_SERVERS": json.dumps(config(ups)),
        "OP_MCP_TOKEN": BEARER_TOKEN,
    }.items():
        monkeypatch.setenv(name, value)
    assert main(["external", "clear-cache", "--user", "nobody@example.com"]) == 1
    assert main(["external", "clear-cache"]) == 0
    assert "every user" in capsys.readouterr().out
    assert "tm_fresh" in await ada.search("workspace tool fresh")  # the running gateway saw the clear

    ups.script.by_code[ada.principal.user.id] = ["deploy"]
    assert main(["external", "clear-cache", "--user", "ada@example.com"]) == 0
    assert "tm_fresh" not in await ada.search("workspace tool fresh")


def test_config_mistakes_are_reported_at_start_up(tmp_path: Path, ups: Upstreams, key: str) -> None:
    def start(entries: Any, **env: str) -> None:
        settings = Settings.from_env(
            {"WORKBENCH_STORE": "memory", "WORKBENCH_EXTERNAL_SERVERS": json.dumps(entries), **env}
        )
        build_gateway(settings, registry=demo_registry())

    url = ups.url("plain")
    with pytest.raises(OperatorConfigError, match=r"'x': auth\.envVar NOPE is not set"):
        start([{"name": "x", "url": url, "auth": {"type": "bearer", "envVar": "NOPE"}}])
    with pytest.raises(OperatorConfigError, match="unknown field"):
        start([{"name": "x", "url": url, "token": "literal"}])
    with pytest.raises(OperatorConfigError, match="name is already taken"):
        start([{"name": "jots", "url": url}])
    with pytest.raises(OperatorConfigError, match="overlaps"):
        start([{"name": "a", "url": url, "toolPrefix": "x_"}, {"name": "b", "url": url, "toolPrefix": "x_y"}])
    with pytest.raises(ValueError, match="not valid JSON"):
        Settings.from_env({"WORKBENCH_EXTERNAL_SERVERS": "[{"})
    path = tmp_path / "servers.json"
    path.write_text(json.dumps([{"name": "fromfile", "url": url}]))
    settings = Settings.from_env({"WORKBENCH_STORE": "memory", "WORKBENCH_EXTERNAL_SERVERS_FILE": str(path)})
    assert [c["name"] for c in settings.external_servers] == ["fromfile"]


def test_a_workspace_code_of_dots_is_refused(tmp_path: Path, ups: Upstreams, key: str) -> None:
    """`..` as a code would turn `/t/{workspaceCode}/mcp` into `/mcp` (URL normalisation)."""
    gw = gateway(tmp_path, ups, key)
    assert gw.external is not None
    ada = principal_for(gw, "ada@example.com").user.id
    for dots in (".", ".."):
        with pytest.raises(InvalidInput, match="cannot be used as a path segment"):
            gw.external.set_workspace_code(ada, dots)
        assert gw.external.workspace_code(ada) == ada
    assert gw.external.set_workspace_code(ada, "...") == "..."
