"""execute_tools batches against the ideal: 50 x 100 ms of a sync tool and of an async tool.

A real `workbench serve` on loopback (SQLite store) runs one execute_tools of 50 executions of a tool
that takes 100 ms: `probe_block` (sync: time.sleep in its thread) and `probe_sleep` (async:
asyncio.sleep). The engine runs a batch 8 at a time, so the ideal is ceil(50 / 8) x 100 ms = 700 ms;
each batch's wall time (median of --runs) is printed as a ratio to it. Goals: sync <= 1.15x, async
~1.02x. While the sync batch runs, another client's tools/list is timed: the event loop must stay
free (before issue 14 it waited 4.8 s).

    uv run python bench/batch.py [--runs 5] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench scripts run from a checkout
from tests.support.processes import local_gateway

ITEMS, MS, CONCURRENCY = 50, 100, 8
IDEAL_S = math.ceil(ITEMS / CONCURRENCY) * MS / 1000
GOALS = {"sync": 1.15, "async": 1.05}


def _batch(tool: str) -> dict[str, Any]:
    executions = [{"tool": tool, "args": {"ms": MS}} for _ in range(ITEMS)]
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "execute_tools", "arguments": {"executions": executions}},
    }


async def _measure(base: str, key: str, runs: int) -> dict[str, Any]:
    headers = {
        "Authorization": f"Bearer {key}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
    out: dict[str, Any] = {}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as http:
        await http.post("/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "tools/list"})  # warm
        for kind, tool in (("sync", "probe_block"), ("async", "probe_sleep")):
            body = _batch(tool)
            await http.post("/mcp", json=body)  # warm: pools started, tool imported
            walls: list[float] = []
            side: list[float] = []
            for _ in range(runs):
                started = time.perf_counter()
                batch = asyncio.create_task(http.post("/mcp", json=body))
                await asyncio.sleep(0.2)  # the batch is under way
                t0 = time.perf_counter()
                listed = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
                side.append(time.perf_counter() - t0)
                resp = await batch
                walls.append(time.perf_counter() - started)
                results = json.loads(resp.json()["result"]["content"][0]["text"])["results"]
                if listed.status_code != 200 or len(results) != ITEMS or any("error" in r for r in results):
                    raise RuntimeError(f"bench batch failed: {resp.text[:300]}")
            wall = statistics.median(walls)
            out[kind] = {
                "wall_ms": wall * 1000,
                "ratio": wall / IDEAL_S,
                "goal": GOALS[kind],
                "tools_list_during_ms": statistics.median(side) * 1000,
                "runs": runs,
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print one JSON object (for run_all.py)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data:
        env = {"WORKBENCH_EXTRA_PLUGINS": "tests.support.slow_plugin"}
        with local_gateway(Path(data), extra_env=env) as (base, key):
            measured = asyncio.run(_measure(base, key, args.runs))
    if args.json:
        print(json.dumps({"ideal_ms": IDEAL_S * 1000, **measured}))
        return
    print(f"execute_tools, {ITEMS} x {MS} ms, concurrency {CONCURRENCY}: ideal {IDEAL_S * 1000:.0f} ms")
    for kind, r in measured.items():
        verdict = "OK" if r["ratio"] <= r["goal"] else "OVER"
        print(
            f"  {kind:5s} tool batch {r['wall_ms']:7.0f} ms = {r['ratio']:.3f}x ideal (goal <= {r['goal']}x) "
            f"{verdict}; another client's tools/list meanwhile: {r['tools_list_during_ms']:.1f} ms"
        )


if __name__ == "__main__":
    main()
