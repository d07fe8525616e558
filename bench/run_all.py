"""Run every benchmark under bench/ in turn (what `make bench` runs); each script also runs alone.

uv run --group bench python bench/run_all.py [name ...]    (names: search, search_hybrid, cold_start, aws_calls, mcp_throughput)
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
SCRIPTS = ("search", "search_hybrid", "cold_start", "aws_calls", "mcp_throughput")


def main() -> int:
    chosen = sys.argv[1:] or list(SCRIPTS)
    unknown = sorted(set(chosen) - set(SCRIPTS))
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(SCRIPTS)}")
        return 2
    failed = []
    for name in chosen:
        print(f"\n=== bench/{name}.py ===", flush=True)
        t0 = time.perf_counter()
        code = subprocess.call([sys.executable, str(BENCH / f"{name}.py")], cwd=BENCH.parent)
        print(
            f"=== bench/{name}.py: {'ok' if code == 0 else f'exit {code}'} in {time.perf_counter() - t0:.0f} s"
        )
        if code:
            failed.append(name)
    if failed:
        print("failed:", ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
