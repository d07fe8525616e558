"""AWS clients for the adapters: created lazily, once per holder, with tight timeouts.

DynamoDB, KMS and Secrets Manager get the small SigV4 client of `workbench.aws.client` whenever the process's
credentials are in its environment (always, on Lambda): no boto3 import, no service models on the
cold start. Anything else — another service, or credentials that take botocore's full chain to
find (SSO profiles on an admin's laptop) — gets a boto3 client, imported only then. Every call
returns or fails well inside API Gateway's 30 s: standard retry mode, `client.MAX_ATTEMPTS` attempts,
2 s connect and 5 s read timeouts.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workbench.settings import Settings

__all__ = ["LazyClient", "boto3_config", "client_error_code", "make_boto3_client", "make_client"]


# One boto3 session per process, shared by every client: clients of one session share its loaded
# service data (about 60 ms less cold start for two clients). Creating clients from a session is
# not thread-safe, hence the lock.
_session: dict[str, Any] = {}
_session_lock = threading.Lock()


def make_client(service: str, settings: Settings) -> Any:
    from workbench.aws.client import SERVICES, AwsJsonClient, credential_source

    # The AWS credential variables are the SDK's to read (as boto3 would), not configuration.
    credentials = credential_source(os.environ)
    if credentials is not None and service in SERVICES:
        return AwsJsonClient(
            service,
            region=settings.aws_region,
            credentials=credentials,
            endpoint_url=settings.aws_endpoint_url,
        )
    return make_boto3_client(service, settings)


def boto3_config(region: str) -> Any:
    """The botocore Config of every boto3 client here: the same attempts as the engine's own client."""
    from botocore.config import Config  # type: ignore[import-untyped]

    from workbench.aws.client import MAX_ATTEMPTS

    return Config(
        retries={"mode": "standard", "total_max_attempts": MAX_ATTEMPTS},
        connect_timeout=2,
        read_timeout=5,
        region_name=region,
    )


def make_boto3_client(service: str, settings: Settings) -> Any:
    config = boto3_config(settings.aws_region)
    with _session_lock:
        session = _session.get("boto3")
        if session is None:
            import boto3  # type: ignore[import-untyped]

            session = _session["boto3"] = boto3.session.Session()
        return session.client(service, endpoint_url=settings.aws_endpoint_url, config=config)


class LazyClient:
    """Holds one client for `service`, created on first use (or the injected one)."""

    def __init__(self, service: str, settings: Settings, client: Any | None = None) -> None:
        self.service = service
        self.settings = settings
        self._client = client
        self._lock = threading.Lock()

    def get(self) -> Any:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = make_client(self.service, self.settings)
        return self._client


def client_error_code(exc: BaseException) -> str | None:
    """The AWS error code of a botocore ClientError, None for anything else."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code")
        return str(code) if code else None
    return None
