"""Full garbage collections deferred while an untrusted document is parsed.

Parsing a large document allocates a million or more container objects (PyYAML's nodes, the built
value) that live until the parse ends. Python's collector then runs a full (generation 2)
collection over all of them from the parsing thread, and a full collection holds the GIL from start
to end: 35-90 ms for a 4 MB YAML document (measured, bench/hostile_inputs.py), during which the
event loop cannot run although the parse itself is off the loop. While any parse is running, full
collections wait (the third threshold is raised); young-generation collections go on as usual, and
the first full collection after the parse finds the parse's objects already freed. Parses are
bounded in time (yamltext's `max_seconds`), so the wait is too.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

__all__ = ["deferred_full_collections"]

_DEFERRED = 1_000_000  # young-generation collections before a full one: never, within a parse
_lock = threading.Lock()
_active = 0
_saved: tuple[int, int, int] | None = None


@contextlib.contextmanager
def deferred_full_collections() -> Iterator[None]:
    """No full collection starts while any caller is inside (thread-safe, nests)."""
    global _active, _saved
    with _lock:
        if _active == 0:
            _saved = gc.get_threshold()
            if _saved[0]:  # a threshold of 0 means collection is off: leave it so
                gc.set_threshold(_saved[0], _saved[1], _DEFERRED)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _saved is not None:
                if _saved[0]:
                    gc.set_threshold(*_saved)
                _saved = None
