"""tools/call throughput and latency: the local gateway vs a minimal official-SDK server.

Both servers run as single uvicorn processes on loopback; the same load generator (this process,
httpx over keep-alive connections) drives each in turn, in one run, with the same concurrency and
request count. The gateway runs a no-op tool through execute_tools (the full engine path:
auth by API key, lookup, validation, audit row in SQLite, metrics); the SDK server runs an
equivalent no-op tool.

    uv run python bench/mcp_throughput.py [--requests 3000] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench scripts run from a checkout
from tests.support.processes import free_port, local_gateway, running

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


async def drive(
    url: str, headers: dict[str, str], body: dict, requests: int, concurrency: int
) -> dict[str, float]:
    latencies: list[float] = []
    remaining = iter(range(requests))
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=30) as client:
        payload = json.dumps(body)

        async def worker() -> None:
            for _ in remaining:
                t0 = time.perf_counter()
                resp = await client.post(url, content=payload, headers=headers)
                latencies.append(time.perf_counter() - t0)
                if resp.status_code != 200 or "error" in resp.json():
                    raise RuntimeError(f"bad response {resp.status_code}: {resp.text[:200]}")

        for _ in range(50):  # warm-up
            await client.post(url, content=payload, headers=headers)
        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "rps": requests / elapsed,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[int(len(latencies) * 0.99) - 1] * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    results: dict[str, dict[str, float]] = {}

    with tempfile.TemporaryDirectory() as data:
        env = {"WORKBENCH_EXTRA_PLUGINS": "tests.support.slow_plugin"}
        with local_gateway(Path(data), extra_env=env) as (base, key):
            body = {
                **call,
                "params": {
                    "name": "execute_tools",
                    "arguments": {"executions": [{"tool": "probe_noop", "args": {}}]},
                },
            }
            headers = {**HEADERS, "Authorization": f"Bearer {key}", "MCP-Protocol-Version": "2025-11-25"}
            results["workbench"] = asyncio.run(
                drive(f"{base}/mcp", headers, body, args.requests, args.concurrency)
            )

    port = free_port()
    script = Path(__file__).with_name("sdk_reference_server.py")
    with running([sys.executable, str(script), str(port)], ready_url=f"tcp://127.0.0.1:{port}"):
        body = {**call, "params": {"name": "noop", "arguments": {}}}
        headers = {**HEADERS, "MCP-Protocol-Version": "2025-11-25"}
        results["mcp-sdk"] = asyncio.run(
            drive(f"http://127.0.0.1:{port}/mcp", headers, body, args.requests, args.concurrency)
        )

    print(f"tools/call, {args.requests} requests, concurrency {args.concurrency}, one uvicorn process each")
    for name, r in results.items():
        print(f"  {name:10s} {r['rps']:8.0f} req/s   p50 {r['p50_ms']:6.2f} ms   p99 {r['p99_ms']:6.2f} ms")
    ratio = results["workbench"]["rps"] / results["mcp-sdk"]["rps"]
    print(f"  throughput ratio workbench / mcp-sdk: {ratio:.2f}x")


if __name__ == "__main__":
    main()
