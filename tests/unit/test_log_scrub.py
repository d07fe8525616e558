"""log_event's scrubbing walk against its oracle, the JSON round trip it replaced
(`json.loads(json.dumps(values, default=str))`, then every string through the scrubber)."""

from __future__ import annotations

import datetime
import decimal
import enum
import json
import math
import uuid
from typing import Any

import pytest
from workbench.observability.logs import _scrubbed


class Color(enum.IntEnum):
    RED = 1


class Mode(enum.StrEnum):
    FAST = "fast-s3cret"


def _scrub(text: str) -> str:
    return text.replace("s3cret", "[REDACTED]")


def _oracle(value: Any) -> Any:
    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return _scrub(v)
        if isinstance(v, dict):
            return {_scrub(k): walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(json.loads(json.dumps(value, default=str)))


VALUES: list[Any] = [
    {"event": "tool_execution", "user": "usr_1", "error": "token s3cret leaked", "duration_ms": 0.123},
    {"success": True, "n": 3, "none": None, "nested": {"a": ["x-s3cret", ("t", 1), {"s3cret-key": 2}]}},
    {1: "int key", 2.5: "float key", None: "none key"},
    {True: "bool key", False: "other"},
    {"when": datetime.datetime(2026, 12, 3, 19, 0), "id": uuid.UUID(int=7), "d": decimal.Decimal("1.5")},
    {"color": Color.RED, "mode": Mode.FAST, "big": 10**30, "neg": -0.0},
    {"bytes": b"raw s3cret", "set": {"one"}, "obj": ValueError("s3cret in an error")},
    {"deep": [[[["s3cret"]]]], "empty": {}, "empty_list": [], "tuple": ()},
    "plain s3cret string",
    ["top", "level", "s3cret"],
]


@pytest.mark.parametrize("value", VALUES)
def test_the_walk_reads_as_the_json_round_trip(value: Any) -> None:
    assert _scrubbed(value, _scrub) == _oracle(value)
    # and it serialises to the same line
    assert json.dumps(_scrubbed(value, _scrub), default=str) == json.dumps(_oracle(value), default=str)


def test_special_floats_as_the_round_trip() -> None:
    for f in (math.inf, -math.inf):
        assert _scrubbed({"f": f}, _scrub) == _oracle({"f": f})
    nan = _scrubbed({"f": math.nan}, _scrub)["f"]
    assert math.isnan(nan) and math.isnan(_oracle({"f": math.nan})["f"])
