"""A small AWS client for the JSON-protocol services the engine calls: DynamoDB, KMS, Secrets Manager, SQS
(and CodeDeploy, for the deploy hook).

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

The client is total: whatever AWS (or a proxy in front of it) answers — any status, a JSON object,
HTML, plain text, an empty or truncated body, JSON that is not an object, bytes that are not UTF-8 —
the call returns the decoded answer or raises one of the `AwsFailure` family:

- `AwsError`: AWS answered, not with a usable answer. `.response["Error"]["Code"]` is the error
  type, read as botocore and the Smithy awsJson protocols do: the body's `__type`, else the
  `X-Amzn-ErrorType` header, else the body's `code`, each cut to its shape name
  (`aws.protocols#ThrottlingException:http://...` → `ThrottlingException`); an answer without one
  is named by its status (`"502"`, as botocore names a generic error page). A 2xx whose body is not
  a JSON object is refused as `MalformedResponse` (botocore reads it as an answer with no members:
  an empty GetItem would read as "no such item").
- `AwsConnectionError`: AWS could not be reached, or its answer was cut off.

Retries follow botocore's "standard" mode: `MAX_ATTEMPTS` attempts in all, for throttles (by
code, or HTTP 429), transient codes, HTTP 500/502/503/504 whatever the body, and connection
failures, with full-jitter exponential backoff. `.retryable` on the error says whether it was one
of those (so it was raised after the last attempt); `.response["ResponseMetadata"]["RetryAttempts"]`
how many retries were made, as botocore reports them. tests/aws/test_aws_client_differential.py
drives botocore and this client against the same loopback server answering a corpus of odd
responses and pins where the two agree, and each place they differ on purpose.

Endpoints follow the region's partition: `dynamodb.cn-north-1.amazonaws.com.cn` in China,
`kms.us-gov-west-1.amazonaws.com` in GovCloud, the ISO partitions' own domains.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.client
import json
import random
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from workbench.errors import AWS_RETRYABLE_CODES, AWS_THROTTLING_CODES, WorkbenchError
from workbench.observability.tracing import span

__all__ = [
    "MAX_ATTEMPTS",
    "RETRYABLE_CODES",
    "SERVICES",
    "AwsConnectionError",
    "AwsError",
    "AwsFailure",
    "AwsJsonClient",
    "CredentialSource",
    "Credentials",
    "credential_source",
    "regional_endpoint",
    "sigv4_headers",
]

# Attempts per call, the first included (botocore's standard mode, which the boto3 fallback in
# workbench.aws.clients is configured with too). Stated here once.
MAX_ATTEMPTS = 3


class Service:
    # Plain classes here: every cold start builds them (a dataclass costs about 1 ms).
    __slots__ = ("blob_members", "content_type", "signing_name", "target_prefix", "trace_name")

    def __init__(
        self,
        signing_name: str,
        target_prefix: str,
        content_type: str,
        trace_name: str,  # the name X-Ray's service map shows for it
        blob_members: frozenset[str] = frozenset(),  # members whose JSON value is base64 of bytes
    ) -> None:
        self.signing_name, self.target_prefix, self.content_type = signing_name, target_prefix, content_type
        self.trace_name, self.blob_members = trace_name, blob_members


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
    # SQS's JSON protocol (AmazonSQS.<Operation>): the audit rows DynamoDB could not take in time.
    "sqs": Service("sqs", "AmazonSQS", "application/x-amz-json-1.0", "SQS"),
    # The deploy hook's one call (workbench/runtime/migrate_hook.py).
    "codedeploy": Service("codedeploy", "CodeDeploy_20141006", "application/x-amz-json-1.1", "CodeDeploy"),
}

_THROTTLING, _RETRYABLE = AWS_THROTTLING_CODES, AWS_RETRYABLE_CODES
THROTTLING_CODES, RETRYABLE_CODES = AWS_THROTTLING_CODES, AWS_RETRYABLE_CODES
_RETRYABLE_STATUS = frozenset({500, 502, 503, 504})
_THROTTLE_STATUS = 429  # a throttle whatever the body says


_TLS: list[ssl.SSLContext] = []
_TLS_LOCK = threading.Lock()


def _tls() -> ssl.SSLContext:
    """The one TLS context of every AWS connection in the process, made on the first: what
    http.client.HTTPSConnection makes for itself when given none (the default HTTPS context with
    ALPN http/1.1 and post-handshake auth), but each of those loads the CA store again, 20-40 ms of
    CPU per connection: per client (DynamoDB, KMS, ...) and per store thread, and again after a
    dropped connection. A context is safe to share between threads."""
    if not _TLS:
        with _TLS_LOCK:
            if not _TLS:
                context = ssl._create_default_https_context()
                context.set_alpn_protocols(["http/1.1"])
                if context.post_handshake_auth is not None:
                    context.post_handshake_auth = True
                _TLS.append(context)
    return _TLS[0]


class AwsFailure(WorkbenchError):
    """A call to AWS that did not succeed (after the retries that applied)."""


class AwsError(AwsFailure):
    """An error answer from AWS. `.response` has botocore's ClientError shape."""

    def __init__(
        self,
        operation: str,
        status: int,
        code: str,
        message: str,
        body: Mapping[str, Any],
        *,
        retryable: bool = False,
        retries: int = 0,
    ) -> None:
        super().__init__(f"An error occurred ({code}) when calling the {operation} operation: {message}")
        self.operation_name = operation
        self.retryable = retryable
        self.response: dict[str, Any] = {
            **{k: v for k, v in body.items() if k not in ("__type", "message", "Message")},
            "Error": {"Code": code, "Message": message},
            "ResponseMetadata": {"HTTPStatusCode": status, "RetryAttempts": retries},
        }


class AwsConnectionError(AwsFailure):
    """AWS could not be reached, or its answer was cut off (after the retries)."""


def regional_endpoint(service: str, region: str) -> str:
    """The service's regional endpoint in the region's partition (as botocore resolves it)."""
    for prefix, domain in _PARTITION_DOMAINS:
        if region.startswith(prefix):
            return f"https://{service}.{region}.{domain}"
    return f"https://{service}.{region}.amazonaws.com"  # aws, aws-us-gov


# Region prefix -> DNS suffix of the partitions whose suffix is not amazonaws.com (botocore's
# endpoints.json `partitions[].dnsSuffix`); checked against botocore in tests/aws.
_PARTITION_DOMAINS = (
    ("cn-", "amazonaws.com.cn"),
    ("us-isob-", "sc2s.sgov.gov"),
    ("us-isof-", "csp.hci.ic.gov"),
    ("us-iso-", "c2s.ic.gov"),
    ("eu-isoe-", "cloud.adc-e.uk"),
)


def _error_type(value: Any) -> str:
    """An error type cut to its shape name, as the awsJson protocols say clients must."""
    if not isinstance(value, str):
        return ""
    return value.split(":", 1)[0].rpartition("#")[2]


class Credentials:
    __slots__ = ("access_key", "expires_at", "secret_key", "token")

    def __init__(
        self, access_key: str, secret_key: str, token: str | None = None, expires_at: float | None = None
    ) -> None:
        self.access_key, self.secret_key, self.token = access_key, secret_key, token
        # Epoch seconds after which these must be fetched again (None: they do not expire here).
        self.expires_at = expires_at


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
        data = _json_object(body) or {}
        key, secret, token, expires = (
            data.get(k) for k in ("AccessKeyId", "SecretAccessKey", "Token", "Expiration")
        )
        try:
            if not (isinstance(key, str) and isinstance(secret, str)) or not isinstance(token, str | None):
                raise ValueError("no AccessKeyId/SecretAccessKey")
            expires_at = (
                datetime.fromisoformat(expires.replace("Z", "+00:00")).timestamp() if expires else None
            )
        except (ValueError, AttributeError) as exc:
            raise AwsConnectionError(
                f"container credentials endpoint answered no credentials: {exc}"
            ) from exc
        return Credentials(key, secret, token, expires_at)


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
        max_attempts: int = MAX_ATTEMPTS,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.service = SERVICES[service]
        self.region = region
        self.endpoint_url = (endpoint_url or regional_endpoint(service, region)).rstrip("/")
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
                    traced.throttle = (
                        exc.response["Error"]["Code"] in _THROTTLING or status == _THROTTLE_STATUS
                    )
                raise

    def _call(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps(_encode(params), separators=(",", ":")).encode()
        attempt = 0
        while True:
            attempt += 1
            try:
                status, error_type, raw = self._send(operation, body)
            except (OSError, http.client.HTTPException) as exc:
                self._drop_connection()
                if attempt >= self._max_attempts:
                    raise AwsConnectionError(f"{operation}: {type(exc).__name__}: {exc}") from exc
                self._backoff(attempt)
                continue
            data = _json_object(raw)
            if 200 <= status < 300:
                if data is None:
                    raise AwsError(
                        operation, status, "MalformedResponse", "the answer is not a JSON object", {}
                    )
                return self._decode(data)
            error = self._error(operation, status, error_type, data or {}, attempt - 1)
            if error.retryable and attempt < self._max_attempts:
                self._backoff(attempt)
                continue
            raise error

    @staticmethod
    def _error(operation: str, status: int, header_type: str, data: dict[str, Any], retries: int) -> AwsError:
        code = (
            _error_type(data.get("__type"))
            or _error_type(header_type)
            or _error_type(data.get("code") or data.get("Code"))
            or str(status)
        )
        message = data.get("message") or data.get("Message")
        if not isinstance(message, str):
            message = http.client.responses.get(status, "")
        retryable = code in _RETRYABLE or status in _RETRYABLE_STATUS or status == _THROTTLE_STATUS
        return AwsError(operation, status, code, message, data, retryable=retryable, retries=retries)

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
                conn = http.client.HTTPSConnection(
                    self._host, self._port, timeout=self._connect_timeout, context=_tls()
                )
            else:
                conn = http.client.HTTPConnection(self._host, self._port, timeout=self._connect_timeout)
            self._local.conn = conn
        return conn

    def _drop_connection(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _send(self, operation: str, body: bytes) -> tuple[int, str, bytes]:
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
        return resp.status, resp.getheader("x-amzn-errortype", ""), raw


def _json_object(raw: bytes) -> dict[str, Any] | None:
    """The body as a JSON object; {} for an empty body; None for anything else (HTML, text, a
    truncated document, JSON that is not an object, bytes that are not UTF-8)."""
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError:  # UnicodeDecodeError included
        return None
    return data if isinstance(data, dict) else None
