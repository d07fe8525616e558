"""One exception tree in fact: every exception class in `workbench` and `workbench_plugins` is a
`WorkbenchError` (see the tree drawn in workbench/errors.py).

Every module of both packages is imported, then every subclass of BaseException that Python knows
is checked, so a class nested in another or defined in a function that has run is seen too. Each
class must also appear in the errors.py docstring by name, so the drawing stays the tree."""

from __future__ import annotations

import importlib
import pkgutil

import workbench
import workbench.errors
import workbench_plugins
from workbench.errors import WorkbenchError

PACKAGES = (workbench, workbench_plugins)


def _import_everything() -> list[str]:
    names = []
    for package in PACKAGES:
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            importlib.import_module(info.name)
            names.append(info.name)
    return names


def _ours() -> list[type[BaseException]]:
    seen: list[type[BaseException]] = []
    stack: list[type[BaseException]] = [BaseException]
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.append(sub)
                stack.append(sub)
    return [c for c in seen if c.__module__.split(".")[0] in ("workbench", "workbench_plugins")]


def test_every_module_imports_and_every_exception_class_is_a_workbench_error() -> None:
    modules = _import_everything()
    assert len(modules) > 100
    ours = _ours()
    assert len(ours) > 50
    outside = sorted(f"{c.__module__}.{c.__qualname__}" for c in ours if not issubclass(c, WorkbenchError))
    assert outside == []


def test_the_tree_in_the_errors_docstring_names_every_class() -> None:
    _import_everything()
    drawing = workbench.errors.__doc__ or ""
    missing = sorted(
        f"{c.__module__}.{c.__qualname__}"
        for c in _ours()
        if c.__name__ not in drawing and not c.__module__.startswith("tests")
    )
    assert missing == []
