"""Issue 26's "Done when", against a real `workbench serve` process: keys minted by the real CLI
(`workbench keys create EMAIL --read-only | --approve-writes | --integrations github`), an agent
speaking JSON-RPC to /mcp, the curl proxy, and a person in a real Chromium (Playwright driving
/usr/bin/chromium) who approves a call on the approval page and chooses a grant on the OAuth
consent page."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from tests.connections.support import chromium, screenshot
from tests.support.processes import REPO, local_gateway

pytestmark = pytest.mark.e2e

EMAIL = "ada@example.com"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    data = tmp_path_factory.mktemp("grants")
    with local_gateway(data, extra_env={"WORKBENCH_DEV_LOGIN": "1"}) as (base, _):
        yield base, data


def cli_key(data: Path, base: str, *flags: str) -> str:
    """`workbench keys create EMAIL <flags>` beside the running gateway (same data directory)."""
    env = {**os.environ, "WORKBENCH_DATA_DIR": str(data), "WORKBENCH_PUBLIC_URL": base}
    out = subprocess.run(
        [sys.executable, "-m", "workbench.cli", "keys", "create", EMAIL, *flags],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    key = out.stdout.strip()
    assert key.startswith("wb_"), out
    return key


class Agent:
    """An MCP client speaking JSON-RPC over HTTP with a bearer credential."""

    def __init__(self, base: str, token: str) -> None:
        self.http = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60)
        self.n = 0

    def call(self, meta_tool: str, **args: Any) -> Any:
        self.n += 1
        r = self.http.post(
            "/mcp",
            json={
                "jsonrpc": "2.0",
                "id": self.n,
                "method": "tools/call",
                "params": {"name": meta_tool, "arguments": args},
            },
            headers={"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"},
        )
        assert r.status_code == 200, r.text
        return json.loads(r.json()["result"]["content"][0]["text"])

    def run(self, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.call("execute_tools", executions=[{"tool": tool, "args": args or {}}])["results"][0]  # type: ignore[no-any-return]

    def jots(self) -> list[str]:
        return [j["title"] for j in self.run("list_jots")["result"]["jots"]]


def sign_in(page: Any, base: str, email: str, next_path: str) -> None:
    page.goto(f"{base}/portal/signin?next={next_path}")
    page.fill("#dev-email", email)
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: urlsplit(url).path == next_path)


def test_read_only_key_reads_refuses_writes_and_the_proxy_refuses_a_post(gateway: tuple[str, Path]) -> None:
    base, data = gateway
    agent = Agent(base, cli_key(data, base, "--read-only"))
    before = agent.jots()
    refused = agent.run("create_jot", {"title": "should not exist", "body": "b"})
    assert "is read-only" in refused["error"] and "create_jot was refused" in refused["error"]
    assert agent.jots() == before  # list_jots works, nothing was created
    assert agent.call("whoami")["grant"]["access"] == "read-only"
    session = agent.call("curl_session", integrations=["github"])
    proxy = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {session['token']}"}, timeout=30)
    post = proxy.post("/c/github/user/repos", json={"name": "x"})
    assert post.status_code == 403 and "allows only GET, HEAD, OPTIONS, not POST" in post.json()["error"]
    get = proxy.get("/c/github/user")  # a read passes the grant (and stops at the missing connection)
    assert get.status_code == 403 and get.json()["error"] == "NOT_CONNECTED"


def test_integrations_key_cannot_find_or_run_other_integrations(gateway: tuple[str, Path]) -> None:
    base, data = gateway
    agent = Agent(base, cli_key(data, base, "--integrations", "github"))
    assert [i["name"] for i in agent.call("list_integrations")["integrations"]] == ["github"]
    hits = agent.call("search_tools", query="create a jot note, send a slack message", limit=50)["tools"]
    assert hits and {h["integration"] for h in hits} == {"github"}
    assert agent.call("get_tool_schema", tool="create_jot") == {"error": "Tool not found"}
    refused = agent.run("list_jots")
    assert "may use only these integrations: github; jots is not one of them" in refused["error"]


def test_approval_page_in_a_real_browser_runs_the_approved_call_once(gateway: tuple[str, Path]) -> None:
    base, data = gateway
    agent = Agent(base, cli_key(data, base, "--approve-writes", "--label", "nightly"))
    reader = Agent(base, cli_key(data, base))
    args = {"title": "Approved note", "body": "written by the agent"}
    held = agent.run("create_jot", args)["error"]
    assert "needs the user's approval" in held
    link = next(w for w in held.split() if w.startswith(f"{base}/portal/approvals/apr_"))
    approval_id = link.rsplit("/", 1)[1]
    assert f'connectionId "{approval_id}"' in held
    assert "Approved note" not in reader.jots()
    with chromium() as browser:
        # Another user signed in sees nothing of it and cannot decide it.
        eve = browser.new_context().new_page()
        sign_in(eve, base, "eve@example.com", "/portal/approvals")
        eve.goto(link)
        assert eve.locator("h1").inner_text() == "Approval not found"
        assert eve.locator("#approve").count() == 0

        page = browser.new_context(viewport={"width": 1100, "height": 900}).new_page()
        sign_in(page, base, EMAIL, "/portal/approvals")
        assert page.locator("#approvals a", has_text="Jots: Create jot").count() == 1
        screenshot(page, "40-approvals-pending")
        page.goto(link)
        assert page.locator("#approval-integration").inner_text() == "jots"
        assert page.locator("#approval-tool").inner_text() == "create_jot"
        assert page.locator("#approval-title").inner_text() == "Jots: Create jot"
        assert "nightly" in page.locator("#approval-client").inner_text()
        assert json.loads(page.locator("#approval-arguments").inner_text()) == args
        assert "readOnlyHint: false" in page.locator("#approval-annotations").inner_text()
        screenshot(page, "41-approval-page")
        # Nothing ran while the page was open.
        assert "Approved note" not in reader.jots()
        page.click("#approve")
        page.wait_for_selector("[role=status], .notice")
        assert "Approved" in page.locator("#approval-status").inner_text()
        screenshot(page, "42-approval-approved")

        assert agent.call("wait_for_connection", connectionId=approval_id)["status"] == "APPROVED"
        # A different argument needs a new approval; the approved call runs exactly once.
        other = agent.run("create_jot", {**args, "title": "Other note"})
        assert "needs the user's approval" in other["error"] and approval_id not in other["error"]
        assert "result" in agent.run("create_jot", args)
        assert "needs the user's approval" in agent.run("create_jot", args)["error"]
        assert reader.jots().count("Approved note") == 1 and "Other note" not in reader.jots()

        # The decision and the use are on the activity page; a used approval cannot be decided again.
        page.goto(f"{base}/portal/activity")
        steps = page.locator("#approval-events").inner_text()
        assert "Approved" in steps and "Ran once, approved" in steps and "Asked for approval" in steps
        assert "Waiting for approval" in page.locator("#executions").inner_text()
        screenshot(page, "43-activity-approvals")
        page.goto(link)
        assert page.locator("#approve").count() == 0


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


@contextmanager
def redirect_target() -> Iterator[tuple[str, list[str]]]:
    """The OAuth client's redirect URI: a loopback HTTP server that records what reaches it."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"signed in")

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/callback", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_consent_page_grant_choice_in_a_real_browser(gateway: tuple[str, Path]) -> None:
    base, _ = gateway
    with redirect_target() as (redirect, seen):
        consent_and_use(base, redirect, seen)


def consent_and_use(base: str, redirect_uri: str, codes: list[str]) -> None:
    registered = httpx.post(
        f"{base}/register",
        json={
            "client_name": "Grant e2e client",
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        },
    )
    assert registered.status_code == 201, registered.text
    client_id = registered.json()["client_id"]
    verifier, challenge = _pkce()
    authorize = f"{base}/authorize?" + urlencode(
        {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": "st-1",
            "resource": f"{base}/mcp",
            "scope": "mcp offline_access",
        }
    )
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1100, "height": 1200})
        page = context.new_page()
        sign_in(page, base, EMAIL, "/portal/integrations")
        page.goto(authorize)
        assert "Grant e2e client wants to use Workbench" in page.content()
        page.check("#consent-access-read-only")
        page.check("#consent-scope-some")
        page.check("#consent-int-jots")
        screenshot(page, "44-consent-grant-choice")
        page.click("button[value=approve]")
        page.wait_for_url(lambda url: url.startswith(redirect_uri))
        assert codes, "the consent did not redirect to the client"
        query = parse_qs(urlsplit(codes[0]).query)
        token = httpx.post(
            f"{base}/token",
            data={
                "grant_type": "authorization_code",
                "code": query["code"][0],
                "redirect_uri": redirect_uri,
                "client_id": client_id,
                "code_verifier": verifier,
                "resource": f"{base}/mcp",
            },
        ).json()
        agent = Agent(base, token["access_token"])
        assert agent.call("whoami")["grant"] == {
            "access": "read-only",
            "integrations": ["jots"],
            "deniedTools": [],
        }
        assert "is read-only" in agent.run("create_jot", {"title": "x", "body": "y"})["error"]
        assert "result" in agent.run("list_jots")
        assert [i["name"] for i in agent.call("list_integrations")["integrations"]] == ["jots"]

        # The person widens it on the MCP clients page; the client's next token carries it.
        page.goto(f"{base}/portal/clients")
        assert "Read-only" in page.locator("table").inner_text()
        page.click("a[aria-label='Change the access of Grant e2e client']")
        page.check("#edit-access-full")
        page.check("#edit-scope-all")
        page.click("button:has-text('Save access')")
        page.wait_for_url("**/portal/clients")
        assert "Full" in page.locator("table").inner_text()
        screenshot(page, "45-clients-access")
    refreshed = httpx.post(
        f"{base}/token",
        data={"grant_type": "refresh_token", "refresh_token": token["refresh_token"], "client_id": client_id},
    ).json()
    assert Agent(base, refreshed["access_token"]).call("whoami")["grant"]["access"] == "full"
