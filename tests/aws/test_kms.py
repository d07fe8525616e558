"""Envelope encryption with KMS (moto server over HTTP), and signing keys shared through DynamoDB."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from workbench.aws.kms import KmsKeyProvider
from workbench.aws.signing import DynamoSigningKeys
from workbench.errors import AuthError, CryptoError
from workbench.identity.crypto import Cipher
from workbench.identity.tokens import TokenService
from workbench.settings import Settings
from workbench.stores.dynamodb import dynamodb_stores

from tests.support.aws import AwsEndpoint, on_call

pytestmark = pytest.mark.e2e

ROW = {"user": "usr_a", "integration": "github", "field": "credential"}


def _counting(endpoint: AwsEndpoint, service: str) -> tuple[Any, list[str]]:
    """A real client for the moto endpoint that records each API operation it sends."""
    client = endpoint.client(service)
    calls: list[str] = []
    on_call(client, lambda operation, params: calls.append(operation))
    return client, calls


def test_roundtrip_binds_the_blob_to_its_row_through_kms(moto_endpoint: AwsEndpoint) -> None:
    client, calls = _counting(moto_endpoint, "kms")
    settings = moto_endpoint.settings()
    cipher = Cipher(KmsKeyProvider.from_settings(settings, client=client))
    blob = cipher.encrypt_json({"access_token": "gho_secret"}, ROW)
    assert b"gho_secret" not in blob
    assert moto_endpoint.kms_key_id is not None and moto_endpoint.kms_key_id.encode() in blob  # names its key
    assert calls == ["GenerateDataKey"]

    # A cold instance (empty cache) asks KMS, with the row as encryption context.
    cold = Cipher(KmsKeyProvider.from_settings(settings, client=client))
    assert cold.decrypt_json(blob, ROW) == {"access_token": "gho_secret"}
    assert calls == ["GenerateDataKey", "Decrypt"]

    # Copied to another row: KMS itself refuses to unwrap the data key (encryption context).
    other_row = {**ROW, "user": "usr_b"}
    with pytest.raises(CryptoError):
        Cipher(KmsKeyProvider.from_settings(settings, client=client)).decrypt(blob, other_row)
    assert calls[-1] == "Decrypt"
    # ... and a warm cache holding that data key still refuses it (AES-GCM additional data).
    with pytest.raises(CryptoError):
        cold.decrypt(blob, other_row)


def test_warm_cache_makes_no_kms_calls_and_expires(moto_endpoint: AwsEndpoint) -> None:
    client, calls = _counting(moto_endpoint, "kms")
    provider = KmsKeyProvider.from_settings(moto_endpoint.settings(), client=client)
    cipher = Cipher(provider, cache_seconds=300)
    blobs = [cipher.encrypt(b"secret %d" % i, ROW) for i in range(5)]
    assert calls == ["GenerateDataKey"]  # one data key per row context, reused while fresh
    for i, blob in enumerate(blobs):
        assert cipher.decrypt(blob, ROW) == b"secret %d" % i
    assert calls == ["GenerateDataKey"] and provider.calls == 1

    stale = Cipher(provider, cache_seconds=0)
    stale.decrypt(blobs[0], ROW)
    stale.decrypt(blobs[0], ROW)
    assert calls.count("Decrypt") == 2  # bounded age: an expired entry goes back to KMS


def test_master_key_rotation_keeps_old_blobs_readable(moto_endpoint: AwsEndpoint) -> None:
    kms = moto_endpoint.client("kms")
    new_key = kms.create_key(Description="rotated", KeySpec="SYMMETRIC_DEFAULT")["KeyMetadata"]["Arn"]
    old_settings = moto_endpoint.settings()
    old_blob = Cipher(KmsKeyProvider.from_settings(old_settings)).encrypt(b"before", ROW)

    rotated = Cipher(KmsKeyProvider.from_settings(moto_endpoint.settings(kms_key_id=new_key)))
    assert rotated.decrypt(old_blob, ROW) == b"before"  # the blob names the key that wrapped it
    new_blob = rotated.encrypt(b"after", ROW)
    assert new_key.encode() in new_blob and old_settings.kms_key_id.encode() not in new_blob  # type: ignore[union-attr]
    assert Cipher(KmsKeyProvider.from_settings(old_settings)).decrypt(new_blob, ROW) == b"after"


def test_kms_provider_requires_a_key_id(moto_endpoint: AwsEndpoint) -> None:
    with pytest.raises(CryptoError):
        KmsKeyProvider.from_settings(moto_endpoint.settings(kms_key_id=None))


# -- signing keys ---------------------------------------------------------------------------------------


def _signing(settings: Settings) -> DynamoSigningKeys:
    cipher = Cipher(KmsKeyProvider.from_settings(settings))
    return DynamoSigningKeys.from_settings(settings, cipher, stores=dynamodb_stores(settings))


def test_two_cold_instances_agree_on_one_signing_key(moto_endpoint: AwsEndpoint) -> None:
    settings = moto_endpoint.fresh_tables()
    instances = [_signing(settings) for _ in range(4)]
    barrier = threading.Barrier(len(instances))
    kids: list[str] = []

    def first_use(source: DynamoSigningKeys) -> None:
        barrier.wait()
        kids.append(source.signing_keys()[0].kid)

    threads = [threading.Thread(target=first_use, args=(s,)) for s in instances]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(kids) == 4 and len(set(kids)) == 1  # the conditional write let exactly one key in

    # What one instance signs, another verifies; the private key is stored encrypted.
    a = TokenService(instances[0], "https://gw.example.test")
    b = TokenService(instances[1], "https://gw.example.test")
    token = a.mint({"sub": "usr_a"}, audience="https://gw.example.test/mcp", ttl_seconds=60)
    assert b.verify(token, audience="https://gw.example.test/mcp")["sub"] == "usr_a"
    items = moto_endpoint.client().scan(TableName=settings.table_name("signing_keys"))["Items"]
    assert len(items) == 1 and b"PRIVATE KEY" not in bytes(items[0]["blob"]["B"])


def test_rotation_signs_with_the_new_key_and_still_verifies_the_old(moto_endpoint: AwsEndpoint) -> None:
    settings = moto_endpoint.fresh_tables()
    source = _signing(settings)
    tokens = TokenService(source, "https://gw.example.test")
    old_token = tokens.mint({"sub": "usr_a"}, audience="aud", ttl_seconds=60)
    old_kid = source.signing_keys()[0].kid
    new_kid = source.rotate()
    assert new_kid != old_kid
    assert [k.kid for k in source.signing_keys()] == [new_kid, old_kid]
    assert tokens.verify(old_token, audience="aud")["sub"] == "usr_a"
    new_token = tokens.mint({"sub": "usr_a"}, audience="aud", ttl_seconds=60)
    assert tokens.verify(new_token, audience="aud")["sub"] == "usr_a"
    # A cold instance loads both generations, newest first, and verifies tokens from either.
    fresh = _signing(settings)
    assert [k.kid for k in fresh.signing_keys()] == [new_kid, old_kid]
    other = TokenService(fresh, "https://gw.example.test")
    assert other.verify(old_token, audience="aud")["sub"] == "usr_a"
    assert other.verify(new_token, audience="aud")["sub"] == "usr_a"
    with pytest.raises(AuthError):
        other.verify(new_token, audience="another-audience")
