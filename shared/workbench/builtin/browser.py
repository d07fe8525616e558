"""Browser: a headless Chromium the agent drives, one isolated browser context per user.

The handlers reach the engine's browser pool through `ctx.services`, which only built-in tools
receive, so no plugin can ever drive a user's browser. `browser_screenshot` returns the `_mcpImage`
sentinel, which the MCP surface turns into an image content block.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, model_validator

from workbench.builtin import BROWSER
from workbench.tools import tool

if TYPE_CHECKING:
    from workbench.browser.page import BrowserPage
    from workbench.browser.pool import BrowserPool

__all__ = ["MANIFEST", "TOOLS"]

MANIFEST = BROWSER

NO_PAGE = "No page is open. Call browser_navigate first."
# Cloud metadata endpoints: never reachable through the gateway's browser.
_BLOCKED_HOSTS = {"metadata.google.internal", "metadata", "instance-data"}


def _pool(ctx: Any) -> BrowserPool:
    pool: BrowserPool | None = getattr(ctx.services, "browser", None)
    if pool is None:
        raise RuntimeError("The browser is not available on this gateway.")
    return pool


def _existing_page(ctx: Any) -> BrowserPage:
    page = _pool(ctx).user_page(ctx.user_id)
    if page is None:
        raise LookupError(NO_PAGE)
    page.touch()
    _remember(page, ctx)
    return page


def _remember(page: BrowserPage, ctx: Any) -> None:
    """The page keeps what a call put into it: a {{vault:}} value typed (or in a URL) stays redacted
    in everything later calls read from the page, not only in this call's answer."""
    from urllib.parse import quote, quote_plus

    for value in getattr(ctx, "vault_values", ()):
        if value:  # as typed, and as a form or a URL carries it
            page.secrets.update({value, quote(value, safe=""), quote_plus(value)})


def _scrubbed(page: BrowserPage, text: str) -> str:
    for secret in sorted(page.secrets, key=len, reverse=True):  # the longest first: one may hold another
        text = text.replace(secret, "[REDACTED]")
    return text


def _redacted(page: BrowserPage, value: dict[str, Any]) -> dict[str, Any]:
    if not page.secrets:
        return value
    return {key: _scrubbed(page, item) if isinstance(item, str) else item for key, item in value.items()}


def check_url(url: str) -> str:
    """Only http(s) pages; link-local (cloud metadata) addresses are refused."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("Only http:// and https:// URLs can be opened.")
    host = parts.hostname.lower()
    if host in _BLOCKED_HOSTS:
        raise ValueError(f"{host} cannot be opened from the gateway's browser.")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return url.strip()
    if address.is_link_local or str(address) == "fd00:ec2::254":
        raise ValueError(f"{host} cannot be opened from the gateway's browser.")
    return url.strip()


class NavigateArgs(BaseModel):
    url: str = Field(min_length=1, max_length=4096, description="The http(s) URL to open")


class ClickArgs(BaseModel):
    selector: str | None = Field(default=None, max_length=1000, description="CSS selector of the element")
    text: str | None = Field(
        default=None,
        max_length=500,
        description="Visible text of a link or button (when there is no good selector)",
    )

    @model_validator(mode="after")
    def _one_target(self) -> ClickArgs:
        if (self.selector is None) == (self.text is None):
            raise ValueError("give exactly one of selector or text")
        return self


class TypeArgs(BaseModel):
    selector: str = Field(min_length=1, max_length=1000, description="CSS selector of the input to type into")
    text: str = Field(max_length=10_000, description="Text to type")
    clear: bool = Field(default=True, description="Clear the field first")
    submit: bool = Field(default=False, description="Press Enter afterwards (submits most forms)")


class ReadArgs(BaseModel):
    mode: Literal["text", "accessibility"] = Field(
        default="text",
        description="text: the page's visible text; accessibility: an outline of roles and names",
    )
    max_chars: int = Field(
        default=20_000, ge=100, le=100_000, description="Cut the content after this many characters"
    )


class ScreenshotArgs(BaseModel):
    full_page: bool = Field(default=False, description="The whole page instead of the visible viewport")


class NoArgs(BaseModel):
    pass


@tool(
    "browser_navigate",
    "Open a URL in your browser page and wait until it has loaded.",
    NavigateArgs,
    keywords=("go to", "visit", "load", "browse", "url", "link", "web page", "site"),
)
async def browser_navigate(args: NavigateArgs, ctx: Any) -> dict[str, Any]:
    url = check_url(args.url)
    page = await _pool(ctx).page_for_user(ctx.user_id)
    _remember(page, ctx)
    async with page.lock:
        return _redacted(page, await page.navigate(url))


@tool(
    "browser_click",
    "Click an element of the open page, by CSS selector or by its visible text; waits for any navigation.",
    ClickArgs,
    keywords=("press", "tap", "push", "button", "link", "select", "choose", "checkbox"),
)
async def browser_click(args: ClickArgs, ctx: Any) -> dict[str, Any]:
    page = _existing_page(ctx)
    async with page.lock:
        await page.click(args.selector, args.text)
        state = await page.state()
    target = {"selector": args.selector} if args.selector is not None else {"text": args.text}
    return _redacted(page, {"clicked": target, "url": state.url, "title": state.title})


@tool(
    "browser_type",
    "Type text into an input of the open page; optionally press Enter to submit.",
    TypeArgs,
    keywords=("fill in", "enter", "input", "write", "text box", "form", "field", "login", "search box"),
)
async def browser_type(args: TypeArgs, ctx: Any) -> dict[str, Any]:
    page = _existing_page(ctx)
    async with page.lock:
        await page.type(args.selector, args.text, clear=args.clear, submit=args.submit)
        state = await page.state()
    # The text itself is not echoed back: it may be a password.
    return _redacted(
        page, {"typed": len(args.text), "selector": args.selector, "url": state.url, "title": state.title}
    )


@tool(
    "browser_read",
    "Read the open page: its visible text, or an accessibility outline (roles and names of elements).",
    ReadArgs,
    keywords=("get text", "scrape", "extract", "contents", "view", "look at", "see"),
)
async def browser_read(args: ReadArgs, ctx: Any) -> dict[str, Any]:
    page = _existing_page(ctx)
    async with page.lock:
        state = await page.state()
        content = await (page.read_text() if args.mode == "text" else page.accessibility_outline())
    content = _scrubbed(page, content)  # before the cut: no part of a secret at the edge
    truncated = len(content) > args.max_chars
    return _redacted(
        page,
        {
            "url": state.url,
            "title": state.title,
            "mode": args.mode,
            "content": content[: args.max_chars],
            "truncated": truncated,
        },
    )


@tool(
    "browser_screenshot",
    "Take a PNG screenshot of the open page (returned as an image).",
    ScreenshotArgs,
    keywords=("capture", "snapshot", "picture", "image", "png", "screen grab", "snap"),
)
async def browser_screenshot(args: ScreenshotArgs, ctx: Any) -> dict[str, Any]:
    page = _existing_page(ctx)
    async with page.lock:
        data = await page.screenshot(full_page=args.full_page)
        state = await page.state()
    shown = _redacted(page, {"url": state.url, "title": state.title})
    return {"_mcpImage": {"data": data, "mimeType": "image/png"}, **shown}


@tool(
    "browser_close",
    "Close your browser page and forget its cookies and storage.",
    NoArgs,
    keywords=("quit", "exit", "end", "kill", "stop", "reset", "clear cookies", "log out", "session"),
)
async def browser_close(args: NoArgs, ctx: Any) -> dict[str, Any]:
    return {"closed": await _pool(ctx).close_user(ctx.user_id)}


TOOLS = [browser_navigate, browser_click, browser_type, browser_read, browser_screenshot, browser_close]
