"""Helpers for plugin authors: one place for the behaviour every REST tool shares.

    @tool("github_get_repo", "Get a repository's details.", GetRepo)
    async def get_repo(args: GetRepo, ctx: ToolContext) -> Any:
        repo = await api(ctx, "GET", f"/repos/{args.owner}/{args.repo}")
        return pick(repo, "full_name", "description", "default_branch", "html_url")

`api` sends the request through `ctx.http` (credential injected by the engine), drops None
query parameters, and turns an upstream 4xx/5xx into an `UpstreamError` whose message names the
status and the provider's own error text — which the engine returns as the tool's `{error}`.
A provider that answers 200 with an error body (Slack's `{"ok": false}`) is not an HTTP error:
that body comes back from `api` like any other.

Pagination: `next_link` reads an RFC 8288 `Link: <...>; rel="next"` header (GitHub) and
`query_param` pulls a cursor out of a provider's "next" URL (Confluence). `trim` bounds long
text (file contents, page bodies) so one result cannot eat the agent's context.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from workbench.errors import WorkbenchError
from workbench.tools import TokenKind, ToolContext

__all__ = [
    "ToolError",
    "UpstreamError",
    "api",
    "api_response",
    "compact",
    "error_detail",
    "next_link",
    "pick",
    "pick_many",
    "query_param",
    "trim",
]

_MAX_ERROR_TEXT = 500
_LINK_NEXT = re.compile(r'<([^>]*)>\s*;[^,]*\brel="?next"?')


class ToolError(WorkbenchError):
    """A failure the tool explains itself (bad combination of arguments, nothing found); its message
    becomes the execution's `{error}`."""


class UpstreamError(WorkbenchError):
    """An upstream API answered with an error status."""

    def __init__(self, integration: str, status: int, detail: str) -> None:
        super().__init__(
            f"{integration} API error {status}: {detail}" if detail else f"{integration} API error {status}"
        )
        self.status = status
        self.detail = detail


def compact(params: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Drop None values (optional arguments the caller did not give)."""
    if params is None:
        return None
    return {k: v for k, v in params.items() if v is not None}


def _error_text(value: Any) -> str:
    """A provider's error value as one line: Google's {"message"}, Jira's ["..."] and {"field": "..."},
    Confluence's [{"title", "detail"}]."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        for key in ("message", "detail", "title"):
            if isinstance(value.get(key), str) and value[key]:
                return str(value[key])
        return "; ".join(f"{k}: {_error_text(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "; ".join(_error_text(v) for v in value)
    return str(value)


def error_detail(resp: httpx.Response) -> str:
    """A provider's error answer as one line (its own message where it has one)."""
    try:
        body = resp.json()
    except ValueError:
        return resp.text[:_MAX_ERROR_TEXT].strip()
    if isinstance(body, dict):
        for key in ("message", "error_description", "error", "errorMessages", "errors", "detail"):
            value = body.get(key)
            if value:
                return _error_text(value)[:_MAX_ERROR_TEXT]
    return str(body)[:_MAX_ERROR_TEXT]


async def api_response(
    ctx: ToolContext,
    method: str,
    url: str,
    *,
    params: Mapping[str, Any] | None = None,
    json: Any = None,
    data: Any = None,
    content: bytes | str | None = None,
    files: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
    kind: TokenKind = "access",
) -> httpx.Response:
    """The raw response, after mapping error statuses to UpstreamError. `kind="user"` sends the
    connection's user token instead of the app's (Slack's search needs one). `files` sends a
    multipart/form-data body, as httpx takes it: {"file": (name, bytes, content_type)}."""
    resp = await ctx.http_as(kind).request(
        method,
        url,
        params=compact(params),
        json=json,
        data=data,
        content=content,
        files=files,
        headers=headers,
    )
    if resp.status_code >= 400:
        raise UpstreamError(ctx.integration, resp.status_code, error_detail(resp))
    return resp


async def api(
    ctx: ToolContext,
    method: str,
    url: str,
    *,
    params: Mapping[str, Any] | None = None,
    json: Any = None,
    data: Any = None,
    content: bytes | str | None = None,
    files: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
    kind: TokenKind = "access",
) -> Any:
    """Call the integration's API and return the decoded JSON body (None for an empty body)."""
    resp = await api_response(
        ctx,
        method,
        url,
        params=params,
        json=json,
        data=data,
        content=content,
        files=files,
        headers=headers,
        kind=kind,
    )
    if not resp.content:
        return None
    try:
        return resp.json()
    except ValueError:
        return resp.text


def pick(obj: Any, *fields: str) -> dict[str, Any]:
    """The named fields of a mapping; a dotted name reaches into nested objects ("user.login")."""
    out: dict[str, Any] = {}
    if not isinstance(obj, Mapping):
        return out
    for name in fields:
        value: Any = obj
        for part in name.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        out[name.replace(".", "_")] = value
    return out


def pick_many(items: Iterable[Any] | None, *fields: str) -> list[dict[str, Any]]:
    return [pick(item, *fields) for item in items or []]


def trim(text: str | None, limit: int = 20_000) -> str | None:
    """`text` cut to `limit` characters, with a note saying how much was left out."""
    if text is None or len(text) <= limit:
        return text
    return f"{text[:limit]}\n…[truncated {len(text) - limit} of {len(text)} characters]"


def next_link(resp: httpx.Response) -> str | None:
    """The URL of the next page from an RFC 8288 Link header, or None on the last page."""
    match = _LINK_NEXT.search(resp.headers.get("link", ""))
    return match.group(1) if match else None


def query_param(url: str | None, name: str) -> str | None:
    """One query parameter of a URL (absolute or relative), e.g. the cursor of a "next" link."""
    if not url:
        return None
    values = parse_qs(urlsplit(url).query).get(name)
    return values[0] if values else None
