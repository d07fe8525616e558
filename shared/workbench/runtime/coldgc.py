"""No garbage collection during a Lambda instance's cold start (its imports and first event).

Nearly everything a cold start allocates (modules, classes, the gateway, a plugin's pydantic models)
lives as long as the instance, so the collector frees little, yet each collection it starts re-scans
the growing heap: about a fifth of a first request's CPU (bench/cold_start.py, plugin http: 381 ->
300 ms CPU with the collector off, list_jots 206 -> 156). So collection waits from the runtime
package's import (workbench/runtime/__init__.py, on Lambda only) until lambda_handler has answered
the first event (the migration hook resumes it as its event starts); then what exists is frozen (`gc.freeze`: kept out of every later collection, so a warm request's
full collection no longer walks the instance's modules and classes either) and the usual
thresholds come back.

Bounds: past `_PAUSED_LIMIT` objects the collector runs as usual even mid-cold-start; a cold start
that grew past `_FREEZE_WITHOUT_COLLECTING` objects (a normal one: 30k-60k, of which a few hundred
unreachable) is collected once before freezing, so what is frozen holds no large garbage.
"""

from __future__ import annotations

import gc

__all__ = ["pause", "resume"]

_PAUSED_LIMIT = 1_000_000
_FREEZE_WITHOUT_COLLECTING = 150_000
_saved: tuple[int, int, int] | None = None


def pause() -> None:
    """Hold automatic collection back (not when it is off: that choice is not ours to undo)."""
    global _saved
    if _saved is None and gc.isenabled():
        _saved = gc.get_threshold()
        gc.set_threshold(_PAUSED_LIMIT, _saved[1], _saved[2])


def resume() -> None:
    """Freeze what the cold start built, and collect as before `pause` (a no-op afterwards)."""
    global _saved
    if _saved is None:
        return
    if gc.get_count()[0] > _FREEZE_WITHOUT_COLLECTING:
        gc.collect()
    gc.freeze()
    gc.set_threshold(*_saved)
    _saved = None
