"""The AWS error codes that are retried (botocore's standard retry mode), in a module that imports
nothing: the client retries them (workbench.aws.client) and workbench.errors counts one that is
still there after the retries as an outage, without importing the client."""

from __future__ import annotations

__all__ = ["RETRYABLE_CODES", "THROTTLING_CODES"]

# botocore's standard retry mode: these codes (and HTTP 429, 500, 502, 503, 504) are retried ...
THROTTLING_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "TransactionInProgressException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "LimitExceededException",
        "RequestThrottled",
        "SlowDown",
        "PriorRequestNotComplete",
        "EC2ThrottledException",
    }
)
# ... and these: its transient codes, and the one error the three services' models mark retryable.
RETRYABLE_CODES = THROTTLING_CODES | {
    "RequestTimeout",
    "RequestTimeoutException",
    "PriorRequestNotComplete",
    "ReplicatedWriteConflictException",
}
