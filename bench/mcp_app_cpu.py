"""The gateway's own CPU per `execute_tools` call, without HTTP: the local app (the same ASGI app
`workbench serve` runs, SQLite store) driven in-process, 16 calls at a time, each a JSON-RPC
tools/call of the no-op probe tool with a real API key. Beside bench/mcp_throughput.py it splits a
served request's CPU into the HTTP server's part (its asgi-floor row) and the engine's part (this).

    uv run python bench/mcp_app_cpu.py [--requests 4000] [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench scripts run from a checkout

CONCURRENCY = 16


async def _measure(requests: int, rounds: int) -> list[float]:
    from workbench.composition import build_gateway
    from workbench.runtime.local_app import create_local_app
    from workbench.settings import Settings

    data = tempfile.mkdtemp()
    env = {
        **os.environ,
        "WORKBENCH_DATA_DIR": data,
        "WORKBENCH_STORE": "sqlite",
        "WORKBENCH_PUBLIC_URL": "http://127.0.0.1:8787",
        "WORKBENCH_EXTRA_PLUGINS": "tests.support.slow_plugin",
    }
    gw = build_gateway(Settings.from_env(env))
    key = gw.auth.mint_key(gw.stores.users.get_or_create("bench@example.com"))
    app = create_local_app(gw)
    call = {"executions": [{"tool": "probe_noop", "args": {}}]}
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "execute_tools", "arguments": call},
        }
    ).encode()
    headers = [
        (b"host", b"127.0.0.1:8787"),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"authorization", f"Bearer {key}".encode()),
        (b"mcp-protocol-version", b"2025-11-25"),
        (b"content-length", str(len(body)).encode()),
    ]

    async def one() -> None:
        scope: dict[str, Any] = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": "/mcp",
            "raw_path": b"/mcp",
            "query_string": b"",
            "headers": headers,
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8787),
            "root_path": "",
        }
        pending = [{"type": "http.request", "body": body, "more_body": False}]
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return pending.pop() if pending else {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await app(scope, receive, send)
        if sent[0]["status"] != 200 or b'"error"' in sent[1]["body"][:200]:
            raise RuntimeError(f"bad answer: {sent!r}")

    for _ in range(200):  # warm: the registry, the auth cache, the SQLite connection, the pools
        await one()
    per_round = []
    for _ in range(rounds):
        left = iter(range(requests))  # the workers share it: each call is taken once
        started = time.process_time()  # every thread of this process: the loop and both pools
        await asyncio.gather(*(_worker(one, left) for _ in range(CONCURRENCY)))
        per_round.append((time.process_time() - started) / requests * 1e6)
    return per_round


async def _worker(one: Callable[[], Awaitable[None]], left: Iterator[int]) -> None:
    for _ in left:
        await one()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print one JSON object (for run_all.py)")
    args = parser.parse_args()
    rounds = asyncio.run(_measure(args.requests, args.rounds))
    best, median = min(rounds), statistics.median(rounds)
    if args.json:
        print(json.dumps({"app_cpu_us_best": best, "app_cpu_us_median": median, "rounds_us": rounds}))
        return
    print(
        f"execute_tools in-process (no HTTP), {args.requests} calls x {args.rounds} rounds, concurrency {CONCURRENCY}"
    )
    print(f"  CPU per call: best {best:.0f} us, median {median:.0f} us (rounds {[round(r) for r in rounds]})")


if __name__ == "__main__":
    main()
