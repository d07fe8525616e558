"""The engine's browser: a small CDP client, pages in per-user browser contexts, and the pool that
starts (or connects to) Chromium. Imported only when a browser tool or the capture bridge runs."""

from __future__ import annotations

from workbench.browser.cdp import CdpConnection, CdpError
from workbench.browser.page import BrowserError, BrowserPage
from workbench.browser.pool import BrowserPool, BrowserUnavailable

__all__ = ["BrowserError", "BrowserPage", "BrowserPool", "BrowserUnavailable", "CdpConnection", "CdpError"]
