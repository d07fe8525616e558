"""Log lines: one JSON object per line, the same shape locally and on Lambda.

Every line has the keys CloudWatch Logs Insights queries lean on, in this order::

    {"level": "INFO", "location": "execute:343", "message": "tool_execution",
     "timestamp": "2026-12-03T16:42:49.893Z", "service": "workbench",
     "correlation_id": "req-a99930aa4fe4",            # on Lambda: the API Gateway request id
     "event": "tool_execution", "user": "usr_…", "tool": "list_jots", …}   # the event's own fields

`location` is the caller's function and line (the place that called `log_event`, not a helper of
this module), and an engine event's fields are top-level keys, so `filter event = "tool_execution"
and success = 0` works in Logs Insights. `extra=` fields of an ordinary `logger.info(...)` are
top-level keys too; an exception adds `exception_name` and `exception`.

Why our own formatter and not the Powertools Logger (the design card's library): the Powertools
Logger costs 39 ms of cold-start CPU where this costs 3 (bench/library_cost.py; docs/deploy.md),
and this is all of it. tests/aws/test_log_lines.py keeps the Powertools
Logger beside it as the oracle: the same record through both, the same fields out.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable
from typing import Any

__all__ = [
    "CurrentStdout",
    "JsonLines",
    "configure_logging",
    "log_error",
    "log_event",
    "log_warning",
    "logger",
]

logger = logging.getLogger("workbench")

# Replaces the secret values it knows with "[REDACTED]" in a string (vault secrets): `log_event`
# applies it to every string of the event's fields, keys included, before any handler sees them.
Scrubber = Callable[[str], str]

# The LogRecord's own attributes: anything else on a record came in through `extra=` and is a field.
# log_event's own `_fields` is read on its own (below).
_RECORD_FIELDS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
    "message",
    "asctime",
    "_fields",
}
_BASE = ("level", "location", "message", "timestamp", "service", "correlation_id")


def _emit(level: int, event: str, scrub: Scrubber | None, fields: dict[str, Any]) -> None:
    if not logger.isEnabledFor(level):
        return
    values: dict[str, Any] = {"event": event, **fields}
    if scrub is not None:  # before the record exists: no handler ever sees the secret
        values = _scrubbed(values, scrub)
    # stacklevel 3: past this function and log_event/log_error, to the line that called them.
    logger.log(level, event, extra={"_fields": values}, stacklevel=3)


def _scrubbed(value: Any, scrub: Scrubber) -> Any:
    """`value` as its JSON text would read back (what `json.loads(json.dumps(value, default=str))`
    gives: tuples as lists, keys as strings, anything else as its str()), with every string, keys
    too, at any depth, through `scrub`; in one walk. tests/unit/test_log_scrub.py holds it to that
    round trip."""
    if isinstance(value, str):
        return scrub(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, dict):
        return {scrub(_key(k)): _scrubbed(v, scrub) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrubbed(v, scrub) for v in value]
    return scrub(str(value))


def _key(key: Any) -> str:
    """A dict key as json.dumps writes it."""
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool | int | float):
        return json.dumps(key)
    return str(key)


def log_event(event: str, scrub: Scrubber | None = None, **fields: Any) -> None:
    """One structured line at INFO: `event` is its message and its `event` key, `fields` its keys."""
    _emit(logging.INFO, event, scrub, fields)


def log_warning(event: str, **fields: Any) -> None:
    """One structured line at WARNING: something dropped or degraded that the caller survives."""
    _emit(logging.WARNING, event, None, fields)


def log_error(event: str, **fields: Any) -> None:
    """One structured line at ERROR: something an operator must see (and alarm on)."""
    _emit(logging.ERROR, event, None, fields)


class JsonLines(logging.Formatter):
    """The one formatter (see the module docstring). `correlation_id` is set per request on Lambda."""

    def __init__(self, service: str = "workbench") -> None:
        super().__init__()
        self.service = service
        self.correlation_id: str | None = None
        self._last_second: tuple[int, str] = (-1, "")

    def _second(self, created: float) -> str:
        """The timestamp up to its seconds (worked out once per second, not once per line)."""
        second = int(created)
        if self._last_second[0] != second:
            self._last_second = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
        return self._last_second[1]

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "level": record.levelname,
            "location": f"{record.funcName}:{record.lineno}",
            "message": record.getMessage(),
            "timestamp": f"{self._second(record.created)}.{int(record.msecs):03d}Z",
            "service": self.service,
        }
        if self.correlation_id:
            line["correlation_id"] = self.correlation_id
        fields = getattr(record, "_fields", None) or {}
        for key, value in fields.items():
            if key not in _BASE:
                line[key] = value
        attributes = vars(record)
        if attributes.keys() - _RECORD_FIELDS:  # `extra=` fields (a set difference: most records have none)
            for key, value in attributes.items():
                if key not in _RECORD_FIELDS and not key.startswith("_") and key not in _BASE:
                    line[key] = value
        if record.exc_info and record.exc_info[0] is not None:
            line["exception_name"] = record.exc_info[0].__name__
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, ensure_ascii=False)


class CurrentStdout(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever sys.stdout is now (Lambda: the log stream; tests: their capture)."""

    @property
    def stream(self) -> Any:
        return sys.stdout

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


class _CurrentStderr(CurrentStdout):
    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def configure_logging(level: int = logging.INFO, service: str = "workbench") -> None:
    """The local gateway's logging: the engine's lines, as JSON lines on stderr (once per process)."""
    if not logger.handlers:
        handler = _CurrentStderr()
        handler.setFormatter(JsonLines(service))
        logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
