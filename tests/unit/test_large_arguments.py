"""Large arguments (a 4 MB body of small values) are walked on a thread, never on the event loop:
the walks that stop at a budget agree with the full ones, the audit text is the one the full
serialisation gave, and a {{vault:}} ref deep in large arguments is still found."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import Any

import pytest
from workbench.engine.compose import refs_within, template_refs
from workbench.engine.executor import _SECRET_NAME, AUDIT_ARGS_CHARS, LOOP_VALUES, audit_arguments, scrub
from workbench.guard.jsontext import nesting_exceeds, nesting_exceeds_within


def old_audit(args: Any, secrets: Sequence[str], secret_names: Sequence[str] = ()) -> str:
    """The audit text as it was built before (redact all, scrub all, dump all, cut): the oracle."""

    def redact(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                str(k): "[REDACTED]" if k in secret_names or _SECRET_NAME.search(str(k)) else redact(v)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [redact(v) for v in value]
        return value

    text = json.dumps(scrub(redact(args), secrets), ensure_ascii=False, default=str, separators=(",", ":"))
    return text if len(text) <= AUDIT_ARGS_CHARS else text[: AUDIT_ARGS_CHARS - 1] + "…"


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.random()
    if depth > 4 or kind < 0.4:
        return rng.choice(
            [
                rng.randint(-(10**6), 10**6),
                rng.random(),
                True,
                None,
                "é" * rng.randint(0, 40),
                "sk-live-SECRET" * rng.randint(0, 3),
                "x" * rng.randint(0, 3000),
                '"quoted"\n\\',
            ]
        )
    if kind < 0.7:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 8))]
    keys = ["a", "token", "name", "password", "é", "sk-live-SECRET", "n"]
    return {rng.choice(keys) + str(i): _random_value(rng, depth + 1) for i in range(rng.randint(0, 12))}


@pytest.mark.parametrize("seed", range(40))
def test_the_bounded_audit_text_is_the_full_one(seed: int) -> None:
    rng = random.Random(seed)
    args = {
        "v": _random_value(rng),
        "apiKey": "k",
        "rows": [_random_value(rng) for _ in range(rng.randint(0, 50))],
    }
    secrets = ["sk-live-SECRET"] if seed % 2 else []
    assert audit_arguments(args, secrets, ("name",)) == old_audit(args, secrets, ("name",))


def test_a_huge_argument_is_audited_without_copying_it() -> None:
    args = {"x": [[1, 2, 3, 4, 5, 6, 7, 8, 9, 0]] * 120_000, "body": "y" * 4_000_000}
    assert audit_arguments(args, []) == old_audit(args, [])
    secret = "s3cr3t-value"
    long = {"body": "z" * (AUDIT_ARGS_CHARS - 5) + secret + "tail" * 1000}
    assert secret not in audit_arguments(long, [secret]) and secret[:5] not in audit_arguments(long, [secret])


def test_bounded_walks_agree_with_the_full_ones_or_give_up() -> None:
    rng = random.Random(7)
    for _ in range(200):
        value = {
            "a": _random_value(rng),
            "b": ["{{step:x.y}}"] if rng.random() < 0.3 else [],
            "c": "{{vault:S}}" if rng.random() < 0.2 else "",
        }
        assert refs_within(value, LOOP_VALUES) == (
            template_refs(value),
            template_refs(value, vault_only=True),
        )
        assert nesting_exceeds_within(value, 3, LOOP_VALUES) == nesting_exceeds(value, 3)
        assert refs_within(value, 5) in (None, (template_refs(value), template_refs(value, vault_only=True)))
        assert nesting_exceeds_within(value, 3, 5) in (None, nesting_exceeds(value, 3))
    big = {"x": list(range(LOOP_VALUES + 1))}
    assert refs_within(big, LOOP_VALUES) is None
    assert nesting_exceeds_within(big, 32, LOOP_VALUES) is None
    assert nesting_exceeds_within({"x": [[0]] * 10}, 32, LOOP_VALUES) is False
