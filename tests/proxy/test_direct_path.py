"""The proxy's requests skip the router (DirectProxy): they must reach the proxy exactly when the
routes would, inside the same request deadline and body cap, and share the routes' one proxy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Match
from starlette.testclient import TestClient
from workbench.guard import deadline
from workbench.guard.bodylimit import BodyTooLarge
from workbench.proxy.app import METHODS, CurlProxy, DirectProxy, create_proxy_app, proxy_routes
from workbench.runtime.local_app import create_local_app

from tests.support.gateways import make_gateway

PATHS = [
    "/c/acme",
    "/c/acme/",
    "/c/acme/items",
    "/c/acme/a/b/c",
    "/c/acme/items\r\nHost: evil.test",
    "/c/acme/items\n",
    "/c/acme\n",
    "/c/acme/\n/x",
    "/c/",
    "/c//x",
    "/c",
    "/cc/acme/x",
    "/c/ac me/x",
    "/rest/c/acme",
]


def _scope(method: str, path: str) -> dict[str, Any]:
    return {"type": "http", "method": method, "path": path, "raw_path": path.encode("latin-1"), "headers": []}


@pytest.mark.parametrize("method", [*METHODS, "TRACE", "CONNECT", "PROPFIND"])
def test_the_direct_path_takes_exactly_what_the_routes_match(tmp_path: Path, method: str) -> None:
    gw = make_gateway(tmp_path)
    routes = proxy_routes(gw)
    for path in PATHS:
        scope = _scope(method, path)
        routed = any(route.matches(scope)[0] is Match.FULL for route in routes)
        assert DirectProxy.takes(scope) is routed, (method, path)
    assert not DirectProxy.takes({"type": "websocket", "path": "/c/acme/x"})
    assert not DirectProxy.takes({**_scope("GET", "/api/c/acme/x"), "root_path": "/api"})


def test_what_the_direct_path_leaves_is_answered_as_before(tmp_path: Path) -> None:
    gw = make_gateway(tmp_path)
    with TestClient(create_proxy_app(gw), base_url="http://127.0.0.1:8787") as http:
        assert http.request("TRACE", "/c/acme/items").status_code == 405
        assert http.get("/c/").status_code == 404
        assert http.get("/c/acme/items").status_code == 401  # the proxy's own answer: no token


class _Stub:
    """Stands in for CurlProxy.handle: answers what the request sees of its deadline, or raises."""

    def __init__(self, raise_too_large: bool = False) -> None:
        self.raise_too_large = raise_too_large

    async def handle(self, request: Request) -> Response:
        if self.raise_too_large:
            raise BodyTooLarge(6 * 1024 * 1024)
        await request.body()
        return JSONResponse({"remaining": deadline.remaining()})


def test_the_direct_path_runs_inside_the_request_deadline_and_body_cap(tmp_path: Path) -> None:
    gw = make_gateway(tmp_path)
    direct = DirectProxy(_Stub(), gw.settings)  # type: ignore[arg-type]
    http = TestClient(direct, base_url="http://127.0.0.1:8787")  # no lifespan: ProxyApp's routes own it
    left = http.get("/c/acme/x").json()["remaining"]
    assert left is not None and 0 < left <= gw.settings.request_deadline_seconds
    big = http.post("/c/acme/x", content=b"x" * (6 * 1024 * 1024 + 1))
    assert big.status_code == 413
    assert big.json() == {"error": "Request body too large for the proxy"}
    assert big.headers["connection"] == "close"


def test_a_body_too_large_escaping_the_proxy_gets_the_proxys_413(tmp_path: Path) -> None:
    gw = make_gateway(tmp_path)
    direct = DirectProxy(_Stub(raise_too_large=True), gw.settings)  # type: ignore[arg-type]
    http = TestClient(direct, base_url="http://127.0.0.1:8787")
    r = http.get("/c/acme/x")
    assert (r.status_code, r.json()) == (413, {"error": "Request body too large for the proxy"})


def test_the_local_app_has_one_proxy_for_its_routes_and_its_direct_path(tmp_path: Path) -> None:
    gw = make_gateway(tmp_path)
    app = create_local_app(gw)
    assert app.proxy is not None
    endpoints = {
        route.endpoint.__self__  # type: ignore[attr-defined]
        for route in app.routes
        if getattr(route, "path", "").startswith("/c/")
    }
    assert endpoints == {app.proxy.proxy}
    assert isinstance(app.proxy.proxy, CurlProxy)
