"""The engine's own SigV4 JSON client (workbench.aws.client): signatures botocore agrees with, boto3's
calling convention and error shape, standard-mode retries, container credentials, and no boto3."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from workbench.aws.client import (
    AwsConnectionError,
    AwsError,
    AwsJsonClient,
    Credentials,
    credential_source,
    sigv4_headers,
)

from tests.support.aws import AWS_ENV, AwsEndpoint
from tests.support.processes import REPO

CREDS = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token-123")


def test_signature_matches_botocores_for_the_same_request(monkeypatch: pytest.MonkeyPatch) -> None:
    import botocore.auth
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials as BotoCredentials

    body = json.dumps({"TableName": "t", "Key": {"pk": {"S": "a b/ü"}}}).encode()
    url = "https://dynamodb.eu-west-1.amazonaws.com/"
    base = {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "DynamoDB_20120810.GetItem"}
    when = datetime(2026, 12, 3, 6, 30, 5, tzinfo=UTC)

    ours = sigv4_headers(
        method="POST",
        url=url,
        headers=base,
        body=body,
        region="eu-west-1",
        service="dynamodb",
        credentials=CREDS,
        now=when,
    )

    request = AWSRequest(method="POST", url=url, data=body, headers=dict(base))
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: when)
    SigV4Auth(
        BotoCredentials(CREDS.access_key, CREDS.secret_key, CREDS.token), "dynamodb", "eu-west-1"
    ).add_auth(request)

    assert ours["x-amz-date"] == "20261203T063005Z"
    assert ours["x-amz-security-token"] == "session-token-123"
    assert ours["authorization"] == request.headers["Authorization"]


class _Scripted(BaseHTTPRequestHandler):
    """Answers each POST with the next (status, body) of the server's script, and records it."""

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        server: Any = self.server
        server.seen.append(({k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length)))
        status, body = server.script.pop(0) if server.script else (200, {})
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/x-amz-json-1.0")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:  # the container credentials endpoint
        server: Any = self.server
        server.seen.append(({k.lower(): v for k, v in self.headers.items()}, b""))
        raw = json.dumps(server.credentials).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def scripted(
    script: list[tuple[int, dict[str, Any]]], credentials: dict[str, Any] | None = None
) -> Iterator[Any]:
    server: Any = ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
    server.script, server.seen, server.credentials = list(script), [], credentials or {}
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _client(
    server: Any, service: str = "dynamodb", sleeps: list[float] | None = None, **kw: Any
) -> AwsJsonClient:
    return AwsJsonClient(
        service,
        region="us-east-1",
        credentials=lambda: CREDS,
        endpoint_url=f"http://127.0.0.1:{server.server_address[1]}",
        sleep=(sleeps.append if sleeps is not None else lambda _: None),
        **kw,
    )


def test_operations_are_sent_as_boto3_would_and_blobs_come_back_as_bytes() -> None:
    item = {"pk": {"S": "user#1"}, "blob": {"B": "aGVsbG8="}, "m": {"M": {"B": {"S": "a map key named B"}}}}
    with scripted([(200, {"Item": item})]) as server:
        got = _client(server).get_item(
            TableName="users", Key={"pk": {"S": "user#1"}, "bin": {"B": b"\x00\xff"}}
        )
    headers, body = server.seen[0]
    assert headers["x-amz-target"] == "DynamoDB_20120810.GetItem"
    assert headers["content-type"] == "application/x-amz-json-1.0"
    assert headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/us-east-1/dynamodb/aws4_request" in headers["authorization"]
    assert json.loads(body) == {"TableName": "users", "Key": {"pk": {"S": "user#1"}, "bin": {"B": "AP8="}}}
    assert got["Item"]["blob"] == {"B": b"hello"}
    assert got["Item"]["m"] == {"M": {"B": {"S": "a map key named B"}}}


def test_kms_blobs_are_bytes_and_the_target_is_trentservice() -> None:
    with scripted([(200, {"Plaintext": "AAEC", "CiphertextBlob": "AwQ=", "KeyId": "arn:k"})]) as server:
        out = _client(server, "kms").generate_data_key(
            KeyId="k", KeySpec="AES_256", EncryptionContext={"a": "b"}
        )
    assert server.seen[0][0]["x-amz-target"] == "TrentService.GenerateDataKey"
    assert server.seen[0][0]["content-type"] == "application/x-amz-json-1.1"
    assert out == {"Plaintext": b"\x00\x01\x02", "CiphertextBlob": b"\x03\x04", "KeyId": "arn:k"}


def test_an_error_answer_has_botocores_client_error_shape_and_is_not_retried() -> None:
    failed = {"__type": "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException", "message": "nope"}
    with scripted([(400, failed)]) as server:
        with pytest.raises(AwsError) as caught:
            _client(server).put_item(TableName="t", Item={}, ConditionExpression="attribute_not_exists(pk)")
    assert len(server.seen) == 1
    assert caught.value.response["Error"] == {"Code": "ConditionalCheckFailedException", "Message": "nope"}
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert "ConditionalCheckFailedException" in str(caught.value) and "PutItem" in str(caught.value)


def test_throttling_and_5xx_are_retried_with_backoff_then_succeed() -> None:
    throttled = {"__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"}
    sleeps: list[float] = []
    with scripted([(400, throttled), (503, {}), (200, {"Count": 0})]) as server:
        assert _client(server, sleeps=sleeps).query(TableName="t") == {"Count": 0}
    assert len(server.seen) == 3
    assert len(sleeps) == 2 and all(0 <= s <= 2.0 for s in sleeps)


def test_retries_stop_after_three_attempts() -> None:
    with scripted([(500, {"__type": "InternalServerError"})] * 5) as server:
        with pytest.raises(AwsError) as caught:
            _client(server).get_item(TableName="t", Key={})
    assert len(server.seen) == 3
    assert caught.value.response["Error"]["Code"] == "InternalServerError"


def test_an_unreachable_endpoint_fails_after_the_retries() -> None:
    from tests.support.processes import free_port

    client = AwsJsonClient(
        "dynamodb",
        region="us-east-1",
        credentials=lambda: CREDS,
        endpoint_url=f"http://127.0.0.1:{free_port()}",
        sleep=lambda _: None,
    )
    with pytest.raises(AwsConnectionError):
        client.get_item(TableName="t", Key={})


def test_container_credentials_are_fetched_with_the_token_and_used_to_sign(tmp_path: Any) -> None:
    creds = {
        "AccessKeyId": "ASIACONTAINER",
        "SecretAccessKey": "s3cr3t",
        "Token": "tok",
        "Expiration": "2099-01-01T00:00:00Z",
    }
    token_file = tmp_path / "token"
    token_file.write_text("auth-from-file\n")
    with scripted([(200, {})], credentials=creds) as server:
        port = server.server_address[1]
        source = credential_source(
            {
                "AWS_CONTAINER_CREDENTIALS_FULL_URI": f"http://127.0.0.1:{port}/2018-06-01/credentials",
                "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": str(token_file),
            }
        )
        assert source is not None
        client = AwsJsonClient(
            "dynamodb", region="us-east-1", credentials=source, endpoint_url=f"http://127.0.0.1:{port}"
        )
        client.describe_table(TableName="t")
        client.describe_table(TableName="t")
    gets = [h for h, body in server.seen if "x-amz-target" not in h]
    posts = [h for h, body in server.seen if "x-amz-target" in h]
    assert len(gets) == 1 and gets[0]["authorization"] == "auth-from-file"  # cached until near expiry
    assert all(
        "Credential=ASIACONTAINER/" in h["authorization"] and h["x-amz-security-token"] == "tok"
        for h in posts
    )


def test_credentials_that_need_the_full_chain_fall_back_to_boto3() -> None:
    assert credential_source({"AWS_PROFILE": "admin"}) is None
    assert credential_source({"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b"}) is not None


def test_the_dynamodb_gateway_serves_requests_without_importing_boto3(moto_endpoint: AwsEndpoint) -> None:
    """What the cold start relies on: stores and KMS over the engine's own client, no botocore."""
    settings = moto_endpoint.fresh_tables()
    code = f"""
import sys
from workbench.settings import Settings
from workbench.composition import build_gateway
from dataclasses import replace
settings = replace(Settings(), store="dynamodb", key_backend="kms", kms_key_id={settings.kms_key_id!r},
    aws_endpoint_url={settings.aws_endpoint_url!r}, table_prefix={settings.table_prefix!r}, session_secret="s")
gw = build_gateway(settings)
user = gw.stores.users.get_or_create("ada@example.com")
gw.credentials.save(user.id, "github", {{"access_token": "gho_x"}}, expires_at=None)
assert gw.stores.connections.get(user.id, "github") is not None
leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("boto3", "botocore"))
print("LEAKED", leaked)
"""
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**AWS_ENV, "PATH": "/usr/bin:/bin"},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "LEAKED []" in done.stdout


@pytest.mark.parametrize(
    "answer",
    [
        {"AccessKeyId": "A"},  # no secret
        {"AccessKeyId": "A", "SecretAccessKey": "s", "Expiration": "not a date"},
        ["not", "an", "object"],
    ],
)
def test_container_credentials_that_are_not_credentials_are_a_connection_error(answer: Any) -> None:
    with scripted([(200, {})], credentials=answer) as server:
        port = server.server_address[1]
        source = credential_source({"AWS_CONTAINER_CREDENTIALS_FULL_URI": f"http://127.0.0.1:{port}/creds"})
        assert source is not None
        with pytest.raises(AwsConnectionError, match="no credentials"):
            source()


def test_every_https_connection_shares_one_tls_context(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DynamoDB and KMS, each from two threads: four connections, one CA store loaded (each context
    http.client makes for itself loads it again: 20-40 ms of CPU), and every connection verified."""
    import ssl

    from cryptography.hazmat.primitives import serialization
    from workbench.aws import client as aws_client

    from tests.egress.internet import issue_certificate

    ca_key, ca = issue_certificate("AWS Test CA", [], None, None)
    leaf_key, leaf = issue_certificate("localhost", ["localhost"], ca_key, ca.subject)
    (tmp_path / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "leaf.pem").write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "leaf.key").write_bytes(
        leaf_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(tmp_path / "leaf.pem", tmp_path / "leaf.key")
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))  # the default context trusts the test CA
    made: list[ssl.SSLContext] = []
    default = ssl._create_default_https_context

    def counted() -> ssl.SSLContext:
        made.append(default())
        return made[-1]

    monkeypatch.setattr(ssl, "_create_default_https_context", counted)
    monkeypatch.setattr(aws_client, "_TLS", [])  # none made yet in this process (and none kept after)
    with scripted([]) as server:
        server.socket = server_tls.wrap_socket(server.socket, server_side=True)
        clients = [
            AwsJsonClient(
                service,
                region="us-east-1",
                credentials=lambda: CREDS,
                endpoint_url=f"https://localhost:{server.server_address[1]}",
            )
            for service in ("dynamodb", "kms")
        ]
        answers: list[Any] = []

        def call(client: AwsJsonClient) -> None:
            answers.append(client.call("DescribeTable" if client is clients[0] else "Decrypt", {}))

        threads = [threading.Thread(target=call, args=(c,)) for c in clients for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert answers == [{}] * 4
    assert len(server.seen) == 4
    assert len(made) == 1
