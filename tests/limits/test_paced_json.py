"""jsontext.parse_paced (large request bodies, parsed on a thread so the event loop runs) against
jsontext.parse: the same value for the same text, the same refusals."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from workbench.guard.jsontext import PACED_BYTES, JsonRejected, parse, parse_body, parse_paced

_rng = random.Random(20261203)


def _value(depth: int = 0) -> Any:
    kind = _rng.random()
    if depth > 5 or kind < 0.45:
        return _rng.choice(
            [
                0,
                -1,
                10**30,
                1.5e300,
                -0.0,
                3.25,
                "",
                'a"b\\c\n\u00e9\U0001f600',
                "\u2028",
                True,
                False,
                None,
                "x" * 40,
            ]
        )
    if kind < 0.75:
        return [_value(depth + 1) for _ in range(_rng.randint(0, 6))]
    return {
        _rng.choice(["a", "b", "é", "", 'k"q']) + str(i): _value(depth + 1) for i in range(_rng.randint(0, 6))
    }


@pytest.mark.parametrize("n", range(300))
def test_the_same_value_as_parse(n: int) -> None:
    value = _value()
    for text in (
        json.dumps(value),
        json.dumps(value, indent=2),
        json.dumps(value, ensure_ascii=False, separators=(",", ":")),
        " \n" + json.dumps(value) + "\t ",
    ):
        assert parse_paced(text) == parse(text)
        assert parse_paced(text.encode()) == parse(text.encode())


BAD = [
    "", " ", "[", "[1,]", '{"a":1,}', '{"a" 1}', "{1:2}", "[1 2]", "NaN", "[Infinity]", "[-Infinity]",
    "1e999", "[1e400]", "tru", "[1]]", '{"a":1}x', "01", "[01]", '"abc', "[" * 65 + "]" * 65,
    '{"a":' * 65 + "1" + "}" * 65, '["\\x"]', "[1,,2]", "{,}", "-", "[.5]", "[1.]", '["\\ud800"]',
    '{"\\udfff": 1}', "[" + "9" * 5000 + "]",
]  # fmt: skip


@pytest.mark.parametrize("text", BAD)
def test_the_same_refusals_as_parse(text: str) -> None:
    with pytest.raises(JsonRejected):
        parse(text)
    with pytest.raises(JsonRejected):
        parse_paced(text)


def test_depth_up_to_the_limit_is_kept_and_bytes_must_be_utf8() -> None:
    deep = "[" * 64 + "]" * 64
    assert parse_paced(deep) == parse(deep)
    assert parse_paced('{"a":1,"a":2}') == {"a": 2}
    with pytest.raises(JsonRejected, match="not UTF-8"):
        parse_paced(b'["\xff"]')


async def test_a_large_body_is_parsed_paced_and_a_small_one_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import workbench.guard.jsontext as jsontext

    used: list[str] = []
    real = jsontext.parse_paced
    monkeypatch.setattr(jsontext, "parse_paced", lambda raw, **kw: used.append("paced") or real(raw, **kw))
    small = json.dumps({"a": [1, 2]}).encode()
    large = json.dumps({"a": list(range(PACED_BYTES // 4))}).encode()
    assert await parse_body(small) == {"a": [1, 2]}
    assert used == []
    assert await parse_body(large) == json.loads(large)
    assert used == ["paced"]
