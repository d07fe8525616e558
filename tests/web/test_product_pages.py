"""Connect a client, Activity and Playground in process: real URLs in every snippet, the user's own
activity only (filters, paging, chart), and the script the pages load under the strict CSP."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable

import pytest
from starlette.testclient import TestClient
from workbench.composition import Gateway
from workbench.web.activity import PAGE_SIZE, activity_chart
from workbench.web.client_setup import KEY_PLACEHOLDER, client_snippets

Browser = Callable[[str], TestClient]
NOW = 1_800_000_000.0


def test_connect_a_client_page_has_every_client_with_key_and_oauth_variants(browser_for: Browser) -> None:
    page = browser_for("ada@example.com").get("/portal/connect-client")
    assert page.status_code == 200
    text = html.unescape(page.text)
    url = "http://127.0.0.1:8787/mcp"
    for slug in ("claude-code", "claude-desktop", "cursor", "vscode", "python", "typescript", "curl"):
        key_block = re.search(rf'<code id="snippet-{slug}-key">(.*?)</code>', page.text, re.S)
        oauth_block = re.search(rf'<code id="snippet-{slug}-oauth">(.*?)</code>', page.text, re.S)
        assert key_block and oauth_block, slug
        assert url in html.unescape(key_block.group(1)) or url.removesuffix("/mcp") in html.unescape(
            key_block.group(1)
        )
        assert KEY_PLACEHOLDER in key_block.group(1)  # a slot the page fills from the key field
        assert "wb_" not in html.unescape(oauth_block.group(1)), slug  # OAuth: no key anywhere
        assert (
            f'data-copy="snippet-{slug}-key"' in page.text
            and f'data-copy="snippet-{slug}-oauth"' in page.text
        )
    assert "claude mcp add --transport http workbench http://127.0.0.1:8787/mcp" in text
    assert 'id="test-connection"' in page.text and 'id="snippet-key"' in page.text
    assert '<script src="/portal/static/portal.js" defer></script>' in page.text


def test_json_snippets_are_valid_json_with_the_real_url() -> None:
    url = "https://wb.example.com/mcp"
    for snip in client_snippets(url):
        if snip.slug in ("claude-desktop", "cursor", "vscode"):
            for text in (snip.with_key.replace("@@WORKBENCH_KEY@@", "wb_x"), snip.oauth):
                doc = json.loads(text)
                assert url in json.dumps(doc)
    desktop = json.loads(
        next(s for s in client_snippets("http://10.0.0.5:8787/mcp") if s.slug == "claude-desktop").oauth
    )
    assert "--allow-http" in desktop["mcpServers"]["workbench"]["args"]  # plain http off loopback


def test_python_snippets_compile() -> None:
    for snip in client_snippets("http://127.0.0.1:8787/mcp"):
        if snip.slug == "python":
            compile(snip.with_key.replace("@@WORKBENCH_KEY@@", "wb_x"), "key.py", "exec")
            compile(snip.oauth, "oauth.py", "exec")


def test_the_portal_script_is_served_and_allowed_by_the_csp(browser_for: Browser) -> None:
    client = browser_for("ada@example.com")
    js = client.get("/portal/static/portal.js")
    assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
    assert "X-CSRF-Token" in js.text and "innerHTML" not in js.text
    csp = client.get("/portal/playground").headers["content-security-policy"]
    assert "script-src 'self'" in csp and "connect-src 'self'" in csp and "unsafe-eval" not in csp
    assert "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]


def test_playground_page_carries_the_session_csrf_token(browser_for: Browser) -> None:
    page = browser_for("ada@example.com").get("/portal/playground").text
    token = re.search(r'id="playground" data-csrf="([0-9a-f]{64})"', page)
    assert token and f'name="csrf" value="{token.group(1)}"' in page  # the portal's own CSRF token
    for form in ("pg-search", "pg-schema", "pg-execute"):
        assert f'id="{form}"' in page


def _execution(gw: Gateway, user_id: str, i: int, integration: str, ok: bool, ts: float) -> None:
    gw.stores.audit.append(
        {
            "action": "EXECUTE",
            "user": user_id,
            "tool": f"{integration}_tool_{i}",
            "integration": integration,
            "success": ok,
            "error": None if ok else f"<script>alert({i})</script> upstream said no",
            "duration_ms": 12.4,
            "ts": ts,
            "via": "api_key",
        }
    )


def test_activity_shows_only_the_users_executions_with_filters_paging_and_a_chart(
    browser_for: Browser, web_gw: Gateway
) -> None:
    client = browser_for("ada@example.com")
    ada = web_gw.stores.users.by_email("ada@example.com")
    bob = web_gw.stores.users.get_or_create("bob@example.com")
    assert ada is not None
    now = web_gw.clock()
    for i in range(PAGE_SIZE + 5):
        _execution(web_gw, ada.id, i, "testkey", i % 4 != 0, now - 3600 * (PAGE_SIZE + 5 - i))
    _execution(web_gw, ada.id, 99, "testoauth", False, now - 60)
    _execution(web_gw, bob.id, 1, "testkey", True, now - 30)  # bob's: never on ada's page

    first = client.get("/portal/activity")
    assert first.status_code == 200
    listed = first.text[first.text.index('id="executions"') :]  # the page's table (not per-tool durations)
    assert "testoauth_tool_99" in listed and "bob" not in first.text and "testkey_tool_1<" not in listed
    assert first.text.count('<td data-label="Tool">') == PAGE_SIZE
    assert "&lt;script&gt;alert(" in first.text and "<script>alert(" not in first.text  # errors escaped
    assert (
        '<svg viewBox="0 0 700 180" role="img"' in first.text
        and "executions in the last 14 days" in first.text
    )
    older = re.search(r'href="(/portal/activity\?cursor=[^"]+)" rel="next"', first.text)
    assert older
    second = client.get(html.unescape(older.group(1)))
    assert second.text.count('<td data-label="Tool">') == 6 and 'rel="next"' not in second.text
    shown = set(re.findall(r'<td data-label="Tool"><code>([a-z_0-9]+)</code>', first.text + second.text))
    assert len(shown) == PAGE_SIZE + 6  # every one of ada's executions, once

    failed = client.get("/portal/activity?outcome=failure&integration=testkey").text
    tools = re.findall(r'<td data-label="Tool"><code>([a-z_0-9]+)</code>', failed)
    assert tools and all(int(t.rsplit("_", 1)[1]) % 4 == 0 and t.startswith("testkey") for t in tools)
    assert '<option value="failure" selected>' in failed and '<option value="testkey" selected>' in failed
    # a cursor taken from anywhere still reads only the session user's events
    assert "bob" not in client.get("/portal/activity?cursor=0").text
    assert client.get("/portal/activity?integration=../../etc&outcome=<x>").status_code == 200


def test_activity_needs_a_session(web_gw: Gateway) -> None:
    from workbench.web.app import create_web_app

    anon = TestClient(create_web_app(web_gw), base_url="https://testserver", follow_redirects=False)
    for path in ("/portal/activity", "/portal/playground", "/portal/connect-client"):
        r = anon.get(path)
        assert r.status_code == 303 and r.headers["location"].startswith("/portal/signin?next=")


def test_chart_counts_per_day_per_integration() -> None:
    events = [
        {"ts": NOW, "integration": "github"},
        {"ts": NOW - 10, "integration": "github"},
        {"ts": NOW - 86_400, "integration": "slack"},
        {"ts": NOW - 40 * 86_400, "integration": "slack"},  # outside the window
    ]
    svg = activity_chart(events, NOW)
    assert svg.count("<rect ") == 2
    assert "2027-01-15: 2 × github" in svg and "2027-01-14: 1 × slack" in svg
    assert "3 executions in the last 14 days, by integration: github 2, slack 1" in svg
    assert activity_chart([], NOW).count("<rect ") == 0


@pytest.mark.parametrize("width", [390])
def test_narrow_layout_rules_exist(browser_for: Browser, width: int) -> None:
    css = browser_for("ada@example.com").get("/portal/api-keys").text
    assert "@media (max-width: 40rem)" in css and "table.stack td[data-label]::before" in css


def _mcp_execute(web_gw: Gateway, key: str, executions: list[dict[str, object]]) -> dict[str, object]:
    from workbench.mcp.app import create_mcp_app

    mcp = TestClient(create_mcp_app(web_gw), base_url="https://testserver")
    r = mcp.post(
        "/mcp",
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "execute_tools", "arguments": {"executions": executions}},
        },
        headers={"Authorization": f"Bearer {key}", "MCP-Protocol-Version": "2025-06-18"},
    )
    return json.loads(r.json()["result"]["content"][0]["text"])  # type: ignore[no-any-return]


def test_activity_says_which_agent_ran_each_call_and_opens_one_execution(
    browser_for: Browser, web_gw: Gateway
) -> None:
    client = browser_for("ada@example.com")
    ada = web_gw.stores.users.by_email("ada@example.com")
    assert ada is not None
    key = web_gw.auth.mint_key(ada, label="summariser")
    web_gw.vault.set(ada.id, "TOKEN_S", "s3cr3t-vault-value")
    _mcp_execute(
        web_gw,
        key,
        [
            {"tool": "create_jot", "args": {"title": "t {{vault:TOKEN_S}}", "body": "b"}},
            {"tool": "no_such_tool", "args": {"password": "typed-in-secret", "q": "x"}},
        ],
    )
    page = client.get("/portal/activity").text
    assert page.count("API key &#x27;summariser&#x27;") == 2  # the caller column names the key
    assert "unknown tool" in page and ">other<" not in page
    assert 'id="durations"' in page and "create_jot" in page  # p50/p95 per tool
    links = re.findall(r'href="(/portal/activity/[0-9a-f]{16}\?at=[^"]+)"', page)
    assert len(links) == 2
    details = [client.get(html.unescape(link)) for link in links]
    assert all(d.status_code == 200 for d in details)
    text = "".join(d.text for d in details)
    assert "s3cr3t-vault-value" not in text and "typed-in-secret" not in text  # redacted when written
    assert "[REDACTED]" in text and "&quot;q&quot;:&quot;x&quot;" in text
    unknown = next(d.text for d in details if "no_such_tool" in d.text)
    assert 'id="execution-error"' in unknown and "Tool not found" in unknown
    assert "summariser" in unknown and "unknown tool" in unknown
    # Another user cannot open it, nor learn that it exists.
    other = browser_for("bob@example.com")
    for link in links:
        r = other.get(html.unescape(link))
        assert r.status_code == 404 and "No such execution" in r.text
    assert client.get("/portal/activity/zzzz?at=1").status_code == 404
    assert client.get("/portal/activity/0123456789abcdef?at=nan").status_code == 404
