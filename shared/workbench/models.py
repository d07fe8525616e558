"""`ArgsModel` and `Field`: a plugin's argument models, declared as pydantic models are, with
pydantic imported only when a call needs it.

    class GetRepo(ArgsModel):
        owner: str = Field(description="Repository owner")
        state: Literal["open", "closed", "all"] = "open"

pydantic's import is the largest part of a plugin tool's first call on a cold start (60-75 ms of
CPU, bench/cold_start.py: `plugin http (pydantic BaseModel)` beside `plugin http`), more than the
HTTP client, the credential's decryption and the egress checks together. An `ArgsModel` class is a
declaration: its fields, their annotations and their `Field`s, read when the class is first used.

pydantic stays the authority. `Model.model()` is the pydantic model the declaration stands for
(same name, docstring, fields, bases), built on first use: its validation, its error messages and
its JSON Schema are the tool's. Only arguments that model would certainly accept unchanged skip it:
a plain dict whose every declared value is exactly of its type (a `str` for str, an `int` that is
not a bool for int, a listed `str` for a Literal, a list of such for a list, a dict of `str` keys
for a dict) within its bounds, with every required one present. Anything else (a "5" for an int, a
missing or out-of-range value, a `pattern`, a nested model, a keyword `Field` takes that is not
read here) goes through the model. tests/unit/test_args_model.py holds the two side by side on the
same inputs; tests/plugins/test_shipped_schemas.py pins what the shipped plugins publish.

Either way the tool receives an instance of its own class (attributes, properties, `model_dump`).
"""

from __future__ import annotations

import copy
import inspect
import sys
import types
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["ArgsModel", "Field", "secret_names"]

_REQUIRED: Any = object()
_SKIP: Any = object()  # a value the fast check does not accept: the model decides
# Field keywords that change what is published or said, never what is accepted.
_DESCRIBING = frozenset({"description", "title", "examples", "json_schema_extra"})
_BOUNDS = frozenset({"ge", "le", "min_length", "max_length", "pattern"})
_SCALARS = (str, int, bool)
_IMMUTABLE_DEFAULTS = (type(None), str, int, bool, float)
_OWN = frozenset({"_declaration", "_pydantic_model"})  # what this module keeps on a class


class FieldSpec:
    """What `Field(...)` was given: handed to pydantic's `Field` when the model is built."""

    __slots__ = ("args", "kwargs")

    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.args, self.kwargs = args, kwargs

    @property
    def default(self) -> Any:
        default = self.args[0] if self.args else self.kwargs.get("default", _REQUIRED)
        return _REQUIRED if default is ... else default

    def pydantic(self) -> Any:
        from pydantic import Field as PydanticField

        return PydanticField(*self.args, **self.kwargs)


def Field(*args: Any, **kwargs: Any) -> Any:
    """pydantic's `Field`, with the same arguments, read when the model is built."""
    return FieldSpec(args, kwargs)


class _Check:
    """One field's fast check: `take(value)` is the value the model would hold, or _SKIP."""

    __slots__ = ("bounds", "default", "factory", "kind", "name", "nullable", "parts")

    def __init__(self, name: str) -> None:
        self.name = name
        self.default: Any = _REQUIRED
        self.factory: Callable[[], Any] | None = None
        self.nullable = False
        self.kind: Any = None  # str, int, bool, Any, frozenset (a Literal's values), list, dict
        self.parts: _Check | None = None  # a list's items, a dict's values
        self.bounds: dict[str, Any] = {}

    def take(self, value: Any) -> Any:
        kind = self.kind
        if kind is Any:
            return value
        if value is None:
            return None if self.nullable else _SKIP
        if kind is list or kind is dict:
            return self._container(value)
        if isinstance(kind, frozenset):
            return value if _scalar(value) and (value.__class__, value) in kind else _SKIP
        if value.__class__ is not kind:  # exactly: a bool is not an int, a str subclass not a str
            return _SKIP
        if kind is str:
            if not _encodable(value) or "pattern" in self.bounds or not self._length_ok(len(value)):
                return _SKIP
        elif kind is int:
            ge, le = self.bounds.get("ge"), self.bounds.get("le")
            if (ge is not None and value < ge) or (le is not None and value > le):
                return _SKIP
        return value

    def _container(self, value: Any) -> Any:
        if value.__class__ is not self.kind or not self._length_ok(len(value)):
            return _SKIP
        items = self.parts
        assert items is not None
        if self.kind is list:
            out = [items.take(v) for v in value]
            return _SKIP if any(v is _SKIP for v in out) else out
        taken = {}
        for key, v in value.items():
            if key.__class__ is not str or not _encodable(key):
                return _SKIP
            v = items.take(v)
            if v is _SKIP:
                return _SKIP
            taken[key] = v
        return taken

    def _length_ok(self, length: int) -> bool:
        low, high = self.bounds.get("min_length"), self.bounds.get("max_length")
        return (low is None or length >= low) and (high is None or length <= high)

    def missing(self) -> Any:
        """The value of an absent argument (pydantic's: defaults are not validated; a mutable one
        is copied; a factory is called), or _SKIP when it is required or cannot be told here."""
        if self.factory is not None:
            try:
                return self.factory()
            except TypeError:  # a factory taking the validated data: the model's to call
                return _SKIP
        default = self.default
        if default is _REQUIRED:
            return _SKIP
        if default.__class__ in _IMMUTABLE_DEFAULTS:
            return default
        if default.__class__ in (list, dict) and not default:
            return default.__class__()
        return _SKIP


def _scalar(value: Any) -> bool:
    return value.__class__ in _SCALARS and (value.__class__ is not str or _encodable(value))


def _encodable(text: str) -> bool:
    """Whether pydantic takes this str: not one with a lone surrogate."""
    if text.isascii():
        return True
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


class _Declaration:
    """A class's fields as pydantic reads them: every annotated name of the class and its bases
    (the bases' first, a redeclared one where its base had it), with the class attribute that is
    its default or `Field`."""

    __slots__ = ("checks", "fast", "specs")

    def __init__(self, cls: type[ArgsModel]) -> None:
        hints: dict[str, Any] = {}
        specs: dict[str, Any] = {}
        configured = False
        for klass in reversed(cls.__mro__):
            if not issubclass(klass, ArgsModel):
                continue
            configured = configured or bool(_configuration(klass))
            own = inspect.get_annotations(klass)
            namespace = vars(sys.modules[klass.__module__])
            for name, annotation in own.items():
                if name.startswith("_"):
                    continue  # not a field (pydantic: a private attribute)
                hint = _evaluate(annotation, namespace) if isinstance(annotation, str) else annotation
                if typing.get_origin(hint) is typing.ClassVar:
                    continue
                hints[name] = hint
                specs[name] = klass.__dict__.get(name, _REQUIRED)
        self.specs = specs
        checks = [_check(name, hint, specs[name]) for name, hint in hints.items()]
        # Else every input goes to the model: a field only it reads, or a `model_config`, a validator.
        self.fast = not configured and all(check is not None for check in checks)
        self.checks = [check for check in checks if check is not None]


def _configuration(cls: type) -> dict[str, Any]:
    """What a class declares for pydantic beside its fields: `model_config`, and pydantic's own
    objects (a `field_validator`, a `computed_field`): given to its model as they are."""
    annotated = inspect.get_annotations(cls)
    return {
        name: value
        for name, value in vars(cls).items()
        if name not in annotated and name not in _OWN and (name == "model_config" or _foreign(value))
    }


def _evaluate(annotation: str, namespace: dict[str, Any]) -> Any:
    """A string annotation (`from __future__ import annotations`) as pydantic evaluates it."""
    return eval(annotation, namespace)  # noqa: S307 - the plugin's own annotation, in its own module


def _check(name: str, hint: Any, spec: Any) -> _Check | None:
    """The fast check of one field, or None when only the model can tell."""
    check = _Check(name)
    if isinstance(spec, FieldSpec):
        if spec.args[1:] or set(spec.kwargs) - _DESCRIBING - _BOUNDS - {"default", "default_factory"}:
            return None
        check.default = spec.default
        check.factory = spec.kwargs.get("default_factory")
        check.bounds = {k: v for k, v in spec.kwargs.items() if k in _BOUNDS and v is not None}
    elif _foreign(spec):
        return None  # pydantic's own Field (or the like): the model reads it
    elif spec is not _REQUIRED:
        check.default = spec
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(options) != 1:
            return None
        check.nullable, hint = True, options[0]
    if not _kind(check, hint):
        return None
    if check.kind is not int and ("ge" in check.bounds or "le" in check.bounds):
        return None
    if check.kind not in (str, list, dict) and ("min_length" in check.bounds or "max_length" in check.bounds):
        return None
    if check.kind is not str and "pattern" in check.bounds:
        return None
    return check


def _kind(check: _Check, hint: Any) -> bool:
    if hint is Any or hint in _SCALARS:
        check.kind = hint
        return True
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        if not all(_scalar(a) for a in args):
            return False
        check.kind = frozenset((a.__class__, a) for a in args)
        return True
    if origin is list and len(args) == 1:
        item = _Check(check.name)
        check.kind, check.parts = list, item
        return _kind(item, args[0])
    if origin is dict and len(args) == 2 and args[0] is str:
        value = _Check(check.name)
        check.kind, check.parts = dict, value
        return _kind(value, args[1])
    return False


class ArgsModel:
    """A plugin tool's arguments, declared like a pydantic model (see the module docstring)."""

    def __init__(self, **data: Any) -> None:
        self.__dict__.update(type(self).model_validate(data).__dict__)

    @classmethod
    def model_validate(cls, data: Any) -> Any:
        """An instance of `cls` holding what the model accepts of `data`; pydantic's
        ValidationError when it refuses it."""
        values = _fast(cls, data)
        if values is not None:
            return _instance(cls, values)
        return _declared(cls.model().model_validate(data))

    @classmethod
    def model(cls) -> type[BaseModel]:
        """The pydantic model this class stands for (built, and pydantic imported, on first use)."""
        real = cls.__dict__.get("_pydantic_model")
        if real is None:
            real = _build(cls)
            cls._pydantic_model = real  # type: ignore[attr-defined]
            _DECLARED[real] = cls
        return real

    @classmethod
    def model_json_schema(cls, **kwargs: Any) -> dict[str, Any]:
        return cls.model().model_json_schema(**kwargs)

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        from workbench.engine.schema import portable_schema

        return portable_schema(cls.model())

    @classmethod
    def argument_text(cls) -> str:
        """Each field's name and description, for search (as Tool.argument_text gives a model's)."""
        words = []
        for name, spec in _declaration(cls).specs.items():
            if isinstance(spec, FieldSpec):
                description = spec.kwargs.get("description")
            else:  # a default, or pydantic's own FieldInfo
                description = getattr(spec, "description", None) if _foreign(spec) else None
            words.append(f"{name} {description or ''}")
        return " ".join(words)

    @classmethod
    def secret_names(cls) -> frozenset[str]:
        """Arguments marked secret at any depth (`writeOnly`, `format: password`), from the schema
        only when a field could mark one (a `json_schema_extra`, a type that is not read here)."""
        declaration = _declaration(cls)
        if declaration.fast and not any(_marks(spec) for spec in declaration.specs.values()):
            return frozenset()
        return secret_names(cls.json_schema())

    def model_dump(self, **options: Any) -> dict[str, Any]:
        """The fields as a dict, nested models as dicts: pydantic's `model_dump` (python mode),
        here for `include`/`exclude` sets of field names, through the model for anything else."""
        include, exclude = options.pop("include", None), options.pop("exclude", None)
        if options or not all(o is None or isinstance(o, set | frozenset) for o in (include, exclude)):
            real = type(self).model().model_validate(self.model_dump())
            return real.model_dump(include=include, exclude=exclude, **options)
        return {
            name: _dump(value)
            for name, value in self.__dict__.items()
            if (include is None or name in include) and (exclude is None or name not in exclude)
        }

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Any:
        """A copy, with `update`'s values set as they are (pydantic's `model_copy`: not validated)."""
        out = _instance(type(self), copy.deepcopy(self.__dict__) if deep else dict(self.__dict__))
        out.__dict__.update(update or {})
        return out

    def __eq__(self, other: object) -> bool:
        return other.__class__ is self.__class__ and other.__dict__ == self.__dict__

    __hash__ = None  # type: ignore[assignment]  # as pydantic's models: mutable, so unhashable

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in self.__dict__.items())
        return f"{type(self).__name__}({fields})"


_DECLARED: dict[type, type[ArgsModel]] = {}  # each built pydantic model -> the class it stands for


def _declaration(cls: type[ArgsModel]) -> _Declaration:
    declaration = cls.__dict__.get("_declaration")
    if declaration is None:
        declaration = _Declaration(cls)
        cls._declaration = declaration  # type: ignore[attr-defined]
    return declaration


def _fast(cls: type[ArgsModel], data: Any) -> dict[str, Any] | None:
    """The values the model would hold for `data`, when it would certainly accept it unchanged;
    None when only the model can tell."""
    declaration = _declaration(cls)
    if not declaration.fast or data.__class__ is not dict:
        return None
    values: dict[str, Any] = {}
    for check in declaration.checks:
        value = data.get(check.name, _REQUIRED)
        value = check.missing() if value is _REQUIRED else check.take(value)
        if value is _SKIP:
            return None
        values[check.name] = value
    return values


def secret_names(schema: dict[str, Any]) -> frozenset[str]:
    """Names of the properties a JSON Schema marks secret (`writeOnly`, or `format: password`), at
    any depth."""
    names: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict):
                for name, prop in props.items():
                    if isinstance(prop, dict) and (
                        prop.get("writeOnly") is True or prop.get("format") == "password"
                    ):
                        names.add(str(name))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return frozenset(names)


def _foreign(spec: Any) -> bool:
    """A class attribute from pydantic (its `Field`'s FieldInfo): read by the model, not here."""
    return type(spec).__module__.startswith("pydantic")


def _marks(spec: Any) -> bool:
    return isinstance(spec, FieldSpec) and "json_schema_extra" in spec.kwargs


def _instance(cls: type[ArgsModel], values: dict[str, Any]) -> ArgsModel:
    out = cls.__new__(cls)
    out.__dict__.update(values)
    return out


def _declared(value: Any) -> Any:
    """A value of a validated pydantic model, its models turned into the classes they stand for."""
    cls = _DECLARED.get(type(value))
    if cls is not None:
        return _instance(cls, {name: _declared(v) for name, v in value.__dict__.items()})
    if value.__class__ is list:
        return [_declared(v) for v in value]
    if value.__class__ is dict:
        return {k: _declared(v) for k, v in value.items()}
    if value.__class__ is tuple:
        return tuple(_declared(v) for v in value)
    return value


def _dump(value: Any) -> Any:
    if isinstance(value, ArgsModel):
        return value.model_dump()
    if value.__class__ is list:
        return [_dump(v) for v in value]
    if value.__class__ is dict:
        return {k: _dump(v) for k, v in value.items()}
    if value.__class__ is tuple:
        return tuple(_dump(v) for v in value)
    return value


def _build(cls: type[ArgsModel]) -> type[BaseModel]:
    """The pydantic model of `cls`: the same name, docstring, module and fields, its bases' models
    as its bases, every ArgsModel named in an annotation replaced by its model."""
    from pydantic import BaseModel

    bases = tuple(b.model() for b in cls.__bases__ if issubclass(b, ArgsModel) and b is not ArgsModel)
    namespace: dict[str, Any] = {
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
        "__doc__": cls.__dict__.get("__doc__"),
        "__annotations__": {},
        **_configuration(cls),
    }
    module = vars(sys.modules[cls.__module__])
    for name, annotation in inspect.get_annotations(cls).items():
        hint = _evaluate(annotation, module) if isinstance(annotation, str) else annotation
        namespace["__annotations__"][name] = _models(hint)
        if name in cls.__dict__:
            spec = cls.__dict__[name]
            namespace[name] = spec.pydantic() if isinstance(spec, FieldSpec) else spec
    return types.new_class(cls.__name__, bases or (BaseModel,), {}, lambda ns: ns.update(namespace))


def _models(hint: Any) -> Any:
    """`hint` with each ArgsModel class in it replaced by its pydantic model."""
    if isinstance(hint, type) and issubclass(hint, ArgsModel):
        return hint.model()
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        metadata = (m.pydantic() if isinstance(m, FieldSpec) else m for m in hint.__metadata__)
        return typing.Annotated[(_models(args[0]), *metadata)]
    if origin is None or origin is typing.Literal or not args:
        return hint
    swapped = tuple(_models(a) for a in args)
    if swapped == args:
        return hint
    if origin in (typing.Union, types.UnionType):
        return typing.Union[swapped]  # noqa: UP007 - built from a tuple
    return origin[swapped]
