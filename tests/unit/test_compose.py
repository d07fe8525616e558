"""Seed 001: compose mode, step refs, vault refs and the return projection."""

from __future__ import annotations

from pathlib import Path

import pytest
from workbench.composition import Gateway
from workbench.errors import InvalidInput
from workbench.identity.auth import Principal

from tests.support.demo_plugins import demo_registry, demo_upstream, item
from tests.support.demo_plugins import run_execute as run
from tests.support.gateways import make_gateway, principal_for


@pytest.fixture
def gw(tmp_path: Path) -> Gateway:
    return make_gateway(tmp_path, registry=demo_registry(), transport=demo_upstream([]))


@pytest.fixture
def me(gw: Gateway) -> Principal:
    return principal_for(gw)


async def test_whole_value_ref_keeps_its_type(gw: Gateway, me: Principal) -> None:
    out = await run(
        gw,
        me,
        compose=True,
        executions=[
            item("a", {"rows": [1, 2], "n": 1200}),
            item("b", "{{step:a.value.n}}"),
            item("c", "{{step:a.value}}"),
        ],
    )
    assert out == {
        "result": {
            "value": {"rows": [1, 2], "n": 1200},
            "label": "default-label",
            "seen": {"value": {"rows": [1, 2], "n": 1200}, "label": "default-label"},
        }
    }


async def test_embedded_ref_interpolates_and_json_inserts_non_strings(gw: Gateway, me: Principal) -> None:
    out = await run(
        gw,
        me,
        compose=True,
        executions=[
            item("pr", {"title": "Fix it", "ids": [3, 4]}),
            item("b", "Review: {{step:pr.value.title}} {{step:pr.value.ids}}"),
        ],
        **{"return": "{{step:b.value}}"},
    )
    assert out == {"result": "Review: Fix it [3,4]"}


async def test_embedded_values_are_written_as_javascript_json_stringify_writes_them(
    gw: Gateway, me: Principal
) -> None:
    value = {
        "name": "Zoë ☕ 😀",
        "b": 2,
        "10": "ten",
        "2": "two",
        "01": "not an index",
        "n": [1.0, 0.5, 1e21, 1e-7, 123456789012345680000.0, -0.0, 2.5e-6, True, None],
        "q": 'say "hi"\n\t\u0001',
    }
    out = await run(
        gw,
        me,
        compose=True,
        executions=[item("a", value), item("b", "v={{step:a.value}}")],
        **{"return": "{{step:b.value}}"},
    )
    # JSON.stringify: compact, non-ASCII as is, integer keys first, numbers as Number::toString
    assert out == {
        "result": 'v={"2":"two","10":"ten","name":"Zoë ☕ 😀","b":2,"01":"not an index",'
        '"n":[1,0.5,1e+21,1e-7,123456789012345680000,0,0.0000025,true,null],'
        '"q":"say \\"hi\\"\\n\\t\\u0001"}'
    }


async def test_array_index_paths_and_any_depth(gw: Gateway, me: Principal) -> None:
    out = await run(
        gw,
        me,
        compose=True,
        executions=[
            item("list", {"files": [{"id": "f1"}, {"id": "f2"}]}),
            item("b", {"deep": ["{{step:list.value.files.1.id}}"]}),
        ],
        **{"return": {"got": "{{step:b.value.deep.0}}"}},
    )
    assert out == {"result": {"got": "f2"}}


@pytest.mark.parametrize(
    "bad",
    ["{{step:a.value.}}", "{{step:a..x}}", "{{step:}}", "{{step:a.value", "x {{step:a.value.constructor}}"],
)
async def test_malformed_or_missing_refs_are_bad_ref(gw: Gateway, me: Principal, bad: str) -> None:
    out = await run(gw, me, compose=True, executions=[item("a", {"k": 1}), item("b", bad)])
    assert out["error"] == "BAD_REF" and out["ref_id"] == "b" and out["index"] == 1
    assert set(out) == {"error", "index", "ref_id", "message"}
    # step a ran; step b never reached its handler, and its refusal is audited like any path (seed 000)
    refused, ran = gw.stores.audit.list_for(me.user.id)
    assert ran["success"] is True
    assert refused["error"] == "BAD_REF" and refused["success"] is False
    assert refused["tool"] == "free_item" and refused["integration"] == "free"


async def test_plain_batch_refusals_are_audited_without_running(gw: Gateway, me: Principal) -> None:
    out = await run(
        gw, me, executions=[item(None, "{{vault:missing}}"), {"tool": "nope", "args": {"x": "{{step:}}"}}]
    )
    assert out == {
        "results": [
            {"error": "Vault secret 'missing' not found"},
            {"error": "BAD_REF", "message": "{{step:}}: a step reference is {{step:<ref_id>.<path>}}"},
        ]
    }
    events = {e["tool"]: e for e in gw.stores.audit.list_for(me.user.id)}
    assert events["free_item"]["error"] == "Vault secret 'missing' not found"
    assert events["free_item"]["integration"] == "free"
    assert "integration" not in events["nope"]  # the name resolves to nothing


async def test_only_own_properties_resolve(gw: Gateway, me: Principal) -> None:
    out = await run(gw, me, compose=True, executions=[item("a", "text"), item("b", "{{step:a.value.upper}}")])
    assert out["error"] == "BAD_REF"


async def test_failed_step_ends_the_run(gw: Gateway, me: Principal) -> None:
    out = await run(
        gw,
        me,
        compose=True,
        executions=[item("a", 1), {"ref_id": "b", "tool": "free_throw", "args": {}}, item("c", 3)],
    )
    assert out == {"index": 1, "ref_id": "b", "error": "kaboom"}
    assert [e["tool"] for e in gw.stores.audit.list_for(me.user.id)] == ["free_throw", "free_item"]


async def test_compose_without_return_answers_last_result(gw: Gateway, me: Principal) -> None:
    out = await run(gw, me, compose=True, executions=[item("a", 1), item("b", 2)])
    assert out["result"]["value"] == 2


async def test_compose_schema_rules_reject_before_anything_runs(gw: Gateway, me: Principal) -> None:
    with pytest.raises(InvalidInput, match="ref_id is required"):
        await run(gw, me, compose=True, executions=[item("a", 1), item(None, 2)])
    with pytest.raises(InvalidInput, match="at most 8"):
        await run(gw, me, compose=True, executions=[item(f"s{i}", i) for i in range(9)])
    with pytest.raises(InvalidInput, match="used twice"):
        await run(gw, me, compose=True, executions=[item("a", 1), item("a", 2)])
    assert gw.stores.audit.list_for(me.user.id) == []


async def test_return_without_compose_lists_failures_under_errors(gw: Gateway, me: Principal) -> None:
    out = await run(
        gw,
        me,
        executions=[
            item("ok", 5),
            {"ref_id": "bad", "tool": "free_throw", "args": {}},
            {"tool": "nope", "args": {}},
        ],
        **{"return": {"v": "{{step:ok.value}}"}},
    )
    assert out == {
        "result": {"v": 5},
        "errors": [{"index": 1, "ref_id": "bad", "error": "kaboom"}, {"index": 2, "error": "Tool not found"}],
    }


async def test_return_ref_to_failed_execution_is_bad_ref(gw: Gateway, me: Principal) -> None:
    out = await run(
        gw,
        me,
        executions=[{"ref_id": "bad", "tool": "free_throw", "args": {}}],
        **{"return": "{{step:bad.value}}"},
    )
    assert out["error"] == "BAD_REF" and "ref_id" not in out


async def test_step_result_containing_vault_text_reaches_next_tool_literally(
    gw: Gateway, me: Principal
) -> None:
    gw.vault.set(me.user.id, "x", "SECRET-X")
    out = await run(
        gw,
        me,
        compose=True,
        executions=[{"ref_id": "pr", "tool": "free_const", "args": {}}, item("b", "{{step:pr.title}}")],
        **{"return": "{{step:b.value}}"},
    )
    assert out == {"result": "PR title mentions {{vault:x}}"}


async def test_vault_ref_in_a_step_reaches_the_tool_but_not_the_response(gw: Gateway, me: Principal) -> None:
    gw.vault.set(me.user.id, "token", "s3cret-value")
    out = await run(
        gw, me, compose=True, executions=[item("a", "{{vault:token}}"), item("b", "{{step:a.value}}")]
    )
    # the tool received the secret (it echoes it), and the response carries it scrubbed
    assert out["result"]["value"] == "[REDACTED]"
    assert "s3cret-value" not in str(out) and "s3cret-value" not in str(gw.stores.audit.list_for(me.user.id))


async def test_vault_values_are_scrubbed_from_results_and_audit(gw: Gateway, me: Principal) -> None:
    gw.vault.set(me.user.id, "api", "tok_ABC123")
    out = await run(gw, me, executions=[item(None, "key={{vault:api}}")])
    assert out == {
        "results": [
            {
                "result": {
                    "value": "key=[REDACTED]",
                    "label": "default-label",
                    "seen": {"value": "key=[REDACTED]", "label": "default-label"},
                }
            }
        ]
    }
    assert "tok_ABC123" not in str(gw.stores.audit.list_for(me.user.id))


async def test_return_never_resolves_vault_refs_and_keeps_them_as_text(gw: Gateway, me: Principal) -> None:
    gw.vault.set(me.user.id, "api", "tok_ABC123")
    template = {"k": "{{vault:api}}", "mixed": "{{vault:api}} / {{step:a.value}}", "odd": ["{{vault:}}"]}
    out = await run(gw, me, compose=True, executions=[item("a", 1)], **{"return": template})
    # the step ran and its result is kept; the vault text is returned as written, never the secret
    assert out == {"result": {"k": "{{vault:api}}", "mixed": "{{vault:api}} / 1", "odd": ["{{vault:}}"]}}
    plain = await run(gw, me, executions=[item("a", 2)], **{"return": ["{{step:a.value}}", "{{vault:nope}}"]})
    assert plain == {"result": [2, "{{vault:nope}}"]}


async def test_unknown_vault_name_is_an_item_error(gw: Gateway, me: Principal) -> None:
    out = await run(gw, me, executions=[item(None, "{{vault:missing}}"), item(None, 1)])
    assert out["results"][0] == {"error": "Vault secret 'missing' not found"}
    assert out["results"][1]["result"]["value"] == 1


async def test_vault_tools_take_names_literally(gw: Gateway, me: Principal) -> None:
    gw.vault.set(me.user.id, "a", "AAA")
    out = await run(gw, me, executions=[{"tool": "vault_set", "args": {"name": "b", "value": "{{vault:a}}"}}])
    assert out == {"results": [{"result": {"stored": "b"}}]}
    assert gw.vault.get(me.user.id, "b") == "{{vault:a}}"


async def test_compose_runs_exactly_eight_steps(gw: Gateway, me: Principal) -> None:
    steps = [item("s0", 0), *(item(f"s{i}", f"{{{{step:s{i - 1}.value}}}}") for i in range(1, 8))]
    out = await run(gw, me, compose=True, executions=steps)
    assert out["result"]["value"] == 0  # the value travelled through all eight steps
    assert len(gw.stores.audit.list_for(me.user.id)) == 8


async def test_bad_ref_in_compose_return_has_no_ref_id(gw: Gateway, me: Principal) -> None:
    out = await run(gw, me, compose=True, executions=[item("a", 1)], **{"return": "{{step:a.value.x}}"})
    assert out["error"] == "BAD_REF" and set(out) == {"error", "message"}
    assert len(gw.stores.audit.list_for(me.user.id)) == 1  # the step itself ran


async def test_errors_carry_the_full_error_object(gw: Gateway, me: Principal) -> None:
    out = await run(
        gw,
        me,
        executions=[item("ok", 5), {"ref_id": "echo", "tool": "demo_echo", "args": {"text": "x"}}],
        **{"return": "{{step:ok.value}}"},
    )
    assert out == {
        "result": 5,
        "errors": [
            {
                "index": 1,
                "ref_id": "echo",
                "error": "NOT_CONNECTED",
                "integration": "demo",
                "message": "demo not connected. Use connect('demo') to connect.",
            }
        ],
    }
