"""Audit under DynamoDB throttling (issue 23): a request waits a bounded time for its audit rows
(`audit_write_seconds`), and what DynamoDB did not take by then goes to the audit queue (SQS) and is
written from there by the REST function. Nothing is lost, nothing is dropped unseen: the rows deferred
are counted, and the queue's batch is answered with the messages not yet written, for SQS to retry.

DynamoDB is moto behind tests/support/throttle_proxy.py (a share of each BatchWriteItem's items
refused, as a throttled partition does); SQS is moto's, spoken to by workbench.aws.client."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from workbench.composition import Gateway, build_gateway
from workbench.settings import Settings

from tests.support.apigw import load_entry
from tests.support.aws import AwsEndpoint
from tests.support.throttle_proxy import throttling_proxy

pytestmark = pytest.mark.e2e

WRITE_SECONDS = 0.3


@pytest.fixture
def queue_url(moto_endpoint: AwsEndpoint) -> Iterator[str]:
    sqs = moto_endpoint.client("sqs")
    url = str(sqs.create_queue(QueueName=f"audit-{uuid.uuid4().hex[:8]}")["QueueUrl"])
    yield url
    sqs.delete_queue(QueueUrl=url)


def _rows(n: int, user: str = "usr_audit") -> list[dict[str, Any]]:
    return [
        {"action": "EXECUTE", "user": user, "integration": "demo", "tool": "t", "row": i, "ts": time.time()}
        for i in range(n)
    ]


def _received(moto_endpoint: AwsEndpoint, url: str) -> list[dict[str, Any]]:
    """Every message in the queue, as an SQS event source mapping hands them to Lambda."""
    sqs = moto_endpoint.client("sqs")
    records: list[dict[str, Any]] = []
    while True:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=60)
        messages = got.get("Messages") or []
        if not messages:
            return records
        records += [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "eventSource": "aws:sqs",
            }
            for m in messages
        ]


def _stored(settings: Settings, user: str = "usr_audit") -> list[int]:
    """The rows in the audit table, read straight from moto."""
    return sorted(e["row"] for e in build_gateway(settings).stores.audit.list_for(user, limit=1000))


def _gateway(settings: Settings, endpoint: str, queue: str) -> Gateway:
    return build_gateway(
        replace(settings, aws_endpoint_url=endpoint, audit_queue_url=queue, audit_write_seconds=WRITE_SECONDS)
    )


async def _write_all(gw: Gateway, rows: list[dict[str, Any]], callers: int) -> list[float]:
    """`callers` requests at once, each awaiting its own rows' write; the wait of each."""
    waits: list[float] = []

    async def one(mine: list[dict[str, Any]]) -> None:
        started = time.perf_counter()
        await gw.engine.audit_writes.write(mine)
        waits.append(time.perf_counter() - started)

    await asyncio.gather(*(one(rows[i::callers]) for i in range(callers)))
    return waits


def test_fully_throttled_rows_wait_a_bounded_time_then_go_to_the_queue_and_the_rest_function_writes_them(
    moto_endpoint: AwsEndpoint, lambda_env: Settings, queue_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = _rows(60)
    with throttling_proxy(moto_endpoint.url, rate=1.0) as (url, stats):
        gw = _gateway(lambda_env, url, queue_url)
        waits = asyncio.run(_write_all(gw, rows, callers=6))
    assert stats.throttled == stats.items > 0
    assert max(waits) < 2 * WRITE_SECONDS + 1.0, waits  # its own write and at most one before it
    assert _stored(lambda_env) == []
    assert gw.metrics.counter_value("workbench_audit_rows_deferred_total") == 60
    assert gw.metrics.counter_value("workbench_audit_rows_dropped_total") == 0

    records = _received(moto_endpoint, queue_url)
    assert sorted(r["row"] for rec in records for r in json.loads(rec["body"])["rows"]) == list(range(60))

    # The REST function, handed the queue's batch by its event source mapping, writes them.
    monkeypatch.setenv("WORKBENCH_AUDIT_QUEUE_URL", queue_url)
    answer = load_entry("rest").handler({"Records": records}, _Context(20))
    assert answer == {"batchItemFailures": []}
    assert _stored(lambda_env) == list(range(60))


def test_half_throttled_nothing_is_lost(
    moto_endpoint: AwsEndpoint, lambda_env: Settings, queue_url: str
) -> None:
    rows = _rows(200)
    with throttling_proxy(moto_endpoint.url, rate=0.5) as (url, stats):
        gw = _gateway(lambda_env, url, queue_url)
        asyncio.run(_write_all(gw, rows, callers=20))
    assert 0.3 < stats.throttled / stats.items < 0.7
    stored = _stored(lambda_env)
    queued = [
        r["row"] for rec in _received(moto_endpoint, queue_url) for r in json.loads(rec["body"])["rows"]
    ]
    assert sorted(stored + queued) == list(range(200))  # each row once: in the table or in the queue
    assert gw.metrics.counter_value("workbench_audit_rows_deferred_total") == len(queued)


def test_a_batch_still_throttled_is_handed_back_for_sqs_to_retry(
    moto_endpoint: AwsEndpoint, lambda_env: Settings, queue_url: str
) -> None:
    from workbench.aws.audit_queue import redrive

    gw = _gateway(lambda_env, moto_endpoint.url, queue_url)
    gw.engine.audit_fallback(_rows(3))  # type: ignore[misc]
    records = _received(moto_endpoint, queue_url)
    with throttling_proxy(moto_endpoint.url, rate=1.0) as (url, _):
        throttled = _gateway(lambda_env, url, queue_url)
        answer = redrive(throttled.stores.audit, {"Records": records}, until=time.monotonic() + 0.5)
    assert answer == {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in records]}
    assert _stored(lambda_env) == []


class _Context:
    aws_request_id = "audit-redrive"

    def __init__(self, seconds: float) -> None:
        self.ends = time.monotonic() + seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.ends - time.monotonic()) * 1000))
