"""Cold start as Lambda pays it: interpreter start to the first response, side by side in one run.

Every first request a surface serves, each a fresh interpreter per run, against two points of
comparison answering an API Gateway HTTP API v2 event in the same run:

  workbench   functions/<surface>/app.py on the engine layer as `infra/layer/Makefile` builds it
              (the same recipe `sam build` runs, here for this machine's platform), configured like
              the deployed function: DynamoDB + KMS on a loopback moto server. The first requests:
                mcp list_jots       POST /mcp execute_tools [list_jots], API key
                mcp search_tools    POST /mcp search_tools, API key
                mcp oauth token     POST /mcp execute_tools [list_jots], an OAuth access token
                plugin http         POST /mcp execute_tools of a plugin tool whose first call goes
                                    upstream (httpx through the egress guard, KMS decrypt of its
                                    credential); the plugin and its API are the bench's own, on
                                    loopback; its arguments are an ArgsModel, as the shipped
                                    plugins' are (pydantic is not imported for a plain call)
                plugin http (pydantic BaseModel)  the same call to the same API, by a plugin whose
                                    model is a plain pydantic BaseModel (its import pays pydantic's)
                plugin http (Arguments)  the same call to the same API, by a plugin whose tool
                                    declares its arguments with workbench.tools.Arguments (no pydantic)
                plugin http (superset)  a shipped plugin's first tool call: superset_list_schemas
                                    (its module declares 12 ArgsModels; the tool logs in, then
                                    reads), against the same loopback API as the user's Superset
                portal page         GET /portal/integrations (where /portal sends a signed-in
                                    user), with a session cookie
                curl proxy          GET /c/<integration>/fast with a curl_session token
                rest                POST /rest/jots {"tool": "list_jots"}, API key
  sdk         the official MCP SDK (stateless, JSON responses, one tool) behind Mangum, answering
              the tools/call: every first request above is compared with it (goal <= 0.3x).
  hello       a Starlette app behind Mangum that answers a constant JSON-RPC result (goal for the
              list_jots request: <= 1.5x in CPU).

Every run: a new process of a clean `python -m venv` of the Lambda runtime's interpreter
(python3.12 from pyenv when present; no site-packages, so no host `.pth` file runs at start, as on
Lambda), the layer (and the function's code) on PYTHONPATH, PYTHONDONTWRITEBYTECODE=1: the layer
ships its .pyc (unchecked-hash), the other two are compiled the same way. Measured from just before
the process is spawned to the moment it prints the handler's answer, and the child's CPU time;
peak RSS is the child's own VmHWM. Then one extra run of each workbench request under
`-X importtime` lists the largest imports.

    uv run python bench/cold_start.py [--runs 7] [--json] [--only NAME ...]
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
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # bench scripts run from a checkout
from tests.support.aws import AWS_ENV, AwsEndpoint, moto_server  # noqa: E402

CACHE = REPO / ".bench-cache"


def base_python() -> str:
    """Lambda runs python3.12: use it when pyenv has it, else this interpreter's base."""
    for candidate in sorted(Path.home().glob(".pyenv/versions/3.12*/bin/python3.12")):
        return str(candidate)
    return getattr(sys, "_base_executable", sys.executable)


def lambda_python() -> str:
    """A clean venv of that interpreter (no pip, nothing in its site-packages): the base install's
    site-packages may hold `.pth` files that import things at every start, which Lambda's has not."""
    base = base_python()
    venv = CACHE / f"venv-{Path(base).resolve().parent.parent.name}"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([base, "-m", "venv", "--without-pip", "--clear", str(venv)], check=True)
    return str(python)


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
    wanted = json.dumps([packages, version, machine, "unchecked-hash"])
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
    # Unchecked-hash, as the engine layer ships its own (no source stat on import).
    subprocess.run(
        [
            python,
            "-m",
            "compileall",
            "-q",
            "-j0",
            "--invalidation-mode",
            "unchecked-hash",
            str(dest / "python"),
        ],
        check=True,
    )
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
def execute_tools(executions: list[dict]) -> str:
    """Run tools (here: answers what list_jots answers on an empty account)."""
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
    def __init__(
        self,
        name: str,
        python: str,
        layer: Path,
        code_dir: Path,
        env: dict[str, str],
        event: dict[str, Any],
        *,
        extra_path: Path | None = None,
        expect: str = "",
    ) -> None:
        self.name, self.python, self.layer, self.code_dir, self.env = name, python, layer, code_dir, env
        self.event, self.extra_path, self.expect = event, extra_path, expect

    def _env(self, event: dict[str, Any]) -> dict[str, str]:
        keep = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TZ") if k in os.environ}
        path = [str(self.code_dir), str(self.layer), *([str(self.extra_path)] if self.extra_path else [])]
        return {
            **keep,
            **self.env,
            "PYTHONPATH": ":".join(path),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONNOUSERSITE": "1",
            "BENCH_EVENT": json.dumps(event),
        }

    def cold(self, event: dict[str, Any] | None = None) -> tuple[float, dict[str, Any]]:
        """Seconds from spawn to the printed answer, and the answer (with the child's CPU seconds:
        on a busy machine wall time includes waiting for a core, CPU time does not)."""
        event = event or self.event
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

    def top_imports(self, n: int = 12) -> list[tuple[str, float]]:
        done = subprocess.run(
            [self.python, "-s", "-X", "importtime", "-c", CHILD],
            env=self._env(self.event),
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


# The bench's own plugin (what a deployed plugin is: a manifest, and tools whose arguments are an
# ArgsModel, as the shipped plugins', that call their API through ctx.http), its API on loopback,
# reached through the egress guard; and its twins whose tool declares the same argument with
# workbench.tools.Arguments, and with a plain pydantic BaseModel.
BENCH_PLUGIN = {
    "__init__.py": """
import os
from workbench.tools import ApiKeyAuth, ApiKeyField, Manifest

manifest = Manifest(
    name="benchapi",
    version="1.0.0",
    display_name="Bench API",
    auth=ApiKeyAuth((ApiKeyField("key", "API key"),)),
    base_url=os.environ.get("BENCH_API_URL", "http://127.0.0.1:9"),
    tool_prefix="benchapi_",
    curl_proxy=True,
)
""",
    "tools.py": """
from typing import Any

from workbench.tools import ArgsModel, Field, tool


class Get(ArgsModel):
    path: str = Field(default="fast", description="What to read")


@tool("benchapi_get", "Read one thing from the bench API.", Get)
async def get(args: Get, ctx: Any) -> Any:
    return (await ctx.http.get(f"/{args.path}")).json()


TOOLS = [get]
""",
}
BENCH_LEAN_PLUGIN = {
    "__init__.py": BENCH_PLUGIN["__init__.py"]
    .replace('"benchapi"', '"benchlean"')
    .replace('"Bench API"', '"Bench API (Arguments)"')
    .replace('"benchapi_"', '"benchlean_"'),
    "tools.py": """
from typing import Any

from workbench.tools import Arg, Arguments, tool

GET = Arguments("Get", Arg("path", str, default="fast", description="What to read"))


@tool("benchlean_get", "Read one thing from the bench API.", GET)
async def get(args: Any, ctx: Any) -> Any:
    return (await ctx.http.get(f"/{args.path}")).json()


TOOLS = [get]
""",
}


BENCH_PYDANTIC_PLUGIN = {
    "__init__.py": BENCH_PLUGIN["__init__.py"]
    .replace('"benchapi"', '"benchpyd"')
    .replace('"Bench API"', '"Bench API (pydantic)"')
    .replace('"benchapi_"', '"benchpyd_"'),
    "tools.py": BENCH_PLUGIN["tools.py"]
    .replace(
        "from workbench.tools import ArgsModel, Field, tool",
        "from pydantic import BaseModel, Field\nfrom workbench.tools import tool",
    )
    .replace("class Get(ArgsModel):", "class Get(BaseModel):")
    .replace('"benchapi_get"', '"benchpyd_get"'),
}


class _Api(ThreadingHTTPServer):
    """The bench plugins' API: every GET answers a small JSON (also what Superset's schema list
    reads), every POST a token (Superset's login)."""

    daemon_threads = True

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # As an API's server would: without it, a second request on a kept connection (Superset's
            # read after its login) waited ~40 ms for the body, Nagle's algorithm here holding it
            # until the client's delayed ACK of the headers.
            disable_nagle_algorithm = True

            def do_GET(self) -> None:
                self._answer(b'{"fast": true, "result": ["public"]}')

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                self._answer(b'{"access_token": "bench.login.token"}')

            def _answer(self, body: bytes) -> None:
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)


def _mcp_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def _mcp_event(token: str, body: dict[str, Any]) -> dict[str, Any]:
    event = api_event(token)
    event["body"] = json.dumps(body)
    return event


def _workbench_functions(python: str, layer: Path, endpoint: AwsEndpoint, api_url: str) -> list[Function]:
    """Tables on moto, one user with an API key, an OAuth access token, a portal session, the bench
    plugin connected and a curl_session token for it; each first request as its function gets it."""
    from workbench.composition import build_gateway, build_registry
    from workbench.web.sessions import SESSION_COOKIE

    from tests.support.apigw import http_api_event

    plugin_dir = CACHE / "fn-plugin"
    for package, files in (
        ("benchapi", BENCH_PLUGIN),
        ("benchlean", BENCH_LEAN_PLUGIN),
        ("benchpyd", BENCH_PYDANTIC_PLUGIN),
    ):
        (plugin_dir / package).mkdir(parents=True, exist_ok=True)
        for name, code in files.items():
            (plugin_dir / package / name).write_text(code.lstrip())
    sys.path.insert(0, str(plugin_dir))
    os.environ["BENCH_API_URL"] = api_url
    settings = endpoint.fresh_tables(
        public_url="https://gw.example.test",
        egress_allow="loopback",
        session_secret="bench-session-secret-" + "s" * 24,
    )
    gateway = build_gateway(settings, registry=build_registry(extra=("benchapi", "benchlean", "benchpyd")))
    user = gateway.stores.users.get_or_create("bench@example.com")
    key = gateway.auth.mint_key(user, label="bench")
    gateway.credentials.save(user.id, "benchapi", {"key": "bench-api-key-0123456789"})
    gateway.credentials.save(user.id, "benchlean", {"key": "bench-api-key-0123456789"})
    gateway.credentials.save(user.id, "benchpyd", {"key": "bench-api-key-0123456789"})
    gateway.credentials.save(
        user.id, "superset", {"username": "bench", "password": "bench-password", "base_url": api_url}
    )
    access = gateway.tokens.mint(  # what the OAuth server issues (workbench.oauth.service._issue)
        {"sub": user.id, "email": user.email, "client_id": "bench-client", "scope": ""},
        audience=gateway.oauth.audience,
        ttl_seconds=3600,
    )
    curl = gateway.curl.mint(gateway.auth.api_keys.resolve(key), ["benchapi"], 900)["token"]
    cookie = f"{SESSION_COOKIE}={gateway.sessions.issue(user.id)}"
    env = {
        **AWS_ENV,
        **endpoint.env(settings),
        "WORKBENCH_PUBLIC_URL": "https://gw.example.test",
        "POWERTOOLS_SERVICE_NAME": "workbench",
        "POWERTOOLS_METRICS_NAMESPACE": "Workbench",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
        "_HANDLER": "app.handler",
    }
    host = "gw.example.test"
    list_jots = _mcp_call("execute_tools", {"executions": [{"tool": "list_jots", "args": {}}]})

    # Only the two requests that reach the bench plugin load it: with it, the catalog is no longer
    # the one the layer's prebuilt search index was made for.
    plugin_env = {
        "WORKBENCH_EXTRA_PLUGINS": "benchapi",
        "WORKBENCH_EGRESS_ALLOW": "loopback",
        "BENCH_API_URL": api_url,
    }

    def fn(name: str, surface: str, event: dict[str, Any], expect: str) -> Function:
        env_for = {**env, "AWS_LAMBDA_FUNCTION_NAME": f"bench-{surface}"}
        if name in ("plugin http", "curl proxy"):
            env_for.update(plugin_env)
        if name == "plugin http (Arguments)":
            env_for.update({**plugin_env, "WORKBENCH_EXTRA_PLUGINS": "benchlean"})
        if name == "plugin http (pydantic BaseModel)":
            env_for.update({**plugin_env, "WORKBENCH_EXTRA_PLUGINS": "benchpyd"})
        if name == "plugin http (superset)":  # shipped: the layer's own catalog, no extra plugin
            env_for["WORKBENCH_EGRESS_ALLOW"] = "loopback"
        code = REPO / "functions" / surface
        return Function(name, python, layer, code, env_for, event, extra_path=plugin_dir, expect=expect)

    return [
        fn("mcp list_jots", "mcp", _mcp_event(key, list_jots), "jots"),
        fn(
            "mcp search_tools",
            "mcp",
            _mcp_event(key, _mcp_call("search_tools", {"query": "create a jot"})),
            "create_jot",
        ),
        fn("mcp oauth token", "mcp", _mcp_event(access, list_jots), "jots"),
        fn(
            "plugin http",
            "mcp",
            _mcp_event(
                key, _mcp_call("execute_tools", {"executions": [{"tool": "benchapi_get", "args": {}}]})
            ),
            "fast",
        ),
        fn(
            "plugin http (Arguments)",
            "mcp",
            _mcp_event(
                key, _mcp_call("execute_tools", {"executions": [{"tool": "benchlean_get", "args": {}}]})
            ),
            "fast",
        ),
        fn(
            "plugin http (pydantic BaseModel)",
            "mcp",
            _mcp_event(
                key, _mcp_call("execute_tools", {"executions": [{"tool": "benchpyd_get", "args": {}}]})
            ),
            "fast",
        ),
        fn(
            "plugin http (superset)",
            "mcp",
            _mcp_event(
                key,
                _mcp_call(
                    "execute_tools",
                    {"executions": [{"tool": "superset_list_schemas", "args": {"database_id": 1}}]},
                ),
            ),
            "public",
        ),
        fn(
            "portal page",
            "web",
            http_api_event(
                "GET", "/portal/integrations", route_key="ANY /portal/{proxy+}", cookies=[cookie], domain=host
            ),
            "",
        ),
        fn(
            "curl proxy",
            "proxy",
            http_api_event(
                "GET",
                "/c/benchapi/fast",
                route_key="ANY /c/{integration}/{proxy+}",
                path_parameters={"integration": "benchapi", "proxy": "fast"},
                headers={"authorization": f"Bearer {curl}"},
                domain=host,
            ),
            "fast",
        ),
        fn(
            "rest",
            "rest",
            http_api_event(
                "POST",
                "/rest/jots",
                route_key="POST /rest/{integration}",
                path_parameters={"integration": "jots"},
                body={"tool": "list_jots", "args": {}},
                headers={"authorization": f"Bearer {key}"},
                domain=host,
            ),
            "jots",
        ),
    ]


def _check(f: Function, answer: dict[str, Any]) -> None:
    body = answer["body"]
    if answer["status"] != 200 or (f.expect and f.expect not in body) or '\\"error\\"' in body:
        raise RuntimeError(f"{f.name} answered {answer}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print one JSON object (for run_all.py)")
    parser.add_argument("--only", nargs="*", help="only these workbench requests (names as listed above)")
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

    api = _Api()
    threading.Thread(target=api.serve_forever, daemon=True).start()
    api_url = f"http://127.0.0.1:{api.server_address[1]}"
    with tempfile.TemporaryDirectory() as tmp, moto_server(log=Path(tmp) / "moto.log") as endpoint:
        workbench = _workbench_functions(python, wb_layer, endpoint, api_url)
        if args.only:
            workbench = [f for f in workbench if f.name in args.only]
        sdk = Function("sdk", python, sdk_layer, sdk_dir, {}, api_event(None, SDK_HOST), expect="jots")
        hello = Function("hello", python, hello_layer, hello_dir, {}, api_event(None), expect="jots")
        functions = [*workbench, sdk, hello]
        times: dict[str, list[float]] = {f.name: [] for f in functions}
        cpu: dict[str, list[float]] = {f.name: [] for f in functions}
        rss: dict[str, int] = {}
        for f in functions:  # one warm-up each: page cache, not the process, is what it warms
            _check(f, f.cold()[1])
        for _ in range(args.runs):
            for f in functions:  # interleaved, so machine noise falls on all of them alike
                elapsed, answer = f.cold()
                _check(f, answer)
                times[f.name].append(elapsed)
                cpu[f.name].append(answer["cpu_s"])
                rss[f.name] = max(rss.get(f.name, 0), answer["rss_kb"])
        imports = {f.name: f.top_imports() for f in workbench}
    api.shutdown()

    med = {name: statistics.median(v) for name, v in times.items()}
    best = {name: min(v) for name, v in times.items()}
    cpu_med = {name: statistics.median(v) for name, v in cpu.items()}
    pyc = count_pyc(wb_layer)
    requests = {
        f.name: {
            "median_ms": round(med[f.name] * 1000, 1),
            "cpu_median_ms": round(cpu_med[f.name] * 1000, 1),
            "peak_rss_mb": round(rss[f.name] / 1024, 1),
            "ratio_vs_sdk": round(med[f.name] / med["sdk"], 3),
            "cpu_ratio_vs_sdk": round(cpu_med[f.name] / cpu_med["sdk"], 3),
            "ratio_vs_hello": round(med[f.name] / med["hello"], 3),
            "cpu_ratio_vs_hello": round(cpu_med[f.name] / cpu_med["hello"], 3),
        }
        for f in workbench
    }
    first = requests.get("mcp list_jots") or next(iter(requests.values()))
    result = {
        "python": tag,
        "runs": args.runs,
        "median_ms": {k: round(v * 1000, 1) for k, v in med.items()},
        "best_ms": {k: round(v * 1000, 1) for k, v in best.items()},
        "peak_rss_mb": {k: round(v / 1024, 1) for k, v in rss.items()},
        "cpu_median_ms": {k: round(v * 1000, 1) for k, v in cpu_med.items()},
        "requests": requests,
        # The list_jots request, as the goals name it (and as earlier runs reported it).
        "ratio_vs_sdk": first["ratio_vs_sdk"],
        "ratio_vs_hello": first["ratio_vs_hello"],
        "cpu_ratio_vs_sdk": first["cpu_ratio_vs_sdk"],
        "cpu_ratio_vs_hello": first["cpu_ratio_vs_hello"],
        "worst_ratio_vs_sdk": max(r["ratio_vs_sdk"] for r in requests.values()),
        "worst_cpu_ratio_vs_sdk": max(r["cpu_ratio_vs_sdk"] for r in requests.values()),
        "layer_py_pyc": pyc,
    }
    if args.json:
        print(json.dumps(result))
        return
    print(
        f"== Cold start, interpreter start to first response (python {tag}, clean venv, {args.runs} runs each, "
        "interleaved) =="
    )
    print(f"  engine layer: {pyc[0]} .py files, {pyc[1]} .pyc files (no .pyc = every cold start compiles)")
    for name in med:
        print(
            f"  {name:<24} median {med[name] * 1000:7.1f} ms   best {best[name] * 1000:7.1f} ms   "
            f"CPU {cpu_med[name] * 1000:7.1f} ms   peak RSS {rss[name] / 1024:6.1f} MB"
        )
    print(
        "  each first request / sdk+mangum (goal <= 0.3x, wall and CPU); list_jots / hello (goal <= 1.5x CPU):"
    )
    for name, r in requests.items():
        print(
            f"    {name:<24} {r['ratio_vs_sdk']:.2f}x wall, {r['cpu_ratio_vs_sdk']:.2f}x CPU of the SDK;"
            f"  {r['ratio_vs_hello']:.2f}x wall, {r['cpu_ratio_vs_hello']:.2f}x CPU of hello"
        )
    for name, rows in imports.items():
        print(f"  largest imports of {name} (cumulative):")
        for module, seconds in rows[:6]:
            print(f"    {seconds * 1000:7.1f} ms  {module}")


if __name__ == "__main__":
    main()
