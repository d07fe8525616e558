"""What the curl proxy refuses before any byte leaves: paths that could escape the integration's
base URL and redirects that leave it. Addresses are the egress module's business (workbench.guard.egress).

Every check works on the *fully decoded* form of what the caller sent (percent-decoding repeated
until it no longer changes, then Unicode NFKC), because any hop downstream — a load balancer, the
upstream's framework — may decode once more. The request itself is forwarded in the form the caller
sent it, which is safe once its every decoding is.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache
from urllib.parse import unquote_to_bytes, urlsplit

from workbench.guard.egress import EgressRefused

__all__ = [
    "Refused",
    "allowed_hosts",
    "check_path",
    "fully_decode",
    "location_inside",
]

_MAX_DECODE_ROUNDS = 4
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_PERCENT_U = re.compile(r"%u[0-9A-Fa-f]{4}")
# Characters that end or re-route a URL, or that some stack treats as a separator.
_FORBIDDEN_CHARS = {"\\": "backslash", "@": "'@'", "#": "'#'", "?": "an encoded '?'"}

# The proxy will not send this request; `status` is the HTTP status the caller gets. One type
# with the egress module's refusals, so a path refusal and an address refusal are handled alike.
Refused = EgressRefused


def fully_decode(raw: str) -> str:
    """Percent-decode until stable; refuse what keeps decoding or is not UTF-8."""
    current = raw
    for _ in range(_MAX_DECODE_ROUNDS):
        try:
            decoded = unquote_to_bytes(current).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Refused("path is not valid UTF-8 once percent-decoded", 400) from exc
        if decoded == current:
            return current
        current = decoded
    raise Refused("path is percent-encoded too many times", 400)


def check_path(raw_rest: str) -> None:
    """`raw_rest` is what follows /c/<integration> in the request target, still encoded ("" or "/...")."""
    if len(raw_rest) <= _REMEMBERED_LENGTH:
        _check_short_path(raw_rest)  # the same checks; a path that passed is remembered
    else:
        _check_path(raw_rest)


# Callers repeat their paths: one that passed is remembered (a pure function of the string; a
# refusal raises, and is never remembered). Bounded: 1,024 paths of at most 256 characters.
_REMEMBERED_LENGTH = 256


@lru_cache(maxsize=1024)
def _check_short_path(raw_rest: str) -> None:
    _check_path(raw_rest)


def _check_path(raw_rest: str) -> None:
    if raw_rest and not raw_rest.startswith("/"):
        raise Refused("path must start with '/'", 400)
    if any(ord(c) < 0x21 or ord(c) > 0x7E for c in raw_rest):
        raise Refused("path contains raw control, space or non-ASCII characters", 400)
    decoded = fully_decode(raw_rest)
    for form in (decoded, unicodedata.normalize("NFKC", decoded)):
        _check_decoded(form)


def _check_decoded(path: str) -> None:
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") or c.isspace() for c in path):
        raise Refused("path contains control or whitespace characters", 400)
    for char, name in _FORBIDDEN_CHARS.items():
        if char in path:
            raise Refused(f"path contains {name}", 400)
    if _PERCENT_U.search(path):  # IIS-style %uXXXX, which some servers decode
        raise Refused("path contains a non-standard %u escape", 400)
    if "//" in path:
        raise Refused("path contains an empty segment ('//')", 400)
    segments = path.split("/")[1:]
    # `..;` is a dot segment to Tomcat-style servers (path parameters are dropped before matching).
    if any(seg.split(";", 1)[0] in (".", "..") for seg in segments):
        raise Refused("path contains a '.' or '..' segment", 400)
    if segments and _SCHEME.match(segments[0]):
        raise Refused("path looks like an absolute URL", 400)


def allowed_hosts(base_url: str, extra: Iterable[str]) -> frozenset[str]:
    host = urlsplit(base_url).hostname or ""
    return frozenset(h.lower().rstrip(".") for h in (host, *extra) if h)


def location_inside(location: str, base_url: str) -> str | None:
    """For a redirect Location (absolute, or relative to the base URL's origin), the path below the
    base URL it points to, or None when it points anywhere else (or cannot be read unambiguously:
    a backslash, whitespace or control character, or user info, is read differently by browsers)."""
    if any(ord(c) <= 0x20 or ord(c) == 0x7F or c == "\\" for c in location):
        return None
    base = urlsplit(base_url)
    try:
        target = urlsplit(location)
        target_port = target.port
    except ValueError:
        return None
    if target.scheme or target.netloc:
        if (target.scheme.lower(), (target.hostname or "").lower(), target_port or _port(target.scheme)) != (
            base.scheme.lower(),
            (base.hostname or "").lower(),
            base.port or _port(base.scheme),
        ) or "@" in target.netloc:
            return None
    elif not location.startswith("/") or location.startswith("//"):
        return None
    base_path = base.path.rstrip("/")
    if target.path != base_path and not target.path.startswith(base_path + "/"):
        return None
    rest = target.path[len(base_path) :]
    try:
        check_path(rest)
    except Refused:
        return None
    return rest + (f"?{target.query}" if target.query else "")


def _port(scheme: str) -> int | None:
    return {"http": 80, "https": 443}.get(scheme.lower())
