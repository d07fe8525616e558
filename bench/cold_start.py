"""Cold start as Lambda pays it: interpreter start to the first response, side by side in one run.

Three "functions", each a fresh interpreter per run, each answering the same API Gateway HTTP API
v2 event (`POST /mcp`, a `tools/call`):

  workbench   functions/mcp/app.py on the engine layer as `infra/layer/Makefile` builds it (the
              same recipe `sam build` runs, here for this machine's platform), configured like
              the deployed function: DynamoDB + KMS (on a loopback moto server), API-key auth,
              `execute_tools` of the built-in `list_jots`.
  sdk         the official MCP SDK (stateless, JSON responses, one tool) behind Mangum.
  hello       a Starlette app behind Mangum that answers a constant JSON-RPC result.

Every run: a new process, PYTHONDONTWRITEBYTECODE=1 (Lambda's /opt is read-only, so a layer
without .pyc files recompiles every module on every cold start), the layer on PYTHONPATH, the
interpreter of the Lambda runtime (python3.12) when pyenv has it. Measured from just before the
process is spawned to the moment it prints the handler's answer; peak RSS is the child's own
ru_maxrss. Then one extra run under `-X importtime` lists the largest imports.

    uv run python bench/cold_start.py [--runs 7] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # bench scripts run from a checkout
from tests.support.aws import AWS_ENV, AwsEndpoint, moto_server  # noqa: E402

CACHE = REPO / ".bench-cache"


def lambda_python() -> str:
    """Lambda runs python3.12: use it when pyenv has it, else this interpreter's base."""
    for candidate in sorted(Path.home().glob(".pyenv/versions/3.12*/bin/python3.12")):
        return str(candidate)
    return getattr(sys, "_base_executable", sys.executable)


def _py_tag(python: str) -> str:
    out = subprocess.run(
        [
            python,
            "-c",
            "import sys,platform; print(f'{sys.version_info[0]}.{sys.version_info[1]}', platform.machine())",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return out[0] + " " + out[1]


def _uv() -> str:
    return shutil.which("uv") or str(Path.home() / ".local/bin/uv")


def _locked(name: str) -> str:
    """The version uv.lock pins for `name`."""
    lines = (REPO / "uv.lock").read_text().splitlines()
    for i, line in enumerate(lines):
        if line == f'name = "{name}"' and lines[i + 1].startswith("version = "):
            return lines[i + 1].split('"')[1]
    raise KeyError(name)


def build_workbench_layer(python: str, dest: Path) -> Path:
    """The engine layer exactly as `sam build` makes it, for this machine's platform."""
    version, machine = _py_tag(python).split()
    if dest.exists():
        shutil.rmtree(dest)
    subprocess.run(
        [
            "make",
            "-s",
            "-f",
            str(REPO / "infra/layer/Makefile"),
            "build-EngineLayer",
            f"ARTIFACTS_DIR={dest}",
            f"PLATFORM={machine}-manylinux_2_28",
            f"PYTHON_VERSION={version}",
            f"PYTHON={python}",
        ],
        check=True,
        cwd=REPO,
    )
    return dest / "python"


def build_plain_layer(python: str, dest: Path, packages: list[str]) -> Path:
    """A layer with `packages` installed the way a careful author would (bytecode compiled)."""
    version, machine = _py_tag(python).split()
    marker = dest / ".built"
    wanted = json.dumps([packages, version, machine])
    if marker.exists() and marker.read_text() == wanted:
        return dest / "python"
    if dest.exists():
        shutil.rmtree(dest)
    subprocess.run(
        [
            _uv(),
            "pip",
            "install",
            "--quiet",
            "--only-binary",
            ":all:",
            "--target",
            str(dest / "python"),
            "--python-platform",
            f"{machine}-manylinux_2_28",
            "--python-version",
            version,
            *packages,
        ],
        check=True,
        cwd=REPO,
    )
    # uv's --compile-bytecode compiles with the interpreter uv runs under, not the target version.
    subprocess.run([python, "-m", "compileall", "-q", "-j0", str(dest / "python")], check=True)
    marker.write_text(wanted)
    return dest / "python"


def count_pyc(layer: Path) -> tuple[int, int]:
    sources = sum(1 for _ in layer.rglob("*.py"))
    compiled = sum(1 for _ in layer.rglob("*.pyc"))
    return sources, compiled


# -- the functions under test -------------------------------------------------------------------------------

SDK_APP = '''
from mangum import Mangum
from mcp.server import MCPServer

server = MCPServer("sdk-reference")


@server.tool()
def list_jots() -> str:
    """List notes."""
    return '{"results": [{"result": {"jots": []}}]}'


handler = Mangum(server.streamable_http_app(json_response=True, stateless_http=True), lifespan="auto")
'''

HELLO_APP = """
from mangum import Mangum
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route


async def mcp(request):
    body = await request.json()
    text = '{"results": [{"result": {"jots": []}}]}'
    return JSONResponse({"jsonrpc": "2.0", "id": body["id"], "result": {"content": [{"type": "text", "text": text}]}})


handler = Mangum(Starlette(routes=[Route("/mcp", mcp, methods=["POST"])]), lifespan="off")
"""

# Runs in the fresh interpreter: import the entry like Lambda's bootstrap (`app.handler` from the
# function's directory), answer one event, print the status and the peak RSS.
# The SDK's DNS-rebinding guard accepts only loopback Host headers unless configured otherwise.
SDK_HOST = "127.0.0.1:3000"

CHILD = textwrap.dedent(
    """
    import json, os, sys, time
    event = json.loads(os.environ["BENCH_EVENT"])
    event["requestContext"]["timeEpoch"] = int(time.time() * 1000)  # API Gateway received it now
    import app

    class Context:
        aws_request_id = "bench-request"
        function_name = "bench"
        memory_limit_in_mb = 1024
        invoked_function_arn = "arn:aws:lambda:us-east-1:000000000000:function:bench"
        def get_remaining_time_in_millis(self):
            return 30000

    answer = app.handler(event, Context())
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the forking parent across exec.
    rss_kb = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    print("BENCH-ANSWER " + json.dumps({"status": answer.get("statusCode"), "body": answer.get("body", "")[:400], "rss_kb": rss_kb}), flush=True)
    """
)


def api_event(token: str | None, host: str = "gw.example.test") -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "execute_tools", "arguments": {"executions": [{"tool": "list_jots", "args": {}}]}},
    }
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18",
        "host": host,
    }
    if token:
        headers["authorization"] = f"Bearer {token}"
    return {
        "version": "2.0",
        "routeKey": "POST /mcp",
        "rawPath": "/mcp",
        "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "bench",
            "domainName": "gw.example.test",
            "domainPrefix": "gw",
            "http": {
                "method": "POST",
                "path": "/mcp",
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.7",
                "userAgent": "bench",
            },
            "requestId": "bench-request",
            "routeKey": "POST /mcp",
            "stage": "$default",
            "time": "03/Dec/2026:00:00:00 +0000",
            "timeEpoch": 0,  # set by the child when it answers (the request arrives then)
        },
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


class Function:
    def __init__(self, name: str, python: str, layer: Path, code_dir: Path, env: dict[str, str]) -> None:
        self.name, self.python, self.layer, self.code_dir, self.env = name, python, layer, code_dir, env

    def _env(self, event: dict[str, Any]) -> dict[str, str]:
        keep = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TZ") if k in os.environ}
        return {
            **keep,
            **self.env,
            "PYTHONPATH": f"{self.code_dir}:{self.layer}",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONNOUSERSITE": "1",
            "BENCH_EVENT": json.dumps(event),
        }

    def cold(self, event: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        """Seconds from spawn to the printed answer, and the answer (with the child's CPU seconds:
        on a busy machine wall time includes waiting for a core, CPU time does not)."""
        started = time.perf_counter()
        proc = subprocess.Popen(
            [self.python, "-s", "-c", CHILD],
            env=self._env(event),
            cwd=self.code_dir,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None and proc.stderr is not None
        answer: dict[str, Any] | None = None
        elapsed = 0.0
        for line in proc.stdout:
            if line.startswith("BENCH-ANSWER "):
                elapsed = time.perf_counter() - started
                answer = json.loads(line.removeprefix("BENCH-ANSWER "))
                break
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if answer is None:
            raise RuntimeError(f"{self.name}: no answer (exit {proc.returncode}):\n{err[-3000:]}")
        answer["cpu_s"] = usage.ru_utime + usage.ru_stime
        return elapsed, answer

    def top_imports(self, event: dict[str, Any], n: int = 12) -> list[tuple[str, float]]:
        done = subprocess.run(
            [self.python, "-s", "-X", "importtime", "-c", CHILD],
            env=self._env(event),
            cwd=self.code_dir,
            capture_output=True,
            text=True,
            check=True,
        )
        rows: list[tuple[str, float]] = []
        for line in done.stderr.splitlines():
            parts = line.removeprefix("import time:").split("|")
            if not line.startswith("import time:") or len(parts) != 3 or "cumulative" in parts[1]:
                continue
            name = parts[2]
            if name.startswith(" ") and not name.startswith("  "):  # a top-level import
                rows.append((name.strip(), int(parts[1]) / 1e6))
        return sorted(rows, key=lambda r: -r[1])[:n]


def _prepare_workbench(endpoint: AwsEndpoint) -> tuple[dict[str, str], str]:
    """Tables on moto, one user with an API key; the deployed function's environment."""
    from workbench.composition import build_gateway

    settings = endpoint.fresh_tables(public_url="https://gw.example.test")
    gateway = build_gateway(settings)
    user = gateway.stores.users.get_or_create("bench@example.com")
    key = gateway.auth.mint_key(user, label="bench")
    env = {
        **AWS_ENV,
        **endpoint.env(settings),
        "WORKBENCH_PUBLIC_URL": "https://gw.example.test",
        "POWERTOOLS_SERVICE_NAME": "workbench",
        "POWERTOOLS_METRICS_NAMESPACE": "Workbench",
        "AWS_LAMBDA_FUNCTION_NAME": "bench-mcp",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
        "_HANDLER": "app.handler",
    }
    return env, key


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print one JSON object (for run_all.py)")
    args = parser.parse_args()

    python = lambda_python()
    tag = _py_tag(python)
    CACHE.mkdir(exist_ok=True)
    wb_layer = build_workbench_layer(python, CACHE / "layer-workbench")
    sdk_layer = build_plain_layer(
        python, CACHE / "layer-sdk", [f"mcp=={_locked('mcp')}", f"mangum=={_locked('mangum')}"]
    )
    hello_layer = build_plain_layer(
        python, CACHE / "layer-hello", [f"starlette=={_locked('starlette')}", f"mangum=={_locked('mangum')}"]
    )
    sdk_dir, hello_dir = CACHE / "fn-sdk", CACHE / "fn-hello"
    for d, code in ((sdk_dir, SDK_APP), (hello_dir, HELLO_APP)):
        d.mkdir(exist_ok=True)
        (d / "app.py").write_text(code)

    with tempfile.TemporaryDirectory() as tmp, moto_server(log=Path(tmp) / "moto.log") as endpoint:
        wb_env, key = _prepare_workbench(endpoint)
        functions = [
            Function("workbench", python, wb_layer, REPO / "functions/mcp", wb_env),
            Function("sdk", python, sdk_layer, sdk_dir, {}),
            Function("hello", python, hello_layer, hello_dir, {}),
        ]
        events = {"workbench": api_event(key), "sdk": api_event(None, SDK_HOST), "hello": api_event(None)}
        times: dict[str, list[float]] = {f.name: [] for f in functions}
        cpu: dict[str, list[float]] = {f.name: [] for f in functions}
        rss: dict[str, int] = {}
        for f in functions:  # one warm-up each: page cache, not the process, is what it warms
            f.cold(events[f.name])
        for _ in range(args.runs):
            for f in functions:  # interleaved, so machine noise falls on all three alike
                elapsed, answer = f.cold(events[f.name])
                if answer["status"] != 200 or (f.name == "workbench" and '\\"error\\"' in answer["body"]):
                    raise RuntimeError(f"{f.name} answered {answer}")
                times[f.name].append(elapsed)
                cpu[f.name].append(answer["cpu_s"])
                rss[f.name] = max(rss.get(f.name, 0), answer["rss_kb"])
        imports = functions[0].top_imports(events["workbench"])

    med = {name: statistics.median(v) for name, v in times.items()}
    best = {name: min(v) for name, v in times.items()}
    cpu_med = {name: statistics.median(v) for name, v in cpu.items()}
    pyc = count_pyc(wb_layer)
    result = {
        "python": tag,
        "runs": args.runs,
        "median_ms": {k: round(v * 1000, 1) for k, v in med.items()},
        "best_ms": {k: round(v * 1000, 1) for k, v in best.items()},
        "peak_rss_mb": {k: round(v / 1024, 1) for k, v in rss.items()},
        "cpu_median_ms": {k: round(v * 1000, 1) for k, v in cpu_med.items()},
        "ratio_vs_sdk": round(med["workbench"] / med["sdk"], 3),
        "ratio_vs_hello": round(med["workbench"] / med["hello"], 3),
        "cpu_ratio_vs_sdk": round(cpu_med["workbench"] / cpu_med["sdk"], 3),
        "cpu_ratio_vs_hello": round(cpu_med["workbench"] / cpu_med["hello"], 3),
        "layer_py_pyc": pyc,
    }
    if args.json:
        print(json.dumps(result))
        return
    print(
        f"== Cold start, interpreter start to first response (python {tag}, {args.runs} runs each, interleaved) =="
    )
    print(f"  engine layer: {pyc[0]} .py files, {pyc[1]} .pyc files (no .pyc = every cold start compiles)")
    for name in med:
        print(
            f"  {name:<10} median {med[name] * 1000:7.1f} ms   best {best[name] * 1000:7.1f} ms   "
            f"CPU {cpu_med[name] * 1000:7.1f} ms   peak RSS {rss[name] / 1024:6.1f} MB"
        )
    print(
        f"  workbench / sdk+mangum   {result['ratio_vs_sdk']:.2f}x wall, {result['cpu_ratio_vs_sdk']:.2f}x CPU"
        "   (goal <= 0.3x)"
    )
    print(
        f"  workbench / hello        {result['ratio_vs_hello']:.2f}x wall, {result['cpu_ratio_vs_hello']:.2f}x CPU"
        "   (goal <= 1.5x)"
    )
    print("  largest imports of the workbench cold start (cumulative):")
    for name, seconds in imports:
        print(f"    {seconds * 1000:7.1f} ms  {name}")


if __name__ == "__main__":
    main()
