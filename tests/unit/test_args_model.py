"""workbench.models against pydantic, its oracle.

Two oracles: every shipped plugin tool's own pydantic model (what `Model.model()` builds from the
declaration; tests/plugins/test_shipped_schemas.py pins that it publishes what the pydantic classes
the plugins declared before did), and pydantic models written here, independently, twins of
declarations covering every kind the fast check reads. On the same inputs, what the fast check
accepts the oracle accepts and holds the same values; everything else is the oracle's answer.
"""

from __future__ import annotations

import random
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator
from pydantic import Field as PydanticField
from workbench.composition import build_registry
from workbench.engine.schema import portable_schema
from workbench.models import ArgsModel, Field, _fast
from workbench.tools import Tool

# Values of every kind an MCP client can send (JSON), the edges of the bounds below, and the
# strings pydantic refuses or converts.
SCALARS: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -1,
    3,
    100,
    101,
    10**30,
    1.0,
    2.5,
    float("nan"),
    "",
    "x",
    "5",
    "true",
    "open",
    "all",
    "OPEN",
    "a" * 8,
    "a" * 9,
    "é" * 8,
    "\ud800",
    "ok \U0001f600",
    "2024-01-01",
    "2024-01-01\n",
    "https://x.test",
]
CONTAINERS: list[Any] = [
    [],
    ["x"],
    ["x", "y"],
    ["x", 1],
    ["x", None],
    ["\ud800"],
    ["open", "closed"],
    ("x",),
    {},
    {"a": "b"},
    {"a": 1},
    {"a": None},
    {"a": {"b": [1]}},
    {1: "b"},
    {"\ud800": "b"},
    {"q": "v", "n": "1"},
]


def _values(rng: random.Random) -> Any:
    return rng.choice(SCALARS + CONTAINERS)


def _inputs(fields: list[str], rng: random.Random, n: int) -> list[Any]:
    """Argument objects: each field absent or any value, plus a stranger key now and then, and a
    few inputs that are no object at all."""
    out: list[Any] = [None, [], "x", 1, {}]
    for _ in range(n):
        data = {name: _values(rng) for name in fields if rng.random() < 0.7}
        if rng.random() < 0.1:
            data["stranger"] = _values(rng)
        out.append(data)
    return out


def _agree(declared: type[ArgsModel], oracle: type[BaseModel], data: Any) -> bool:
    """Whether the declaration answers `data` as the oracle does; True when its fast check took it."""
    fast = _fast(declared, data)
    try:
        expected = oracle.model_validate(data).model_dump()
    except ValidationError as refused:
        assert fast is None, f"{declared.__name__}: fast check took {data!r}, which the model refuses"
        with pytest.raises(ValidationError) as ours:
            declared.model_validate(data)
        assert _said(ours.value) == _said(refused)
        return False
    if fast is not None:
        assert _same(fast, expected), (
            f"{declared.__name__}: {data!r} -> {fast!r}, the model holds {expected!r}"
        )
    got = declared.model_validate(data)
    assert type(got) is declared
    assert _same(got.model_dump(), expected), f"{declared.__name__}: {data!r}"
    return fast is not None


def _said(error: ValidationError) -> list[tuple[Any, ...]]:
    """What a refusal says (a twin's model names end in "Twin", by design)."""
    return [(e["type"], e["loc"], e["msg"].replace("Twin", "")) for e in error.errors()]


def _same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (1 is not 1.0 nor True here), NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and a != a:
        return b != b
    return bool(a == b)


# -- every shipped plugin tool, against its own model ------------------------------------------------


def _shipped() -> list[Tool]:
    registry = build_registry()
    tools = [
        t
        for m in registry.manifests()
        if not m.builtin
        for t in registry.tools_of(m.name).values()
        if isinstance(t.input_model, type) and issubclass(t.input_model, ArgsModel)
    ]
    assert len(tools) > 250
    return tools


def test_every_shipped_declaration_answers_as_its_model_does() -> None:
    rng = random.Random(24)
    fast = total = 0
    for tool in _shipped():
        model = tool.input_model
        assert isinstance(model, type) and issubclass(model, ArgsModel)
        oracle = model.model()
        fields = list(oracle.model_fields)
        # Valid calls as the schema describes them: each field's default, or one value it names.
        for data in _inputs(fields, rng, 30) + [
            _plausible(oracle.model_json_schema(), rng) for _ in range(10)
        ]:
            fast += _agree(model, oracle, data)
            total += 1
    assert fast > total // 10  # the fast check is exercised, not only the model


def _plausible(schema: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """An argument object the schema's own examples make likely to pass: enums' values, strings
    within bounds, integers within bounds."""
    out: dict[str, Any] = {}
    for name, prop in schema.get("properties", {}).items():
        kinds = prop.get("anyOf", [prop])
        kind = rng.choice(kinds)
        if "enum" in kind:
            out[name] = rng.choice(kind["enum"])
        elif kind.get("type") == "string":
            out[name] = "x" * max(kind.get("minLength", 1), 1)
        elif kind.get("type") == "integer":
            out[name] = kind.get("minimum", kind.get("maximum", 1))
        elif kind.get("type") == "boolean":
            out[name] = rng.random() < 0.5
        elif kind.get("type") == "array" and kind.get("items", {}).get("type") == "string":
            out[name] = ["x"]
        elif kind.get("type") == "null":
            out[name] = None
    return out


# -- declarations of every kind, against twins written here ------------------------------------------


class Kinds(ArgsModel):
    """Every kind the fast check reads."""

    name: str = Field(min_length=1, max_length=8, description="A name")
    count: int = Field(default=3, ge=0, le=100)
    flag: bool = False
    maybe: str | None = None
    state: Literal["open", "closed", "all"] = "open"
    level: Literal[1, 2, True] | None = None
    tags: list[str] = Field(default_factory=lambda: ["a"], max_length=2)
    labels: list[Literal["open", "closed"]] | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
    headers: dict[str, str] | None = None
    anything: Any = None
    date: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}$")
    seen: list[str] = []  # noqa: RUF012 - a mutable default, which pydantic copies


class KindsTwin(BaseModel):
    """Every kind the fast check reads."""

    name: str = PydanticField(min_length=1, max_length=8, description="A name")
    count: int = PydanticField(default=3, ge=0, le=100)
    flag: bool = False
    maybe: str | None = None
    state: Literal["open", "closed", "all"] = "open"
    level: Literal[1, 2, True] | None = None
    tags: list[str] = PydanticField(default_factory=lambda: ["a"], max_length=2)
    labels: list[Literal["open", "closed"]] | None = None
    extra: dict[str, Any] = PydanticField(default_factory=dict)
    headers: dict[str, str] | None = None
    anything: Any = None
    date: str | None = PydanticField(default=None, pattern=r"^\d{4}-\d{2}-\d{2}$")
    seen: list[str] = []


class Cell(ArgsModel):
    value: str | int


class Row(ArgsModel):
    """Kinds only the model reads: a nested model, a union, a float, a tuple."""

    cells: list[Cell]
    ratio: float = 1.0
    pair: tuple[str, int] | None = None

    @property
    def width(self) -> int:
        return len(self.cells)


class CellTwin(BaseModel):
    value: str | int


class RowTwin(BaseModel):
    """Kinds only the model reads: a nested model, a union, a float, a tuple."""

    cells: list[CellTwin]
    ratio: float = 1.0
    pair: tuple[str, int] | None = None


class Base(ArgsModel):
    owner: str = Field(description="Owner")
    limit: int = Field(default=30, ge=1, le=100, description="Page size")


class Derived(Base):
    """A subclass: its fields after its base's, a base field given a new default."""

    repo: str
    limit: int = Field(default=10, ge=1, le=50, description="Smaller pages")


class BaseTwin(BaseModel):
    owner: str = PydanticField(description="Owner")
    limit: int = PydanticField(default=30, ge=1, le=100, description="Page size")


class DerivedTwin(BaseTwin):
    """A subclass: its fields after its base's, a base field given a new default."""

    repo: str
    limit: int = PydanticField(default=10, ge=1, le=50, description="Smaller pages")


class Configured(ArgsModel):
    """A model_config and a validator: only the model can tell what it accepts."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)
    name: str
    state: Literal["open", "closed", "all"] = "open"

    @field_validator("name")
    @classmethod
    def shout(cls, value: str) -> str:
        return value.upper()


class ConfiguredTwin(BaseModel):
    """A model_config and a validator: only the model can tell what it accepts."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)
    name: str
    state: Literal["open", "closed", "all"] = "open"

    @field_validator("name")
    @classmethod
    def shout(cls, value: str) -> str:
        return value.upper()


TWINS = [
    (Kinds, KindsTwin),
    (Row, RowTwin),
    (Derived, DerivedTwin),
    (Base, BaseTwin),
    (Cell, CellTwin),
    (Configured, ConfiguredTwin),
]


@pytest.mark.parametrize(("declared", "twin"), TWINS, ids=lambda c: c.__name__)
def test_a_declaration_accepts_refuses_and_says_what_its_twin_does(
    declared: type[ArgsModel], twin: type[BaseModel]
) -> None:
    rng = random.Random(declared.__name__)
    fields = list(twin.model_fields)
    for data in _inputs(fields, rng, 3000):
        _agree(declared, twin, data)


@pytest.mark.parametrize(("declared", "twin"), TWINS, ids=lambda c: c.__name__)
def test_a_declaration_publishes_its_twins_schema_and_search_text(
    declared: type[ArgsModel], twin: type[BaseModel]
) -> None:
    assert portable_schema(declared.model()) == portable_schema(twin)
    ours, theirs = Tool("t", "", lambda a: a, declared), Tool("t", "", lambda a: a, twin)
    assert ours.json_schema() == theirs.json_schema()
    assert ours.argument_text() == theirs.argument_text()
    assert ours.secret_argument_names() == theirs.secret_argument_names()


def test_the_fast_check_takes_plain_calls_and_leaves_conversions_to_the_model() -> None:
    assert _fast(Kinds, {"name": "ab", "state": "all", "tags": ["x"], "extra": {"k": [1]}}) == {
        "name": "ab",
        "count": 3,
        "flag": False,
        "maybe": None,
        "state": "all",
        "level": None,
        "tags": ["x"],
        "labels": None,
        "extra": {"k": [1]},
        "headers": None,
        "anything": None,
        "date": None,
        "seen": [],
    }
    for converted in (
        {"name": "ab", "count": "5"},
        {"name": "ab", "count": True},
        {"name": "ab", "date": "2024-01-01"},
    ):
        assert _fast(Kinds, converted) is None
    assert Kinds.model_validate({"name": "ab", "count": "5"}).count == 5
    assert _fast(Row, {"cells": []}) is None  # a nested model: the model's
    row = Row.model_validate({"cells": [{"value": "a"}, {"value": 2}], "pair": ["x", "3"]})
    assert type(row) is Row and type(row.cells[0]) is Cell and row.width == 2
    assert row.pair == ("x", 3)
    assert row.model_dump() == {"cells": [{"value": "a"}, {"value": 2}], "ratio": 1.0, "pair": ("x", 3)}


def test_the_fast_check_still_takes_plain_calls_once_the_model_is_built() -> None:
    class Fresh(ArgsModel):
        name: str

    class FreshChild(Fresh):
        count: int = 1

    FreshChild.model()  # the model first, the declaration read after
    assert _fast(FreshChild, {"name": "a"}) == {"name": "a", "count": 1}
    assert _fast(Fresh, {"name": "a"}) == {"name": "a"}


def test_a_model_config_or_a_validator_leaves_every_input_to_the_model() -> None:
    assert _fast(Configured, {"name": "ab"}) is None
    assert Configured.model_validate({"name": " ab "}).name == "AB"
    with pytest.raises(ValidationError):
        Configured.model_validate({"name": "ab", "stranger": 1})


def test_values_are_the_callers_copies_as_pydantics_are() -> None:
    tags, extra = ["x"], {"k": "v"}
    got = Kinds.model_validate({"name": "ab", "tags": tags, "extra": extra})
    got.tags.append("y")
    got.extra["k2"] = "w"
    assert tags == ["x"] and extra == {"k": "v"}
    first, second = Kinds.model_validate({"name": "a"}), Kinds.model_validate({"name": "b"})
    first.tags.append("z")
    first.extra["z"] = 1
    first.seen.append("z")
    assert second.tags == ["a"] and second.extra == {} and second.seen == []


def test_an_instance_dumps_copies_and_compares_as_a_pydantic_model_does() -> None:
    data = {"name": "ab", "maybe": "m", "tags": ["x"]}
    ours, twin = Kinds.model_validate(data), KindsTwin.model_validate(data)
    assert ours.model_dump() == twin.model_dump()
    for include, exclude in ((None, {"tags"}), ({"name", "maybe"}, None), ({"name", "tags"}, {"tags"})):
        assert ours.model_dump(include=include, exclude=exclude) == twin.model_dump(
            include=include, exclude=exclude
        )
    assert ours.model_dump(exclude_none=True) == twin.model_dump(exclude_none=True)
    assert ours.model_dump(mode="json") == twin.model_dump(mode="json")
    changed = ours.model_copy(update={"maybe": None})
    assert changed.maybe is None and ours.maybe == "m" and type(changed) is Kinds
    assert ours == Kinds(**data) and ours != changed
    assert repr(Base(owner="o")) == "Base(owner='o', limit=30)"
    with pytest.raises(ValidationError):
        Base(limit=5)
    with pytest.raises(TypeError):
        hash(ours)


def test_pydantics_own_field_in_a_declaration_is_read_by_the_model() -> None:
    class Mixed(ArgsModel):
        key: str = PydanticField(description="The key", json_schema_extra={"writeOnly": True})
        note: str = Field(default="", description="A note")

    tool = Tool("t", "", lambda a: a, Mixed)
    assert _fast(Mixed, {"key": "k"}) is None
    assert Mixed.model_validate({"key": "k"}).key == "k"
    assert tool.argument_text() == "key The key note A note"
    assert tool.secret_argument_names() == frozenset({"key"})


def test_a_secret_marked_with_json_schema_extra_is_known_without_the_fast_check_missing_it() -> None:
    class Login(ArgsModel):
        user: str
        password: str = Field(json_schema_extra={"writeOnly": True})

    assert Tool("t", "", lambda a: a, Login).secret_argument_names() == frozenset({"password"})
    assert Tool("t", "", lambda a: a, Base).secret_argument_names() == frozenset()
