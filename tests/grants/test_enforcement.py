"""Grants at every door, over an in-process gateway (issue 26): execute_tools items, compose steps,
search_tools, get_tool_schema, list_integrations, connect, curl_session, REST, scheduled jobs, and
the approval gate of `approve` grants."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from workbench.composition import Gateway
from workbench.engine.meta import MetaTools
from workbench.identity.auth import Principal
from workbench.identity.grants import Grant
from workbench.rest.service import run_rest, run_scheduled_job

from tests.support.gateways import make_gateway

EMAIL = "ada@example.com"


@pytest.fixture
def gw(tmp_path: Path) -> Gateway:
    return make_gateway(tmp_path)


def key(gw: Gateway, grant: Grant, email: str = EMAIL) -> Principal:
    user = gw.stores.users.get_or_create(email)
    return gw.auth.api_keys.resolve(gw.auth.api_keys.mint(user, label="agent", grant=grant))


async def call(gw: Gateway, p: Principal, meta_tool: str, **args: Any) -> Any:
    return await MetaTools(gw).call(meta_tool, p, args)


async def run(gw: Gateway, p: Principal, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    out = await call(gw, p, "execute_tools", executions=[{"tool": tool, "args": args or {}}])
    return out["results"][0]  # type: ignore[no-any-return]


def jots_of(gw: Gateway, p: Principal) -> list[str]:
    return [j.title for j in gw.stores.jots.list_for(p.user.id)]


def audit_rows(gw: Gateway, p: Principal) -> list[dict[str, Any]]:
    return [e for e in gw.stores.audit.list_for(p.user.id, limit=1000)]


# -- read-only -----------------------------------------------------------------------------------


async def test_read_only_key_refuses_writes_per_item_and_runs_reads(gw: Gateway) -> None:
    ro = key(gw, Grant("read-only"))
    out = await call(
        gw,
        ro,
        "execute_tools",
        executions=[
            {"tool": "create_jot", "args": {"title": "t", "body": "b"}},
            {"tool": "list_jots", "args": {}},
            {"tool": "vault_set", "args": {"name": "X", "value": "secret-value"}},
        ],
    )
    created, listed, vault = out["results"]
    assert created == {
        "error": f"create_jot was refused: this API key (wb_{ro.credential_id}_…) is read-only, so it runs "
        "only read-only tools and create_jot is not one. The user can change its access to full or approve "
        "on the portal's API keys page (/portal/api-keys)."
    }
    assert listed == {"result": {"jots": []}} or "result" in listed  # the rest of the batch ran
    assert "is read-only" in vault["error"]
    assert jots_of(gw, ro) == [] and gw.stores.vault.names(ro.user.id) == []
    refusals = [e for e in audit_rows(gw, ro) if e.get("tool") in ("create_jot", "vault_set")]
    assert len(refusals) == 2 and all(e["success"] is False and "refused" in e["error"] for e in refusals)
    assert all("secret-value" not in str(e) for e in audit_rows(gw, ro))


async def test_read_only_hides_writes_from_discovery(gw: Gateway) -> None:
    ro = key(gw, Grant("read-only"))
    names = [
        h["name"] for h in (await call(gw, ro, "search_tools", query="create a jot note", limit=50))["tools"]
    ]
    assert "create_jot" not in names and "list_jots" in names
    assert all(
        h["annotations"]["readOnlyHint"]
        for h in (await call(gw, ro, "search_tools", query="github", limit=50))["tools"]
    )
    assert await call(gw, ro, "get_tool_schema", tool="create_jot") == {"error": "Tool not found"}
    assert "schema" in await call(gw, ro, "get_tool_schema", tool="list_jots")
    assert (await call(gw, ro, "whoami"))["grant"] == {
        "access": "read-only",
        "integrations": "all",
        "deniedTools": [],
    }


async def test_compose_step_refused_like_an_item(gw: Gateway) -> None:
    ro = key(gw, Grant("read-only"))
    out = await call(
        gw,
        ro,
        "execute_tools",
        compose=True,
        executions=[
            {"ref_id": "l", "tool": "list_jots", "args": {}},
            {"ref_id": "c", "tool": "create_jot", "args": {"title": "x", "body": "y"}},
        ],
    )
    assert out["index"] == 1 and out["ref_id"] == "c" and "is read-only" in out["error"]
    assert jots_of(gw, ro) == []


# -- integrations and denied tools -------------------------------------------------------------


async def test_integration_list_hides_and_refuses_every_other_integration(gw: Gateway) -> None:
    gh = key(gw, Grant("full", ("github",)))
    listed = await call(gw, gh, "list_integrations")
    assert [i["name"] for i in listed["integrations"]] == ["github"]
    hits = (await call(gw, gh, "search_tools", query="create jira issue send slack message jot", limit=50))[
        "tools"
    ]
    assert hits and {h["integration"] for h in hits} == {"github"}
    refused = await run(gw, gh, "create_jot", {"title": "t", "body": "b"})
    assert refused["error"].startswith(
        f"create_jot was refused: this API key (wb_{gh.credential_id}_…) may use only"
    )
    assert "jots is not one of them" in refused["error"]
    assert (await run(gw, gh, "jira_search_issues", {"jql": "x"}))["error"].startswith(
        "jira_search_issues was refused"
    )
    # github itself: not refused by the grant (not connected instead)
    assert (await run(gw, gh, "github_list_prs", {"owner": "a", "repo": "b"}))["error"] == "NOT_CONNECTED"
    assert await call(gw, gh, "get_tool_schema", tool="slack_send_message") == {"error": "Tool not found"}
    assert "may not use slack" in (await call(gw, gh, "connect", integration="slack"))["error"]
    assert "may not use" not in str(await call(gw, gh, "connect", integration="github"))
    assert jots_of(gw, gh) == []


async def test_denied_tools_never_run(gw: Gateway) -> None:
    p = key(gw, Grant("full", None, ("delete_jot",)))
    made = await run(gw, p, "create_jot", {"title": "keep", "body": "b"})
    jot_id = made["result"]["id"]
    refused = await run(gw, p, "delete_jot", {"id": jot_id})
    assert "may never call delete_jot" in refused["error"]
    assert jots_of(gw, p) == ["keep"]


async def test_curl_session_inherits_the_grant(gw: Gateway) -> None:
    ro = key(gw, Grant("read-only", ("github",)))
    minted = await call(gw, ro, "curl_session", integrations=["github"])
    claims = gw.tokens.verify(minted["token"], audience=gw.settings.public_url + "/c")
    assert claims["methods"] == ["GET", "HEAD", "OPTIONS"]
    assert (
        "may not use atlassian-jira"
        in (await call(gw, ro, "curl_session", integrations=["atlassian-jira"]))["error"]
    )
    full = key(gw, Grant())
    claims = gw.tokens.verify(
        (await call(gw, full, "curl_session", integrations=["github"]))["token"],
        audience=gw.settings.public_url + "/c",
    )
    assert "methods" not in claims


async def test_rest_answers_403_for_what_the_grant_refuses(gw: Gateway) -> None:
    ro = key(gw, Grant("read-only", ("jots",)))
    reply = await run_rest(gw, ro, "jots", {"tool": "create_jot", "args": {"title": "t", "body": "b"}})
    assert reply.status == 403 and "is read-only" in reply.body["error"]
    reply = await run_rest(gw, ro, "jots", {"tool": "list_jots"})
    assert reply.status == 200 and "result" in reply.body
    reply = await run_rest(gw, ro, "github", {"tool": "github_list_prs", "args": {"owner": "a", "repo": "b"}})
    assert reply.status == 403 and "may not use github" in reply.body["error"]
    # A batch answers per item, as execute_tools does.
    reply = await run_rest(
        gw, ro, "jots", {"executions": [{"tool": "create_jot", "args": {}}, {"tool": "list_jots"}]}
    )
    assert reply.status == 200 and "is read-only" in reply.body["results"][0]["error"]
    assert jots_of(gw, ro) == []


async def test_scheduled_job_may_carry_a_grant(gw: Gateway) -> None:
    gw.stores.users.get_or_create(EMAIL)
    event = {
        "source": "workbench.schedule",
        "user": EMAIL,
        "integration": "jots",
        "grant": {"access": "read-only"},
        "tool": "create_jot",
        "args": {"title": "t", "body": "b"},
    }
    out = await run_scheduled_job(gw, event)
    assert "this scheduled job is read-only" in out["error"]
    assert "grant in its event" in out["error"]
    bad = await run_scheduled_job(gw, {**event, "grant": {"access": "root"}})
    assert bad["error"].startswith("The job's grant is invalid")
    user = gw.stores.users.by_email(EMAIL)
    assert user is not None and gw.stores.jots.list_for(user.id) == []


# -- approve -------------------------------------------------------------------------------------


async def test_approve_grant_holds_a_write_until_approved_and_runs_it_once(gw: Gateway) -> None:
    ap = key(gw, Grant("approve"))
    user = gw.stores.users.get_or_create(EMAIL)
    args = {"title": "approved", "body": "b"}
    first = await run(gw, ap, "create_jot", args)
    assert "needs the user's approval" in first["error"] and jots_of(gw, ap) == []
    (pending,) = gw.approvals.listing(user.id)  # type: ignore[union-attr]
    assert first["error"].count(pending.id) == 2 and gw.approvals.link(pending.id) in first["error"]  # type: ignore[union-attr]
    assert pending.tool == "create_jot" and pending.client == f"API key wb_{ap.credential_id}_… (agent)"
    # Asking again does not pile up approvals; reads run without one.
    assert pending.id in (await run(gw, ap, "create_jot", args))["error"]
    assert "result" in await run(gw, ap, "list_jots")
    assert len(gw.approvals.listing(user.id)) == 1  # type: ignore[union-attr]
    assert (await call(gw, ap, "wait_for_connection", connectionId=pending.id, timeoutSec=1))["status"] in (
        "PENDING",
        "TIMEOUT",
    )
    other = gw.stores.users.get_or_create("eve@example.com")
    assert await gw.approvals.decide(other, pending.id, True) is None  # type: ignore[union-attr]
    decided = await gw.approvals.decide(user, pending.id, True)  # type: ignore[union-attr]
    assert decided is not None and decided.decided_by == EMAIL
    assert (await call(gw, ap, "wait_for_connection", connectionId=pending.id))["status"] == "APPROVED"
    # Changed arguments: a new approval, nothing runs.
    changed = await run(gw, ap, "create_jot", {**args, "title": "other"})
    assert "needs the user's approval" in changed["error"] and pending.id not in changed["error"]
    assert jots_of(gw, ap) == []
    # The approved call runs exactly once.
    assert "result" in await run(gw, ap, "create_jot", args)
    again = await run(gw, ap, "create_jot", args)
    assert "needs the user's approval" in again["error"]
    assert jots_of(gw, ap) == ["approved"]
    statuses = [(e["status"], e["tool"]) for e in audit_rows(gw, ap) if e.get("action") == "APPROVAL"]
    assert ("APPROVED", "create_jot") in statuses and ("USED", "create_jot") in statuses
    assert statuses.count(("REQUESTED", "create_jot")) == 3


async def test_a_denied_call_is_not_asked_again_and_another_key_needs_its_own(gw: Gateway) -> None:
    ap = key(gw, Grant("approve"))
    user = gw.stores.users.get_or_create(EMAIL)
    await run(gw, ap, "delete_jot", {"id": "j1"})
    (pending,) = gw.approvals.listing(user.id)  # type: ignore[union-attr]
    await gw.approvals.decide(user, pending.id, False)  # type: ignore[union-attr]
    assert (await call(gw, ap, "wait_for_connection", connectionId=pending.id))["status"] == "DENIED"
    assert "was denied by the user" in (await run(gw, ap, "delete_jot", {"id": "j1"}))["error"]
    # An approval binds to the key that asked: the same call from another key is a new request.
    ap2 = key(gw, Grant("approve"))
    assert "needs the user's approval" in (await run(gw, ap2, "delete_jot", {"id": "j1"}))["error"]
    # Another user cannot wait on it either.
    eve = key(gw, Grant("approve"), email="eve@example.com")
    assert await call(gw, eve, "wait_for_connection", connectionId=pending.id) == {
        "error": "Unknown connectionId"
    }


async def test_approval_shows_vault_refs_unresolved_and_never_a_secret(gw: Gateway) -> None:
    ap = key(gw, Grant("approve"))
    user = gw.stores.users.get_or_create(EMAIL)
    gw.vault.set(user.id, "NOTE", "hunter2-secret")
    await run(gw, ap, "create_jot", {"title": "t", "body": "{{vault:NOTE}}"})
    await run(gw, ap, "vault_set", {"name": "API", "value": "literal-secret-9"})
    shown = {a.tool: a.arguments for a in gw.approvals.listing(user.id)}  # type: ignore[union-attr]
    assert shown["create_jot"] == '{"body": "{{vault:NOTE}}", "title": "t"}'
    assert "literal-secret-9" not in shown["vault_set"] and '"name": "API"' in shown["vault_set"]
    stored = str(gw.approvals.listing(user.id)) + str(audit_rows(gw, ap))  # type: ignore[union-attr]
    assert "hunter2-secret" not in stored and "literal-secret-9" not in stored
