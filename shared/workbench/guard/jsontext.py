"""JSON in and out of the gateway.

In: `parse` is the one strict parser for every untrusted JSON body (MCP, REST, OAuth registration,
connect redeem, browser input). It refuses what `json.loads` lets through and what later breaks:
nesting deeper than `MAX_DEPTH` (checked on the text before parsing, so no RecursionError can
happen), NaN/Infinity (and numbers that overflow to them), lone UTF-16 surrogates in keys or
values (they cannot be encoded as UTF-8, so SQLite, logs and responses would fail on them), and
anything that is not UTF-8.

Out: `dumps` writes a response body that is always valid JSON and always encodable (non-finite
numbers become null and lone surrogates are escaped, as JavaScript's JSON.stringify does), and
`js_stringify` writes a value exactly as JSON.stringify would (compact, non-ASCII kept as is), for
the `{{step:…}}` refs that embed a non-string value in a string.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import math
import re
from typing import Any

from workbench.errors import InvalidInput

__all__ = [
    "MAX_DEPTH",
    "JsonRejected",
    "dumps",
    "escape_lone_surrogates",
    "finite",
    "js_stringify",
    "nesting_exceeds",
    "nesting_exceeds_within",
    "parse",
    "parse_body",
    "parse_paced",
    "replace_lone_surrogates",
]

MAX_DEPTH = 64

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKET_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")
_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]{0,9}")


class JsonRejected(InvalidInput, ValueError):
    """A body that is not strict JSON; the message says why, without echoing the body. A
    ValueError too, like json.JSONDecodeError, so it drops in where json.loads was caught."""


def _reject_constant(name: str) -> Any:
    raise JsonRejected(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise JsonRejected(f"the number {text[:32]} is out of range")
    return value


def _depth_exceeds_text(text: str, limit: int) -> bool:
    if text.count("[") + text.count("{") <= limit:
        return False  # cannot nest deeper than the number of openers
    skeleton = _NOT_BRACKET.sub("", _STRING.sub("", text))  # brackets inside strings do not nest
    return any(d > limit for d in itertools.accumulate(map(_BRACKET_STEP.__getitem__, skeleton)))


def _lone_surrogate(value: Any) -> str | None:
    """The first string (key or value) holding a lone surrogate, or None. Iterative: no recursion."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if _SURROGATE.search(node):
                return node
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return None


@functools.cache
def _decoder() -> json.JSONDecoder:
    """One strict decoder (json.loads with hooks would build a new one per call)."""
    return json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


def _text(raw: bytes | str) -> str:
    if isinstance(raw, bytes | bytearray | memoryview):
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonRejected("the body is not UTF-8") from exc
    return raw


def _refuse_lone_surrogates(text: str, value: Any) -> None:
    if _SURROGATE_ESCAPE.search(text) and (bad := _lone_surrogate(value)) is not None:
        code = _SURROGATE.search(bad)
        assert code is not None
        raise JsonRejected(f"a string contains the lone surrogate \\u{ord(code.group()):04x}")


def parse(raw: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value in `raw`, or JsonRejected."""
    text = _text(raw)
    if _depth_exceeds_text(text, max_depth):
        raise JsonRejected(f"JSON nested deeper than {max_depth} levels")
    try:
        value = _decoder().decode(text)
    except JsonRejected:
        raise
    except ValueError as exc:  # JSONDecodeError, and int strings over the digit limit
        raise JsonRejected(f"invalid JSON ({_short(exc)})") from exc
    _refuse_lone_surrogates(text, value)
    return value


# Request bodies larger than this are parsed by `parse_paced` on a thread (`parse_body`).
PACED_BYTES = 256 * 1024
_WS = re.compile(r"[ \t\n\r]*")


def _skip(text: str, i: int) -> int:
    """The position after the JSON whitespace at `i`."""
    m = _WS.match(text, i)
    return m.end() if m else i


async def parse_body(raw: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """`parse` for a request body on the event loop: a large one is parsed by `parse_paced` on a
    thread. `parse` is one C call over the whole text (with the depth check, another): for a 4 MB
    body of small values that holds the GIL, and so the loop, for 0.3-2 s."""
    if len(raw) <= PACED_BYTES:
        return parse(raw, max_depth=max_depth)
    return await asyncio.to_thread(parse_paced, raw, max_depth=max_depth)


def parse_paced(raw: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """`parse`, paced for a thread: arrays and objects are walked in Python, so the GIL changes hands
    every few milliseconds and the event loop runs; each string, number and literal is decoded by the
    same strict scanner; depth is counted while walking (no pass over the text first). The same value
    and the same refusals as `parse` (tests/limits/test_paced_json.py holds them side by side), the
    wording of a syntax error aside. No full garbage collection starts meanwhile (guard/gcdefer.py)."""
    from workbench.guard.gcdefer import deferred_full_collections

    text = _text(raw)
    with deferred_full_collections():
        value = _Paced(text, max_depth).document()
    _refuse_lone_surrogates(text, value)
    return value


class _Paced:
    def __init__(self, text: str, max_depth: int) -> None:
        self.text = text
        self.max_depth = max_depth
        self.scan: Any = _decoder().scan_once  # type: ignore[attr-defined]  # the C scanner json uses

    def document(self) -> Any:
        text = self.text
        try:
            value, end = self.value(_skip(text, 0), 0)
        except JsonRejected:
            raise
        except ValueError as exc:  # a scalar the strict scanner refused, or an int over the digit limit
            raise JsonRejected(f"invalid JSON ({_short(exc)})") from None
        end = _skip(text, end)
        if end != len(text):
            raise self.bad("Extra data", end)
        return value

    def bad(self, what: str, pos: int) -> JsonRejected:
        return JsonRejected(f"invalid JSON ({what}: char {pos})")

    def value(self, i: int, depth: int) -> tuple[Any, int]:
        text = self.text
        c = text[i : i + 1]
        if c != "[" and c != "{":
            try:
                return self.scan(text, i)  # type: ignore[no-any-return]
            except StopIteration:
                raise self.bad("Expecting value", i) from None
        if depth >= self.max_depth:
            raise JsonRejected(f"JSON nested deeper than {self.max_depth} levels")
        i = _skip(text, i + 1)
        if c == "[":
            items: list[Any] = []
            if text[i : i + 1] == "]":
                return items, i + 1
            while True:
                item, i = self.value(i, depth + 1)
                items.append(item)
                i = _skip(text, i)
                c = text[i : i + 1]
                if c == ",":
                    i = _skip(text, i + 1)
                elif c == "]":
                    return items, i + 1
                else:
                    raise self.bad("Expecting ',' delimiter", i)
        obj: dict[str, Any] = {}
        if text[i : i + 1] == "}":
            return obj, i + 1
        while True:
            if text[i : i + 1] != '"':
                raise self.bad("Expecting property name enclosed in double quotes", i)
            key, i = self.scan(text, i)
            i = _skip(text, i)
            if text[i : i + 1] != ":":
                raise self.bad("Expecting ':' delimiter", i)
            item, i = self.value(_skip(text, i + 1), depth + 1)
            obj[key] = item
            i = _skip(text, i)
            c = text[i : i + 1]
            if c == ",":
                i = _skip(text, i + 1)
            elif c == "}":
                return obj, i + 1
            else:
                raise self.bad("Expecting ',' delimiter", i)


def _short(exc: ValueError) -> str:
    text = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
    return text.split(" (", 1)[0] if len(text) > 120 else text


def nesting_exceeds_within(value: Any, limit: int, budget: int) -> bool | None:
    """`nesting_exceeds`, or None once more than `budget` containers were visited: the caller then
    runs `nesting_exceeds` off the event loop (a 4 MB body can hold a million containers)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    seen = 0
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list | tuple):
            seen += 1 + len(node)  # every child is looked at: counted before looking
            if seen > budget:
                return None
            depth += 1
            if depth > limit:
                return True
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth) for child in children if isinstance(child, dict | list | tuple))
    return False


def nesting_exceeds(value: Any, limit: int) -> bool:
    """Whether `value` nests dicts/lists more than `limit` levels deep (iterative, a level at a time:
    it allocates no object per container, so walking a large value on a thread starts no garbage
    collection over it)."""
    level = [value] if isinstance(value, dict | list | tuple) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below: list[Any] = []
        for node in level:
            for child in node.values() if isinstance(node, dict) else node:
                if isinstance(child, dict | list | tuple):
                    below.append(child)
        level = below
    return False


# -- out -------------------------------------------------------------------------------------------


def escape_lone_surrogates(text: str) -> str:
    """JSON text with each lone surrogate written as its \\uXXXX escape. In JSON text one can only
    sit inside a string, where the escape means the same; the text becomes encodable as UTF-8."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) if _SURROGATE.search(text) else text


def replace_lone_surrogates(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD, so it can be encoded as UTF-8 (HTML)."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def finite(value: Any) -> Any:
    """`value` with NaN and the infinities replaced by None, as JSON.stringify writes them (null)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def dumps(value: Any) -> str:
    """A response body: valid JSON, non-ASCII kept, encodable as UTF-8 whatever the value holds."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str, allow_nan=False)
    except ValueError:  # NaN or Infinity somewhere in an upstream result
        text = json.dumps(finite(value), ensure_ascii=False, default=str, allow_nan=False)
    return escape_lone_surrogates(text)


def _js_number(value: float) -> str:
    """Number::toString (ECMA-262 §6.1.6.1.20) from the shortest round-trip digits Python finds."""
    if not math.isfinite(value):
        return "null"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    mantissa, _, exp = repr(abs(value)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    n = len(whole) + int(exp or 0) - (len(whole + frac) - len((whole + frac).lstrip("0")))
    digits = digits.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + digits
    e = n - 1
    tail = f"e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + (digits if k == 1 else digits[0] + "." + digits[1:]) + tail


def _js_string(text: str) -> str:
    return escape_lone_surrogates(json.dumps(text, ensure_ascii=False))


def _js_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool):
        return json.dumps(key)
    if isinstance(key, float):
        return _js_number(key)
    return str(key)


def js_stringify(value: Any) -> str:
    """`value` as JavaScript's JSON.stringify(value) writes it.

    Compact separators, non-ASCII as is, lone surrogates escaped, integer-like keys first in
    ascending order (JavaScript's own property order), non-finite numbers as null, other values
    as their text."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _js_string(value)
    if isinstance(value, int):
        return str(value) if abs(value) < 10**21 else _js_number(float(value))
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(js_stringify(v) for v in value) + "]"
    if isinstance(value, dict):
        keyed = [(_js_key(k), v) for k, v in value.items()]
        index = sorted(
            ((k, v) for k, v in keyed if _ARRAY_INDEX.fullmatch(k) and int(k) < 2**32 - 1),
            key=lambda kv: int(kv[0]),
        )
        named = [(k, v) for k, v in keyed if not (_ARRAY_INDEX.fullmatch(k) and int(k) < 2**32 - 1)]
        return "{" + ",".join(f"{_js_string(k)}:{js_stringify(v)}" for k, v in [*index, *named]) + "}"
    return _js_string(str(value))
