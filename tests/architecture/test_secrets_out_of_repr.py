"""No dataclass of the engine shows a secret in its repr: a field that holds one (a credential, a
client secret, a token, a private key, the headers or cookies that carry auth, the arguments a
{{vault:}} value was substituted into) is declared `field(repr=False)`, so a traceback, a debugger or
a log line that prints the object prints none of it. Fields are found by name, read from the source
(every module, including those a test run never imports); the names below that match the pattern
but hold no secret are listed with why."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import workbench

ROOT = Path(workbench.__file__).parent

# A name that holds a secret value: *_secret, *_token, *credential, *password, *_key, *_env, ...
SECRET_NAME = re.compile(r"(^|_)(secret|secrets|password|plaintext|key|cookies|credential|token|env)$")
# Fields that hold secrets under other names.
SECRET_FIELDS = {
    "ToolCall.args",  # {{vault:}} values substituted into them
    "Endpoint.headers",  # an external server's auth header among them
    "Request.headers",  # an OpenAPI operation's header parameters ({{vault:}} values substituted)
    "App.auth_value",  # a custom app's auth value (a template that may hold the token itself)
    "_Target.query_value",  # an OpenAPI app's API key sent as a query parameter
    "Settings.external_servers",  # operator configs, which may carry a credential inline
}
# Fields whose names match SECRET_NAME but hold no secret.
NOT_SECRET = {
    "ApiKeyField.secret",  # a flag: whether the manifest's field is a secret
    "CookieAuth.session_cookies",  # the names of the cookies a live session has, not their values
    "Operation.body_key",  # the name of the input property that holds an OpenAPI request body
    "ClientSnippet.with_key",  # a client's setup text with a placeholder where the key goes
}


def _dataclasses(tree: ast.Module) -> list[ast.ClassDef]:
    def is_dataclass(decorator: ast.expr) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        return (isinstance(target, ast.Name) and target.id == "dataclass") or (
            isinstance(target, ast.Attribute) and target.attr == "dataclass"
        )

    return [
        n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and any(map(is_dataclass, n.decorator_list))
    ]


def _repr_off(value: ast.expr | None) -> bool:
    """Whether a field's default is `field(..., repr=False)` (or `dataclasses.field`)."""
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    if not (
        (isinstance(func, ast.Name) and func.id == "field")
        or (isinstance(func, ast.Attribute) and func.attr == "field")
    ):
        return False
    return any(
        k.arg == "repr" and isinstance(k.value, ast.Constant) and k.value.value is False
        for k in value.keywords
    )


def _shown_secrets() -> list[str]:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        for cls in _dataclasses(ast.parse(path.read_text(encoding="utf-8"))):
            for stmt in cls.body:
                if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                    continue
                name = f"{cls.name}.{stmt.target.id}"
                secret = name in SECRET_FIELDS or (
                    SECRET_NAME.search(stmt.target.id) and name not in NOT_SECRET
                )
                if secret and not _repr_off(stmt.value):
                    found.append(f"{path.relative_to(ROOT.parent)}:{stmt.lineno} {name}")
    return found


def test_no_dataclass_field_that_holds_a_secret_is_in_its_repr() -> None:
    assert _shown_secrets() == []


def test_the_listed_secret_fields_all_exist() -> None:
    """A renamed field would leave its entry here checking nothing."""
    declared = set()
    for path in ROOT.rglob("*.py"):
        for cls in _dataclasses(ast.parse(path.read_text(encoding="utf-8"))):
            declared |= {
                f"{cls.name}.{s.target.id}"
                for s in cls.body
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            }
    assert (SECRET_FIELDS | NOT_SECRET) - declared == set()


def test_what_the_repr_of_such_objects_shows() -> None:
    """The check above reads the source; these are the objects as a log line would print them."""
    from workbench.engine.executor import ToolCall
    from workbench.stores import Jot

    call = ToolCall("github_get_user", {"token": "ghp_vault_value_1234"}, secrets=("ghp_vault_value_1234",))
    shown = repr(call)
    assert "github_get_user" in shown and "ghp_vault_value_1234" not in shown
    jot = Jot("j1", "u1", "Notes", "body", 1.0, 2.0, share_token="share-token-5678")
    assert "Notes" in repr(jot) and "share-token-5678" not in repr(jot)
