"""The browser pool: one Chromium (started locally, or a configured CDP endpoint on AWS), one
isolated browser context per user for the browser tools, and one per pending cookie connect.

Nothing here is reachable from a plugin: the pool hangs off the engine's built-in services, which
only built-in tools (and the web bridge) receive.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from workbench.browser.cdp import CdpConnection
from workbench.browser.page import BrowserError, BrowserPage

__all__ = ["CHROMIUM_FLAGS", "BrowserPool", "BrowserUnavailable"]

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--remote-debugging-port=0",
)
_START_TIMEOUT = 20.0


class BrowserUnavailable(BrowserError):
    """No browser could be started or reached."""


class _LocalChromium:
    """A headless chromium child process with a throwaway profile; killed with its process group."""

    def __init__(self, executable: str) -> None:
        self.executable = executable
        self.proc: subprocess.Popen[bytes] | None = None
        self.profile: str | None = None

    def launch(self) -> None:
        if not Path(self.executable).exists():
            raise BrowserUnavailable(
                f"No browser at {self.executable}: install chromium or set WORKBENCH_CDP_URL (see docs/browser.md)"
            )
        self.profile = _fresh_profile_dir()
        self.proc = subprocess.Popen(  # noqa: S603 - fixed executable and flags
            [self.executable, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own process group, so stop() reaches the renderers too
            preexec_fn=_die_with_parent_hook(),  # only prctl runs between fork and exec
        )

    async def ws_url(self) -> str:
        """Wait for chromium to write its DevTools port, and return the browser websocket URL."""
        assert self.proc is not None and self.profile is not None
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + _START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.stop()
                raise BrowserUnavailable(f"{self.executable} exited during start-up")
            with contextlib.suppress(OSError, ValueError, IndexError):
                lines = port_file.read_text().split()
                return f"ws://127.0.0.1:{int(lines[0])}{lines[1]}"
            await asyncio.sleep(0.05)
        self.stop()
        raise BrowserUnavailable(f"{self.executable} did not open its DevTools port in {_START_TIMEOUT:g}s")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        if self.profile:
            shutil.rmtree(self.profile, ignore_errors=True)
            self.profile = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


class BrowserPool:
    """Lazily connects on first use; pages idle for `idle_seconds` are closed on the next use."""

    def __init__(
        self,
        *,
        executable: str = "/usr/bin/chromium",
        cdp_url: str | None = None,
        idle_seconds: float = 600.0,
        max_pages: int = 20,
    ) -> None:
        self.executable = executable
        self.cdp_url = cdp_url
        self.idle_seconds = idle_seconds
        self.max_pages = max_pages
        self._local: _LocalChromium | None = None
        self._conn: CdpConnection | None = None
        self._lock: asyncio.Lock | None = None
        self._pages: dict[str, BrowserPage] = {}  # "user:<id>" / "capture:<connection id>"

    # -- pages -------------------------------------------------------------------------------------

    async def page_for_user(self, user_id: str) -> BrowserPage:
        """The user's page (its own browser context), opened on first use."""
        return await self._page(f"user:{user_id}", "about:blank")

    async def capture_page(self, connection_id: str, start_url: str) -> BrowserPage:
        """The page of a pending cookie connect, opened at the login URL on first use."""
        return await self._page(f"capture:{connection_id}", start_url)

    def user_page(self, user_id: str) -> BrowserPage | None:
        """The user's open page, if there is a usable one (None after close or idle expiry)."""
        return self._usable(f"user:{user_id}")

    def existing_capture(self, connection_id: str) -> BrowserPage | None:
        return self._usable(f"capture:{connection_id}")

    def _usable(self, key: str) -> BrowserPage | None:
        page = self._pages.get(key)
        if page is None or page.conn.closed or page.conn.loop is not asyncio.get_running_loop():
            return None
        if time.monotonic() - page.last_used > self.idle_seconds:
            return None
        return page

    async def close_user(self, user_id: str) -> bool:
        return await self._close(f"user:{user_id}")

    async def close_capture(self, connection_id: str) -> bool:
        return await self._close(f"capture:{connection_id}")

    def keys(self) -> Iterator[str]:
        return iter(list(self._pages))

    async def _page(self, key: str, start_url: str) -> BrowserPage:
        fresh = False
        async with self._guard():
            conn = await self._connection()
            await self._sweep()
            page = self._pages.get(key)
            if page is None:
                if len(self._pages) >= self.max_pages:  # evict the least recently used page
                    oldest = min(self._pages, key=lambda k: self._pages[k].last_used)
                    await self._pages.pop(oldest).close()
                page = await BrowserPage.open(conn)
                self._pages[key] = page
                fresh = True
        page.touch()
        if fresh and start_url != "about:blank":
            try:
                async with page.lock:
                    await page.navigate(start_url)
            except BaseException:
                if self._pages.get(key) is page:  # the next attempt starts over at start_url
                    await self._close(key)
                raise
        return page

    async def _close(self, key: str) -> bool:
        page = self._pages.pop(key, None)
        if page is None:
            return False
        await page.close()
        return True

    async def _sweep(self) -> None:
        now = time.monotonic()
        for key in [k for k, p in self._pages.items() if now - p.last_used > self.idle_seconds]:
            page = self._pages.pop(key)
            if not page.lock.locked():
                await page.close()

    # -- the browser -------------------------------------------------------------------------------

    def _guard(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._lock is None or getattr(self._lock, "_wb_loop", None) is not loop:
            self._lock = asyncio.Lock()
            self._lock._wb_loop = loop  # type: ignore[attr-defined]
        return self._lock

    async def _connection(self) -> CdpConnection:
        conn = self._conn
        if conn is not None and not conn.closed and conn.loop is asyncio.get_running_loop():
            return conn
        # A new event loop (or a dropped socket): pages of the old connection are unusable.
        self._pages.clear()
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()
        ws_url = await self._ws_url()
        try:
            self._conn = await CdpConnection.connect(ws_url)
        except Exception as exc:
            raise BrowserUnavailable(f"Cannot reach the browser at {ws_url}: {exc}") from exc
        return self._conn

    async def _ws_url(self) -> str:
        if self.cdp_url:
            return await _resolve_remote(self.cdp_url)
        if self._local is None or not self._local.running:
            if self._local is not None:
                self._local.stop()
            self._local = _LocalChromium(self.executable)
            # Launched from the event loop's thread: the parent-death signal is tied to that thread.
            self._local.launch()
            atexit.register(self.stop_local)  # a clean exit takes chromium (and its profile) with it
        # Also when it runs but we were disconnected (e.g. a new event loop): reuse the process.
        return await self._local.ws_url()

    async def aclose(self) -> None:
        for key in list(self._pages):
            page = self._pages.pop(key)
            await page.close()
        if self._conn is not None:
            await self._conn.close()
            self._conn = None
        self.stop_local()

    def stop_local(self) -> None:
        if self._local is not None:
            self._local.stop()
            self._local = None
            atexit.unregister(self.stop_local)


def _fresh_profile_dir() -> str:
    """A throwaway profile under <tmp>/workbench-chromium/<gateway pid>-…; profiles left behind by
    gateways that died without cleaning up (killed by a signal) are removed first."""
    root = Path(tempfile.gettempdir()) / "workbench-chromium"
    root.mkdir(mode=0o700, exist_ok=True)
    for old in root.iterdir():
        owner = old.name.split("-", 1)[0]
        if owner.isdigit() and int(owner) != os.getpid() and not _alive(int(owner)):
            shutil.rmtree(old, ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=root)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _die_with_parent_hook() -> Callable[[], None] | None:
    """On Linux, have the kernel SIGTERM chromium when the gateway dies, however it dies (uvicorn
    re-raises SIGTERM after shutdown, which skips atexit). Resolved before fork: the hook only calls
    prctl(PR_SET_PDEATHSIG)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1

    def hook() -> None:
        prctl(pr_set_pdeathsig, signal.SIGTERM)

    return hook


async def _resolve_remote(cdp_url: str) -> str:
    """`ws(s)://…/devtools/browser/<id>` as is; `http(s)://host:port` via its /json/version."""
    parts = urlsplit(cdp_url)
    if parts.scheme in ("ws", "wss"):
        return cdp_url
    import httpx

    try:
        async with httpx.AsyncClient(timeout=10.0) as client:
            info: dict[str, Any] = (await client.get(cdp_url.rstrip("/") + "/json/version")).json()
    except Exception as exc:
        raise BrowserUnavailable(f"Cannot reach the CDP endpoint {cdp_url}: {exc}") from exc
    ws = urlsplit(str(info.get("webSocketDebuggerUrl", "")))
    if not ws.path:
        raise BrowserUnavailable(f"{cdp_url}/json/version names no webSocketDebuggerUrl")
    # The browser reports the host it sees itself as; reach it at the host we were configured with.
    scheme = "wss" if parts.scheme == "https" else "ws"
    return urlunsplit((scheme, parts.netloc, ws.path, ws.query, ""))
