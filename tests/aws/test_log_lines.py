"""The shape of every log line, locally and on Lambda, and the X-Ray subsegment a request sends.

One formatter (workbench.observability.logs.JsonLines) writes the lines of `workbench serve` and of
the Lambda functions. An engine event's fields are top-level keys and `location` is the line that
logged it, so CloudWatch Logs Insights can filter on them. The Powertools Logger (the design card's
library, replaced for the cold start) runs beside it as the oracle: the same record through both
formatters, the same fields out.
"""

from __future__ import annotations

import ast
import inspect
import json
import logging
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from workbench.observability import log_error, log_event
from workbench.observability.logs import JsonLines, logger
from workbench.observability.tracing import Span, request_span, span
from workbench.settings import Settings

from tests.support.apigw import http_api_event, load_entry, response_json
from tests.support.processes import REPO

TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
TRACE = "Root=1-67891233-abcdef012345678912345678;Parent=53995c3f42cd8ad8;Sampled=1"


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def records() -> Iterator[list[logging.LogRecord]]:
    handler = _Records()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler.records
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _here() -> int:
    frame = inspect.currentframe()
    assert frame is not None and frame.f_back is not None
    return frame.f_back.f_lineno


def test_an_engine_event_is_one_line_with_its_fields_at_the_top_and_the_callers_location(
    records: list[logging.LogRecord],
) -> None:
    line = _here() + 1
    log_event("tool_execution", user="usr_1", tool="list_jots", success=True, duration_ms=1.5, error=None)
    out = json.loads(JsonLines("workbench").format(records[-1]))
    assert list(out) == [
        "level",
        "location",
        "message",
        "timestamp",
        "service",
        "event",
        "user",
        "tool",
        "success",
        "duration_ms",
        "error",
    ]
    assert out == {
        "level": "INFO",
        "location": f"test_an_engine_event_is_one_line_with_its_fields_at_the_top_and_the_callers_location:{line}",
        "message": "tool_execution",
        "timestamp": out["timestamp"],
        "service": "workbench",
        "event": "tool_execution",
        "user": "usr_1",
        "tool": "list_jots",
        "success": True,
        "duration_ms": 1.5,
        "error": None,
    }
    assert TIMESTAMP.fullmatch(out["timestamp"])


def test_an_error_event_and_an_exception_line(records: list[logging.LogRecord]) -> None:
    formatter = JsonLines("svc")
    formatter.correlation_id = "req-1"
    log_error("audit_write_failed", count=2, level="not a field: the record's level is")
    out = json.loads(formatter.format(records[-1]))
    assert (out["level"], out["message"], out["event"], out["count"]) == (
        "ERROR",
        "audit_write_failed",
        "audit_write_failed",
        2,
    )
    assert (out["service"], out["correlation_id"]) == ("svc", "req-1")
    try:
        raise KeyError("k")
    except KeyError:
        logger.exception("request failed", extra={"status": 500})
    out = json.loads(formatter.format(records[-1]))
    assert out["status"] == 500 and out["exception_name"] == "KeyError"
    assert out["exception"].startswith("Traceback") and "KeyError: 'k'" in out["exception"]


def test_scrubbed_fields_never_reach_a_handler(records: list[logging.LogRecord]) -> None:
    secret = 'sk-"quoted"-secret'

    def scrub(text: str) -> str:
        return text.replace(secret, "[REDACTED]")

    log_event("tool_execution", scrub=scrub, error=f"upstream said {secret}", nested={secret: [secret]})
    record = records[-1]
    assert secret not in repr(vars(record))  # not in any attribute another handler could read
    out = json.loads(JsonLines().format(record))
    assert out["error"] == "upstream said [REDACTED]" and out["nested"] == {"[REDACTED]": ["[REDACTED]"]}


def _powertools(record: logging.LogRecord) -> dict[str, Any]:
    """The Powertools Logger's line for `record` (an engine event's fields as its `extra=` keys)."""
    from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

    fields = getattr(record, "_fields", None) or {}
    plain = logging.makeLogRecord({k: v for k, v in vars(record).items() if k != "_fields"} | fields)
    formatter = LambdaPowertoolsFormatter(
        service="workbench", use_rfc3339=True, utc=True, serialize_stacktrace=False
    )
    out: dict[str, Any] = json.loads(formatter.format(plain))
    return out


@pytest.mark.parametrize("kind", ["event", "extra", "exception"])
def test_the_powertools_logger_writes_the_same_fields(
    kind: str, records: list[logging.LogRecord], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("_X_AMZN_TRACE_ID", raising=False)
    if kind == "event":
        log_event("proxy_request", user="usr_1", integration="github", status=200, path="/user", error=None)
    elif kind == "extra":
        logger.info(
            "request", extra={"surface": "mcp", "status": 200, "cold_start": True, "duration_ms": 3.2}
        )
    else:
        try:
            1 / 0  # noqa: B018
        except ZeroDivisionError:
            logger.exception("request failed", extra={"status": 500})
    ours = json.loads(JsonLines("workbench").format(records[-1]))
    theirs = _powertools(records[-1])
    # Timestamps: the same instant (ours ends in Z, Powertools' in +00:00).
    assert datetime.fromisoformat(ours.pop("timestamp").replace("Z", "+00:00")) == datetime.fromisoformat(
        theirs.pop("timestamp")
    )
    # Powertools drops null fields; ours keeps them (`error: null` says the call succeeded).
    assert ours.pop("error", None) is None
    assert ours == theirs


def _executor_log_site() -> str:
    """`function:line` of the executor's `log_event("tool_execution", ...)` call."""
    path = REPO / "shared" / "workbench" / "engine" / "executor.py"
    tree = ast.parse(path.read_text())
    for func in ast.walk(tree):
        if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(func):
                if (
                    isinstance(node, ast.Call)
                    and getattr(node.func, "id", None) == "log_event"
                    and isinstance(node.args[0], ast.Constant)
                    and node.args[0].value == "tool_execution"
                ):
                    return f"{func.name}:{node.lineno}"
    raise AssertionError("no tool_execution log_event in the executor")


def test_locally_workbench_serve_writes_the_same_line_on_stderr() -> None:
    code = (
        "from workbench.observability import configure_logging, log_event\n"
        "configure_logging()\n"
        "log_event('proxy_request', user='usr_1', status=200)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stderr)
    assert TIMESTAMP.fullmatch(out.pop("timestamp"))
    assert out == {
        "level": "INFO",
        "location": "<module>:3",
        "message": "proxy_request",
        "service": "workbench",
        "event": "proxy_request",
        "user": "usr_1",
        "status": 200,
    }


def test_on_lambda_an_execute_tools_writes_its_fields_at_the_top_with_the_executors_location(
    lambda_env: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    from workbench.composition import build_gateway

    gw = build_gateway(lambda_env)
    key = gw.auth.mint_key(gw.stores.users.get_or_create("ada@example.com"), label="lines")
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "execute_tools", "arguments": {"executions": [{"tool": "list_jots", "args": {}}]}},
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
    capsys.readouterr()
    answer = load_entry("mcp").handler(event, None)
    assert answer["statusCode"] == 200 and "error" not in response_json(answer)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    executions = [line for line in lines if line.get("event") == "tool_execution"]
    assert len(executions) == 1, lines
    line = executions[0]
    correlation = event["requestContext"]["requestId"]
    assert TIMESTAMP.fullmatch(line.pop("timestamp"))
    assert isinstance(line.pop("duration_ms"), float)
    assert line == {
        "level": "INFO",
        "location": _executor_log_site(),
        "message": "tool_execution",
        "service": "workbench",
        "correlation_id": correlation,
        "event": "tool_execution",
        "user": gw.stores.users.get_or_create("ada@example.com").id,
        "integration": "jots",
        "tool": "list_jots",
        "success": True,
        "error": None,
    }
    request = [line for line in lines if line.get("message") == "request"]
    assert len(request) == 1 and request[0]["correlation_id"] == correlation
    assert set(request[0]) == {
        "level",
        "location",
        "message",
        "timestamp",
        "service",
        "correlation_id",
        "surface",
        "method",
        "path",
        "cold_start",
        "status",
        "duration_ms",
    }
    assert request[0]["location"].startswith("handler:")


def test_the_subsegment_document_a_request_sends_to_the_daemon() -> None:
    daemon = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    daemon.bind(("127.0.0.1", 0))
    daemon.settimeout(2.0)
    with daemon:
        with request_span("## mcp", TRACE, f"127.0.0.1:{daemon.getsockname()[1]}") as root:
            assert root is not None
            root.annotations.update(ColdStart=True, surface="mcp")
            with span("DynamoDB", "aws") as child:
                assert child is not None
                child.aws = {"operation": "GetItem", "region": "us-east-1", "table_name": "t"}
                child.error = True
        header, _, body = daemon.recv(65535).partition(b"\n")
    assert json.loads(header) == {"format": "json", "version": 1}
    doc = json.loads(body)
    assert set(doc) == {
        "name",
        "id",
        "start_time",
        "end_time",
        "annotations",
        "subsegments",
        "trace_id",
        "parent_id",
        "type",
    }
    assert (doc["name"], doc["type"], doc["trace_id"], doc["parent_id"]) == (
        "## mcp",
        "subsegment",
        "1-67891233-abcdef012345678912345678",
        "53995c3f42cd8ad8",
    )
    assert doc["annotations"] == {"ColdStart": True, "surface": "mcp"}
    assert re.fullmatch(r"[0-9a-f]{16}", doc["id"]) and doc["start_time"] <= doc["end_time"]
    [sub] = doc["subsegments"]
    assert set(sub) == {"name", "id", "start_time", "end_time", "namespace", "aws", "error"}
    assert (sub["name"], sub["namespace"], sub["error"]) == ("DynamoDB", "aws", True)
    assert sub["aws"] == {"operation": "GetItem", "region": "us-east-1", "table_name": "t"}


def test_the_subsegment_has_the_x_ray_sdks_keys() -> None:
    """The X-Ray SDK (the library tracing.py replaces) as the oracle of the document's vocabulary."""
    from aws_xray_sdk.core.models.segment import Segment
    from aws_xray_sdk.core.models.subsegment import Subsegment

    parent = Segment("## mcp", traceid="1-67891233-abcdef012345678912345678")
    theirs = Subsegment("DynamoDB", "aws", parent)
    theirs.put_annotation("ColdStart", True)
    theirs.set_aws({"operation": "GetItem"})
    theirs.add_error_flag()
    theirs.close()
    sdk = json.loads(theirs.serialize())
    ours = Span("DynamoDB", "aws", aws={"operation": "GetItem"})
    ours.annotations["ColdStart"] = True
    ours.error = True
    ours.end_time = ours.start_time
    doc = ours.document()
    assert set(doc) <= set(sdk) | {"end_time"}, set(doc) - set(sdk)
    for key in ("name", "namespace", "aws", "annotations", "error"):
        assert doc[key] == sdk[key], key
