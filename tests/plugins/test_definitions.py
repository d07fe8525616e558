"""Every request the plugin tools make, checked against the provider's published API definition.

The requests are the ones the request-exact tests record (each test module's CASES): for each,
the definition must document an operation with that method and path, and every query parameter
and top-level body field sent must be one that operation lists. Where the definition publishes
OAuth scopes (Google discovery documents, Atlassian, Airtable, Salesforce, Slack's method
reference, HubSpot's object scopes), the tool must declare a scope that grants the operation.
Linear's GraphQL queries are validated, with their variables, against the schema.

Sources: tests/plugins/provider_definitions.py (registry packages) and provider_facts.py.
`python -m tests.plugins.test_definitions` prints the number of checked requests per integration.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from workbench.composition import build_registry

from tests.plugins import provider_definitions as defs
from tests.plugins.catalog_support import ANY, Call
from tests.plugins.provider_facts import FACTS, SLACK_SCOPES, SLACK_UPLOAD
from tests.plugins.test_catalog import PLUGINS


@functools.cache
def recorded() -> list[tuple[str, str, Call]]:
    """(integration, tool, call) for every request of every request-exact case."""
    out = []
    for plugin in PLUGINS:
        module = importlib.import_module(f"tests.plugins.test_{plugin}")
        for case in module.CASES:
            out.extend(
                (module.PLUGIN.integration, case.tool, call) for call in case.calls if not call.presigned
            )
    return out


def definitions(integration: str) -> list[defs.Op]:
    if integration in defs.GOOGLE_DOCS:
        return defs.google(integration)
    loaders = {"github": defs.github, "notion": defs.notion, "stripe": defs.stripe}
    if integration in loaders:
        return loaders[integration]()
    if integration == "slack":
        return [*defs.slack(), *SLACK_UPLOAD]
    return FACTS[integration]


def _query_names(call: Call) -> list[str]:
    pairs = call.query if isinstance(call.query, list) else list(call.query.items())
    return sorted({k for k, _ in pairs})


def _body_names(call: Call) -> list[str] | None:
    """Top-level body fields sent, or None where the body is not a JSON object or a form (a
    multipart upload, raw bytes: the case's own check looks at those)."""
    if call.form is not None:
        return sorted({k for k, _ in call.form})
    if isinstance(call.json, dict) and call.json is not ANY:
        return sorted(call.json)
    return None


def check(integration: str, tool: str, call: Call) -> defs.Op:
    op = defs.find(definitions(integration), call.method, call.url)
    assert op is not None, (
        f"{tool}: {call.method} {call.url} is not an operation of the {integration} definition"
    )
    query, body = _query_names(call), _body_names(call)
    if integration == "stripe":  # form keys name nested fields: line_items[0][price] is line_items
        query = sorted({defs.stripe_top(n) for n in query})
        body = None if body is None else sorted({defs.stripe_top(n) for n in body})
    unknown = op.allows(query, op.query)
    assert not unknown, f"{tool}: {call.method} {call.url}: query {unknown} not in {op.source}"
    if body is not None:
        unknown = op.allows(body, op.body)
        assert not unknown, f"{tool}: {call.method} {call.url}: body fields {unknown} not in {op.source}"
    return op


def counts() -> Counter[str]:
    done: Counter[str] = Counter()
    for integration, tool, call in recorded():
        check(integration, tool, call)
        done[integration] += 1
    return done


INTEGRATIONS = sorted({i for i, _, _ in recorded()})


@pytest.mark.parametrize("integration", INTEGRATIONS)
def test_every_request_is_a_documented_operation(integration: str) -> None:
    calls = [(tool, call) for i, tool, call in recorded() if i == integration]
    assert calls
    for tool, call in calls:
        check(integration, tool, call)


def test_every_tool_has_a_checked_request() -> None:
    registry = build_registry()
    checked = {tool for _, tool, _ in recorded()}
    for manifest in registry.manifests():
        if manifest.builtin:
            continue
        missing = set(registry.tools_of(manifest.name)) - checked
        assert not missing, f"{manifest.name}: tools with no recorded request to check: {missing}"


def _tool_scopes() -> dict[str, set[str]]:
    registry = build_registry()
    out: dict[str, set[str]] = {}
    for manifest in registry.manifests():
        if not manifest.builtin:
            out.update({t.name: set(t.scopes) for t in registry.tools_of(manifest.name).values()})
    return out


def test_published_scopes_are_declared_by_the_tool() -> None:
    """Google's discovery documents and the Atlassian, Airtable and Salesforce references name the
    scopes that grant each operation: the tool must declare one of them."""
    scopes = _tool_scopes()
    checked = 0
    for integration, tool, call in recorded():
        op = check(integration, tool, call)
        if op.scopes and op.needs_all:
            checked += 1
            missing = op.scopes - scopes[tool]
            assert not missing, f"{tool}: {call.url} accepts granular scopes only; it needs {sorted(missing)}"
            classic = {s for s in scopes[tool] if s.count(":") == 1 and not s.startswith("offline")}
            assert not classic, f"{tool}: {call.url}'s API family does not accept classic scopes {classic}"
        elif op.scopes:
            checked += 1
            assert op.scopes & scopes[tool], f"{tool}: {call.url} needs one of {sorted(op.scopes)}"
    assert checked > 100


def test_slack_methods_need_the_scopes_the_tool_declares() -> None:
    scopes = _tool_scopes()
    for integration, tool, call in recorded():
        if integration != "slack" or not call.url.startswith("https://slack.com/api/"):
            continue
        method = call.url.rsplit("/", 1)[1]
        assert method in SLACK_SCOPES, f"{method}: add its scopes from Slack's method reference"
        for group in SLACK_SCOPES[method]:
            assert group & scopes[tool], f"{tool}: {method} needs {sorted(group)}"


_HUBSPOT_OBJECT = re.compile(r"/crm/v[34]/(?:objects|pipelines)/(\w+)")


def test_hubspot_object_scopes() -> None:
    """HubSpot grants each CRM object type by crm.objects.<type>.read/.write; notes and tasks (the
    engagement objects) are granted by the contacts scopes; tickets (objects and pipelines, read and
    write) by the one `tickets` scope, as HubSpot's tickets reference names it."""
    scopes = _tool_scopes()
    for integration, tool, call in recorded():
        if integration != "hubspot":
            continue
        kinds = [m.group(1) for m in _HUBSPOT_OBJECT.finditer(call.url)]
        if "owners" in call.url:
            assert "crm.objects.owners.read" in scopes[tool], tool
            continue
        write = call.method != "GET" and not call.url.endswith("/search")
        for kind in kinds[:1]:
            kind = "contacts" if kind in ("notes", "tasks") else kind
            need = "tickets" if kind == "tickets" else f"crm.objects.{kind}.{'write' if write else 'read'}"
            assert need in scopes[tool], f"{tool}: {call.method} {call.url} needs {need}"


@functools.cache
def _linear_schema() -> Any:
    from graphql import build_schema

    return build_schema((Path(__file__).parent / "linear_schema.graphql").read_text())


def test_linear_queries_and_variables_validate_against_the_schema() -> None:
    from graphql import OperationDefinitionNode, parse, validate
    from graphql.execution.values import get_variable_values

    schema = _linear_schema()
    checked = 0
    for integration, tool, call in recorded():
        if integration != "linear":
            continue
        document = parse(call.json["query"])
        errors = validate(schema, document)
        assert not errors, f"{tool}: {[e.message for e in errors]}"
        deprecated = _deprecated_fields(schema, document)
        assert not deprecated, f"{tool} reads deprecated fields: {deprecated}"
        op = next(d for d in document.definitions if isinstance(d, OperationDefinitionNode))
        values = get_variable_values(schema, op.variable_definitions or [], call.json["variables"])
        assert not isinstance(values, list), f"{tool}: variables: {[e.message for e in values]}"
        checked += 1
    assert checked >= len([t for i, t, _ in recorded() if i == "linear"])


def test_a_wrong_request_is_caught() -> None:
    """The check is not vacuous: a misspelt parameter, an unknown path and an undocumented body
    field each fail it."""
    good = Call("GET", "https://api.github.com/repos/o/r/pulls", {"state": "open", "per_page": 5})
    check("github", "github_list_prs", good)
    for bad in (
        Call("GET", "https://api.github.com/repos/o/r/pulls", {"state": "open", "perpage": 5}),
        Call("GET", "https://api.github.com/repos/o/r/pull", {}),
        Call("POST", "https://api.github.com/repos/o/r/issues", json={"title": "t", "labelz": ["x"]}),
        Call("GET", "https://www.googleapis.com/calendar/v3/calendars/primary/events", {"timemin": "x"}),
        Call("POST", "https://api.stripe.com/v1/customers", form=[("emails", "a@b.c")]),
        Call("PATCH", "https://api.notion.com/v1/blocks/b1/children", json={"kids": []}),
        Call("GET", "https://slack.com/api/conversations.history", {"chanel": "C1"}),
        Call("GET", "https://acme.zendesk.com/api/v2/tickets", {"page[sise]": 5}),
    ):
        integration = {
            "api.github.com": "github",
            "www.googleapis.com": "google-calendar",
            "api.stripe.com": "stripe",
            "api.notion.com": "notion",
            "slack.com": "slack",
            "acme.zendesk.com": "zendesk",
        }[bad.url.split("/")[2]]
        with pytest.raises(AssertionError):
            check(integration, "x", bad)


def test_a_wrong_linear_query_is_caught() -> None:
    from graphql import parse, validate

    bad = "query { issues(first: 5, sort: updatedAt) { nodes { id titel } } }"
    assert len(validate(_linear_schema(), parse(bad))) == 2
    old = parse("query { projects(first: 5) { nodes { id state } } }")
    assert _deprecated_fields(_linear_schema(), old) == ["Project.state"]


def _deprecated_fields(schema: Any, document: Any) -> list[str]:
    """`Type.field` for every deprecated field the document selects (Linear removes them later)."""
    from graphql import TypeInfo, TypeInfoVisitor, Visitor, visit

    info = TypeInfo(schema)
    found: list[str] = []

    class Deprecations(Visitor):
        def enter_field(self, node: Any, *_: Any) -> None:
            field = info.get_field_def()
            parent = info.get_parent_type()
            if field is not None and field.deprecation_reason is not None and parent is not None:
                found.append(f"{parent.name}.{node.name.value}")

    visit(document, TypeInfoVisitor(info, Deprecations()))
    return found


if __name__ == "__main__":
    for name, n in sorted(counts().items()):
        print(f"{name:22} {n}")
    print(f"{'total':22} {sum(counts().values())}")
