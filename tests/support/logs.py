"""The engine's log lines as the one formatter writes them (workbench.observability.logs.JsonLines)."""

from __future__ import annotations

import json
import logging
from typing import Any

from workbench.observability.logs import JsonLines

_FORMAT = JsonLines()


def line(record: logging.LogRecord) -> dict[str, Any]:
    """The JSON line `record` becomes."""
    parsed: dict[str, Any] = json.loads(_FORMAT.format(record))
    return parsed


def text(record: logging.LogRecord) -> str:
    return _FORMAT.format(record)


def events(records: list[logging.LogRecord], event: str) -> list[dict[str, Any]]:
    """The lines of `records` that are the engine event `event`."""
    return [line(r) for r in records if (getattr(r, "_fields", None) or {}).get("event") == event]
