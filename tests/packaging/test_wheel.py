"""Packaging that tells the truth: `uv build` makes a wheel and an sdist, and the wheel installed into a
clean virtual environment runs `workbench --version` and `workbench serve` to its banner."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.processes import REPO, free_port, wait_http

pytestmark = pytest.mark.e2e


def _uv() -> str:
    found = shutil.which("uv") or str(Path.home() / ".local" / "bin" / "uv")
    if not Path(found).exists():
        pytest.fail("uv is not installed (make setup installs it)")
    return found


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([_uv(), "build", "--quiet", "--out-dir", str(out), str(REPO)], check=True, timeout=300)
    return out


def test_uv_build_makes_a_wheel_and_an_sdist_with_the_engine_and_plugins(built: Path) -> None:
    from workbench import __version__

    wheel = built / f"workbench_gateway-{__version__}-py3-none-any.whl"
    assert wheel.exists(), sorted(p.name for p in built.iterdir())
    assert (built / f"workbench_gateway-{__version__}.tar.gz").exists()
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "workbench/composition.py" in names and "workbench/engine/executor.py" in names
    assert "workbench_plugins/github/__init__.py" in names
    assert any(n.startswith("workbench/web/static/") for n in names)  # the portal's assets ship too
    assert not any(n.startswith("tests/") for n in names)


def test_the_wheel_runs_from_a_clean_venv(built: Path, tmp_path: Path) -> None:
    from workbench import __version__

    venv = tmp_path / "venv"
    # The clean environment uses the same interpreter version, without this project's environment.
    subprocess.run([_uv(), "venv", "--quiet", "--python", sys.executable, str(venv)], check=True, timeout=120)
    wheel = built / f"workbench_gateway-{__version__}-py3-none-any.whl"
    subprocess.run(
        [_uv(), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), str(wheel)],
        check=True,
        timeout=600,
    )
    exe = venv / "bin" / "workbench"
    clean = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    clean["WORKBENCH_DATA_DIR"] = str(tmp_path / "data")
    version = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60, env=clean)
    assert version.stdout.strip() == f"workbench {__version__}", version.stderr

    port = free_port()
    proc = subprocess.Popen(
        [str(exe), "serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,  # not the checkout: everything must come from the installed wheel
        env=clean,
    )
    try:
        assert proc.stdout is not None
        banner = [proc.stdout.readline() for _ in range(6)]
        wait_http(f"http://127.0.0.1:{port}/healthz", timeout=30)  # Ctrl+C once it is serving
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert banner[0] == "Workbench is running.\n", (banner, err)
    assert f"MCP endpoint: http://127.0.0.1:{port}/mcp" in banner[1]
    assert proc.returncode == 0 and out.strip().endswith("Workbench stopped."), err
