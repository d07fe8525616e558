"""botocore as the oracle of the engine's own AWS client (workbench.aws.client).

One loopback server answers a corpus of odd responses — JSON errors in every form the awsJson
protocols allow, HTML error pages, plain text, empty and truncated bodies, JSON that is not an
object, bytes that are not UTF-8, a connection closed without an answer — and both clients call it:
botocore configured exactly as the engine's boto3 fallback (`workbench.aws.clients.boto3_config`),
and `AwsJsonClient`. For each answer the test compares the outcome (the answer, or the error code
and status, or a connection failure) and how many attempts reached the server.

Where the two differ, they differ on purpose, and `DIFFERS` says how and why: each such case
pins botocore's outcome too, so a botocore release that changes it shows up here.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import pytest
from workbench.aws.client import (
    MAX_ATTEMPTS,
    AwsConnectionError,
    AwsError,
    AwsFailure,
    AwsJsonClient,
    Credentials,
    regional_endpoint,
)
from workbench.aws.clients import boto3_config
from workbench.errors import WorkbenchError

JSON10 = "application/x-amz-json-1.0"


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = (("content-type", JSON10),)
    # Declared content-length when it must lie (a truncated body); the socket closes after it.
    length: int | None = None
    # Close the connection without answering at all.
    hang_up: bool = False

    def raw(self) -> bytes:
        reason = {200: "OK", 400: "Bad Request", 429: "Too Many Requests"}.get(self.status, "Status")
        head = [f"HTTP/1.1 {self.status} {reason}"]
        head += [f"{k}: {v}" for k, v in self.headers]
        head.append(f"content-length: {self.length if self.length is not None else len(self.body)}")
        if self.length is not None:
            head.append("connection: close")
        return ("\r\n".join(head) + "\r\n\r\n").encode() + self.body


def j(value: Any) -> bytes:
    return json.dumps(value).encode()


HTML = ("content-type", "text/html")
TEXT = ("content-type", "text/plain")


@dataclass(frozen=True)
class Case:
    name: str
    answers: tuple[Answer, ...]  # one per attempt; the last repeats
    # The shared outcome: ("ok", answer) | ("error", code, status) | ("connection",)
    outcome: tuple[Any, ...]
    attempts: int


@dataclass(frozen=True)
class Differs:
    """A case where botocore's outcome is not ours, on purpose."""

    name: str
    answers: tuple[Answer, ...]
    ours: tuple[Any, ...]
    our_attempts: int
    botocore: tuple[Any, ...]
    botocore_attempts: int
    why: str


ITEM = {"Item": {"pk": {"S": "user#1"}, "n": {"N": "7"}}}
CF = {"__type": "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException", "message": "nope"}
THROTTLED = {"__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"}

SAME = [
    Case("a JSON answer", (Answer(200, j(ITEM)),), ("ok", ITEM), 1),
    Case("an empty 200", (Answer(200, b""),), ("ok", {}), 1),
    Case("a JSON error", (Answer(400, j(CF)),), ("error", "ConditionalCheckFailedException", 400), 1),
    Case(
        "a bare error type, 'Message' capitalised",
        (Answer(400, j({"__type": "ValidationException", "Message": "bad"})),),
        ("error", "ValidationException", 400),
        1,
    ),
    Case(
        "an error type with a ':'-suffix",
        (Answer(400, j({"__type": "aws.protocols#ThrottlingException:http://internal.amazon.com/"})),),
        ("error", "ThrottlingException", 400),
        MAX_ATTEMPTS,
    ),
    Case(
        "a throttle",
        (Answer(400, j(THROTTLED)),),
        ("error", "ProvisionedThroughputExceededException", 400),
        MAX_ATTEMPTS,
    ),
    Case(
        "a throttle, then the answer",
        (Answer(400, j(THROTTLED)), Answer(200, j(ITEM))),
        ("ok", ITEM),
        2,
    ),
    Case(
        "a transient code",
        (Answer(400, j({"__type": "RequestTimeoutException"})),),
        ("error", "RequestTimeoutException", 400),
        MAX_ATTEMPTS,
    ),
    Case(
        "a 500 with a JSON error",
        (Answer(500, j({"__type": "InternalServerError", "message": "oops"})),),
        ("error", "InternalServerError", 500),
        MAX_ATTEMPTS,
    ),
    Case(
        "a 503 with a JSON error",
        (Answer(503, j({"__type": "ServiceUnavailable"})),),
        ("error", "ServiceUnavailable", 503),
        MAX_ATTEMPTS,
    ),
    Case(
        "an HTML 502 from a proxy",
        (Answer(502, b"<html><body><b>Http/1.1 Bad Gateway</b></body></html>", (HTML,)),),
        ("error", "502", 502),
        MAX_ATTEMPTS,
    ),
    Case(
        "an HTML 502, then the answer",
        (Answer(502, b"<html><body>Bad Gateway</body></html>", (HTML,)), Answer(200, j(ITEM))),
        ("ok", ITEM),
        2,
    ),
    Case(
        "an HTML 503 with a doctype",
        (Answer(503, b"<!DOCTYPE html>\n<html><body>Service Unavailable</body></html>", (HTML,)),),
        ("error", "503", 503),
        MAX_ATTEMPTS,
    ),
    Case("an empty 503", (Answer(503, b""),), ("error", "503", 503), MAX_ATTEMPTS),
    Case(
        "a text 504",
        (Answer(504, b"upstream request timeout", (TEXT,)),),
        ("error", "504", 504),
        MAX_ATTEMPTS,
    ),
    Case("an HTML 501 (not retried)", (Answer(501, b"<html></html>", (HTML,)),), ("error", "501", 501), 1),
    Case("a text 413", (Answer(413, b"Request Entity Too Large", (TEXT,)),), ("error", "413", 413), 1),
    Case(
        "an HTML 403",
        (Answer(403, b"<html><body>Forbidden</body></html>", (HTML,)),),
        ("error", "403", 403),
        1,
    ),
    Case("an empty 400", (Answer(400, b""),), ("error", "400", 400), 1),
    Case("a truncated JSON 400", (Answer(400, b'{"__type": "Validat'),), ("error", "400", 400), 1),
    Case("a text 429", (Answer(429, b"Too Many Requests", (TEXT,)),), ("error", "429", 429), MAX_ATTEMPTS),
    Case(
        "a header type agreeing with the body",
        (
            Answer(
                400,
                j(CF),
                (("content-type", JSON10), ("x-amzn-errortype", "ConditionalCheckFailedException")),
            ),
        ),
        ("error", "ConditionalCheckFailedException", 400),
        1,
    ),
    Case("no answer at all", (Answer(0, hang_up=True),), ("connection",), MAX_ATTEMPTS),
]

DIFFERS = [
    Differs(
        "a body cut short (content-length says more)",
        (Answer(200, b'{"Item": {"pk"', length=200),),
        ("connection",),
        MAX_ATTEMPTS,
        ("ok", {}),
        1,
        "botocore does not hold the body to its content-length and reads the stub as an empty answer",
    ),
    Differs(
        "a body cut short, then the answer",
        (Answer(200, b'{"Item":', length=200), Answer(200, j(ITEM))),
        ("ok", ITEM),
        2,
        ("ok", {}),
        1,
        "as above: a cut-off answer is a connection failure, retried",
    ),
    Differs(
        "a 200 with an HTML body",
        (Answer(200, b"<html><body>Sign in to the captive portal</body></html>", (HTML,)),),
        ("error", "MalformedResponse", 200),
        1,
        ("ok", {}),
        1,
        "botocore reads it as an answer with no members: a GetItem would read as 'no such item'",
    ),
    Differs(
        "a 200 with truncated JSON",
        (Answer(200, b'{"Item": {"pk": {"S": "us'),),
        ("error", "MalformedResponse", 200),
        1,
        ("ok", {}),
        1,
        "as above: a cut-off item is not an absent one",
    ),
    Differs(
        "a 200 whose JSON is a list",
        (Answer(200, b"[1, 2]"),),
        ("error", "MalformedResponse", 200),
        1,
        ("crash", "AttributeError"),
        1,
        "botocore's parser calls .get on it",
    ),
    Differs(
        "a 200 that is not UTF-8",
        (Answer(200, b'{"Item": "\xff\xfe"}'),),
        ("error", "MalformedResponse", 200),
        1,
        ("crash", "UnicodeDecodeError"),
        1,
        "botocore decodes the body strictly and lets the error out",
    ),
    Differs(
        "a 400 whose JSON is a string",
        (Answer(400, b'"Bad Request"'),),
        ("error", "400", 400),
        1,
        ("crash", "AttributeError"),
        1,
        "botocore's error parser calls .get on it",
    ),
    Differs(
        "a 500 whose JSON is null",
        (Answer(500, b"null"),),
        ("error", "500", 500),
        MAX_ATTEMPTS,
        ("crash", "AttributeError"),
        1,
        "botocore's error parser calls .get on it, before any retry",
    ),
    Differs(
        "a throttle named only by the X-Amzn-ErrorType header",
        (Answer(400, b"Rate exceeded", (TEXT, ("x-amzn-errortype", "ThrottlingException:http://x/"))),),
        ("error", "ThrottlingException", 400),
        MAX_ATTEMPTS,
        ("error", "400", 400),
        1,
        "the awsJson protocols allow the error type in that header (AWS SDK for Go v2 reads it); "
        "botocore's JSON parser reads only __type",
    ),
    Differs(
        "an error type in the body's 'code'",
        (Answer(400, j({"code": "AccessDeniedException", "message": "no"})),),
        ("error", "AccessDeniedException", 400),
        1,
        ("error", "400", 400),
        1,
        "the awsJson protocols allow a `code` member; botocore's JSON parser reads only __type",
    ),
]


@dataclass
class _Server:
    answers: list[Answer]
    requests: list[bytes] = field(default_factory=list)
    port: int = 0
    # The connection being served: closed at the end, or a client's kept-alive one would hold it.
    conn: socket.socket | None = None


def _read_request(conn: socket.socket) -> bytes | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        body += chunk
    return head


def _serve(listener: socket.socket, state: _Server) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        state.conn = conn
        with conn:
            while True:
                try:
                    head = _read_request(conn)
                except OSError:
                    break
                if head is None:
                    break
                state.requests.append(head)
                answer = state.answers[min(len(state.requests), len(state.answers)) - 1]
                if answer.hang_up:
                    break
                conn.sendall(answer.raw())
                if answer.length is not None:
                    break


@contextmanager
def serving(answers: tuple[Answer, ...]) -> Iterator[_Server]:
    listener = socket.create_server(("127.0.0.1", 0))
    state = _Server(list(answers), port=listener.getsockname()[1])
    thread = threading.Thread(target=_serve, args=(listener, state), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        for sock in (listener, state.conn):
            with suppress(OSError):  # wakes the thread's accept() or recv()
                if sock is not None:
                    sock.shutdown(socket.SHUT_RDWR)
        thread.join(5)
        listener.close()
        assert not thread.is_alive()


def ours(answers: tuple[Answer, ...]) -> tuple[tuple[Any, ...], int]:
    with serving(answers) as server:
        client = AwsJsonClient(
            "dynamodb",
            region="us-east-1",
            credentials=lambda: Credentials("AKIDEXAMPLE", "secret"),
            endpoint_url=f"http://127.0.0.1:{server.port}",
            sleep=lambda _: None,
        )
        try:
            got = client.get_item(TableName="t", Key={"pk": {"S": "user#1"}})
        except AwsError as exc:
            assert isinstance(exc, AwsFailure) and isinstance(exc, WorkbenchError)
            # A retryable error is raised after the last attempt, any other after the first.
            assert len(server.requests) == (MAX_ATTEMPTS if exc.retryable else 1)
            assert exc.response["ResponseMetadata"]["RetryAttempts"] == len(server.requests) - 1
            outcome: tuple[Any, ...] = (
                "error",
                exc.response["Error"]["Code"],
                exc.response["ResponseMetadata"]["HTTPStatusCode"],
            )
        except AwsConnectionError as exc:
            assert isinstance(exc, AwsFailure) and isinstance(exc, WorkbenchError)
            outcome = ("connection",)
        else:
            outcome = ("ok", got)
        return outcome, len(server.requests)


def botocores(answers: tuple[Answer, ...]) -> tuple[tuple[Any, ...], int]:
    import boto3
    from botocore.exceptions import ClientError, ConnectionClosedError, EndpointConnectionError

    with serving(answers) as server:
        session = boto3.session.Session(
            aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret", region_name="us-east-1"
        )
        client = session.client(
            "dynamodb", endpoint_url=f"http://127.0.0.1:{server.port}", config=boto3_config("us-east-1")
        )
        try:
            got = client.get_item(TableName="t", Key={"pk": {"S": "user#1"}})
        except ClientError as exc:
            outcome: tuple[Any, ...] = (
                "error",
                exc.response["Error"]["Code"],
                exc.response["ResponseMetadata"]["HTTPStatusCode"],
            )
        except (ConnectionClosedError, EndpointConnectionError):
            outcome = ("connection",)
        except Exception as exc:  # what escapes botocore unconverted
            outcome = ("crash", type(exc).__name__)
        else:
            got.pop("ResponseMetadata")
            outcome = ("ok", got)
        return outcome, len(server.requests)


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    from botocore.retries.standard import ExponentialBackoff

    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda self, context: 0)


@pytest.mark.parametrize("case", SAME, ids=[c.name for c in SAME])
def test_both_clients_end_the_same_way(case: Case) -> None:
    assert botocores(case.answers) == (case.outcome, case.attempts)
    assert ours(case.answers) == (case.outcome, case.attempts)


@pytest.mark.parametrize("case", DIFFERS, ids=[c.name for c in DIFFERS])
def test_where_we_differ_from_botocore_on_purpose(case: Differs) -> None:
    assert botocores(case.answers) == (case.botocore, case.botocore_attempts), case.why
    assert ours(case.answers) == (case.ours, case.our_attempts)


def test_every_odd_answer_ends_in_the_documented_error() -> None:
    """No answer escapes the AwsFailure family: the whole corpus, repeated on every attempt."""
    for case in [*SAME, *DIFFERS]:
        for answer in case.answers:
            outcome, attempts = ours((answer,))
            assert outcome[0] in ("ok", "error", "connection"), case.name
            assert 1 <= attempts <= MAX_ATTEMPTS


@pytest.mark.parametrize(
    "region",
    [
        "us-east-1",
        "eu-central-2",
        "ap-southeast-5",
        "cn-north-1",
        "cn-northwest-1",
        "us-gov-west-1",
        "us-gov-east-1",
        "us-iso-east-1",
        "us-isob-east-1",
    ],
)
@pytest.mark.parametrize("service", ["dynamodb", "kms", "secretsmanager"])
def test_endpoints_follow_the_regions_partition_as_botocore_resolves_them(region: str, service: str) -> None:
    import boto3

    session = boto3.session.Session(aws_access_key_id="a", aws_secret_access_key="b", region_name=region)
    expected = session.client(service, config=boto3_config(region)).meta.endpoint_url
    assert regional_endpoint(service, region) == expected
    client = AwsJsonClient(service, region=region, credentials=lambda: Credentials("a", "b"))
    assert client.endpoint_url == expected
