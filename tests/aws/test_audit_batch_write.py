"""A batch's audit rows in one DynamoDB write (BatchWriteItem, 25 items a call), against moto with a
client that answers like DynamoDB under throttling: part of a request left in UnprocessedItems, or
the whole call refused with ProvisionedThroughputExceededException. No row may be lost: what is
left over is sent again with backoff until written; rows the table still refuses after the rounds
are handed back (AuditNotWritten) and the engine logs them whole, as one error line."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from workbench.aws.client import AwsError
from workbench.errors import AuditNotWritten
from workbench.settings import Settings
from workbench.stores.dynamodb import DynamoAudit, DynamoTables, dynamodb_stores

from tests.support.aws import AwsEndpoint
from tests.support.gateways import make_gateway, principal_for
from tests.support.logs import events as log_events

pytestmark = pytest.mark.e2e

NOW = 1_800_000_000.0


class Throttled:
    """moto's client, except BatchWriteItem: each call takes the next step of `plan`.

    An int n: DynamoDB processes only the first n items and answers the rest as UnprocessedItems.
    "throttle" / "invalid": the whole call fails with that error (after the client's own retries).
    The plan running out: every later call processes nothing (a table that keeps refusing), unless
    `then_all` is set.
    """

    def __init__(self, inner: Any, plan: list[int | str], *, then_all: bool = True) -> None:
        self.inner = inner
        self.plan = list(plan)
        self.then_all = then_all
        self.calls: list[int] = []  # items sent in each BatchWriteItem call

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def batch_write_item(self, *, RequestItems: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
        ((table, requests),) = RequestItems.items()
        assert len(requests) <= 25  # DynamoDB's own limit: more is a ValidationException
        self.calls.append(len(requests))
        step: int | str = self.plan.pop(0) if self.plan else (len(requests) if self.then_all else 0)
        if step == "throttle":
            raise AwsError(
                "BatchWriteItem", 400, "ProvisionedThroughputExceededException", "Rate exceeded", {}
            )
        if step == "invalid":
            raise AwsError("BatchWriteItem", 400, "ValidationException", "Item size has exceeded", {})
        assert isinstance(step, int)
        done, left = requests[:step], requests[step:]
        if done:
            self.inner.batch_write_item(RequestItems={table: done})
        return {"UnprocessedItems": {table: left} if left else {}}


def _events(n: int, user: str = "usr_a") -> list[dict[str, Any]]:
    return [{"user": user, "ts": NOW + i, "tool": f"t{i}", "success": True} for i in range(n)]


def _audit(settings: Settings, client: Any, sleeps: list[float]) -> DynamoAudit:
    """The store with its waits recorded instead of slept, and time enough for every round: these
    tests pin the rounds; the write's time bound (audit_write_seconds) is test_audit_queue.py's."""
    return DynamoAudit(DynamoTables(replace(settings, audit_write_seconds=60.0), client), sleep=sleeps.append)


def _stored(settings: Settings, client: Any, user: str = "usr_a") -> list[dict[str, Any]]:
    return list(reversed(DynamoAudit(DynamoTables(settings, client)).list_for(user, limit=1000)))


def test_unprocessed_items_and_throttled_calls_are_retried_until_every_row_is_written(
    moto_endpoint: AwsEndpoint,
) -> None:
    settings = moto_endpoint.fresh_tables()
    real = moto_endpoint.client()
    client = Throttled(real, [10, "throttle", 3, 0, 25, 25, 2])
    sleeps: list[float] = []
    events = _events(60)
    _audit(settings, client, sleeps).append_many(events)
    assert _stored(settings, real) == events  # each row once, in order
    # chunk 1: 25 sent, 10 done; 15 refused whole; 15 sent, 3 done; 12, none; 12 all done.
    # chunk 2: 25 sent, all done. chunk 3: 10 sent, 2 done; the 8 left go through.
    assert client.calls == [25, 15, 15, 12, 12, 25, 10, 8]
    # A wait before every resend (full jitter: anywhere below the growing cap), none before a first try.
    assert len(sleeps) == 5 and all(0 <= s <= DynamoAudit.BACKOFF_CAP for s in sleeps)


def test_rows_the_table_keeps_refusing_are_handed_back_exactly(moto_endpoint: AwsEndpoint) -> None:
    settings = moto_endpoint.fresh_tables()
    real = moto_endpoint.client()
    # The first chunk gets 20 of its 25 through, then nothing more is ever processed.
    client = Throttled(real, [20], then_all=False)
    sleeps: list[float] = []
    events = _events(30)
    with pytest.raises(AuditNotWritten) as caught:
        _audit(settings, client, sleeps).append_many(events)
    assert _stored(settings, real) == events[:20]
    assert caught.value.events == events[20:]  # the chunk's 5 leftovers and the 5 never sent
    assert "unprocessed" in caught.value.cause
    assert client.calls == [25] + [5] * (DynamoAudit.WRITE_ROUNDS - 1)
    assert len(sleeps) == DynamoAudit.WRITE_ROUNDS - 1


def test_a_call_refused_for_good_is_not_retried(moto_endpoint: AwsEndpoint) -> None:
    settings = moto_endpoint.fresh_tables()
    client = Throttled(moto_endpoint.client(), ["invalid"])
    sleeps: list[float] = []
    with pytest.raises(AuditNotWritten) as caught:
        _audit(settings, client, sleeps).append_many(_events(3))
    assert caught.value.events == _events(3)
    assert caught.value.cause.startswith("ValidationException")
    assert client.calls == [3] and sleeps == []


def test_the_engine_logs_rows_it_could_not_write_and_the_batch_answer_stands(
    moto_endpoint: AwsEndpoint, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Seed 000's audit on every path, with a table that refuses every write: the executions'
    answers are unchanged, and one structured error line carries every row (nothing vanishes)."""
    settings = moto_endpoint.fresh_tables()
    stores = dynamodb_stores(settings, client=moto_endpoint.client())
    refusing = Throttled(moto_endpoint.client(), [], then_all=False)
    # No audit queue here (a local gateway), and time for every round (waits not slept).
    stores.audit = DynamoAudit(
        DynamoTables(replace(settings, audit_write_seconds=60.0), refusing), sleep=lambda _s: None
    )
    gw = make_gateway(tmp_path)
    gw.stores.audit = stores.audit
    gw.engine.audit = stores.audit
    me = principal_for(gw)

    with caplog.at_level(logging.ERROR, logger="workbench"):
        out = asyncio.run(
            gw.runs.execute(
                me,
                [
                    {"tool": "list_jots", "args": {}, "ref_id": None},
                    {"tool": "no_such_tool", "args": {}, "ref_id": None},
                ],
            )
        )
    assert out == {"results": [{"result": {"jots": []}}, {"error": "Tool not found"}]}
    lines = log_events(caplog.records, "audit_write_failed")
    assert len(lines) == 1
    line = lines[0]
    assert line["level"] == "ERROR" and line["count"] == 2 and "unprocessed" in line["error"]
    assert sorted(e["tool"] for e in line["events"]) == ["list_jots", "no_such_tool"]
    assert all(e["action"] == "EXECUTE" and e["user"] == me.user.id for e in line["events"])
    assert refusing.calls == [2] * DynamoAudit.WRITE_ROUNDS
    assert gw.metrics.counter_value("workbench_audit_rows_dropped_total") == 2
