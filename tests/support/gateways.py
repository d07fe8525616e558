"""In-process gateways over the memory adapter, with a local key and an injectable upstream."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx
from workbench.composition import Gateway, build_gateway, build_registry
from workbench.engine.registry import Registry
from workbench.guard.egress import Resolver, Route
from workbench.identity.auth import Principal
from workbench.identity.crypto import LocalKeyProvider
from workbench.settings import Settings
from workbench.stores.memory import memory_stores


def make_gateway(
    tmp_path: Path,
    *,
    registry: Registry | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    resolver: Resolver | None = None,
    route: Route | None = None,
    **settings: Any,
) -> Gateway:
    base = Settings(store="memory", data_dir=tmp_path, public_url="http://127.0.0.1:8787")
    for key, value in settings.items():
        object.__setattr__(base, key, value)
    return build_gateway(
        base,
        stores=memory_stores(),
        registry=registry or build_registry(),
        key_provider=LocalKeyProvider.from_secret(os.urandom(32)),
        transport=transport,
        resolver=resolver,
        route=route,
    )


def principal_for(gw: Gateway, email: str = "ada@example.com") -> Principal:
    """The user behind a real API key (what a curl_session token minted by them is bound to)."""
    principal = gw.auth.api_keys.resolve(gw.auth.mint_key(gw.stores.users.get_or_create(email)))
    assert principal.via == "api_key" and principal.credential_id
    return principal
