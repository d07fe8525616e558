"""guard.py on its own: the path rules as a property (whatever passes can never leave the base URL,
however many times a downstream hop decodes it), the address table, and redirect targets."""

from __future__ import annotations

from urllib.parse import unquote, urljoin, urlsplit

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from workbench.proxy.guard import Refused, check_path, location_inside

BASE = "https://api.example.com/v2"
# Characters that matter for escaping a base path, and their encodings at several depths.
PIECES = [
    "/",
    ".",
    "..",
    "%2e",
    "%2E",
    "%2f",
    "%2F",
    "%25",
    "%252e",
    "%252f",
    "%5c",
    "\\",
    "@",
    "%40",
    ":",
    "a",
    "b",
    "x1",
    ";",
    "%3b",
    "%23",
    "%3f",
    "%00",
    "%0a",
    "%c0%ae",
    "%ef%bc%8e",
    "%u002e",
    "~",
]


def _resolved(raw_rest: str, decodes: int) -> httpx.URL:
    """What a server that decodes `decodes` times would resolve the request to."""
    path = raw_rest
    for _ in range(decodes):
        path = unquote(path)
    return httpx.URL(urljoin(BASE + "/", "." + path if path.startswith("/") else path))


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=8))
def test_any_accepted_path_stays_below_the_base_url(pieces: list[str]) -> None:
    raw_rest = "/" + "".join(pieces)
    try:
        check_path(raw_rest)
    except Refused:
        return
    for decodes in range(4):
        url = _resolved(raw_rest, decodes)
        assert url.host == "api.example.com"
        assert url.path.startswith("/v2/") or url.path == "/v2"
    forwarded = httpx.URL(BASE).copy_with(raw_path=b"/v2" + raw_rest.encode())
    assert forwarded.host == "api.example.com" and forwarded.raw_path.startswith(b"/v2/")


@pytest.mark.parametrize(
    "raw", ["", "/", "/repos/o/r/pulls", "/a/b.json", "/files/docs%2Freadme.md", "/v1/doc:batchUpdate", "/a/"]
)
def test_ordinary_paths_pass(raw: str) -> None:
    check_path(raw)


@pytest.mark.parametrize(
    ("location", "inside"),
    [
        ("https://api.example.com/v2/items?page=2", "/items?page=2"),
        ("https://API.example.com:443/v2/x", "/x"),
        ("https://api.example.com/v2", ""),
        ("https://api.example.com/v20/x", None),
        ("https://api.example.com/other", None),
        ("http://api.example.com/v2/x", None),
        ("https://api.example.com:8443/v2/x", None),
        ("https://evil.test/v2/x", None),
        ("https://api.example.com@evil.test/v2/x", None),
        ("https://user:pw@api.example.com/v2/x", None),
        ("https://api.example.com/v2/%2e%2e/admin", None),
        ("//evil.test/v2/x", None),
        ("relative/path", None),
        ("https://evil.test\\@api.example.com/v2/x", None),
        ("https://api.example.com\\@evil.test/v2/x", None),
        ("/\\evil.test/v2/x", None),
        ("https://api.example.com/v2/x y", None),
        ("https://[api.example.com/v2/x", None),
    ],
)
def test_location_inside_the_base_url(location: str, inside: str | None) -> None:
    assert location_inside(location, BASE) == inside


def test_the_property_strategy_reaches_both_outcomes() -> None:
    """Guard against a vacuous property: some generated paths pass, some are refused."""
    passed = refused = 0
    for raw in ("/a/b", "/%2e%2e/a", "/a%2fb", "/..", "/x1~"):
        try:
            check_path(raw)
            passed += 1
        except Refused:
            refused += 1
    assert passed and refused
    assert urlsplit(BASE).path == "/v2"
