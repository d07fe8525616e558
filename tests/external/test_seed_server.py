"""A minimal MCP server written only from seed 004 (no SDK): it answers the four methods the seed
names — initialize, notifications/initialized, tools/list, tools/call — and `Method not found` to
anything else, `server/discover` included (HTTP 200, JSON-RPC -32601). It registers, is offered the
revision the seed's handshake names, and its tools run."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from workbench.composition import Gateway

from tests.external.conftest import Agent

pytestmark = pytest.mark.e2e

TOOLS = [
    {
        "name": "greet",
        "description": "Say hello to someone.",
        "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    },
    {
        "name": "add",
        "description": "Add two numbers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    },
]


class SeedServer:
    """What seed 004 describes, and nothing more: JSON-RPC 2.0 over POST, a session id on initialize."""

    def __init__(self, *, initialize_only: str | None = None) -> None:
        self.seen: list[dict[str, Any]] = []
        self.initialize_only = initialize_only  # refuse any other protocolVersion (a strict server)
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
                server.seen.append({"body": body, "session": self.headers.get("mcp-session-id")})
                method, rid, params = body.get("method"), body.get("id"), body.get("params") or {}
                if rid is None:  # a notification: nothing to answer
                    self.send_response(202)
                    self.end_headers()
                    return
                headers: dict[str, str] = {}
                if method == "initialize":
                    wanted = server.initialize_only
                    if wanted and params.get("protocolVersion") != wanted:
                        reply = {"error": {"code": -32602, "message": f"only {wanted} is supported"}}
                    else:
                        reply = {
                            "result": {
                                "protocolVersion": "2024-11-05",
                                "capabilities": {"tools": {}},
                                "serverInfo": {"name": "seed-server", "version": "1.0.0"},
                            }
                        }
                        headers["Mcp-Session-Id"] = "seed-session-1"
                elif method == "tools/list":
                    reply = {"result": {"tools": TOOLS}}
                elif method == "tools/call":
                    args = params.get("arguments") or {}
                    if params.get("name") == "greet":
                        text = f"Hello, {args.get('name')}!"
                    elif params.get("name") == "add":
                        text = str(args.get("a", 0) + args.get("b", 0))
                    else:
                        reply = {"error": {"code": -32602, "message": "Unknown tool"}}
                        text = ""
                    if text:
                        reply = {"result": {"content": [{"type": "text", "text": text}]}}
                else:
                    reply = {"error": {"code": -32601, "message": "Method not found"}}
                data = json.dumps({"jsonrpc": "2.0", "id": rid, **reply}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/mcp"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)

    def methods(self) -> list[str]:
        return [s["body"].get("method") for s in self.seen]


@pytest.fixture
def seed() -> Iterator[SeedServer]:
    server = SeedServer()
    yield server
    server.stop()


async def test_a_seed_004_server_registers_and_its_tools_run(agent: Agent, seed: SeedServer) -> None:
    out = await agent.run("apps_register_server", name="seed", url=seed.url)
    assert out["result"]["status"] == "ok" and "error" not in out["result"], out
    assert out["result"]["tools"] == ["seed_add", "seed_greet"]
    assert seed.methods()[:4] == ["server/discover", "initialize", "notifications/initialized", "tools/list"]
    init = seed.seen[1]["body"]["params"]
    assert init["protocolVersion"] == "2024-11-05"  # what the seed's handshake offers
    assert init["clientInfo"]["name"] == "workbench"

    assert await agent.run("seed_greet", name="Ada") == {"result": "Hello, Ada!"}
    assert await agent.run("seed_add", a=2, b=3) == {"result": "5"}
    calls = [s for s in seed.seen if s["body"].get("method") == "tools/call"]
    assert calls[0]["body"]["params"] == {"name": "greet", "arguments": {"name": "Ada"}}
    assert all(c["session"] == "seed-session-1" for c in calls)  # the session id is kept
    assert "seed_greet" in await agent.search("say hello")


async def test_a_strict_seed_server_is_offered_its_revision(agent: Agent) -> None:
    server = SeedServer(initialize_only="2024-11-05")
    try:
        out = await agent.run("apps_register_server", name="strict", url=server.url)
        assert out["result"]["tools"] == ["strict_add", "strict_greet"], out
    finally:
        server.stop()


async def test_registration_never_says_ok_beside_an_error(agent: Agent, gw: Gateway) -> None:
    server = SeedServer(initialize_only="1999-01-01")  # refuses every handshake
    try:
        out = (await agent.run("apps_register_server", name="broken", url=server.url))["result"]
    finally:
        server.stop()
    assert out["error"] and out["status"] == "unavailable", out
