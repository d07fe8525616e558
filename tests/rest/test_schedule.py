"""functions/rest/app.py as Lambda runs it: an EventBridge Scheduler payload (direct invocation, no
requestContext) runs a tool and is audited; API Gateway events on the same handler stay HTTP."""

from __future__ import annotations

import importlib.util
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from workbench.composition import Gateway, build_gateway
from workbench.errors import JobFailed
from workbench.runtime.lambda_handler import reset_instance
from workbench.settings import Settings

from tests.support.processes import REPO

EMAIL = "nightly@example.com"


def _load_entry() -> ModuleType:
    path = REPO / "functions" / "rest" / "app.py"
    spec = importlib.util.spec_from_file_location("functions_rest_app_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def lambda_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Gateway]:
    """SQLite + local key in a temp dir, shared by the handler's gateway and the test's view of it."""
    monkeypatch.setenv("WORKBENCH_STORE", "sqlite")
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("WORKBENCH_PUBLIC_URL", "https://wb.example.com")
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "1")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "WorkbenchTest")
    reset_instance()
    yield build_gateway(Settings.from_env())
    reset_instance()


@pytest.fixture
def handler(lambda_env: Gateway) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    entry: Callable[[dict[str, Any], Any], dict[str, Any]] = _load_entry().handler
    return entry


def _schedule(**over: Any) -> dict[str, Any]:
    return {
        "source": "workbench.schedule",
        "user": EMAIL,
        "integration": "jots",
        "executions": [{"tool": "create_jot", "args": {"title": "Nightly export done"}}, {"tool": "nope"}],
        **over,
    }


def test_a_scheduler_event_runs_the_tools_and_is_audited(
    lambda_env: Gateway, handler: Callable[[dict[str, Any], Any], dict[str, Any]]
) -> None:
    user = lambda_env.stores.users.get_or_create(EMAIL)

    # One execution failed: the invocation fails (Lambda retries it, then the dead-letter queue).
    with pytest.raises(JobFailed) as failed:
        handler(_schedule(), None)
    assert str(failed.value) == (
        "Scheduled job failed (jots as nightly@example.com): 1 of 2 failed; first error: Tool not found"
    )
    out = failed.value.result
    assert out["results"][0]["result"]["title"] == "Nightly export done"
    assert out["results"][1] == {"error": "Tool not found"}
    fresh = build_gateway(Settings.from_env())  # read back what the handler's instance stored
    assert [j.title for j in fresh.stores.jots.list_for(user.id)] == ["Nightly export done"]
    events = fresh.stores.audit.list_for(user.id)
    executes = sorted((e["tool"], e["success"], e["via"]) for e in events if e["action"] == "EXECUTE")
    assert executes == [("create_jot", True, "schedule"), ("nope", False, "schedule")]
    [summary] = [e for e in events if e["action"] == "SCHEDULE"]
    assert summary["integration"] == "jots"
    assert (summary["success"], summary["executions"], summary["failures"], summary["error"]) == (
        False,
        2,
        1,
        "Tool not found",
    )


@pytest.mark.parametrize(
    ("event", "error"),
    [
        (_schedule(user="ghost@example.com"), "Unknown user: ghost@example.com"),
        (_schedule(source="aws.events"), "Unsupported event: expected source 'workbench.schedule'"),
        (_schedule(integration=None), "A scheduled job needs 'user' (an email) and 'integration'"),
        (_schedule(integration="nope"), "Unknown integration: nope"),
    ],
)
def test_bad_jobs_are_rejected_without_running_anything(
    lambda_env: Gateway,
    handler: Callable[[dict[str, Any], Any], dict[str, Any]],
    event: dict[str, Any],
    error: str,
) -> None:
    user = lambda_env.stores.users.get_or_create(EMAIL)
    with pytest.raises(JobFailed, match="1 of 1 failed; first error: ") as failed:
        handler(event, None)
    assert failed.value.result == {"error": error}
    fresh = build_gateway(Settings.from_env())
    assert fresh.stores.jots.list_for(user.id) == []
    assert not [e for e in fresh.stores.audit.list_for(user.id) if e["action"] == "EXECUTE"]


def test_compose_is_refused_for_scheduled_jobs_too(
    lambda_env: Gateway, handler: Callable[[dict[str, Any], Any], dict[str, Any]]
) -> None:
    user = lambda_env.stores.users.get_or_create(EMAIL)
    with pytest.raises(JobFailed) as failed:
        handler(_schedule(compose=True), None)
    out = failed.value.result
    assert out["error"].startswith("compose and return are MCP-only")
    fresh = build_gateway(Settings.from_env())
    [summary] = [e for e in fresh.stores.audit.list_for(user.id) if e["action"] == "SCHEDULE"]
    assert summary["success"] is False and summary["error"] == out["error"]


def _http_event(body: dict[str, Any], key: str | None) -> dict[str, Any]:
    headers = {"content-type": "application/json"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": "/rest/jots",
        "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "api",
            "domainName": "wb.example.com",
            "domainPrefix": "wb",
            "http": {
                "method": "POST",
                "path": "/rest/jots",
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.9",
                "userAgent": "curl/8",
            },
            "requestId": "req-1",
            "routeKey": "$default",
            "stage": "$default",
            "time": "02/Dec/2026:14:00:00 +0000",
            "timeEpoch": int(time.time() * 1000),  # when API Gateway received it: now
        },
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


def test_api_gateway_events_on_the_same_handler_are_http(
    lambda_env: Gateway, handler: Callable[[dict[str, Any], Any], dict[str, Any]]
) -> None:
    user = lambda_env.stores.users.get_or_create(EMAIL)
    key = lambda_env.auth.mint_key(user)
    denied = handler(_http_event({"tool": "list_jots"}, None), None)
    assert denied["statusCode"] == 401
    assert json.loads(denied["body"]) == {"error": "Unauthorized"}
    ok = handler(_http_event({"tool": "create_jot", "args": {"title": "via http"}}, key), None)
    assert ok["statusCode"] == 200
    assert json.loads(ok["body"])["result"]["title"] == "via http"


def _template_schedule_input() -> dict[str, Any]:
    """The example schedule's Input from template.yaml, with ${ScheduleUser} filled in."""
    lines = (REPO / "template.yaml").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "Input: !Sub |")
    indent = len(lines[start + 1]) - len(lines[start + 1].lstrip())
    block = []
    for line in lines[start + 1 :]:
        if line.strip() and len(line) - len(line.lstrip()) < indent:
            break
        block.append(line)
    parsed: dict[str, Any] = json.loads("\n".join(block).replace("${ScheduleUser}", EMAIL))
    return parsed


def test_the_template_example_schedule_is_a_valid_job(lambda_env: Gateway) -> None:
    event = _template_schedule_input()
    assert event["source"] == "workbench.schedule"
    [execution] = event["executions"]
    tool = lambda_env.registry.find(execution["tool"])
    assert tool is not None and tool.integration == event["integration"]
    assert tool.input_model is not None
    tool.input_model.model_validate(execution["args"])


def test_a_job_that_succeeds_returns_its_results(
    lambda_env: Gateway, handler: Callable[[dict[str, Any], Any], dict[str, Any]]
) -> None:
    lambda_env.stores.users.get_or_create(EMAIL)
    out = handler(_schedule(executions=[{"tool": "create_jot", "args": {"title": "ok"}}]), None)
    assert out["results"][0]["result"]["title"] == "ok"
    single = {k: v for k, v in _schedule().items() if k != "executions"} | {"tool": "list_jots", "args": {}}
    assert [j["title"] for j in handler(single, None)["result"]["jots"]] == ["ok"]
