"""A clock a test moves by hand, for anything that takes a `clock` callable (caches, expiries)."""

from __future__ import annotations

import time


class ManualClock:
    """Reads as wall time when made; moves only when the test says so."""

    def __init__(self, now: float | None = None) -> None:
        self.now = time.time() if now is None else now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
