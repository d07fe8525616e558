"""One exception tree for the engine. Each surface maps it to wire errors in one place.

Every exception class in `workbench` and `workbench_plugins` descends from `WorkbenchError`
(tests/unit/test_exception_tree.py imports every module and fails on any class outside the tree).
Where a caller relies on a library base too, the class has both (`JsonRejected` is also a
`ValueError`). The classes defined here are the ones several parts raise; the others live beside
the code that raises them, named below with their module.

WorkbenchError
├── AuthError                 no/bad credential for Workbench itself (MCP -32001, HTTP 401)
├── NotFound                  a thing that does not exist *for this caller*
├── InvalidInput              bad input from a caller (HTTP 400, MCP -32602)
│   ├── guard.bodylimit.BodyTooLarge                    a request body over its cap (HTTP 413)
│   ├── guard.jsontext.JsonRejected (also ValueError)   a body that is not strict JSON
│   └── guard.yamltext.YamlRejected (also ValueError)   a YAML document over its limits, or not YAML
├── RegistryError             a plugin refused at load (reserved name, bad manifest)
├── ConflictError             a conditional write lost a race, or a name is taken
├── CryptoError               a blob that does not decrypt for its row
├── UpstreamTimeout           an upstream call ran past the timeout that applied to it
├── RateLimited               a provider's rate limit, still in force after the one retry that fitted
├── ConfigError               the gateway's own settings cannot be read (its secret store)
├── Unavailable               the store or KMS cannot answer right now (throttled, 5xx, timeout,
│                             dropped connection): nothing was decided, nothing is damaged; try again
├── JobFailed                 a scheduled job did not succeed (fails its invocation: retries, DLQ)
├── AuditNotWritten           audit rows the store still refused after its retries (they are logged)
├── CredentialError           a provider credential that cannot be used
│   ├── NotConnected          no stored credential for (user, integration)
│   ├── ReconnectRequired     the provider refused the credential for good; the user must connect again
│   └── CredentialUnreadable  the stored credential does not decrypt; the user must connect again
├── VerificationFailed        connecting: the credential did not pass the manifest's probe (nothing stored)
│
│   -- what plugin authors raise (workbench.sdk) --
├── sdk.ToolError             a tool's own failure, shown to the agent as the tool's error
├── sdk.UpstreamError         the provider answered with an error status
│
│   -- transport and guard --
├── guard.egress.EgressRefused        a destination the egress policy refuses
│   └── ResponseTooLarge              an upstream answer over its decoded-size cap
├── aws.client.AwsFailure             a call to AWS that did not succeed
│   ├── AwsError                      AWS answered with an error (botocore's ClientError shape)
│   └── AwsConnectionError            AWS could not be reached, or its answer was cut off
│
│   -- engine --
├── engine.compose.BadRef             a compose reference that cannot be resolved
├── engine.compose.VaultMissing       a {{vault.NAME}} reference with no such secret
│   └── VaultUnreadable               the secret exists but does not decrypt
├── engine.search.SearchBudgetExceeded  a catalog too large to index within its budget
│
│   -- connections and sign-in --
├── connections.provider_oauth.ProviderError  the provider refused a token request, or was unreachable
├── connections.flow.CallbackError    a connect callback that cannot complete (state, code, provider)
├── web.oidc.OidcError                SSO sign-in failed (the message is safe to show)
├── web.client_config.ClientConfigError  a client's config file that cannot be merged (nothing written)
├── oauth.errors.OAuthError           an OAuth 2.1 error answer of the authorization server
│   ├── RedirectableError             ... sent back to the client's redirect URI
│   └── TooManyRequests               ... a rate limit (HTTP 429)
│
│   -- external MCP servers and custom apps --
├── external.client.ExternalError     a call to an external MCP server that failed
│   ├── Unreachable, TimedOut, DestinationRefused, AuthRejected, ServerFailed, SessionExpired, RpcError
│   ├── ProtocolError                 an answer that is not MCP
│   │   └── HttpRefused               an HTTP error status instead of an answer
│   └── external.service.NeedsConnect the user must connect the server first
├── external.oauth.OAuthSetupError    an external server's OAuth setup that cannot be used
├── external.openapi.OpenApiError (also ValueError)      an OpenAPI document that cannot be used
├── external.operator.OperatorConfigError (also ValueError)  the operator's server list is invalid
│
│   -- the browser --
├── browser.page.BrowserError         a browser operation the caller can act on (bad selector, page error)
│   └── browser.pool.BrowserUnavailable  no browser could be started or reached
├── browser.cdp.CdpError              the browser answered a DevTools command with an error
│   └── CdpClosed                     the DevTools connection closed
│
│   -- the command line --
├── cli.CliError                      a problem the user can fix: one line, exit status 1
│
│   -- child processes (guard.child_worker), turned into their caller's own errors --
├── guard.child_worker.ChildFailed    the child gave no answer (slow, stopped, garbled)
├── guard.child_worker.Refused        raised in the child: the input is refused with this message
│
│   -- private control flow, never leaving their module --
└── mcp.app._Refused, mcp.protocol._RpcError, proxy.app._Denied, web.browser_bridge._Refused,
    tools._Aborted, external.openapi._Unresolvable
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AWS_RETRYABLE_CODES",
    "AWS_THROTTLING_CODES",
    "AuditNotWritten",
    "AuthError",
    "ConfigError",
    "ConflictError",
    "CredentialError",
    "CredentialUnreadable",
    "CryptoError",
    "InvalidInput",
    "JobFailed",
    "NotConnected",
    "NotFound",
    "RateLimited",
    "ReconnectRequired",
    "RegistryError",
    "Unavailable",
    "UpstreamTimeout",
    "VerificationFailed",
    "WorkbenchError",
    "as_unavailable",
    "upstream_timeout",
    "upstream_timeout_message",
]


class WorkbenchError(Exception):
    """Base of every error the engine raises on purpose."""


class AuthError(WorkbenchError):
    pass


class NotFound(WorkbenchError):
    pass


class InvalidInput(WorkbenchError):
    pass


class RegistryError(WorkbenchError):
    pass


class ConflictError(WorkbenchError):
    pass


class CryptoError(WorkbenchError):
    pass


def upstream_timeout_message(seconds: float | None) -> str:
    """The one wording of an upstream timeout, naming the limit that applied when it is known."""
    return "Upstream timed out" if seconds is None else f"Upstream timed out after {seconds:g} s"


class UpstreamTimeout(WorkbenchError):
    def __init__(self, seconds: float | None) -> None:
        super().__init__(upstream_timeout_message(seconds))
        self.seconds = seconds


class RateLimited(WorkbenchError):
    """The provider answered with its rate limit and the wait it asks for does not fit the request
    (or a retry met the limit again). A tool's answer then carries `retry_after` (seconds)."""

    def __init__(self, integration: str, retry_after: int, detail: str) -> None:
        super().__init__(
            f"{integration} rate limit reached ({detail}). Retry after {retry_after} s."
            if detail
            else f"{integration} rate limit reached. Retry after {retry_after} s."
        )
        self.integration = integration
        self.retry_after = retry_after


def upstream_timeout(exc: BaseException) -> UpstreamTimeout | None:
    """The timeout `exc` stands for: itself, an httpx timeout (named by the connect/read/write/pool
    limit its request carried), or either one in its cause chain. None if it is no timeout."""
    import httpx  # already loaded by whoever made the call

    limits = (
        (httpx.ConnectTimeout, "connect"),
        (httpx.ReadTimeout, "read"),
        (httpx.WriteTimeout, "write"),
        (httpx.PoolTimeout, "pool"),
    )
    current: BaseException | None = exc
    for _ in range(8):  # a cause chain is short; never loop on a cyclic one
        if current is None:
            return None
        if isinstance(current, UpstreamTimeout):
            return current
        if isinstance(current, httpx.TimeoutException):
            try:
                applied = current.request.extensions.get("timeout") or {}
            except RuntimeError:  # raised without a request
                applied = {}
            key = next((name for cls, name in limits if isinstance(current, cls)), None)
            value = applied.get(key) if key else None
            return UpstreamTimeout(float(value) if isinstance(value, int | float) else None)
        current = current.__cause__ or current.__context__
    return None


class ConfigError(WorkbenchError):
    pass


class Unavailable(WorkbenchError):
    """A service the gateway stands on (its store, KMS) did not answer this time: throttled, a 5xx,
    a timeout, a dropped connection. Nothing was decided and nothing stored is damaged, so every
    surface says "try again" (MCP: a JSON-RPC error; REST and the proxy: 503 with Retry-After;
    /token and /register: `temporarily_unavailable`; the portal: an error page). `str()` is safe to
    show: it never carries the AWS message or an exception name; `detail` is for the log only."""

    retry_after = 2  # seconds: what Retry-After says

    def __init__(self, what: str = "storage", detail: str = "") -> None:
        super().__init__(f"Workbench's {what} is temporarily unavailable. Try again in a moment.")
        self.what = what
        self.detail = detail

    @classmethod
    def in_outcome(cls, outcome: Any) -> Unavailable | None:
        """The outage an execution's outcome reports (`{"error": <these words>}`), if it does."""
        error = outcome.get("error") if isinstance(outcome, dict) and len(outcome) == 1 else None
        for what in ("storage", "key service"):
            if error == str(cls(what)):
                return cls(what)
        return None


# botocore's exceptions for a call that did not get an answer (imported by name: no botocore here).
_BOTOCORE_UNREACHABLE = frozenset(
    {
        "HTTPClientError",
        "EndpointConnectionError",
        "ConnectTimeoutError",
        "ReadTimeoutError",
        "ConnectionClosedError",
    }
)


def as_unavailable(exc: BaseException) -> Unavailable | None:
    """The outage `exc` stands for, itself or in its cause chain: an AWS call that failed after
    its retries with a throttle, a 5xx, a timeout or a dropped connection (our client's or
    botocore's), or a SQLite database that stayed locked. None when it is anything else."""
    current: BaseException | None = exc
    for _ in range(8):
        if current is None:
            return None
        if isinstance(current, Unavailable):
            return current
        detail = _outage_detail(current)
        if detail is not None:
            return Unavailable("storage", detail)
        current = current.__cause__ or current.__context__
    return None


# The AWS error codes that are retried (the AWS client, workbench.aws.client, retries them; one still
# there after the retries is an outage). Kept here, the bottom layer, so both can read them.
# botocore's standard retry mode: these codes (and HTTP 429, 500, 502, 503, 504) are retried ...
AWS_THROTTLING_CODES = frozenset(
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
AWS_RETRYABLE_CODES = AWS_THROTTLING_CODES | {
    "RequestTimeout",
    "RequestTimeoutException",
    "PriorRequestNotComplete",
    "ReplicatedWriteConflictException",
}


def _outage_detail(exc: BaseException) -> str | None:
    """For the log: what failed (an AWS error code, an exception name), None if not an outage."""
    response = getattr(exc, "response", None)
    names = {cls.__name__ for cls in type(exc).__mro__}
    if "AwsConnectionError" in names:
        return f"AwsConnectionError: {exc}"
    if isinstance(response, dict) and isinstance(response.get("Error"), dict):
        code = str(response["Error"].get("Code") or "")
        status = int((response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 0)
        if code in AWS_RETRYABLE_CODES or status >= 500 or status == 429 or getattr(exc, "retryable", False):
            return f"{getattr(exc, 'operation_name', '')} {code} (HTTP {status})".strip()
        return None
    if type(exc).__module__.startswith("botocore") and names & _BOTOCORE_UNREACHABLE:
        return type(exc).__name__
    if type(exc).__name__ == "OperationalError" and type(exc).__module__ == "sqlite3":
        text = str(exc).lower()
        return f"sqlite: {exc}" if "locked" in text or "busy" in text else None
    return None


class JobFailed(WorkbenchError):
    def __init__(self, message: str, result: dict[str, Any]) -> None:
        super().__init__(message)
        self.result = result  # what the job answered, for the log line


class AuditNotWritten(WorkbenchError):
    """The audit store could not take these rows, after its own retries. `events` are exactly the
    rows not written (a partly written batch names only the rest), so the caller can log them."""

    def __init__(self, events: list[dict[str, Any]], cause: str) -> None:
        super().__init__(f"{len(events)} audit row(s) not written: {cause}")
        self.events = events
        self.cause = cause


class CredentialError(WorkbenchError):
    def __init__(self, integration: str, message: str) -> None:
        super().__init__(message)
        self.integration = integration


class NotConnected(CredentialError):
    def __init__(self, integration: str) -> None:
        super().__init__(
            integration, f"{integration} not connected. Use connect('{integration}') to connect."
        )


class ReconnectRequired(CredentialError):
    """Only the user can fix it. `reason` is kept on the connection (`last_error`), so the caller
    whose refresh was refused, every caller waiting on that refresh and every later call until the
    user connects again get the same words."""

    def __init__(self, integration: str, reason: str = "") -> None:
        self.reason = reason or "the provider rejected its credential"
        super().__init__(
            integration,
            f"{integration} must be connected again: {self.reason}. Use connect('{integration}') to reconnect.",
        )


class CredentialUnreadable(CredentialError):
    def __init__(self, integration: str) -> None:
        super().__init__(
            integration,
            f"{integration} credential cannot be decrypted (it was stored under another key or is damaged). "
            f"Use connect('{integration}') to reconnect.",
        )


class VerificationFailed(WorkbenchError):
    """The credential being connected failed its check; the message is for the person connecting."""
