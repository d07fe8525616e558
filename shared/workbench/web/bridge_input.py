"""The browser bridge's input events (click, text, key, scroll), validated by pydantic: a module of
their own so the portal's routes load without pydantic (the first input event imports it)."""

from __future__ import annotations

import functools
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

__all__ = ["Click", "InputEvent", "Key", "Scroll", "Text", "input_adapter"]


class Input(BaseModel):
    # Schemas are built on first use, not at import (cold start).
    model_config = ConfigDict(defer_build=True, extra="forbid")


class Click(Input):
    type: Literal["click"]
    x: float = Field(ge=0, le=1, description="fraction of the frame width")
    y: float = Field(ge=0, le=1, description="fraction of the frame height")


class Text(Input):
    type: Literal["text"]
    text: str = Field(min_length=1, max_length=2000)


class Key(Input):
    type: Literal["key"]
    key: str


class Scroll(Input):
    type: Literal["scroll"]
    x: float = Field(ge=0, le=1)
    y: float = Field(ge=0, le=1)
    deltaY: float = Field(ge=-5000, le=5000)  # wire name


InputEvent = Annotated[Click | Text | Key | Scroll, Field(discriminator="type")]


@functools.cache
def input_adapter() -> TypeAdapter[Click | Text | Key | Scroll]:
    # Built on first input, not at import: schema building is the costliest part of this module.
    return TypeAdapter(InputEvent)
