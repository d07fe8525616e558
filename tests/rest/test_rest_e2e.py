"""POST /rest/:integration on a real `workbench serve` process: httpx, `curl` as a real process, and
schemathesis fuzzing the served OpenAPI document (no 5xx allowed)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.processes import local_gateway

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    with local_gateway(tmp_path_factory.mktemp("gw")) as (base, key):
        assert key.startswith("wb_")
        yield base, key


def _curl(*args: str) -> tuple[int, dict[str, str], str]:
    """Run curl; return (status, lower-cased headers, body)."""
    assert shutil.which("curl"), "curl is required"
    out = subprocess.run(
        ["curl", "-sS", "-i", "--max-time", "20", *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    head, _, body = out.replace("\r\n", "\n").partition("\n\n")
    status_line, *lines = head.split("\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, body


def test_curl_runs_a_tool_and_a_batch(served: tuple[str, str]) -> None:
    base, key = served
    auth = f"Authorization: Bearer {key}"
    # curl -d without a content type (application/x-www-form-urlencoded) still works: the body is JSON.
    status, headers, body = _curl(
        "-X",
        "POST",
        f"{base}/rest/jots",
        "-H",
        auth,
        "-d",
        '{"tool":"create_jot","args":{"title":"from curl"}}',
    )
    assert status == 200 and headers["content-type"] == "application/json"
    created = json.loads(body)["result"]
    assert created["title"] == "from curl"

    status, _, body = _curl(
        f"{base}/rest/jots",
        "-H",
        auth,
        "-H",
        "Content-Type: application/json",
        "--data-binary",
        json.dumps({"executions": [{"tool": "get_jot", "args": {"id": created["id"]}}, {"tool": "nope"}]}),
    )
    assert status == 200
    assert json.loads(body) == {"results": [{"result": {**created}}, {"error": "Tool not found"}]}


def test_curl_sees_the_error_statuses(served: tuple[str, str]) -> None:
    base, key = served
    status, headers, body = _curl("-X", "POST", f"{base}/rest/jots", "-d", '{"tool":"list_jots"}')
    assert (status, json.loads(body)) == (401, {"error": "Unauthorized"})
    assert headers["www-authenticate"] == 'Bearer realm="workbench"'
    status, _, body = _curl(
        "-X", "POST", f"{base}/rest/jots", "-H", f"Authorization: Bearer {key}", "-d", "{oops"
    )
    assert status == 400 and json.loads(body)["error"].startswith("Malformed JSON body: invalid JSON")
    status, _, body = _curl(
        "-X",
        "POST",
        f"{base}/rest/jots",
        "-H",
        f"Authorization: Bearer {key}",
        "-d",
        '{"executions":[{"tool":"list_jots","ref_id":"a"}],"compose":true}',
    )
    assert status == 400 and json.loads(body)["error"].startswith("compose and return are MCP-only")


def test_httpx_against_the_real_process(served: tuple[str, str]) -> None:
    base, key = served
    h = {"Authorization": f"Bearer {key}"}
    r = httpx.post(
        f"{base}/rest/github",
        json={"tool": "github_list_prs", "args": {"owner": "o", "repo": "r"}},
        headers=h,
    )
    assert (r.status_code, r.json()["error"]) == (200, "NOT_CONNECTED")
    assert httpx.post(f"{base}/rest/nope", json={"tool": "x"}, headers=h).status_code == 404
    doc = httpx.get(f"{base}/rest/openapi.json").json()
    assert doc["servers"] == [{"url": base}]


def test_schemathesis_finds_no_server_errors(served: tuple[str, str], tmp_path: Path) -> None:
    base, key = served
    report = tmp_path / "junit.xml"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "schemathesis.cli",
            "run",
            f"{base}/rest/openapi.json",
            "--checks",
            "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
            "--header",
            f"Authorization: Bearer {key}",
            "--max-examples",
            "60",
            "--phases",
            "examples,coverage,fuzzing",
            "--workers",
            "1",
            "--report",
            "junit",
            "--report-junit-path",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "passed" in proc.stdout and "failed" not in proc.stdout.split("Test cases:")[-1]
