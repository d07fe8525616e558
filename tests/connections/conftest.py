from __future__ import annotations

from tests.support.aws import dynalite_endpoint, moto_endpoint

__all__ = ["dynalite_endpoint", "moto_endpoint"]
