"""Plugin tools build paths from arguments (`/repos/{owner}/{repo}`): an argument that is a dot
segment, literal or encoded, is refused before any request, for every plugin (one check, in the
client the engine hands to tools)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.plugins.catalog_support import Plugin, run_error

REFUSED = "Invalid arguments: '.' and '..' (or an encoding of them) cannot be used as a path segment"


@pytest.mark.parametrize("owner", ["..", ".", "%2e%2e", "%2E%2E", ".%2E", "%252e%252e"])
async def test_github_owner_cannot_climb(tmp_path: Path, owner: str) -> None:
    await run_error(Plugin("github"), tmp_path, "github_get_repo", {"owner": owner, "repo": "x"}, [], REFUSED)


async def test_jira_issue_key_cannot_climb(tmp_path: Path) -> None:
    args = {"issueKey": "../../myself", "cloudId": "c1"}
    await run_error(Plugin("atlassian-jira"), tmp_path, "jira_get_issue", args, [], REFUSED)
