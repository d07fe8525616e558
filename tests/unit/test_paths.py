"""guard/paths: what counts as a dot segment, literal or encoded."""

from __future__ import annotations

import pytest
from workbench.guard.paths import dot_segment, path_has_dot_segment


@pytest.mark.parametrize(
    "value",
    [".", "..", "%2e", "%2E", "%2e%2e", "%2E%2E", ".%2e", "%2e.", "%252e%252e", "a/..", "..\\b", "./x"],
)
def test_dot_segments_literal_and_encoded(value: str) -> None:
    assert dot_segment(value)


@pytest.mark.parametrize("value", ["...", "a.b", ".hidden", "v1.2", "%2e%2e%2e", "", "x", "..a"])
def test_ordinary_values(value: str) -> None:
    assert not dot_segment(value)


def test_paths() -> None:
    assert path_has_dot_segment("/repos/../orgs")
    assert path_has_dot_segment("/repos/%2E%2E/orgs?x=1")
    assert path_has_dot_segment("https://api.example.com/a/./b")
    assert not path_has_dot_segment("/repos/o/r/contents/a.txt?ref=../x")
    assert not path_has_dot_segment("https://api.example.com/v1.2/items")
