"""Catalog-wide checks: what every plugin tool promises in its description and scopes.

- OAuth scopes: each tool declares the scopes it needs for every argument value its schema
  offers, and the manifest requests them (per-request scope facts are checked in
  test_definitions.py).
- Cross-references: a description (of a tool or an argument) naming another tool names one that
  exists, so an agent told "use X" can.
- Ordering promises ("newest first", "soonest first", ...): each is backed by the request the
  tool's own test records — the ordering parameter sent, or the provider's documented default
  left in place.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Any

from workbench.composition import build_registry
from workbench.manifest import OAuth2Auth
from workbench.tools import Tool

from tests.plugins.catalog_support import Call, Case, plugin_packages

PLUGINS = plugin_packages()


def _all_tools() -> list[tuple[str, Tool]]:
    registry = build_registry()
    out = []
    for manifest in registry.manifests():
        if manifest.builtin:
            continue
        out.extend((manifest.name, t) for t in registry.tools_of(manifest.name).values())
    return out


def _cases() -> dict[str, list[Case]]:
    by_tool: dict[str, list[Case]] = {}
    for plugin in PLUGINS:
        module = importlib.import_module(f"tests.plugins.test_{plugin}")
        for case in module.CASES:
            by_tool.setdefault(case.tool, []).append(case)
    return by_tool


def test_every_plugin_has_its_test_module_with_cases() -> None:
    assert len(PLUGINS) >= 16
    for plugin in PLUGINS:
        module = importlib.import_module(f"tests.plugins.test_{plugin}")
        assert module.CASES, plugin


def test_declared_scopes_are_requested_by_the_manifest() -> None:
    registry = build_registry()
    for integration, t in _all_tools():
        auth = registry.manifest(integration).auth  # type: ignore[union-attr]
        granted = {*auth.scopes, *auth.user_scopes} if isinstance(auth, OAuth2Auth) else set()
        assert set(t.scopes) <= granted, (t.name, set(t.scopes) - granted)
        assert len(set(t.scopes)) == len(t.scopes), t.name


_TOOL_REF = re.compile(r"\b[a-z]+_[a-z_]+[a-z]\b")


def _texts(t: Tool) -> list[str]:
    texts = [t.description]
    for spec in t.json_schema().get("properties", {}).values():
        texts.append(spec.get("description", ""))
    return texts


_VERB_REF = re.compile(r"^[a-z]+_(list|get|create|update|delete|send|search|read|add|run|export|find)_")


def test_tools_named_in_descriptions_exist() -> None:
    tools = _all_tools()
    names = {t.name for _, t in tools}
    prefixes = {t.name.split("_")[0] + "_" for _, t in tools}
    for _, t in tools:
        for text in _texts(t):
            for ref in _TOOL_REF.findall(text):
                # Parameter and field names look alike; a tool reference starts prefix_verb_.
                known = ref in names or not any(ref.startswith(p) for p in prefixes)
                assert known or not _VERB_REF.match(ref), f"{t.name} names a tool that does not exist: {ref}"


_ID_ARG = re.compile(r"(_id|Id|_ids|Ids)$")
_TOOL_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")


def test_every_id_argument_says_which_tool_lists_it() -> None:
    """An argument named `*_id` / `*Id` (or its plural) names, in its description, a tool that lists
    or finds such ids: an agent that has no id yet knows where to get one (or the description says
    why there is none, in words that name the source, like a spreadsheet URL and google_drive_search)."""
    tools = _all_tools()
    names = {t.name for _, t in tools}
    missing = []
    checked = 0
    for _, t in tools:
        for prop, spec in t.json_schema().get("properties", {}).items():
            if not _ID_ARG.search(prop) or not isinstance(spec, dict):
                continue
            checked += 1
            text = str(spec.get("description", ""))
            items = spec.get("items")
            if isinstance(items, dict):
                text += " " + str(items.get("description", ""))
            if not set(_TOOL_NAME.findall(text)) & names:
                missing.append(f"{t.name}.{prop}: {text!r}")
    assert checked > 150
    assert not missing, "id arguments that name no listing tool:\n" + "\n".join(missing)


def _q(call: Call) -> dict[str, Any]:
    return dict(call.query) if isinstance(call.query, list) else call.query


def _graphql(call: Call) -> str:
    return str((call.json or {}).get("query", ""))


# How each ordering promise is kept, checked on the first request the tool's test records.
ORDERING: dict[str, Callable[[Call], bool]] = {
    # GitHub lists pulls by created desc, commits newest first: neither may be overridden.
    "github_list_prs": lambda c: "sort" not in _q(c) and "direction" not in _q(c),
    "github_list_commits": lambda c: "sort" not in _q(c),
    # Issue comments, reviews and review comments come in ascending id order, runs newest first.
    "github_list_comments": lambda c: not {"sort", "direction"} & set(_q(c)),
    "github_list_pr_reviews": lambda c: not {"sort", "direction"} & set(_q(c)),
    "github_list_pr_review_comments": lambda c: not {"sort", "direction"} & set(_q(c)),
    "github_list_workflow_runs": lambda c: not {"sort", "direction"} & set(_q(c)),
    # Releases come newest first (by created_at) and take no ordering parameter.
    "github_list_releases": lambda c: not {"sort", "direction"} & set(_q(c)),
    "jira_list_comments": lambda c: _q(c).get("orderBy") == "-created",
    # Jira returns an issue's worklogs in the order they were created.
    "jira_list_worklogs": lambda c: "orderBy" not in _q(c),
    # Slack's conversations.history is newest first by default.
    "slack_get_channel_history": lambda c: "inclusive" not in _q(c),
    # Upcoming events from now on, by start time, recurring events expanded (orderBy needs it).
    "calendar_list_events": lambda c: (
        bool(_q(c).get("timeMin"))
        and _q(c).get("orderBy") == "startTime"
        and _q(c).get("singleEvents") == "true"
    ),
    "google_drive_list_files": lambda c: str(_q(c).get("orderBy", "")).startswith("modifiedTime desc"),
    # Stripe lists are newest first and take no sort parameter.
    "stripe_list_customers": lambda c: not {"sort", "order"} & set(_q(c)),
    "stripe_list_payments": lambda c: not {"sort", "order"} & set(_q(c)),
    "stripe_list_products": lambda c: not {"sort", "order"} & set(_q(c)),
    "stripe_list_coupons": lambda c: not {"sort", "order"} & set(_q(c)),
    "stripe_list_disputes": lambda c: not {"sort", "order"} & set(_q(c)),
    "linear_list_issues": lambda c: "orderBy: updatedAt" in _graphql(c),
    # Gmail returns a thread's messages in order; Airtable its comments newest first.
    "gmail_get_thread": lambda c: True,
    "airtable_list_comments": lambda c: "sort" not in _q(c),
}
_PROMISE = re.compile(r"(newest|oldest|soonest|latest|most recent(ly updated)?)( \w+)? first", re.I)


def test_ordering_promises_are_kept() -> None:
    cases = _cases()
    promised = {t.name for _, t in _all_tools() if _PROMISE.search(t.description)}
    assert promised == set(ORDERING), (promised - set(ORDERING), set(ORDERING) - promised)
    for name, check in ORDERING.items():
        assert cases.get(name), f"{name} has no request-exact case"
        for case in cases[name]:
            assert check(case.calls[0]), (
                f"{name}: its request does not keep the ordering its description promises"
            )


def test_docs_list_every_tool_with_its_description() -> None:
    """docs/plugins.md and docs/plugins-b.md: one table row per tool, with the description the
    agent sees, and no row for a tool that does not exist."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "docs"
    tools = {t.name: t.description for _, t in _all_tools()}
    prefixes = tuple({name.split("_")[0] + "_" for name in tools})
    rows: dict[str, str] = {}
    for doc in ("plugins.md", "plugins-b.md"):
        for name, text in re.findall(
            r"^\| `([a-z_]+)` \| (.+) \| [a-z ,-]+ \|$", (root / doc).read_text(), re.M
        ):
            if name.startswith(prefixes):  # other tables list Slack error codes and the like
                rows[name] = text
    assert rows == tools


def test_every_tool_has_search_keywords() -> None:
    """Every plugin and built-in tool, and every shipped integration, carries search keywords that
    add words the name does not have (docs/plugins.md "Search keywords")."""
    from workbench.engine.search import tokens

    registry = build_registry()
    for manifest in registry.manifests():
        assert manifest.keywords, f"{manifest.name} has no keywords"
        assert all(tokens(k) for k in manifest.keywords), manifest.name
    for t in registry.all_tools():
        assert t.keywords, f"{t.name} has no search keywords"
        assert len(set(t.keywords)) == len(t.keywords), f"{t.name} repeats a keyword"
        own = set(tokens(t.name.replace("_", " "))) | set(tokens(t.integration))
        for keyword in t.keywords:
            terms = set(tokens(keyword))
            # A keyword of stop words only ("what's on") or of the name's own words adds nothing.
            assert terms, f"{t.name}: keyword {keyword!r} is only stop words"
            assert terms - own, f"{t.name}: keyword {keyword!r} repeats the name"
