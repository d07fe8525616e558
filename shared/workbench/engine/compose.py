"""References in execute_tools arguments: `{{step:<ref_id>.<path>}}` and `{{vault:NAME}}`.

Both are substituted in one pass over the agent's own template. A value inserted from a step is
never scanned again, so tool output that happens to contain `{{vault:x}}` stays literal text.
`return` templates resolve step refs only (`project`): `{{vault:…}}` there stays literal text.
An embedded non-string value is inserted as JavaScript's JSON.stringify writes it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from workbench.errors import WorkbenchError
from workbench.guard.jsontext import js_stringify

__all__ = ["BadRef", "Resolution", "VaultMissing", "VaultUnreadable", "project", "resolve", "template_refs"]

# Any opening of a reference; what follows must parse or the ref is BAD_REF.
_OPEN = re.compile(r"\{\{(step|vault):")
_OPEN_STEP = re.compile(r"\{\{(step):")  # return templates: vault text is not a reference there
_OPEN_VAULT = re.compile(r"\{\{vault:")
# A list index: ASCII digits, no leading zero (str.isdigit() would take '²' and '٣', int() '01').
_INDEX = re.compile(r"0|[1-9][0-9]*")
_STEP = re.compile(r"([A-Za-z0-9_-]+)((?:\.[^.{}]+)*)")
_VAULT = re.compile(r"[A-Za-z0-9_.-]+")


class BadRef(WorkbenchError):
    def __init__(self, ref: str, reason: str) -> None:
        super().__init__(f"{ref}: {reason}")
        self.ref = ref
        self.reason = reason


class VaultMissing(WorkbenchError):
    def __init__(self, name: str, message: str | None = None) -> None:
        super().__init__(message or f"Vault secret '{name}' not found")
        self.name = name


class VaultUnreadable(VaultMissing):
    """The secret exists but its row does not decrypt: as unusable as a missing one, told apart."""

    def __init__(self, name: str) -> None:
        super().__init__(name, f"Vault secret '{name}' cannot be decrypted; set it again with vault_set")


_MISSING = object()


class Resolution:
    # A plain class: every cold start builds this module's classes (a dataclass costs about 1 ms).
    __slots__ = ("secrets", "value")

    def __init__(self, value: Any) -> None:
        self.value = value
        self.secrets: list[str] = []


StepLookup = Mapping[str, Any]
VaultLookup = Callable[[str], str | None]


def _walk(root: Any, ref_id: str, path: list[str], ref: str) -> Any:
    value = root
    for seg in path:
        if isinstance(value, dict):
            # own keys only: nothing inherited or computed is reachable
            if seg not in value:
                raise BadRef(ref, f"'{seg}' is missing in the result of step '{ref_id}'")
            value = value[seg]
        elif isinstance(value, list):
            # compare lengths first: int() of a very long digit string is slow or refused
            if not _INDEX.fullmatch(seg) or len(seg) > len(str(len(value))) or int(seg) >= len(value):
                raise BadRef(ref, f"'{seg}' is not an index of the list in step '{ref_id}'")
            value = value[int(seg)]
        else:
            raise BadRef(ref, f"'{seg}' cannot be read from a {type(value).__name__} in step '{ref_id}'")
    return value


def _parse_one(
    text: str, start: int, steps: StepLookup | None, vault: VaultLookup | None, res: Resolution
) -> tuple[Any, int]:
    """Parse the reference opening at `start`; return (value, index after the closing braces)."""
    opened = _OPEN.match(text, start)
    assert opened is not None
    kind = opened.group(1)
    end = text.find("}}", opened.end())
    body = text[opened.end() : end] if end >= 0 else text[opened.end() :]
    ref = text[start : end + 2] if end >= 0 else text[start:]
    if end < 0:
        raise BadRef(ref, "the reference is not closed with }}")
    if kind == "vault":
        if not _VAULT.fullmatch(body):
            raise BadRef(ref, "a vault reference is {{vault:NAME}}")
        if vault is None:
            raise BadRef(ref, "vault references are not resolved here")
        secret = vault(body)
        if secret is None:
            raise VaultMissing(body)
        res.secrets.append(secret)
        return secret, end + 2
    match = _STEP.fullmatch(body)
    if not match or body.endswith("."):
        raise BadRef(ref, "a step reference is {{step:<ref_id>.<path>}}")
    ref_id = match.group(1)
    path = [p for p in match.group(2).split(".") if p] if match.group(2) else []
    if steps is None or ref_id not in steps:
        raise BadRef(ref, f"no result for step '{ref_id}'")
    return _walk(steps[ref_id], ref_id, path, ref), end + 2


def _resolve_str(
    text: str, steps: StepLookup | None, vault: VaultLookup | None, res: Resolution, opener: re.Pattern[str]
) -> Any:
    first = opener.search(text)
    if first is None:
        return text
    if first.start() == 0:
        value, after = _parse_one(text, 0, steps, vault, res)
        if after == len(text):
            return value  # whole value: keeps its type
    out: list[str] = []
    pos = 0
    while (m := opener.search(text, pos)) is not None:
        out.append(text[pos : m.start()])
        value, pos = _parse_one(text, m.start(), steps, vault, res)
        out.append(value if isinstance(value, str) else js_stringify(value))
    out.append(text[pos:])
    return "".join(out)


def _resolve(
    node: Any, steps: StepLookup | None, vault: VaultLookup | None, res: Resolution, opener: re.Pattern[str]
) -> Any:
    if isinstance(node, str):
        return _resolve_str(node, steps, vault, res, opener)
    if isinstance(node, dict):
        return {k: _resolve(v, steps, vault, res, opener) for k, v in node.items()}
    if isinstance(node, list):
        return [_resolve(v, steps, vault, res, opener) for v in node]
    return node


def resolve(
    template: Any, *, steps: StepLookup | None = None, vault: VaultLookup | None = None
) -> Resolution:
    """Substitute refs in the agent's template (one pass; inserted values are not rescanned)."""
    res = Resolution(value=None)
    res.value = _resolve(template, steps, vault, res, _OPEN)
    return res


def project(template: Any, steps: StepLookup) -> Any:
    """A `return` template over the results: step refs resolve, `{{vault:…}}` stays literal text."""
    return _resolve(template, steps, None, Resolution(value=None), _OPEN_STEP)


def refs_within(template: Any, budget: int) -> tuple[bool, bool] | None:
    """(any `{{step:`/`{{vault:` opening, any `{{vault:` opening) in the template, or None once more
    than `budget` values were looked at: the caller then looks off the event loop."""
    stack = [template]
    seen = 0
    found = False
    while stack:
        node = stack.pop()
        seen += 1
        if seen > budget:
            return None
        if isinstance(node, str):
            if "{{" in node and _OPEN.search(node) is not None:
                found = True
                if _OPEN_VAULT.search(node) is not None:
                    return True, True
        elif isinstance(node, dict | list):
            seen += len(node)
            if seen > budget:
                return None
            stack.extend(node.values() if isinstance(node, dict) else node)
    return found, False


def template_refs(template: Any, *, vault_only: bool = False) -> bool:
    """Whether the template contains any `{{step:` or `{{vault:` opening (only `{{vault:`)."""
    if isinstance(template, str):
        return (_OPEN_VAULT if vault_only else _OPEN).search(template) is not None
    if isinstance(template, dict):
        return any(template_refs(v, vault_only=vault_only) for v in template.values())
    if isinstance(template, list):
        return any(template_refs(v, vault_only=vault_only) for v in template)
    return False
