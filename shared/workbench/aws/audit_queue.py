"""The audit queue: audit rows DynamoDB did not take within a request's audit time (throttling) go to
an SQS queue (the stack's AuditRetryQueue) instead of keeping the caller waiting, and are written
from there by the REST function (an SQS event source on the queue, `redrive`), with the function's
whole remaining time. A message that still cannot be written is retried by SQS and, after five
receives, lands in AuditDeadLetterQueue (retained, alarmed). Nothing is dropped on the way: a send
that fails too is logged whole (workbench.engine.executor) and counted as dropped.

Messages carry `{"rows": [...]}`, at most MESSAGE_BYTES of JSON each (SQS takes 256 KiB)."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from workbench.aws.clients import LazyClient
from workbench.errors import AuditNotWritten

if TYPE_CHECKING:
    from collections.abc import Sequence

    from workbench.settings import Settings
    from workbench.stores import AuditStore

__all__ = ["MESSAGE_BYTES", "SqsAuditQueue", "is_audit_queue_event", "redrive"]

MESSAGE_BYTES = 200_000
_BATCH = 10  # SendMessageBatch's limit


class SqsAuditQueue:
    def __init__(self, settings: Settings, client: Any | None = None) -> None:
        if not settings.audit_queue_url:
            raise ValueError("SqsAuditQueue needs WORKBENCH_AUDIT_QUEUE_URL")
        self.url = settings.audit_queue_url
        self._client = LazyClient("sqs", settings, client)

    def defer(self, rows: Sequence[dict[str, Any]]) -> None:
        """Send the rows; raises if SQS refused any message (the caller logs what is left)."""
        bodies = _messages(rows)
        for start in range(0, len(bodies), _BATCH):
            entries = [{"Id": str(i), "MessageBody": b} for i, b in enumerate(bodies[start : start + _BATCH])]
            answer = self._client.get().send_message_batch(QueueUrl=self.url, Entries=entries)
            failed = answer.get("Failed") or []
            if failed:
                raise RuntimeError(f"SQS refused {len(failed)} audit message(s): {failed[0].get('Code')}")


def _messages(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The rows packed into as few message bodies as fit MESSAGE_BYTES each."""
    bodies: list[str] = []
    batch: list[str] = []
    size = 0
    for row in rows:
        text = json.dumps(row, default=str, separators=(",", ":"))
        if batch and size + len(text) + 1 > MESSAGE_BYTES:
            bodies.append('{"rows":[' + ",".join(batch) + "]}")
            batch, size = [], 0
        batch.append(text)
        size += len(text) + 1
    if batch:
        bodies.append('{"rows":[' + ",".join(batch) + "]}")
    return bodies


def is_audit_queue_event(event: dict[str, Any]) -> bool:
    records = event.get("Records")
    return isinstance(records, list) and bool(records) and records[0].get("eventSource") == "aws:sqs"


def redrive(audit: AuditStore, event: dict[str, Any], *, until: float) -> dict[str, Any]:
    """Write the rows of an SQS batch (an event source mapping's event) to the audit store, each
    message's rows again and again while the store throttles and time is left (`until`, monotonic).
    The answer names the messages not fully written (ReportBatchItemFailures): SQS delivers them
    again, and after five receives moves them to the dead-letter queue. A row written twice (a
    message redelivered after a partial write) is a duplicate row, never a lost one."""
    failures: list[dict[str, str]] = []
    for record in event.get("Records") or []:
        rows: list[dict[str, Any]] = list(json.loads(record["body"]).get("rows") or [])
        while rows:
            try:
                audit.append_many(rows)
                rows = []
            except AuditNotWritten as exc:
                rows = exc.events
                if time.monotonic() >= until:
                    break
        if rows:
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}
