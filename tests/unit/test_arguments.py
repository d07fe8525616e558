"""workbench.arguments against pydantic, its oracle: the built-in jots tools' arguments declared
without pydantic must accept, refuse, explain and describe exactly what their pydantic models did
(the models below are the ones they replaced, kept as they were)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field, ValidationError
from workbench.arguments import Arg, Arguments, Values
from workbench.builtin import jots
from workbench.engine.schema import portable_schema
from workbench.tools import Tool


class CreateJot(BaseModel):
    title: str = Field(min_length=1, max_length=200, description="Short title")
    body: str = Field(default="", max_length=100_000, description="Markdown text")
    shared: bool = Field(default=False, description="Also create a share link anyone can open")


class JotId(BaseModel):
    id: str = Field(description="Jot id, as create_jot or list_jots returns it")


class ListJots(BaseModel):
    limit: int = Field(default=50, ge=1, le=200)


class UpdateJot(BaseModel):
    id: str
    title: str | None = Field(default=None, min_length=1, max_length=200)
    body: str | None = Field(default=None, max_length=100_000)
    shared: bool | None = Field(
        default=None, description="true: make (or keep) a share link; false: revoke it"
    )


class SearchJots(BaseModel):
    query: str = Field(min_length=1, description="Words to look for in titles and bodies")
    limit: int = Field(default=20, ge=1, le=100)


PAIRS = [
    (jots.CreateJot, CreateJot),
    (jots.JotId, JotId),
    (jots.ListJots, ListJots),
    (jots.UpdateJot, UpdateJot),
    (jots.SearchJots, SearchJots),
]

# Values of every kind an MCP client can send (JSON), and the edges of every bound.
VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -1,
    20,
    50,
    100,
    101,
    200,
    201,
    10**30,
    1.0,
    2.5,
    "",
    "x",
    "5",
    "true",
    "a" * 200,
    "a" * 201,
    "é" * 200,
    "é" * 201,
    "\ud800",
    "ok \U0001f600",
    "b" * 100_000,
    "b" * 100_001,
    [],
    {},
    ["x"],
]
NAMES = ["id", "title", "body", "shared", "limit", "query", "extra"]


def _inputs() -> list[Any]:
    cases: list[Any] = [{}, None, [], "x", 5, {"id": "j", "title": "t", "query": "q"}]
    for name in NAMES:
        for value in VALUES:
            cases.append({name: value})
            cases.append({"id": "jot_1", "title": "T", "query": "q", name: value})
    return cases


def _outcome(model: Any, data: Any) -> tuple[str, Any]:
    try:
        got = model.model_validate(data)
    except ValidationError as exc:
        return "refused", exc.errors(include_url=False)
    return "accepted", got.model_dump()


@pytest.mark.parametrize(("declared", "oracle"), PAIRS, ids=[p[1].__name__ for p in PAIRS])
def test_the_same_inputs_are_accepted_and_refused_alike(declared: Arguments, oracle: type[BaseModel]) -> None:
    for data in _inputs():
        assert _outcome(declared, data) == _outcome(oracle, data), data


@pytest.mark.parametrize(("declared", "oracle"), PAIRS, ids=[p[1].__name__ for p in PAIRS])
def test_the_schema_and_search_text_are_the_models(declared: Arguments, oracle: type[BaseModel]) -> None:
    assert declared.json_schema() == portable_schema(oracle)
    oracle_text = " ".join(f"{n} {f.description or ''}" for n, f in oracle.model_fields.items())
    assert declared.argument_text() == oracle_text
    tool = Tool(name="t", description="", fn=lambda args: None, input_model=declared)
    assert (
        tool.secret_argument_names()
        == Tool(name="t", description="", fn=lambda args: None, input_model=oracle).secret_argument_names()
    )


def test_exactly_typed_arguments_skip_the_model_and_others_go_through_it() -> None:
    limit = Arguments("Limit", Arg("limit", int, default=50, ge=1, le=200))
    assert limit.model_validate({}) == Values({"limit": 50})
    assert limit.model_validate({"limit": 7, "other": 1}) == Values({"limit": 7})
    coerced = limit.model_validate({"limit": "7"})  # pydantic's lax mode decides: the model answers
    assert isinstance(coerced, BaseModel) and coerced.limit == 7
    assert isinstance(limit.model_validate({"limit": True}), BaseModel)  # a bool is not exactly an int
    with pytest.raises(ValidationError):
        limit.model_validate({"limit": 0})
    with pytest.raises(TypeError):
        Arg("when", float)
