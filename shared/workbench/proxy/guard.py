"""What the curl proxy refuses before any byte leaves: paths that could escape the integration's
base URL, destinations outside its allowed hosts, and addresses that are not on the public internet.

Every check works on the *fully decoded* form of what the caller sent (percent-decoding repeated
until it no longer changes, then Unicode NFKC), because any hop downstream — a load balancer, the
upstream's framework — may decode once more. The request itself is forwarded in the form the caller
sent it, which is safe once its every decoding is.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Iterable
from urllib.parse import unquote_to_bytes, urlsplit

from workbench.errors import WorkbenchError

__all__ = [
    "METADATA_ADDRESSES",
    "Refused",
    "allowed_hosts",
    "check_address",
    "check_path",
    "fully_decode",
    "location_inside",
]

_MAX_DECODE_ROUNDS = 4
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_PERCENT_U = re.compile(r"%u[0-9A-Fa-f]{4}")
# Characters that end or re-route a URL, or that some stack treats as a separator.
_FORBIDDEN_CHARS = {"\\": "backslash", "@": "'@'", "#": "'#'", "?": "an encoded '?'"}

# Cloud metadata endpoints. All but the Alibaba one are also non-global, but they are listed so
# the refusal holds even if a future Python changes what `is_global` covers.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "100.100.100.200", "192.0.0.192", "fd00:ec2::254")
)


class Refused(WorkbenchError):
    """The proxy will not send this request. `status` is the HTTP status the caller gets."""

    def __init__(self, message: str, status: int = 403) -> None:
        super().__init__(message)
        self.status = status


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


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in ipaddress.IPv6Network("64:ff9b::/96"):  # NAT64
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def check_address(address: str, *, allow_loopback: bool = False) -> None:
    """Refuse anything that is not a public unicast address (loopback only if explicitly allowed)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError as exc:
        raise Refused(f"upstream resolved to an unusable address ({address})", 502) from exc
    candidates: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_v4(ip)
        if inner is not None:
            candidates.append(inner)
    for cand in candidates:
        if cand in METADATA_ADDRESSES:
            raise Refused("upstream resolves to a cloud metadata address", 403)
        if cand.is_loopback and allow_loopback:
            continue
        if not cand.is_global or cand.is_multicast:
            raise Refused("upstream resolves to a private, loopback or link-local address", 403)


def location_inside(location: str, base_url: str) -> str | None:
    """For a redirect Location (absolute, or relative to the base URL's origin), the path below the
    base URL it points to, or None when it points anywhere else."""
    base = urlsplit(base_url)
    target = urlsplit(location)
    if target.scheme or target.netloc:
        if (
            (target.scheme.lower(), (target.hostname or "").lower(), target.port or _port(target.scheme))
            != (
                base.scheme.lower(),
                (base.hostname or "").lower(),
                base.port or _port(base.scheme),
            )
            or target.username
            or target.password
        ):
            return None
    elif not location.startswith("/"):
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
