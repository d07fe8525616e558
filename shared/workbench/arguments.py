"""A tool's arguments declared without importing pydantic: what the built-in tools use, so that a
cold start that runs one (an instance's first `list_jots`) does not pay for pydantic's import,
which costs about as much as the rest of that first response together.

    LIST_JOTS = Arguments("ListJots", Arg("limit", int, default=50, ge=1, le=200))

    @tool("list_jots", "List your jots.", LIST_JOTS)
    def list_jots(args, ctx): ...  # args.limit

pydantic stays the authority. `Arguments.model` is the pydantic model the declaration stands for,
built on first use; its validation, its error messages and its JSON Schema are the tool's. Only
arguments that model would certainly accept unchanged skip it: every declared value of exactly
its type (a `str` for str, an `int` that is not a bool for int, a `bool` for bool; None where
the argument is optional), within its bounds, with every required one present. Anything else (a
"5" for an int, a missing or out-of-range value, any input that is not a plain object) goes
through the model. tests/unit/test_arguments.py holds the two side by side on the same inputs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["Arg", "Arguments", "Values"]

_REQUIRED: Any = object()
_TYPES = (str, int, bool)


class Arg:
    """One argument: its name, type (str, int or bool), default (absent: required), whether None
    is also accepted, and the bounds pydantic's Field takes (lengths for str, ge/le for int)."""

    __slots__ = ("default", "description", "ge", "le", "max_length", "min_length", "name", "optional", "type")

    def __init__(
        self,
        name: str,
        type: type,
        *,
        default: Any = _REQUIRED,
        optional: bool = False,
        description: str | None = None,
        min_length: int | None = None,
        max_length: int | None = None,
        ge: int | None = None,
        le: int | None = None,
    ) -> None:
        if type not in _TYPES:
            raise TypeError(f"Arg {name}: type must be str, int or bool")
        self.name, self.type, self.default, self.optional = name, type, default, optional
        self.description = description
        self.min_length, self.max_length, self.ge, self.le = min_length, max_length, ge, le

    def takes(self, value: Any) -> bool:
        """Whether pydantic would accept `value` for this argument unchanged."""
        if value is None:
            return self.optional
        if value.__class__ is not self.type:  # exactly: a bool is not an int here
            return False
        if isinstance(value, str):
            if not value.isascii():
                try:
                    value.encode()  # a lone surrogate is not a string pydantic accepts
                except UnicodeEncodeError:
                    return False
            if self.min_length is not None and len(value) < self.min_length:
                return False
            return self.max_length is None or len(value) <= self.max_length
        if isinstance(value, int) and not isinstance(value, bool):
            return (self.ge is None or value >= self.ge) and (self.le is None or value <= self.le)
        return True

    def field(self) -> tuple[Any, Any]:
        """(annotation, FieldInfo) for pydantic.create_model."""
        from pydantic import Field

        bounds: dict[str, Any] = {
            k: v
            for k, v in (
                ("description", self.description),
                ("min_length", self.min_length),
                ("max_length", self.max_length),
                ("ge", self.ge),
                ("le", self.le),
            )
            if v is not None
        }
        annotation: Any = self.type | None if self.optional else self.type
        default: Any = ... if self.default is _REQUIRED else self.default
        return annotation, Field(default, **bounds)


class Values:
    """The validated arguments, read as attributes (like the model instance they stand for)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)

    def __repr__(self) -> str:
        return f"Values({self.__dict__!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Values) and other.__dict__ == self.__dict__

    def model_dump(self) -> dict[str, Any]:
        return dict(self.__dict__)


class Arguments:
    """A tool's input: the declared arguments, and the pydantic model they stand for."""

    def __init__(self, name: str, *args: Arg) -> None:
        self.name = name
        self.args = args
        self._model: type[BaseModel] | None = None

    @property
    def model(self) -> type[BaseModel]:
        """The pydantic model of these arguments (built, and pydantic imported, on first use)."""
        if self._model is None:
            from pydantic import create_model

            fields: dict[str, Any] = {a.name: a.field() for a in self.args}
            self._model = create_model(self.name, **fields)
        return self._model

    def model_validate(self, data: Any) -> Any:
        """`Values` when the model would accept `data` unchanged, else the model's own answer
        (an instance, or its ValidationError)."""
        if data.__class__ is dict:
            values: dict[str, Any] = {}
            for arg in self.args:
                value = data.get(arg.name, _REQUIRED)
                if value is _REQUIRED:
                    if arg.default is _REQUIRED:
                        break  # missing: the model says so
                    value = arg.default
                elif not arg.takes(value):
                    break
                values[arg.name] = value
            else:
                return Values(values)
        return self.model.model_validate(data)

    def json_schema(self) -> dict[str, Any]:
        from workbench.engine.schema import portable_schema

        return portable_schema(self.model)

    def secret_names(self) -> frozenset[str]:
        """Arguments that carry a secret (writeOnly / format password in the schema): an `Arg` can
        declare neither, so none (Tool.secret_argument_names reads this, not the built schema)."""
        return frozenset()

    def argument_text(self) -> str:
        """Each argument's name and description, for search (as Tool.argument_text gives a model's)."""
        return " ".join(f"{a.name} {a.description or ''}" for a in self.args)
