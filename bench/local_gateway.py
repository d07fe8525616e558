"""What the local-server benchmarks share: `workbench serve` started on loopback with the SQLite
store, and the CPU time a process has used (to print CPU per request beside throughput)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench scripts run from a checkout
from tests.support.processes import free_port, running


@contextmanager
def local_gateway(data: Path, extra_env: dict[str, str]) -> Iterator[tuple[str, str, int]]:
    """`workbench serve` on loopback (SQLite store): (base URL, first-run API key, pid)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = data / "gateway.log"
    env = {"WORKBENCH_DATA_DIR": str(data), "WORKBENCH_PUBLIC_URL": base, **extra_env}
    cmd = [sys.executable, "-m", "workbench.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    with running(cmd, ready_url=f"{base}/healthz", env=env, log=log) as proc:
        key = next(line.rsplit(" ", 1)[-1] for line in log.read_text().splitlines() if "API key for" in line)
        yield base, key, proc.pid


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used so far (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
