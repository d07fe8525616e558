"""Start real processes on loopback for tests, and make sure they stop."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, proc: subprocess.Popen[bytes] | None = None, timeout: float = 30.0) -> None:
    """Wait until `url` answers any HTTP response (or, for tcp://host:port, accepts a connection)."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before {url} answered")
        try:
            if url.startswith("tcp://"):
                host, _, port = url.removeprefix("tcp://").partition(":")
                socket.create_connection((host, int(port)), timeout=1.0).close()
            else:
                httpx.get(url, timeout=1.0)
            return
        except (httpx.HTTPError, OSError) as exc:
            last = exc
            time.sleep(0.1)
    raise TimeoutError(f"{url} did not answer within {timeout}s: {last}")


@contextmanager
def running(
    cmd: list[str],
    *,
    ready_url: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    log: Path | None = None,
    timeout: float = 30.0,
) -> Iterator[subprocess.Popen[bytes]]:
    """Run `cmd` until the block ends; its output goes to `log` (or is discarded)."""
    out = open(log, "wb") if log else subprocess.DEVNULL  # noqa: SIM115
    proc = subprocess.Popen(
        cmd,
        env={**os.environ, **(env or {})},
        cwd=cwd or REPO,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_http(ready_url, proc, timeout)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        if log:
            out.close()  # type: ignore[union-attr]


@contextmanager
def local_gateway(data_dir: Path, *, extra_env: Mapping[str, str] | None = None) -> Iterator[tuple[str, str]]:
    """A real `workbench serve` process on loopback; yields (base URL, first-run API key)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = data_dir / "gateway.log"
    env = {
        "WORKBENCH_DATA_DIR": str(data_dir),
        "WORKBENCH_PUBLIC_URL": base,
        # The test's upstreams (providers, MCP servers, plugin APIs) listen on loopback.
        "WORKBENCH_EGRESS_ALLOW": "loopback",
        **(extra_env or {}),
    }
    cmd = [sys.executable, "-m", "workbench.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    with running(cmd, ready_url=f"{base}/healthz", env=env, log=log):
        key = ""
        for line in log.read_text().splitlines():
            if "API key for" in line:
                key = line.rsplit(" ", 1)[-1]
        yield base, key
