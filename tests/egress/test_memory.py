"""A 1 MiB gzip bomb (about 1 GiB once inflated) through the curl proxy: refused at the 10 MiB
decoded cap, and the process's peak RSS grows by less than 64 MB. Measured in a fresh process (peak
RSS is per process), after a warm-up request so imports and first allocations are not counted."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import asyncio, json, os, resource, sys, threading, zlib
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import httpx
    from workbench.composition import build_gateway, build_registry
    from workbench.identity.crypto import LocalKeyProvider
    from workbench.proxy.app import create_proxy_app
    from workbench.manifest import ApiKeyAuth, ApiKeyField, Manifest
    from workbench.settings import Settings
    from workbench.stores.memory import memory_stores

    # 1024 gzip members of 1 MiB of zeros each: ~1 MiB on the wire, 1 GiB inflated.
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    member = z.compress(bytes(1 << 20)) + z.flush()
    BOMB = member * 1024

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            body, headers = (BOMB, [("Content-Encoding", "gzip")]) if "bomb" in self.path else (b"{}", [])
            self.send_response(200)
            for k, v in headers + [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/api"

    registry = build_registry(plugins=False)
    auth = ApiKeyAuth(fields=(ApiKeyField("token", "Token"),))
    registry.add(Manifest("acme", "1.0.0", "Acme", auth, base_url=base, tool_prefix="acme_", curl_proxy=True), list)
    from pathlib import Path
    settings = Settings(store="memory", data_dir=Path(sys.argv[1]), egress_allow="loopback")
    gw = build_gateway(
        settings, stores=memory_stores(), registry=registry, key_provider=LocalKeyProvider.from_secret(os.urandom(32))
    )
    user = gw.stores.users.get_or_create("ada@example.com")
    gw.credentials.save(user.id, "acme", {"token": "acme-secret-0123456789"})

    async def main():
        principal = await gw.auth.authenticate(gw.auth.mint_key(user))
        token = gw.curl.mint(principal, ["acme"], 600)["token"]
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_proxy_app(gw)), base_url="http://127.0.0.1:8787"
        ) as http:
            warm = await http.get("/c/acme/small", headers=headers)
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            r = await http.get("/c/acme/bomb", headers=headers)
            after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps({
            "warm": warm.status_code, "status": r.status_code, "body": r.json(),
            "bomb_bytes": len(BOMB), "grew_kib": after - before,
        }))

    asyncio.run(main())
    """
)


def test_a_gzip_bomb_through_the_proxy_stays_within_64_mb(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["warm"] == 200
    assert out["bomb_bytes"] < 1.1 * 1024 * 1024
    assert out["status"] == 502
    assert out["body"] == {
        "error": "Refused: the upstream response is larger than 10 MiB once decoded; reading stopped there"
    }
    assert out["grew_kib"] < 64 * 1024, out  # ru_maxrss is in KiB on Linux
