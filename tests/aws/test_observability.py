"""What a Lambda function tells CloudWatch and X-Ray: EMF once per request with bounded dimensions,
and X-Ray subsegments sent to the daemon for sampled requests only."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from workbench.observability.tracing import Span, TraceHeader, _send
from workbench.settings import Settings

from tests.support.apigw import http_api_event, load_entry, response_json

TRACE = "Root=1-67891233-abcdef012345678912345678;Parent=53995c3f42cd8ad8;Sampled=1"


def _key(settings: Settings) -> str:
    from workbench.composition import build_gateway

    gw = build_gateway(settings)
    return gw.auth.mint_key(gw.stores.users.get_or_create("ada@example.com"), label="obs")


def _execute(handler: Any, key: str, executions: list[dict[str, Any]]) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "execute_tools", "arguments": {"executions": executions}},
    }
    event = http_api_event(
        "POST",
        "/mcp",
        route_key="ANY /mcp",
        body=json.dumps(body),
        headers={
            "authorization": f"Bearer {key}",
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-06-18",
        },
    )
    answer = handler(event, None)
    assert answer["statusCode"] == 200, answer
    return json.loads(response_json(answer)["result"]["content"][0]["text"])  # type: ignore[no-any-return]


@pytest.fixture
def fresh_observability(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The logging/metrics objects are made once per process: give them this test's daemon address
    (read from the environment when they were made) and no leftover metric records."""
    from workbench.runtime.lambda_handler import _observability

    obs = _observability()
    monkeypatch.setattr(obs, "xray_daemon", os.environ.get("AWS_XRAY_DAEMON_ADDRESS"))
    obs.flush_metrics()
    yield
    obs.flush_metrics()


@pytest.fixture
def daemon() -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(2.0)
    yield sock
    sock.close()


def _datagrams(sock: socket.socket) -> list[dict[str, Any]]:
    docs = []
    sock.settimeout(0.5)
    try:
        while True:
            raw = sock.recv(65535)
            header, _, body = raw.partition(b"\n")
            assert json.loads(header) == {"format": "json", "version": 1}
            docs.append(json.loads(body))
    except TimeoutError:
        return docs


def test_a_batch_is_one_emf_record_per_integration_and_outcome_with_tools_as_a_property(
    lambda_env: Settings, fresh_observability: None, capsys: pytest.CaptureFixture[str]
) -> None:
    key = _key(lambda_env)
    handler = load_entry("mcp").handler
    capsys.readouterr()
    out = _execute(
        handler,
        key,
        [
            {"tool": "create_jot", "args": {"title": "a", "body": "x"}},
            {"tool": "create_jot", "args": {"title": "b", "body": "y"}},
            {"tool": "list_jots", "args": {}},
            {"tool": "create_jot", "args": {"title": 7}},  # invalid: never ran, so no metric
        ],
    )
    assert [("error" in r) for r in out["results"]] == [False, False, False, True]
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    emf = [line for line in lines if "_aws" in line]
    assert len(emf) == 1, emf
    record = emf[0]
    directive = record["_aws"]["CloudWatchMetrics"][0]
    assert directive["Namespace"] == "Workbench"
    assert directive["Dimensions"] == [["integration", "success"]]
    assert {m["Name"]: m["Unit"] for m in directive["Metrics"]} == {
        "workbench_tool_executions_total": "Count",
        "workbench_tool_execution_duration_seconds": "Seconds",
    }
    assert (record["integration"], record["success"]) == ("jots", "true")
    assert record["workbench_tool_executions_total"] == 3
    assert len(record["workbench_tool_execution_duration_seconds"]) == 3
    assert sorted(record["tools"]) == ["create_jot", "create_jot", "list_jots"]
    assert "tool" not in record  # never a dimension


def test_user_named_integrations_share_one_dimension_value(fresh_observability: None, capsys: Any) -> None:
    from workbench.runtime.lambda_handler import _observability

    obs = _observability()
    obs.known_integrations(frozenset({"github"}))
    labels = {"integration": "acme-internal-crm", "tool": "acme_find", "success": "false"}
    obs.record_metric("workbench_tool_executions_total", labels, 1.0)
    obs.record_metric("workbench_tool_executions_total", {**labels, "integration": "github"}, 1.0)
    obs.flush_metrics()
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(r["integration"] for r in records) == ["custom-app", "github"]
    obs.flush_metrics()  # nothing pending: nothing written
    assert capsys.readouterr().out == ""


def test_a_sampled_request_sends_its_subsegment_with_the_aws_calls_to_the_daemon(
    lambda_env: Settings,
    fresh_observability: None,
    daemon: socket.socket,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from workbench.runtime.lambda_handler import _observability

    monkeypatch.setattr(_observability(), "xray_daemon", f"127.0.0.1:{daemon.getsockname()[1]}")
    key = _key(lambda_env)
    handler = load_entry("mcp").handler

    monkeypatch.setenv("_X_AMZN_TRACE_ID", TRACE)
    _execute(handler, key, [{"tool": "list_jots", "args": {}}])
    docs = _datagrams(daemon)
    assert len(docs) == 1
    doc = docs[0]
    assert doc["type"] == "subsegment" and doc["name"] == "## mcp"
    assert doc["trace_id"] == "1-67891233-abcdef012345678912345678" and doc["parent_id"] == "53995c3f42cd8ad8"
    assert doc["annotations"] == {"ColdStart": True, "surface": "mcp"}
    assert doc["start_time"] <= doc["end_time"]
    calls = [
        (s["name"], s["namespace"], s["aws"]["operation"], table)
        for s in doc["subsegments"]
        for table in s["aws"].get("table_names", [s["aws"].get("table_name")])
    ]
    tables = {name: lambda_env.table_name(name) for name in ("api_keys", "audit", "jots")}
    assert ("DynamoDB", "aws", "GetItem", tables["api_keys"]) in calls
    assert ("DynamoDB", "aws", "Query", tables["jots"]) in calls
    assert any(op in ("PutItem", "BatchWriteItem") and table == tables["audit"] for _, _, op, table in calls)
    assert len({s["id"] for s in doc["subsegments"]} | {doc["id"]}) == len(calls) + 1

    # Not sampled by X-Ray: nothing is sent.
    monkeypatch.setenv("_X_AMZN_TRACE_ID", TRACE.replace("Sampled=1", "Sampled=0"))
    _execute(handler, key, [{"tool": "list_jots", "args": {}}])
    assert _datagrams(daemon) == []


def test_a_subsegment_too_big_for_one_datagram_is_sent_child_by_child(daemon: socket.socket) -> None:
    root = Span("## mcp")
    # 40 children of ~2 KB: over one datagram's limit together, few enough for the socket's buffer.
    root.children = [
        Span("DynamoDB", "aws", aws={"operation": "GetItem", "table_name": "t" * 2000}) for _ in range(40)
    ]
    trace = TraceHeader.parse(TRACE)
    assert trace is not None
    _send(root, trace, f"127.0.0.1:{daemon.getsockname()[1]}")
    docs = _datagrams(daemon)
    assert len(docs) == 41
    assert "subsegments" not in docs[0] and docs[0]["id"] == root.id
    assert all(d["parent_id"] == root.id and d["trace_id"] == trace.root for d in docs[1:])


def test_trace_headers() -> None:
    assert TraceHeader.parse(None) is None
    assert TraceHeader.parse("Root=1-a-b;Sampled=1") is None  # no parent to attach to
    assert TraceHeader.parse("Root=1-a-b;Parent=p;Sampled=?") is None
    assert TraceHeader.parse("Root=1-a-b; Parent=p; Sampled=1; Lineage=x:1") == TraceHeader("1-a-b", "p")


def test_alarmed_counters_are_also_published_without_dimensions(
    fresh_observability: None, capsys: Any
) -> None:
    """The stack's alarms watch one series per stack (the namespace is the stack's): audit rows
    deferred or dropped, and token refresh failures, which also keep their per-integration series."""
    from workbench.runtime.lambda_handler import _observability

    obs = _observability()
    obs.known_integrations(frozenset({"github"}))
    obs.record_metric("workbench_audit_rows_deferred_total", {}, 3.0)
    obs.record_metric("workbench_audit_rows_deferred_total", {}, 2.0)
    obs.record_metric("workbench_audit_rows_dropped_total", {}, 1.0)
    obs.record_metric(
        "workbench_token_refresh_failures_total", {"integration": "github", "success": "false"}, 1.0
    )
    obs.flush_metrics()
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    (audit,) = [r for r in records if "workbench_audit_rows_deferred_total" in r]
    assert audit["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [[]]
    assert (audit["workbench_audit_rows_deferred_total"], audit["workbench_audit_rows_dropped_total"]) == (
        5.0,
        1.0,
    )
    assert "integration" not in audit
    (refresh,) = [r for r in records if "workbench_token_refresh_failures_total" in r]
    assert refresh["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["integration", "success"], []]
    assert (refresh["integration"], refresh["workbench_token_refresh_failures_total"]) == ("github", 1.0)
