"""Run every benchmark under bench/ (what `make bench` runs) and print one table of the figures the
issues set goals for, each measured side by side with its comparison point in the same run.

Each script also runs alone (without --json it prints its own detailed report). Here each is run
with `--json` and the table is built from the object it prints last; a script that cannot print
JSON is run for its own report instead, and its rows say n/a.

    uv run --group bench python bench/run_all.py [name ...]
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
# In the order they run; search_hybrid is an experiment with its own report (not a goal).
SCRIPTS = (
    "cold_start",
    "library_cost",
    "aws_calls",
    "audit_throttling",
    "batch",
    "mcp_throughput",
    "mcp_app_cpu",
    "proxy",
    "search",
    "search_scale",
    "search_hybrid",
    "hostile_inputs",
)


# bench/cold_start.py's first requests, each beside the official SDK answering the same event.
COLD_REQUESTS = (
    "mcp list_jots",
    "mcp search_tools",
    "mcp oauth token",
    "plugin http",
    "plugin http (Arguments)",
    "plugin http (pydantic BaseModel)",
    "plugin http (superset)",
    "portal page",
    "curl proxy",
    "rest",
)


@dataclass(frozen=True)
class Row:
    script: str
    measure: str
    value: Callable[[dict[str, Any]], float]
    unit: str
    goal: str
    ok: Callable[[float], bool]


def _get(*path: str) -> Callable[[dict[str, Any]], float]:
    def read(data: dict[str, Any]) -> float:
        value: Any = data
        for key in path:
            value = value[key]
        return float(value)

    return read


ROWS = (
    *(
        Row(
            "cold_start",
            f"cold first response ÷ official SDK + Mangum ({unit}): {name}",
            _get("requests", name, key),
            "x",
            "<= 0.3x",
            lambda v: v <= 0.3,
        )
        for name in COLD_REQUESTS
        for unit, key in (("wall", "ratio_vs_sdk"), ("CPU", "cpu_ratio_vs_sdk"))
    ),
    Row(
        "cold_start",
        "cold first response ÷ Starlette + Mangum hello (wall): mcp list_jots",
        _get("ratio_vs_hello"),
        "x",
        "",
        lambda v: True,
    ),
    Row(
        "cold_start",
        "cold first response ÷ Starlette + Mangum hello (CPU): mcp list_jots",
        _get("cpu_ratio_vs_hello"),
        "x",
        "<= 1.5x",
        lambda v: v <= 1.5,
    ),
    Row(
        "cold_start",
        "cold first response, mcp list_jots (wall median)",
        _get("requests", "mcp list_jots", "median_ms"),
        "ms",
        "",
        lambda v: True,
    ),
    Row(
        "cold_start",
        "peak RSS of the cold start, mcp list_jots",
        _get("requests", "mcp list_jots", "peak_rss_mb"),
        "MB",
        "",
        lambda v: True,
    ),
    *(
        Row(
            "library_cost",
            f"marginal cold CPU: {label} − ours",
            lambda data, label=label: data["pairs"][label]["library"] - data["pairs"][label]["ours"],
            "ms",
            "",
            lambda v: True,
        )
        for label in (
            "boto3 (import + one client)",
            "Mangum (one event)",
            "Powertools Logger (one line)",
            "Powertools Metrics (one EMF flush)",
            "X-Ray SDK (one segment)",
        )
    ),
    Row(
        "aws_calls",
        "AWS calls per warm execute_tools of one tool",
        _get("warm_execute_one_calls"),
        "",
        "1",
        lambda v: v <= 1,
    ),
    Row(
        "aws_calls", "AWS calls per warm tools/list", _get("warm_tools_list_calls"), "", "0", lambda v: v == 0
    ),
    *(
        Row(
            "aws_calls",
            f"AWS calls per {kind}, {when}",
            _get("calls", when, kind),
            "",
            f"<= {goal}",
            lambda v, goal=goal: v <= goal,
        )
        for kind, goals in (
            ("tools/list", (1, 0)),
            ("execute_tools (1 auth-none tool)", (2, 1)),
            ("execute_tools (1 tool with a stored connection)", (2, 2)),
            ("execute_tools (1 custom-app tool)", (2, 2)),
            ("tools/list (OAuth token)", (1, 0)),
            ("execute_tools (OAuth token, 1 tool with a stored connection)", (2, 2)),
            ("search_tools", (2, 2)),
            ("search_tools (custom app, hit needs a connection)", (2, 2)),
            ("curl proxy GET", (2, 2)),
            ("curl proxy GET (token minted with an OAuth token)", (2, 2)),
        )
        for when, goal in (("after idle", goals[0]), ("back to back", goals[1]))
    ),
    Row(
        "batch",
        "50 x 100 ms sync tool batch ÷ 700 ms ideal",
        _get("sync", "ratio"),
        "x",
        "<= 1.15x",
        lambda v: v <= 1.15,
    ),
    Row(
        "batch",
        "50 x 100 ms async tool batch ÷ 700 ms ideal",
        _get("async", "ratio"),
        "x",
        "~1.02x (keep)",
        lambda v: v <= 1.1,
    ),
    Row(
        "mcp_throughput",
        "local tools/call throughput ÷ FastMCP",
        _get("ratio_vs_fastmcp"),
        "x",
        ">= 5x",
        lambda v: v >= 5,
    ),
    Row(
        "mcp_throughput",
        "  the floor: a bare ASGI answer on the same uvicorn ÷ FastMCP",
        _get("floor_ratio_vs_fastmcp"),
        "x",
        "",
        lambda v: True,
    ),
    Row(
        "mcp_throughput",
        "local tools/call CPU per request: FastMCP ÷ Workbench",
        _get("cpu_ratio_vs_fastmcp"),
        "x",
        "",
        lambda v: True,
    ),
    Row(
        "mcp_app_cpu",
        "  of which the engine: execute_tools CPU in-process, no HTTP (best round)",
        _get("app_cpu_us_best"),
        "us",
        "",
        lambda v: True,
    ),
    Row(
        "mcp_throughput",
        "local tools/call throughput ÷ official SDK",
        _get("ratio_vs_sdk"),
        "x",
        "",
        lambda v: True,
    ),
    Row(
        "proxy",
        "curl proxy p50 overhead over a direct loopback call (GET)",
        _get("overhead_p50_ms"),
        "ms",
        "<= +1.5 ms",
        lambda v: v <= 1.5,
    ),
    Row(
        "proxy",
        "curl proxy p50 overhead over a direct loopback call (POST)",
        _get("post_overhead_p50_ms"),
        "ms",
        "<= +1.5 ms",
        lambda v: v <= 1.5,
    ),
    Row(
        "search", "BFCL simple+multiple+parallel R@5", _get("bfcl", "r5"), "", ">= 0.90", lambda v: v >= 0.90
    ),
    Row(
        "audit_throttling",
        "audit: caller's added p99 wait, 50 % of writes throttled",
        _get("added_p99_ms"),
        "ms",
        "< 1000",
        lambda v: v < 1000,
    ),
    Row(
        "audit_throttling",
        "audit rows lost under 50 % throttling (after the redrive)",
        _get("throttled", "lost"),
        "",
        "0",
        lambda v: v == 0,
    ),
    Row("search", "BFCL typo variant R@5", _get("bfcl_typo", "r5"), "", ">= 0.88", lambda v: v >= 0.88),
    Row("search", "BFCL R@1", _get("bfcl", "r1"), "", ">= 0.72", lambda v: v >= 0.72),
    Row("search", "catalog query set R@1", _get("catalog", "r1"), "", ">= 0.90", lambda v: v >= 0.90),
    Row("search", "catalog query set R@5", _get("catalog", "r5"), "", ">= 0.98", lambda v: v >= 0.98),
    Row("search", "held-out query set R@1 (not tuned on)", _get("heldout", "r1"), "", "", lambda v: True),
    Row(
        "search",
        "multilingual set A R@5 (read while the lexicon was written)",
        _get("multilingual", "r5"),
        "",
        ">= 0.80",
        lambda v: v >= 0.80,
    ),
    Row(
        "search",
        "multilingual set A R@1 (read while the lexicon was written)",
        _get("multilingual", "r1"),
        "",
        ">= 0.60",
        lambda v: v >= 0.60,
    ),
    Row(
        "search",
        "untuned multilingual set B R@5",
        _get("multilingual_b", "r5"),
        "",
        ">= 0.80",
        lambda v: v >= 0.80,
    ),
    Row(
        "search",
        "untuned multilingual set B R@1",
        _get("multilingual_b", "r1"),
        "",
        ">= 0.60",
        lambda v: v >= 0.60,
    ),
    Row(
        "search",
        "held-out indirect-goal set B R@1",
        _get("indirect_b", "r1"),
        "",
        ">= 0.60",
        lambda v: v >= 0.60,
    ),
    Row("search", "indirect-goal set A R@1 (tuned on)", _get("indirect", "r1"), "", "", lambda v: True),
    Row("search", "indirect-goal set C R@1 (tuned on)", _get("indirect_c", "r1"), "", "", lambda v: True),
    Row(
        "search",
        "held-out no-tool set B under the no-match band",
        _get("no_tool_below_b"),
        "",
        ">= 0.90",
        lambda v: v >= 0.90,
    ),
    Row(
        "search",
        "held-out right first hits (sets B) above the no-match band",
        _get("right_above_b"),
        "",
        ">= 0.90",
        lambda v: v >= 0.90,
    ),
    Row(
        "search",
        "no-tool set A under the no-match band (tuned on)",
        _get("no_tool_below"),
        "",
        "",
        lambda v: True,
    ),
    Row(
        "search",
        "right first hits (tuning sets) above the no-match band",
        _get("right_above"),
        "",
        "",
        lambda v: True,
    ),
    Row(
        "search",
        "search at 20,000 tools: query p99 (CPU)",
        _get("p99_20k_ms"),
        "ms",
        "< 15 ms",
        lambda v: v < 15,
    ),
    Row(
        "search",
        "search at 20,000 tools: prebuilt index load (CPU)",
        _get("prebuilt_load_20k_ms"),
        "ms",
        "< 300 ms",
        lambda v: v < 300,
    ),
    Row(
        "hostile_inputs",
        "longest event-loop stall while a hostile document or path is answered",
        _get("worst_stall_ms"),
        "ms",
        "< 50 ms",
        lambda v: v < 50,
    ),
    Row(
        "hostile_inputs",
        "hostile inputs answered with a clear error (no 5xx, no internal error)",
        lambda d: 1.0 if d.get("all_ok") else 0.0,
        "",
        "1",
        lambda v: v == 1,
    ),
    Row(
        "search_scale",
        "20,000 realistic tools: query p99 (CPU)",
        _get("20000", "p99_ms"),
        "ms",
        "< 10 ms",
        lambda v: v < 10,
    ),
    Row(
        "search_scale",
        "20,000 realistic tools: index",
        _get("20000", "index_mb"),
        "MB",
        "<= 60 MB",
        lambda v: v <= 60,
    ),
    Row(
        "search_scale",
        "20,000 realistic tools: build (CPU)",
        _get("20000", "build_ms"),
        "ms",
        "< 1000 ms",
        lambda v: v < 1000,
    ),
    Row(
        "search_scale",
        "  of which reading the text: words, terms, written words (CPU, measured apart)",
        _get("20000", "read_ms"),
        "ms",
        "",
        lambda v: True,
    ),
    Row(
        "search_scale",
        "20,000 realistic tools: prebuilt load (CPU)",
        _get("20000", "load_ms"),
        "ms",
        "< 300 ms",
        lambda v: v < 300,
    ),
    Row(
        "search_scale",
        "1,000-tool custom catalog build (CPU, as the index worker builds it)",
        _get("custom_1000_worker_cpu_ms"),
        "ms",
        "< 150 ms",
        lambda v: v < 150,
    ),
    Row(
        "search_scale",
        "hostile input: peak memory of a build",
        _get("hostile_peak_mb"),
        "MB",
        "<= 64 MB",
        lambda v: v <= 64,
    ),
    Row(
        "search_scale",
        "another request's wait while a 20k, a 5k or a hostile custom index builds",
        _get("loop_wait_ms"),
        "ms",
        "<= 50 ms",
        lambda v: v <= 50,
    ),
    Row(
        "search_scale",
        "serving process's growth while a 5k or a hostile custom catalog indexes",
        _get("custom_growth_mb"),
        "MB",
        "<= 64 MB",
        lambda v: v <= 64,
    ),
)


def _run(name: str) -> dict[str, Any] | None:
    """The script's JSON figures (None when it has no --json mode: then its own report was shown)."""
    script = BENCH / f"{name}.py"
    if not script.exists():
        print(f"  (bench/{name}.py is not there)")
        return None
    done = subprocess.run(
        [sys.executable, str(script), "--json"], cwd=BENCH.parent, capture_output=True, text=True
    )
    if done.returncode == 0:
        for line in reversed(done.stdout.strip().splitlines()):
            if line.startswith("{"):
                return dict(json.loads(line))
        sys.stdout.write(done.stdout)  # a script with no --json mode: its own report
        return None
    if done.returncode == 2 and "--json" in done.stderr:  # argparse: no such option
        subprocess.call([sys.executable, str(script)], cwd=BENCH.parent)
        return None
    sys.stdout.write(done.stdout[-4000:])
    sys.stderr.write(done.stderr[-4000:])
    raise RuntimeError(f"bench/{name}.py failed (exit {done.returncode})")


def main() -> int:
    chosen = sys.argv[1:] or list(SCRIPTS)
    unknown = sorted(set(chosen) - set(SCRIPTS))
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(SCRIPTS)}")
        return 2
    results: dict[str, dict[str, Any] | None] = {}
    failed = []
    for name in chosen:
        print(f"=== bench/{name}.py", flush=True)
        t0 = time.perf_counter()
        try:
            results[name] = _run(name)
        except RuntimeError as exc:
            print(exc)
            failed.append(name)
            results[name] = None
        print(f"    done in {time.perf_counter() - t0:.0f} s", flush=True)

    print("\n| measure | this run | goal | |")
    print("|---|---|---|---|")
    for row in ROWS:
        if row.script not in chosen:
            continue
        data = results.get(row.script)
        try:
            value = row.value(data) if data is not None else None
        except (KeyError, TypeError, ValueError):
            value = None
        if value is None:
            print(f"| {row.measure} | n/a | {row.goal} | |")
            continue
        shown = (
            f"{value:.3f}{row.unit}" if row.unit in ("x", "") and value < 100 else f"{value:.1f} {row.unit}"
        )
        verdict = "" if not row.goal else ("met" if row.ok(value) else "NOT MET")
        print(f"| {row.measure} | {shown} | {row.goal} | {verdict} |")
    out = BENCH.parent / ".bench-cache" / "results.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    print(f"\n(all figures: {out.relative_to(BENCH.parent)})")
    if failed:
        print("failed:", ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
