"""Marginal cold-start CPU of each design-card library against the engine's own replacement.

For each pair, a fresh isolated interpreter (`python -I`, no bytecode writing) runs a snippet that
imports the piece and does its first piece of work (one client made, one event adapted, one log line
written, one metric flushed, one subsegment sent to a loopback daemon), and the parent reads the
child's CPU time (user + system, `resource.getrusage(RUSAGE_CHILDREN)`). The baseline is the same
interpreter running the shared prelude only; "marginal" is median(snippet) - median(baseline).
Runs alternate between the snippets so load on the machine falls on all of them alike.

    uv run --group dev python bench/library_cost.py [--runs 21] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PRELUDE = """
import asyncio, json, logging, sys, os, socket
sys.path[:0] = [{shared!r}]
os.environ.update(AWS_ACCESS_KEY_ID="a", AWS_SECRET_ACCESS_KEY="b", AWS_REGION="us-east-1",
                  POWERTOOLS_SERVICE_NAME="workbench", POWERTOOLS_METRICS_NAMESPACE="Workbench",
                  AWS_XRAY_DAEMON_ADDRESS="127.0.0.1:9", AWS_XRAY_CONTEXT_MISSING="IGNORE_ERROR",
                  _X_AMZN_TRACE_ID="Root=1-67891233-abcdef012345678912345678;Parent=53995c3f42cd8ad8;Sampled=1")
sys.stdout = open(os.devnull, "w")
EVENT = {{"version": "2.0", "routeKey": "ANY /x", "rawPath": "/x", "rawQueryString": "", "headers": {{"host": "h"}},
         "requestContext": {{"http": {{"method": "GET", "path": "/x", "sourceIp": "192.0.2.1"}}, "requestId": "r"}},
         "isBase64Encoded": False}}
async def APP(scope, receive, send):
    await receive()
    await send({{"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]}})
    await send({{"type": "http.response.body", "body": b"ok"}})
"""

SNIPPETS = {
    "baseline": "pass",
    # AWS JSON client: boto3 import + one DynamoDB client, against ours.
    "boto3": textwrap.dedent("""
        import boto3
        boto3.session.Session().client("dynamodb", region_name="us-east-1")
    """),
    "aws_client": textwrap.dedent("""
        from workbench.aws.client import AwsJsonClient, credential_source
        AwsJsonClient("dynamodb", region="us-east-1", credentials=credential_source(os.environ))
    """),
    # API Gateway adapter: one event through Mangum, against ours.
    "mangum": textwrap.dedent("""
        from mangum import Mangum
        Mangum(APP, lifespan="off")(EVENT, None)
    """),
    "apigw": textwrap.dedent("""
        from workbench.aws.apigw import ApiGatewayV2
        ApiGatewayV2(APP)(EVENT, None)
    """),
    # Logger: one structured line, Powertools Logger against ours.
    "powertools_logger": textwrap.dedent("""
        from aws_lambda_powertools import Logger
        Logger(service="workbench").info("tool_execution", extra={"tool": "list_jots", "ok": True})
    """),
    "logs": textwrap.dedent("""
        from workbench.observability.logs import JsonLines, CurrentStdout
        log = logging.getLogger("workbench"); h = CurrentStdout(); h.setFormatter(JsonLines("workbench"))
        log.addHandler(h); log.setLevel(logging.INFO)
        log.info("tool_execution", extra={"tool": "list_jots", "ok": True})
    """),
    # Metrics: one EMF document, Powertools Metrics against ours.
    "powertools_metrics": textwrap.dedent("""
        from aws_lambda_powertools import Metrics
        from aws_lambda_powertools.metrics import MetricUnit
        m = Metrics(namespace="Workbench", service="workbench")
        m.add_dimension(name="integration", value="jots")
        m.add_metric(name="workbench_tool_executions_total", unit=MetricUnit.Count, value=1)
        m.flush_metrics()
    """),
    "emf": textwrap.dedent("""
        from workbench.observability.metrics import EmfWriter
        w = EmfWriter("Workbench", "workbench")
        w.record("workbench_tool_executions_total", {"integration": "jots", "success": "true"}, 1.0)
        w.flush()
    """),
    # Tracing: one subsegment sent to a (loopback) daemon, X-Ray SDK against ours.
    "xray_sdk": textwrap.dedent("""
        from aws_xray_sdk.core import xray_recorder
        xray_recorder.configure(daemon_address="127.0.0.1:9", context_missing="IGNORE_ERROR")
        xray_recorder.begin_segment("## mcp", traceid="1-67891233-abcdef012345678912345678", sampling=1)
        xray_recorder.end_segment()
    """),
    "tracing": textwrap.dedent("""
        from workbench.observability.tracing import request_span
        with request_span("## mcp", os.environ["_X_AMZN_TRACE_ID"], "127.0.0.1:9"):
            pass
    """),
}

PAIRS = (
    ("boto3 (import + one client)", "boto3", "aws_client"),
    ("Mangum (one event)", "mangum", "apigw"),
    ("Powertools Logger (one line)", "powertools_logger", "logs"),
    ("Powertools Metrics (one EMF flush)", "powertools_metrics", "emf"),
    ("X-Ray SDK (one segment)", "xray_sdk", "tracing"),
)


def cpu_ms(code: str) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-I", "-c", code],
        check=True,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONDONTWRITEBYTECODE": "1"},
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    prelude = PRELUDE.format(shared=str(REPO / "shared"))
    samples: dict[str, list[float]] = {name: [] for name in SNIPPETS}
    for name in SNIPPETS:  # once each, unmeasured: the page cache warm for all alike
        cpu_ms(prelude + SNIPPETS[name])
    for _ in range(args.runs):
        for name, snippet in SNIPPETS.items():
            samples[name].append(cpu_ms(prelude + snippet))
    median = {name: statistics.median(values) for name, values in samples.items()}
    marginal = {name: round(median[name] - median["baseline"], 1) for name in SNIPPETS}
    result = {
        "runs": args.runs,
        "python": sys.version.split()[0],
        "baseline_ms": round(median["baseline"], 1),
        "marginal_ms": marginal,
        "pairs": {label: {"library": marginal[lib], "ours": marginal[own]} for label, lib, own in PAIRS},
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"interpreter + prelude: {result['baseline_ms']} ms CPU (median of {args.runs})")
    print(f"{'marginal cold CPU, ms':38} {'library':>9} {'ours':>7}")
    for label, lib, own in PAIRS:
        print(f"{label:38} {marginal[lib]:9.1f} {marginal[own]:7.1f}")


if __name__ == "__main__":
    main()
