"""`ArgsModel`: the pydantic base class for a plugin's argument models, built when first used.

pydantic builds a model's validator and serializer when its class is defined (about half a
millisecond each, its plugin hook's import with the first): a tools module declaring 30 models
built 30 of them on a cold start whose first call needs one. An `ArgsModel` subclass is built the
first time it validates arguments or gives its JSON Schema (pydantic's `defer_build`), so a tool's
first call builds its own model only. Nothing else differs: what a model accepts, converts, refuses
and says, and the schema it publishes, are pydantic's (tests/plugins/test_shipped_schemas.py pins
what the shipped plugins publish).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["ArgsModel"]


class ArgsModel(BaseModel):
    """A pydantic `BaseModel` built on first use (its subclasses inherit that; they may add to
    `model_config`)."""

    model_config = ConfigDict(defer_build=True)
