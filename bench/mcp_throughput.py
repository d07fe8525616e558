"""tools/call throughput and latency: the local gateway vs FastMCP and the official SDK.

All servers run as single uvicorn processes on loopback; the same load generator (this process,
httpx over keep-alive connections) drives each in turn, in one run, with the same concurrency and
request count; the generator writes pre-built requests on raw keep-alive sockets so that it
costs far less than any server. The gateway runs a no-op tool through execute_tools (the full engine path:
auth by API key, lookup, validation, audit row in SQLite, metrics); FastMCP (PyPI `fastmcp`) and
the official SDK's server each run an equivalent no-op tool. `asgi-floor` is the same uvicorn serving
a bare ASGI app that answers a fixed result: no MCP server on this HTTP stack can be faster, so its
throughput over FastMCP's is the highest ratio this benchmark could ever print.

Servers are driven in turns for --rounds rounds (a busy machine's noise spreads over all of them);
each one's best round is its throughput, and its CPU time per request (all threads) is printed too.

    uv run python bench/mcp_throughput.py [--requests 3000] [--concurrency 16] [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench scripts run from a checkout
from local_gateway import cpu_seconds, local_gateway

from tests.support.processes import free_port, running

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


async def drive(
    url: str, headers: dict[str, str], body: dict, requests: int, concurrency: int
) -> dict[str, float]:
    """A deliberately cheap load generator: pre-built HTTP/1.1 requests over raw keep-alive sockets,
    so the servers, not the client, are what is measured."""
    parsed = httpx.URL(url)
    payload = json.dumps(body).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    raw = (
        f"POST {parsed.raw_path.decode()} HTTP/1.1\r\nHost: {parsed.host}:{parsed.port}\r\n{head}"
        f"Content-Length: {len(payload)}\r\n\r\n"
    ).encode() + payload
    latencies: list[float] = []
    remaining = iter(range(requests))

    async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(raw)
        status = await reader.readline()
        length = 0
        chunked = False
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
            elif name.lower() == "transfer-encoding" and "chunked" in value:
                chunked = True
        if chunked:
            data = b""
            while (size := int((await reader.readline()).strip(), 16)) > 0:
                data += await reader.readexactly(size + 2)
            await reader.readline()
        else:
            data = await reader.readexactly(length)
        if not status.startswith(b"HTTP/1.1 200") or (b'"error"' in data[:200] and b'"result"' not in data):
            raise RuntimeError(f"bad response {status!r}: {data[:200]!r}")

    async def worker(warmup: int) -> None:
        reader, writer = await asyncio.open_connection(parsed.host, parsed.port)
        for _ in range(warmup):
            await one(reader, writer)
        await ready.wait()
        for _ in remaining:
            t0 = time.perf_counter()
            await one(reader, writer)
            latencies.append(time.perf_counter() - t0)
        writer.close()

    ready = asyncio.Event()
    tasks = [asyncio.create_task(worker(5)) for _ in range(concurrency)]
    await asyncio.sleep(1.0)  # connections open and warmed
    started = time.perf_counter()
    ready.set()
    await asyncio.gather(*tasks)
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
    parser.add_argument("--rounds", type=int, default=3, help="rounds per server, taken in turns")
    parser.add_argument("--json", action="store_true", help="print one JSON object (for run_all.py)")
    args = parser.parse_args()
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    targets: dict[str, tuple[str, dict[str, str], dict[str, Any], int]] = {}

    with tempfile.TemporaryDirectory() as data, ExitStack() as stack:
        env = {"WORKBENCH_EXTRA_PLUGINS": "tests.support.slow_plugin"}
        base, key, pid = stack.enter_context(local_gateway(Path(data), env))
        body = {
            **call,
            "params": {
                "name": "execute_tools",
                "arguments": {"executions": [{"tool": "probe_noop", "args": {}}]},
            },
        }
        headers = {**HEADERS, "Authorization": f"Bearer {key}", "MCP-Protocol-Version": "2025-11-25"}
        targets["workbench"] = (f"{base}/mcp", headers, body, pid)
        for name, script in (
            ("fastmcp", "fastmcp_reference_server.py"),
            ("mcp-sdk", "sdk_reference_server.py"),
            ("asgi-floor", "asgi_floor_server.py"),
        ):
            port = free_port()
            path = Path(__file__).with_name(script)
            proc = stack.enter_context(
                running([sys.executable, str(path), str(port)], ready_url=f"tcp://127.0.0.1:{port}")
            )
            body = {**call, "params": {"name": "noop", "arguments": {}}}
            headers = {**HEADERS, "MCP-Protocol-Version": "2025-11-25"}
            targets[name] = (f"http://127.0.0.1:{port}/mcp", headers, body, proc.pid)
        # All servers are up; they are driven in turns, round after round, so that a burst of load
        # from elsewhere on the machine does not land on one server only. Each server's best round
        # is its throughput; CPU per request (all the server's threads) is the median round's.
        rounds: dict[str, list[dict[str, float]]] = {name: [] for name in targets}
        for _ in range(args.rounds):
            for name, (url, headers, body, pid) in targets.items():
                cpu0 = cpu_seconds(pid)
                measured = asyncio.run(drive(url, headers, body, args.requests, args.concurrency))
                measured["cpu_us_per_request"] = (cpu_seconds(pid) - cpu0) / args.requests * 1e6
                rounds[name].append(measured)

    results = {
        name: {
            **max(runs, key=lambda r: r["rps"]),
            "cpu_us_per_request": statistics.median(r["cpu_us_per_request"] for r in runs),
            "rounds_rps": [round(r["rps"]) for r in runs],
        }
        for name, runs in rounds.items()
    }
    ratios = {name: results["workbench"]["rps"] / results[name]["rps"] for name in ("fastmcp", "mcp-sdk")}
    cpu_ratio = results["fastmcp"]["cpu_us_per_request"] / results["workbench"]["cpu_us_per_request"]
    if args.json:
        print(
            json.dumps(
                {
                    "results": results,
                    "ratio_vs_fastmcp": ratios["fastmcp"],
                    "ratio_vs_sdk": ratios["mcp-sdk"],
                    "cpu_ratio_vs_fastmcp": cpu_ratio,
                    "floor_ratio_vs_fastmcp": results["asgi-floor"]["rps"] / results["fastmcp"]["rps"],
                }
            )
        )
        return
    print(
        f"tools/call, {args.requests} requests x {args.rounds} rounds per server (in turns), "
        f"concurrency {args.concurrency}, one uvicorn process each"
    )
    for name, r in results.items():
        print(
            f"  {name:10s} {r['rps']:8.0f} req/s (best round; rounds {r['rounds_rps']})   p50 {r['p50_ms']:6.2f} ms"
            f"   p99 {r['p99_ms']:6.2f} ms   CPU {r['cpu_us_per_request']:6.0f} us/request"
        )
    print(f"  throughput ratio workbench / fastmcp: {ratios['fastmcp']:.2f}x (goal >= 5x)")
    print(f"  throughput ratio workbench / mcp-sdk: {ratios['mcp-sdk']:.2f}x")
    print(f"  CPU per request, fastmcp / workbench: {cpu_ratio:.2f}x")
    floor = results["asgi-floor"]
    print(
        f"  floor: a bare ASGI answer on the same uvicorn is {floor['rps'] / results['fastmcp']['rps']:.1f}x "
        f"FastMCP; 5x FastMCP leaves {results['fastmcp']['cpu_us_per_request'] / 5 - floor['cpu_us_per_request']:.0f} us "
        "of CPU per request above it"
    )


if __name__ == "__main__":
    main()
