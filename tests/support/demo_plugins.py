"""Small integrations for engine tests: an OAuth one that needs a connection and a free one."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, ClassVar

import httpx
from pydantic import BaseModel, Field
from workbench.composition import Gateway, build_registry
from workbench.engine.registry import Registry
from workbench.identity.auth import Principal
from workbench.manifest import Manifest, NoAuth, OAuth2Auth
from workbench.sdk import api
from workbench.tools import tool

DEMO = Manifest(
    name="demo",
    version="2.0.0",
    display_name="Demo",
    auth=OAuth2Auth(authorize_url="https://demo.test/authorize", token_url="https://demo.test/token"),
    base_url="https://api.demo.test",
    tool_prefix="demo_",
    curl_proxy=True,
)
FREE = Manifest(name="free", version="1.0.0", display_name="Free", auth=NoAuth(), tool_prefix="free_")


class EchoArgs(BaseModel):
    text: str
    times: int = Field(default=1, ge=1, le=5)
    tags: list[str] = Field(default_factory=list)


@tool("demo_echo", "Echo text back through the demo API.", EchoArgs)
async def demo_echo(args: EchoArgs, ctx: Any) -> Any:
    return await api(ctx, "POST", "/echo", json={"text": args.text * args.times, "tags": args.tags})


class NoArgs(BaseModel):
    pass


@tool("demo_fail", "Always fails upstream.", NoArgs)
async def demo_fail(args: NoArgs, ctx: Any) -> Any:
    return await api(ctx, "GET", "/missing")


class SlowArgs(BaseModel):
    ms: int = 50


class Gauge:
    """Counts how many slow tools run at once."""

    current = 0
    peak = 0


@tool("free_slow", "Sleep a while (concurrency probe).", SlowArgs)
async def free_slow(args: SlowArgs, ctx: Any) -> Any:
    Gauge.current += 1
    Gauge.peak = max(Gauge.peak, Gauge.current)
    try:
        await asyncio.sleep(args.ms / 1000)
    finally:
        Gauge.current -= 1
    return {"slept": args.ms}


class BlockingArgs(BaseModel):
    ms: int = 50
    hold: bool = False  # block until SyncGauge.release is set (at most `ms`), not for `ms`


class SyncGauge:
    """Counts how many blocking sync tools run at once, and on which threads."""

    lock = threading.Lock()
    current = 0
    peak = 0
    threads: ClassVar[set[str]] = set()
    release = threading.Event()


@tool("free_block", "Block its thread a while with time.sleep (a sync tool).", BlockingArgs)
def free_block(args: BlockingArgs, ctx: Any) -> Any:
    with SyncGauge.lock:
        SyncGauge.current += 1
        SyncGauge.peak = max(SyncGauge.peak, SyncGauge.current)
        SyncGauge.threads.add(threading.current_thread().name)
    try:
        if args.hold:
            SyncGauge.release.wait(args.ms / 1000)
        else:
            time.sleep(args.ms / 1000)
    finally:
        with SyncGauge.lock:
            SyncGauge.current -= 1
    return {"slept": args.ms}


class ItemArgs(BaseModel):
    value: Any = None
    label: str = "default-label"


@tool("free_item", "Return the value it is given (compose probe).", ItemArgs)
def free_item(args: ItemArgs, ctx: Any) -> Any:
    return {"value": args.value, "label": args.label, "seen": args.model_dump()}


class Broken(BaseModel):
    x: Undefined  # type: ignore[name-defined]  # noqa: F821 - a schema that cannot validate


@tool("free_broken", "A tool whose schema is broken (SAFEPARSE probe).", Broken)
def free_broken(args: Any, ctx: Any) -> Any:
    return {"raw": vars(args)}


@tool("free_const", "Return a fixed PR-like result whose title contains ref-like text.", NoArgs)
def free_const(args: NoArgs, ctx: Any) -> Any:
    return {"title": "PR title mentions {{vault:x}}"}


@tool("free_throw", "Raises.", NoArgs)
def free_throw(args: NoArgs, ctx: Any) -> Any:
    raise RuntimeError("kaboom")


def demo_registry() -> Registry:
    registry = build_registry(plugins=False)
    registry.add(DEMO, lambda: [demo_echo, demo_fail])
    registry.add(FREE, lambda: [free_slow, free_item, free_broken, free_const, free_throw, free_block])
    return registry


def demo_upstream(seen: list[httpx.Request]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/echo":
            import json

            body = json.loads(request.content)
            return httpx.Response(200, json={"echo": body["text"], "tags": body["tags"]})
        return httpx.Response(404, json={"message": "Not Found"})

    return httpx.MockTransport(handler)


def item(ref: str | None, value: object = None, label: object = None) -> dict[str, Any]:
    """One execution of free_item (which returns the value it is given), optionally with a ref_id."""
    args: dict[str, Any] = {"value": value}
    if label is not None:
        args["label"] = label
    out: dict[str, Any] = {"tool": "free_item", "args": args}
    if ref is not None:
        out["ref_id"] = ref
    return out


async def run_execute(gw: Gateway, me: Principal, **args: object) -> dict[str, Any]:
    """execute_tools through the meta-tool handler (its schema rules included)."""
    from workbench.engine.meta import MetaTools

    out = await MetaTools(gw).call("execute_tools", me, dict(args))
    assert isinstance(out, dict)
    return out
