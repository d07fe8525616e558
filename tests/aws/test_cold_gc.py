"""The collector during a Lambda cold start (workbench.runtime.coldgc): off from the entry's import
until the first event is answered, then what the cold start built is frozen and the usual
thresholds are back; a cold start that allocated unusually much is collected before the freeze."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from workbench.settings import Settings

from tests.support.apigw import http_api_event
from tests.support.aws import AwsEndpoint
from tests.support.processes import REPO

# Records every automatic collection from the moment the entry's lambda_handler starts importing (the
# runtime package, imported just before, paused the collector; finding the package on a checkout's
# sys.path may collect before that), then serves two list_jots as Lambda would.
CHILD = """
import gc, json, sys
default = gc.get_threshold()
runs = []
def record(phase, info):
    if phase == "start" and "workbench.runtime.lambda_handler" in sys.modules:
        runs.append(info["generation"])
gc.callbacks.append(record)
import importlib.util
spec = importlib.util.spec_from_file_location("app", "functions/mcp/app.py")
app = importlib.util.module_from_spec(spec); spec.loader.exec_module(app)
imported = list(runs)
event = json.loads(sys.argv[1])
first = app.handler(event, None)
during_first = runs[len(imported):]
after_first = {"threshold": gc.get_threshold(), "frozen": gc.get_freeze_count()}
second = app.handler(event, None)
before = len(runs)
for _ in range(20_000):  # cyclic garbage: collected again once the cold start is over
    a = []; a.append(a)
print(json.dumps({"default": default, "imported": imported, "during_first": during_first,
                  "after_first": after_first, "statuses": [first["statusCode"], second["statusCode"]],
                  "collections_after": len(runs) - before}))
"""


def _serve_twice(endpoint: AwsEndpoint, settings: Settings, key: str, *, on_lambda: bool) -> dict[str, Any]:
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
        body=body,
        headers={"authorization": f"Bearer {key}", "mcp-protocol-version": "2025-06-18"},
    )
    env = {
        "PATH": "/usr/bin:/bin",
        **endpoint.env(settings),
        "WORKBENCH_PUBLIC_URL": "https://gw.example.test",
    }
    if on_lambda:
        env["AWS_LAMBDA_FUNCTION_NAME"] = "workbench-mcp"
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(event)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["statuses"] == [200, 200]
    return out


def test_no_collection_until_the_first_answer_then_the_cold_start_is_frozen(
    moto_endpoint: AwsEndpoint, aws_settings: Settings
) -> None:
    from workbench.composition import build_gateway

    gw = build_gateway(aws_settings)
    key = gw.auth.mint_key(gw.stores.users.get_or_create("ada@example.com"), label="gc")
    out = _serve_twice(moto_endpoint, aws_settings, key, on_lambda=True)
    # The entry's import and the whole first request (gateway, stores, the tool call) ran no collection...
    assert out["imported"] == [] and out["during_first"] == []
    # ...then what they built was frozen and the interpreter's own thresholds are back,
    assert out["after_first"]["threshold"] == out["default"]
    assert out["after_first"]["frozen"] > 10_000
    # so the next requests' garbage is collected as usual.
    assert out["collections_after"] > 0


def test_outside_lambda_the_collector_is_left_alone(
    moto_endpoint: AwsEndpoint, aws_settings: Settings
) -> None:
    from workbench.composition import build_gateway

    gw = build_gateway(aws_settings)
    key = gw.auth.mint_key(gw.stores.users.get_or_create("ada@example.com"), label="gc")
    out = _serve_twice(moto_endpoint, aws_settings, key, on_lambda=False)
    assert out["imported"] + out["during_first"] != []  # collections ran as usual
    assert out["after_first"] == {"threshold": out["default"], "frozen": 0}


BOUNDS = """
import gc, json
from workbench.runtime import coldgc
coldgc._FREEZE_WITHOUT_COLLECTING = 5_000
gc.collect()
coldgc.pause()
garbage = []
for _ in range(20_000):
    a = []; a.append(a)
before = gc.get_count()[0]
coldgc.resume()
frozen = gc.get_freeze_count()
coldgc.resume()  # a second call changes nothing
print(json.dumps({"before": before, "frozen": frozen, "again": gc.get_freeze_count(),
                  "enabled": gc.isenabled(), "threshold": gc.get_threshold()}))
"""


def test_a_cold_start_that_allocated_much_is_collected_before_it_is_frozen() -> None:
    done = subprocess.run(
        [sys.executable, "-c", BOUNDS], cwd=REPO, capture_output=True, text=True, timeout=60, check=True
    )
    out = json.loads(done.stdout)
    assert out["before"] >= 20_000  # the 20k cycles were not collected while paused...
    assert out["frozen"] < 20_000  # ...nor frozen: collected first
    assert out["again"] == out["frozen"]
    assert out["enabled"] is True and out["threshold"][0] < 10_000
