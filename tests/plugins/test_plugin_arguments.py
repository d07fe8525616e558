"""A plugin tool whose arguments are declared without pydantic (workbench.tools.Arguments), through a
real gateway and a loopback API: it runs as the equivalent pydantic model's tool would (the same
arguments accepted, the same `Invalid arguments for <tool>: ...` errors word for word, the same
JSON Schema from get_tool_schema), and its first call imports no pydantic
(tests/aws/test_cold_start_imports.py holds that on the Lambda entry)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field, ValidationError
from workbench.composition import Gateway, build_registry
from workbench.engine.executor import validation_message
from workbench.engine.schema import portable_schema

from tests.support.gateways import make_gateway, principal_for
from tests.support.leanapi import connect_leanapi, make_manifest
from tests.support.slowapi import slow_upstream


# What a plugin author writes with pydantic for the same arguments as leanapi_get's (no docstring:
# a model's docstring becomes its schema's description, and an Arguments declaration has none).
class Get(BaseModel):
    path: str = Field(default="fast", min_length=1, max_length=40, description="What to read")
    repeat: int = Field(default=1, ge=1, le=3, description="How many times to read it")


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with slow_upstream(keep_alive=True) as url:
        yield url


def _gateway(tmp_path: Path, url: str) -> Gateway:
    registry = build_registry(plugins=False)
    registry.add(make_manifest(url), lambda: importlib.import_module("tests.support.leanapi.tools").TOOLS)
    gw = make_gateway(tmp_path, registry=registry, egress_allow="loopback")
    connect_leanapi(gw, principal_for(gw).user.id)
    return gw


async def _run(gw: Gateway, args: Any) -> dict[str, Any]:
    out = await gw.runs.execute(principal_for(gw), [{"tool": "leanapi_get", "args": args, "ref_id": None}])
    result: dict[str, Any] = out["results"][0]
    return result


def _twin(args: Any) -> dict[str, Any]:
    """What the engine answers for the pydantic twin: its error, or the call made with its values."""
    try:
        values = Get.model_validate(args)
    except ValidationError as exc:
        return {"error": f"Invalid arguments for leanapi_get: {validation_message(exc)}"}
    fast = {"fast": True}
    return {"result": fast if values.repeat == 1 else [fast] * values.repeat}


ARGS: list[Any] = [
    {},
    {"path": "fast"},
    {"path": "fast", "repeat": 2},
    {"repeat": 3, "other": "ignored"},
    {"repeat": "2"},  # lax mode: the model converts it
    {"repeat": 2.0},
    {"path": ""},
    {"path": "x" * 41},
    {"path": 5},
    {"path": None},
    {"repeat": 0},
    {"repeat": 4},
    {"repeat": True},
    {"repeat": "two"},
    {"path": "", "repeat": 9},
    [],
    "fast",
]


async def test_it_accepts_refuses_and_explains_as_the_pydantic_model_would(
    tmp_path: Path, upstream: str
) -> None:
    gw = _gateway(tmp_path, upstream)
    for args in ARGS:
        assert await _run(gw, args) == _twin(args), args
    assert await _run(gw, {"path": ""}) == {
        "error": "Invalid arguments for leanapi_get: path: String should have at least 1 character"
    }


def test_its_schema_is_the_pydantic_models(tmp_path: Path, upstream: str) -> None:
    gw = _gateway(tmp_path, upstream)
    tool = gw.registry.find("leanapi_get")
    assert tool is not None
    assert tool.json_schema() == portable_schema(Get)  # what get_tool_schema answers
    assert tool.argument_text() == " ".join(f"{n} {f.description}" for n, f in Get.model_fields.items())
