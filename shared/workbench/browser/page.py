"""One page in its own browser context, driven over CDP: what the browser tools and the cookie
capture bridge do to a page. Every operation on a page holds its lock, so two calls of the same
user never interleave their input events."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from workbench.browser.cdp import CdpConnection, CdpError
from workbench.errors import WorkbenchError

__all__ = ["VIEWPORT", "BrowserError", "BrowserPage", "PageState"]

VIEWPORT = (1280, 800)
NAV_TIMEOUT = 20.0
# After a click or Enter, how long to watch for a navigation starting before assuming none will.
NAV_GRACE = 0.4

_KEYS: dict[str, tuple[int, str]] = {
    "Enter": (13, "\r"),
    "Tab": (9, ""),
    "Backspace": (8, ""),
    "Delete": (46, ""),
    "Escape": (27, ""),
    "ArrowUp": (38, ""),
    "ArrowDown": (40, ""),
    "ArrowLeft": (37, ""),
    "ArrowRight": (39, ""),
    "Home": (36, ""),
    "End": (35, ""),
    "PageUp": (33, ""),
    "PageDown": (34, ""),
}
KEY_NAMES = tuple(_KEYS)


class BrowserError(WorkbenchError):
    """A browser operation failed in a way the caller can act on (bad selector, page error...)."""


@dataclass(frozen=True, slots=True)
class PageState:
    url: str
    title: str


@dataclass(slots=True)
class BrowserPage:
    conn: CdpConnection
    context_id: str
    target_id: str
    session_id: str
    last_used: float = field(default_factory=time.monotonic)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # {{vault:}} values typed or navigated to on this page: whatever a later call reads back from it
    # (text, outline, URL, title) has them redacted (workbench.builtin.browser).
    secrets: set[str] = field(default_factory=set, repr=False)

    @classmethod
    async def open(cls, conn: CdpConnection, url: str = "about:blank") -> BrowserPage:
        """A new page in a fresh, isolated browser context (its own cookies and storage)."""
        ctx = await conn.send("Target.createBrowserContext", {"disposeOnDetach": False})
        context_id = str(ctx["browserContextId"])
        try:
            target = await conn.send(
                "Target.createTarget",
                {
                    "url": "about:blank",
                    "browserContextId": context_id,
                    "width": VIEWPORT[0],
                    "height": VIEWPORT[1],
                },
            )
            target_id = str(target["targetId"])
            attached = await conn.send("Target.attachToTarget", {"targetId": target_id, "flatten": True})
            page = cls(conn, context_id, target_id, str(attached["sessionId"]))
            await page._setup()
        except BaseException:
            with contextlib.suppress(Exception):
                await conn.send("Target.disposeBrowserContext", {"browserContextId": context_id})
            raise
        if url != "about:blank":
            await page.navigate(url)
        return page

    async def _setup(self) -> None:
        await self._send("Page.enable")
        await self._send("Network.enable")
        await self._send(
            "Emulation.setDeviceMetricsOverride",
            {"width": VIEWPORT[0], "height": VIEWPORT[1], "deviceScaleFactor": 1, "mobile": False},
        )

    def touch(self) -> None:
        self.last_used = time.monotonic()

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.conn.send("Target.disposeBrowserContext", {"browserContextId": self.context_id})

    async def _send(
        self, method: str, params: dict[str, Any] | None = None, answer_within: float = 30.0
    ) -> dict[str, Any]:
        return await self.conn.send(method, params, session_id=self.session_id, answer_within=answer_within)

    # -- navigation ------------------------------------------------------------------------------

    async def navigate(self, url: str) -> dict[str, Any]:
        loaded = self.conn.expect("Page.loadEventFired", self.session_id)
        response: asyncio.Future[dict[str, Any]] = self.conn.expect(
            "Network.responseReceived", self.session_id, lambda p: p.get("type") == "Document"
        )
        try:
            result = await self._send("Page.navigate", {"url": url}, answer_within=NAV_TIMEOUT)
            if result.get("errorText"):
                raise BrowserError(f"Navigation to {url} failed: {result['errorText']}")
            if result.get("loaderId"):  # a new document (not a same-document fragment change)
                await _wait(loaded, NAV_TIMEOUT, f"Navigation to {url} did not finish loading")
            status = None
            if response.done() and not response.cancelled() and response.exception() is None:
                status = response.result().get("response", {}).get("status")
        finally:
            _discard(loaded)
            _discard(response)
        state = await self.state()
        out: dict[str, Any] = {"url": state.url, "title": state.title}
        if status is not None:
            out["status"] = int(status)
        return out

    async def _settle_after(self, action: Callable[[], Awaitable[None]]) -> None:
        """Run an input action; if it starts a main-frame navigation, wait for the new page to load."""
        main_frame = lambda p: p.get("frameId") == self.target_id  # noqa: E731
        # The renderer asks for a navigation while it handles the input event (before the input
        # command even answers); loading starts a little later.
        requested = self.conn.expect("Page.frameRequestedNavigation", self.session_id, main_frame)
        started = self.conn.expect("Page.frameStartedLoading", self.session_id, main_frame)
        # Any of these ends it: the new document loaded, loading stopped without one (a 204, a
        # download), or it was a same-document (#fragment) navigation.
        ends = [
            self.conn.expect("Page.loadEventFired", self.session_id),
            self.conn.expect("Page.frameStoppedLoading", self.session_id, main_frame),
            self.conn.expect("Page.navigatedWithinDocument", self.session_id, main_frame),
        ]
        try:
            await action()
            begun, _ = await asyncio.wait({requested, started}, timeout=NAV_GRACE)
            if not begun:
                return
            finished, _ = await asyncio.wait(ends, timeout=NAV_TIMEOUT, return_when=asyncio.FIRST_COMPLETED)
            if not finished:
                raise BrowserError(
                    f"The page did not finish loading after the action within {NAV_TIMEOUT:g}s"
                )
        finally:
            for waiter in (requested, started, *ends):
                _discard(waiter)

    async def state(self) -> PageState:
        value = await self.evaluate("[location.href, document.title]")
        if isinstance(value, list) and len(value) == 2:
            return PageState(str(value[0]), str(value[1]))
        return PageState("", "")

    async def evaluate(self, expression: str) -> Any:
        result = await self._send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}
        )
        if result.get("exceptionDetails"):
            details = result["exceptionDetails"]
            text = (details.get("exception") or {}).get("description") or details.get("text", "error")
            raise BrowserError(str(text).splitlines()[0])
        return (result.get("result") or {}).get("value")

    # -- element actions (browser tools) ----------------------------------------------------------

    async def _locate(self, selector: str | None, text: str | None) -> dict[str, float]:
        if selector is not None:
            finder = f"document.querySelector({json.dumps(selector)})"
            what = f"selector {selector!r}"
        else:
            finder = f"__wbFindByText({json.dumps(text or '')})"
            what = f"text {text!r}"
        expression = _FIND_BY_TEXT + (
            "(() => {"
            f" let el; try {{ el = {finder}; }} catch (e) {{ return {{error: 'Invalid selector: ' + e.message}}; }}"
            " if (!el) return null;"
            " el.scrollIntoView({block: 'center', inline: 'center'});"
            " const r = el.getBoundingClientRect();"
            " return {x: r.left + r.width / 2, y: r.top + r.height / 2, w: r.width, h: r.height};"
            "})()"
        )
        box = await self.evaluate(expression)
        if box is None:
            raise BrowserError(f"No element matches {what}")
        if "error" in box:
            raise BrowserError(str(box["error"]))
        if not box["w"] and not box["h"]:
            raise BrowserError(f"The element matching {what} is not visible")
        return {"x": float(box["x"]), "y": float(box["y"])}

    async def click(self, selector: str | None = None, text: str | None = None) -> None:
        point = await self._locate(selector, text)
        await self._settle_after(lambda: self.mouse_click(point["x"], point["y"]))

    async def type(self, selector: str, text: str, *, clear: bool = True, submit: bool = False) -> None:
        expression = (
            "(() => {"
            f" let el; try {{ el = document.querySelector({json.dumps(selector)}); }}"
            " catch (e) { return 'Invalid selector: ' + e.message; }"
            f" if (!el) return 'No element matches selector ' + {json.dumps(repr(selector))};"
            " el.scrollIntoView({block: 'center'}); el.focus();"
            " if (document.activeElement !== el) return 'The element cannot take keyboard input';"
            f" if ({json.dumps(clear)}) {{"
            "   if ('value' in el) { el.value = ''; el.dispatchEvent(new Event('input', {bubbles: true})); }"
            "   else if (el.isContentEditable) { el.textContent = ''; }"
            " }"
            " return '';"
            "})()"
        )
        problem = await self.evaluate(expression)
        if problem:
            raise BrowserError(str(problem))
        if text:
            await self.insert_text(text)
        if submit:
            await self._settle_after(lambda: self.press("Enter"))

    async def read_text(self) -> str:
        value = await self.evaluate("document.body ? document.body.innerText : ''")
        return str(value or "")

    async def accessibility_outline(self) -> str:
        tree = await self._send("Accessibility.getFullAXTree")
        return _outline(tree.get("nodes") or [])

    async def screenshot(
        self, *, full_page: bool = False, fmt: str = "png", quality: int | None = None
    ) -> str:
        params: dict[str, Any] = {"format": fmt}
        if quality is not None:
            params["quality"] = quality
        if full_page:
            metrics = await self._send("Page.getLayoutMetrics")
            size = metrics.get("cssContentSize") or metrics.get("contentSize") or {}
            width = max(1, min(int(size.get("width", VIEWPORT[0])), 4000))
            height = max(1, min(int(size.get("height", VIEWPORT[1])), 10000))
            params["clip"] = {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
            params["captureBeyondViewport"] = True
        shot = await self._send("Page.captureScreenshot", params)
        return str(shot["data"])

    async def cookies(self) -> list[dict[str, Any]]:
        """Every cookie of this page's browser context."""
        result = await self.conn.send("Storage.getCookies", {"browserContextId": self.context_id})
        return list(result.get("cookies") or [])

    # -- raw input (the cookie capture bridge) -----------------------------------------------------

    async def mouse_click(self, x: float, y: float) -> None:
        base = {"x": x, "y": y, "button": "left", "clickCount": 1}
        await self._send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
        await self._send("Input.dispatchMouseEvent", {"type": "mousePressed", **base})
        await self._send("Input.dispatchMouseEvent", {"type": "mouseReleased", **base})

    async def scroll(self, x: float, y: float, delta_y: float) -> None:
        await self._send(
            "Input.dispatchMouseEvent", {"type": "mouseWheel", "x": x, "y": y, "deltaX": 0, "deltaY": delta_y}
        )

    async def insert_text(self, text: str) -> None:
        await self._send("Input.insertText", {"text": text})

    async def press(self, key: str) -> None:
        code, text = _KEYS[key]
        down: dict[str, Any] = {
            "type": "keyDown",
            "key": key,
            "code": key,
            "windowsVirtualKeyCode": code,
            "nativeVirtualKeyCode": code,
        }
        if text:
            down["text"] = text
        await self._send("Input.dispatchKeyEvent", down)
        await self._send(
            "Input.dispatchKeyEvent",
            {
                "type": "keyUp",
                "key": key,
                "code": key,
                "windowsVirtualKeyCode": code,
                "nativeVirtualKeyCode": code,
            },
        )

    async def start_screencast(self, *, quality: int = 60) -> None:
        await self._send(
            "Page.startScreencast",
            {"format": "jpeg", "quality": quality, "maxWidth": VIEWPORT[0], "maxHeight": VIEWPORT[1]},
        )

    async def ack_frame(self, frame_session: int) -> None:
        await self._send("Page.screencastFrameAck", {"sessionId": frame_session})


def _discard(future: asyncio.Future[Any]) -> None:
    """Drop a waiter: cancel it, or retrieve its exception so asyncio does not log it."""
    if not future.done():
        future.cancel()
    elif not future.cancelled():
        future.exception()


async def _wait(future: asyncio.Future[Any], seconds: float, message: str) -> Any:
    try:
        return await asyncio.wait_for(asyncio.shield(future), seconds)
    except TimeoutError:
        raise BrowserError(f"{message} within {seconds:g}s") from None
    except CdpError as exc:
        raise BrowserError(str(exc)) from exc


# Finds the clickable element whose visible text (or value / aria-label) best matches: exact first,
# then contains; case-insensitive; visible elements only.
_FIND_BY_TEXT = """
function __wbFindByText(wanted) {
  const norm = (s) => (s || '').replace(/\\s+/g, ' ').trim().toLowerCase();
  const w = norm(wanted);
  const sel = 'a, button, input[type=submit], input[type=button], [role=button], [role=link], label, summary';
  const items = Array.from(document.querySelectorAll(sel)).filter((el) => {
    const r = el.getBoundingClientRect(); return r.width > 0 || r.height > 0;
  });
  const label = (el) => norm(el.innerText || el.value || el.getAttribute('aria-label'));
  return items.find((el) => label(el) === w) || items.find((el) => label(el).includes(w)) || null;
}
"""

_SKIP_ROLES = {"none", "generic", "InlineTextBox", "LineBreak"}
_MAX_OUTLINE_NODES = 2000


def _outline(nodes: list[dict[str, Any]]) -> str:
    """An indented `role "name"` outline of the accessibility tree, ignored nodes folded away."""
    by_id = {n.get("nodeId"): n for n in nodes}
    roots = [n for n in nodes if not n.get("parentId") or n.get("parentId") not in by_id]
    lines: list[str] = []
    # (node, depth, name of the nearest shown ancestor: text repeating it is left out)
    stack: list[tuple[dict[str, Any], int, str]] = [(n, 0, "") for n in reversed(roots)]
    while stack and len(lines) < _MAX_OUTLINE_NODES:
        node, depth, parent_name = stack.pop()
        role = str((node.get("role") or {}).get("value", ""))
        name = str((node.get("name") or {}).get("value", "")).strip()
        if role == "StaticText":
            if name and name != parent_name:
                lines.append("  " * depth + f'text "{name[:200]}"')
            continue
        child_depth, child_parent = depth, parent_name
        if not node.get("ignored") and role not in _SKIP_ROLES:
            line = "  " * depth + role
            if name:
                line += f' "{name[:200]}"'
            value = (node.get("value") or {}).get("value")
            if value not in (None, ""):
                line += f" value={json.dumps(str(value)[:200])}"
            lines.append(line)
            child_depth, child_parent = depth + 1, name
        for child_id in reversed(node.get("childIds") or []):
            child = by_id.get(child_id)
            if child is not None:
                stack.append((child, child_depth, child_parent))
    return "\n".join(lines)
