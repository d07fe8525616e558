"""Dot segments: a user-supplied value must never move a request to another path.

A value placed in a URL path (a workspace code, an OpenAPI path parameter, a plugin argument in
`/repos/{owner}/{repo}`) that is `.` or `..` — or an encoding of one (`%2e`, `%2E%2E`, `.%2e`,
`%252e%252e` for a server that decodes twice) — is removed by URL normalisation (RFC 3986 §5.2.4,
which httpx, browsers and most servers apply), so `/t/../mcp` becomes `/mcp` and an OpenAPI call to
`/items/{id}` with `id=..` reaches the parent path. One check, used everywhere a value becomes part
of a path: `dot_segment(value)` for one value, `path_has_dot_segment(path)` for a path a plugin built.
"""

from __future__ import annotations

from urllib.parse import unquote

__all__ = ["DOT_SEGMENT_MESSAGE", "dot_segment", "path_has_dot_segment"]

DOT_SEGMENT_MESSAGE = "'.' and '..' (or an encoding of them) cannot be used as a path segment"
_DOTS = frozenset({".", ".."})
_DECODE_ROUNDS = 4  # %25 nested deeper than this is decoded by nobody


def _decoded(value: str) -> str:
    for _ in range(_DECODE_ROUNDS):
        once = unquote(value)
        if once == value:
            break
        value = once
    return value


def _segments(text: str) -> list[str]:
    return text.replace("\\", "/").split("/")


def dot_segment(value: str) -> bool:
    """Whether `value`, placed in a path (encoded or not), would stand for `.` or `..` there: the value
    itself or any `/`- or `\\`-separated part of it, once percent-decoded (repeatedly)."""
    if "." not in value and "%" not in value:
        return False  # the common case: no dot, no encoding
    return any(part in _DOTS for part in _segments(_decoded(value)))


def path_has_dot_segment(path: str) -> bool:
    """Whether a URL path (or a URL: its query and fragment are left out) has a dot segment, literal
    or encoded, in any of its segments."""
    cut = min((i for i in (path.find("?"), path.find("#")) if i >= 0), default=len(path))
    path = path[:cut]
    if "://" in path:  # an absolute URL: only its path counts
        path = "/" + path.split("://", 1)[1].partition("/")[2]
    return any(dot_segment(segment) for segment in path.split("/"))
