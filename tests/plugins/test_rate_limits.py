"""Provider rate limits, one mechanism for every plugin, against a fake provider that limits.

For each plugin, its first request-exact case runs twice: once answered first with the provider's
limit and a wait that fits (`Retry-After: 0`) — the request is retried once and the case's result
comes back unchanged — and once with a wait that does not fit (120 s) — one request only, and the
answer is an item saying when to retry (`retry_after`). Then each provider's own signals: Slack's
`ratelimited`, GitHub's secondary limits (403 with Retry-After; x-ratelimit-remaining 0 with a reset
time), Salesforce's REQUEST_LIMIT_EXCEEDED."""

from __future__ import annotations

import importlib
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.plugins.catalog_support import Call, Case, Plugin, plugin_packages, run_tool

MODULES = plugin_packages()


def first_case(module: str) -> tuple[Plugin, Case]:
    mod = importlib.import_module(f"tests.plugins.test_{module}")
    case = next(c for c in mod.CASES if c.calls and c.calls[0].status == 200)
    return mod.PLUGIN, case


def limited(call: Call, **headers: str) -> Call:
    return replace(call, status=429, response={"message": "Too many requests"}, headers=headers, check=None)


@pytest.mark.parametrize("module", MODULES)
async def test_a_limit_with_a_wait_that_fits_is_retried_once(tmp_path: Path, module: str) -> None:
    plugin, case = first_case(module)
    calls = [limited(case.calls[0], **{"Retry-After": "0"}), *case.calls]
    out = await run_tool(plugin, tmp_path, case.tool, case.args, calls)
    assert out == {"results": [{"result": case.result}]}


@pytest.mark.parametrize("module", MODULES)
async def test_a_limit_that_does_not_fit_says_when_to_retry(tmp_path: Path, module: str) -> None:
    plugin, case = first_case(module)
    out = await run_tool(
        plugin, tmp_path, case.tool, case.args, [limited(case.calls[0], **{"Retry-After": "120"})]
    )
    (item,) = out["results"]
    assert item["retry_after"] == 120
    assert item["error"].endswith("rate limit reached (HTTP 429). Retry after 120 s."), item


@pytest.mark.parametrize("module", ["github", "notion"])
async def test_limited_twice_answers_the_second_wait(tmp_path: Path, module: str) -> None:
    plugin, case = first_case(module)
    calls = [
        limited(case.calls[0], **{"Retry-After": "0"}),
        limited(case.calls[0], **{"Retry-After": "30"}),
    ]
    out = await run_tool(plugin, tmp_path, case.tool, case.args, calls)
    assert out["results"][0]["retry_after"] == 30


async def test_a_429_without_a_wait_is_not_retried(tmp_path: Path) -> None:
    plugin, case = first_case("hubspot")  # HubSpot's 429 names no wait: the answer uses 10 s
    out = await run_tool(plugin, tmp_path, case.tool, case.args, [limited(case.calls[0])])
    assert out["results"][0]["retry_after"] == 10


async def test_slack_ratelimited_body(tmp_path: Path) -> None:
    plugin, case = first_case("slack")
    body = {"ok": False, "error": "ratelimited"}
    calls = [replace(case.calls[0], status=200, response=body, headers={"Retry-After": "0"}), *case.calls]
    assert await run_tool(plugin, tmp_path, case.tool, case.args, calls) == {
        "results": [{"result": case.result}]
    }
    calls = [replace(case.calls[0], status=429, response=body, headers={"Retry-After": "45"})]
    out = await run_tool(plugin, tmp_path, case.tool, case.args, calls)
    assert out["results"][0] == {
        "error": "slack rate limit reached (ratelimited). Retry after 45 s.",
        "retry_after": 45,
    }


async def test_github_secondary_limits(tmp_path: Path) -> None:
    plugin, case = first_case("github")
    secondary = {"message": "You have exceeded a secondary rate limit."}
    calls = [
        replace(case.calls[0], status=403, response=secondary, headers={"Retry-After": "0"}),
        *case.calls,
    ]
    assert await run_tool(plugin, tmp_path, case.tool, case.args, calls) == {
        "results": [{"result": case.result}]
    }
    calls = [replace(case.calls[0], status=403, response=secondary, headers={"Retry-After": "60"})]
    out = await run_tool(plugin, tmp_path, case.tool, case.args, calls)
    assert out["results"][0]["retry_after"] == 60
    reset = str(int(time.time()) + 300)
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset}
    primary = {"message": "API rate limit exceeded for user ID 1."}
    calls = [replace(case.calls[0], status=403, response=primary, headers=headers)]
    out = await run_tool(plugin, tmp_path, case.tool, case.args, calls)
    assert 295 <= out["results"][0]["retry_after"] <= 301
    # A 403 that is not a limit stays the provider's error.
    calls = [replace(case.calls[0], status=403, response={"message": "Must have admin rights"})]
    out = await run_tool(plugin, tmp_path, case.tool, case.args, calls)
    assert out["results"][0] == {"error": "github API error 403: Must have admin rights"}


async def test_salesforce_request_limit_exceeded(tmp_path: Path) -> None:
    plugin, case = first_case("salesforce")
    body: Any = [{"errorCode": "REQUEST_LIMIT_EXCEEDED", "message": "TotalRequests Limit exceeded."}]
    out = await run_tool(
        plugin, tmp_path, case.tool, case.args, [replace(case.calls[0], status=403, response=body)]
    )
    assert out["results"][0] == {
        "error": "salesforce rate limit reached (TotalRequests Limit exceeded.). Retry after 3600 s.",
        "retry_after": 3600,
    }
