"""A small AWS client for the JSON-protocol services the engine calls: DynamoDB, KMS, Secrets Manager.

Why not boto3 on the request path: importing boto3 and creating the first client costs about 300 ms
of a Lambda cold start (botocore loads and parses every service model it touches), several times
what the rest of the first request costs. These three services speak the same small protocol —
POST / with `X-Amz-Target: <Prefix>.<Operation>`, a JSON body whose members are the operation's
parameters, a JSON answer — so a client that signs with SigV4 and sends the parameters as they are
is a few dozen lines, and keeps boto3's calling convention: `client.get_item(TableName=..., Key=...)`
returns the same dict and fails with an `AwsError` whose `.response["Error"]["Code"]` is the AWS
error code, like botocore's ClientError.

Credentials come from the environment Lambda provides (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
AWS_SESSION_TOKEN) or from the container credentials endpoint (AWS_CONTAINER_CREDENTIALS_FULL_URI,
which SnapStart functions use). Anywhere else (an admin's laptop with SSO profiles, EC2 instance
roles) `workbench.aws.clients.make_client` hands out a real boto3 client instead.

Retries follow botocore's "standard" mode: at most 3 attempts, for throttling, transient and 5xx
errors and connection failures, with full-jitter exponential backoff.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.client
import json
import random
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from workbench.observability.tracing import span

__all__ = [
    "SERVICES",
    "AwsError",
    "AwsJsonClient",
    "CredentialSource",
    "Credentials",
    "credential_source",
    "sigv4_headers",
]


@dataclass(frozen=True, slots=True)
class Service:
    signing_name: str
    target_prefix: str
    content_type: str
    # The name X-Ray's service map shows for it.
    trace_name: str
    # Members whose JSON value is base64 of bytes (boto3 hands them out as bytes).
    blob_members: frozenset[str] = frozenset()


SERVICES: dict[str, Service] = {
    "dynamodb": Service("dynamodb", "DynamoDB_20120810", "application/x-amz-json-1.0", "DynamoDB"),
    "kms": Service(
        "kms",
        "TrentService",
        "application/x-amz-json-1.1",
        "KMS",
        frozenset({"Plaintext", "CiphertextBlob", "PublicKey", "Signature", "Mac"}),
    ),
    "secretsmanager": Service(
        "secretsmanager",
        "secretsmanager",
        "application/x-amz-json-1.1",
        "SecretsManager",
        frozenset({"SecretBinary"}),
    ),
}

# botocore's standard retry mode: these codes (and HTTP 500/502/503/504) are retried.
_THROTTLING = frozenset(
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
_RETRYABLE = _THROTTLING | {
    "RequestTimeout",
    "RequestTimeoutException",
    "InternalServerError",
    "InternalFailure",
    "ServiceUnavailable",
}


class AwsError(Exception):
    """An error answer from AWS. `.response` has botocore's ClientError shape."""

    def __init__(self, operation: str, status: int, code: str, message: str, body: Mapping[str, Any]) -> None:
        super().__init__(f"An error occurred ({code}) when calling the {operation} operation: {message}")
        self.operation_name = operation
        self.response: dict[str, Any] = {
            **{k: v for k, v in body.items() if k not in ("__type", "message", "Message")},
            "Error": {"Code": code, "Message": message},
            "ResponseMetadata": {"HTTPStatusCode": status},
        }


class AwsConnectionError(Exception):
    """AWS could not be reached (after the retries)."""


@dataclass(frozen=True, slots=True)
class Credentials:
    access_key: str
    secret_key: str
    token: str | None = None
    # Epoch seconds after which these must be fetched again (None: they do not expire here).
    expires_at: float | None = None


CredentialSource = Callable[[], Credentials]


def credential_source(env: Mapping[str, str]) -> CredentialSource | None:
    """Where this process's AWS credentials come from, without boto3; None when it takes the full
    botocore chain (profiles, SSO, instance metadata) to find them."""
    key, secret = env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")
    if key and secret:
        fixed = Credentials(key, secret, env.get("AWS_SESSION_TOKEN") or None)
        return lambda: fixed
    uri = env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI")
    if uri:
        return _ContainerCredentials(
            uri,
            env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN"),
            env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"),
        )
    return None


class _ContainerCredentials:
    """Credentials from the container endpoint (Lambda SnapStart, ECS), cached until shortly before
    they expire. The authorization token is read per fetch: it may be rotated in its file."""

    def __init__(self, uri: str, token: str | None, token_file: str | None) -> None:
        self._uri = uri
        self._token = token
        self._token_file = token_file
        self._cached: Credentials | None = None
        self._lock = threading.Lock()

    def __call__(self) -> Credentials:
        with self._lock:
            cached = self._cached
            if cached is None or (cached.expires_at is not None and cached.expires_at - time.time() < 300):
                cached = self._cached = self._fetch()
            return cached

    def _fetch(self) -> Credentials:
        token = self._token
        if self._token_file:
            with open(self._token_file) as f:
                token = f.read().strip()
        url = urllib.parse.urlsplit(self._uri)
        conn_cls = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
        conn = conn_cls(url.hostname or "", url.port, timeout=2)
        try:
            conn.request("GET", url.path or "/", headers={"Authorization": token} if token else {})
            resp = conn.getresponse()
            body = resp.read()
        finally:
            conn.close()
        if resp.status != 200:
            raise AwsConnectionError(f"container credentials endpoint answered {resp.status}")
        data = json.loads(body)
        expires = data.get("Expiration")
        return Credentials(
            data["AccessKeyId"],
            data["SecretAccessKey"],
            data.get("Token"),
            datetime.fromisoformat(expires.replace("Z", "+00:00")).timestamp() if expires else None,
        )


def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def sigv4_headers(
    *,
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    region: str,
    service: str,
    credentials: Credentials,
    now: datetime | None = None,
) -> dict[str, str]:
    """`headers` plus x-amz-date, the security token and the SigV4 Authorization header."""
    now = now or datetime.now(UTC)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    parts = urllib.parse.urlsplit(url)
    out = {k.lower(): v for k, v in headers.items()}
    out.setdefault("host", parts.netloc)
    out["x-amz-date"] = amz_date
    if credentials.token:
        out["x-amz-security-token"] = credentials.token
    signed = sorted(out)
    canonical_headers = "".join(f"{name}:{' '.join(out[name].split())}\n" for name in signed)
    query = "&".join(
        f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
        for k, v in sorted(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    )
    canonical = "\n".join(
        [
            method,
            urllib.parse.quote(parts.path or "/", safe="/-_.~"),
            query,
            canonical_headers,
            ";".join(signed),
            hashlib.sha256(body).hexdigest(),
        ]
    )
    scope = f"{day}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(
        _hmac(_hmac(_hmac(("AWS4" + credentials.secret_key).encode(), day), region), service), "aws4_request"
    )
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    out["authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={credentials.access_key}/{scope}, "
        f"SignedHeaders={';'.join(signed)}, Signature={signature}"
    )
    return out


def _operation_name(attr: str) -> str:
    """boto3's method name to the API operation: get_item -> GetItem."""
    return "".join(part[:1].upper() + part[1:] for part in attr.split("_"))


def _encode(value: Any) -> Any:
    """Request parameters as JSON: bytes become base64, as botocore sends blobs."""
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, Mapping):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_encode(v) for v in value]
    return value


def _decode_attributes(value: Any) -> Any:
    """DynamoDB attribute values: {"B": base64} and {"BS": [base64]} become bytes, at any depth."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if k == "B" and isinstance(v, str):
                out[k] = base64.b64decode(v)
            elif k == "BS" and isinstance(v, list) and all(isinstance(x, str) for x in v):
                out[k] = [base64.b64decode(x) for x in v]
            else:
                out[k] = _decode_attributes(v)
        return out
    if isinstance(value, list):
        return [_decode_attributes(v) for v in value]
    return value


class AwsJsonClient:
    """`client.<operation>(**params)` for a JSON-protocol AWS service, boto3-style.

    Thread-safe: each thread keeps its own keep-alive connection. `listeners` are called with
    (operation, params) before each call (tests count calls with them, as they would with
    botocore's before-parameter-build event).
    """

    def __init__(
        self,
        service: str,
        *,
        region: str,
        credentials: CredentialSource,
        endpoint_url: str | None = None,
        connect_timeout: float = 2.0,
        read_timeout: float = 5.0,
        max_attempts: int = 3,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.service = SERVICES[service]
        self.region = region
        self.endpoint_url = (endpoint_url or f"https://{service}.{region}.amazonaws.com").rstrip("/")
        self._credentials = credentials
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._max_attempts = max_attempts
        self._sleep = sleep
        self._local = threading.local()
        self.listeners: list[Callable[[str, dict[str, Any]], None]] = []
        parts = urllib.parse.urlsplit(self.endpoint_url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port
        self._netloc = parts.netloc

    def __getattr__(self, attr: str) -> Callable[..., dict[str, Any]]:
        if attr.startswith("_"):
            raise AttributeError(attr)
        operation = _operation_name(attr)

        def call(**params: Any) -> dict[str, Any]:
            return self.call(operation, params)

        call.__name__ = attr
        return call

    def call(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        for listener in self.listeners:
            listener(operation, params)
        with span(self.service.trace_name, "aws") as traced:
            if traced is not None:
                traced.aws = {"operation": operation, "region": self.region}
                if "TableName" in params:
                    traced.aws["table_name"] = params["TableName"]
                elif isinstance(params.get("RequestItems"), dict):  # batch calls, as X-Ray's SDK names them
                    traced.aws["table_names"] = sorted(params["RequestItems"])
            try:
                return self._call(operation, params)
            except AwsError as exc:
                if traced is not None:
                    status = exc.response["ResponseMetadata"]["HTTPStatusCode"]
                    traced.error, traced.fault = status < 500, status >= 500
                    traced.throttle = exc.response["Error"]["Code"] in _THROTTLING
                raise

    def _call(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps(_encode(params), separators=(",", ":")).encode()
        attempt = 0
        while True:
            attempt += 1
            try:
                status, raw = self._send(operation, body)
            except (OSError, http.client.HTTPException) as exc:
                self._drop_connection()
                if attempt >= self._max_attempts:
                    raise AwsConnectionError(f"{operation}: {type(exc).__name__}: {exc}") from exc
                self._backoff(attempt)
                continue
            data = json.loads(raw) if raw else {}
            if status < 300:
                return self._decode(data)
            code = str(data.get("__type", "")).rpartition("#")[2] or f"HTTP{status}"
            message = str(data.get("message") or data.get("Message") or "")
            if attempt < self._max_attempts and (code in _RETRYABLE or status in (500, 502, 503, 504)):
                self._backoff(attempt)
                continue
            raise AwsError(operation, status, code, message, data)

    def _decode(self, data: dict[str, Any]) -> dict[str, Any]:
        if self.service.signing_name == "dynamodb":
            decoded: dict[str, Any] = _decode_attributes(data)
            return decoded
        for member in self.service.blob_members & data.keys():
            if isinstance(data[member], str):
                data[member] = base64.b64decode(data[member])
        return data

    def _backoff(self, attempt: int) -> None:
        # Full jitter; DynamoDB's short base (25 ms in botocore's legacy mode) keeps retries inside
        # a request's time budget.
        base = 0.025 if self.service.signing_name == "dynamodb" else 0.1
        self._sleep(random.random() * min(base * 2**attempt, 2.0))  # noqa: S311 - jitter, not a secret

    def _connection(self) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self._https:
                conn = http.client.HTTPSConnection(self._host, self._port, timeout=self._connect_timeout)
            else:
                conn = http.client.HTTPConnection(self._host, self._port, timeout=self._connect_timeout)
            self._local.conn = conn
        return conn

    def _drop_connection(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _send(self, operation: str, body: bytes) -> tuple[int, bytes]:
        headers = sigv4_headers(
            method="POST",
            url=self.endpoint_url + "/",
            headers={
                "host": self._netloc,
                "content-type": self.service.content_type,
                "x-amz-target": f"{self.service.target_prefix}.{operation}",
            },
            body=body,
            region=self.region,
            service=self.service.signing_name,
            credentials=self._credentials(),
        )
        conn = self._connection()
        if conn.sock is None:
            conn.connect()
            assert conn.sock is not None
            conn.sock.settimeout(self._read_timeout)  # the connect timeout was for connecting only
        conn.request("POST", "/", body=body, headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
        if resp.getheader("connection", "").lower() == "close":
            self._drop_connection()
        return resp.status, raw
