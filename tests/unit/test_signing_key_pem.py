"""workbench.identity.tokens.load_signing_key against cryptography's PEM reader (the oracle it
replaces for the one layout the key stores write): the same key for every key that layout holds, and
for anything else exactly what the reader gives (the same key, or the same error)."""

from __future__ import annotations

import base64
import subprocess
import sys
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from workbench.identity.tokens import SigningKey, TokenService, load_signing_key, signing_key_pem

from tests.support.processes import REPO


def _numbers(key: Any) -> Any:
    return key.private_numbers()


def _same_as_the_reader(pem: bytes) -> None:
    try:
        expected = serialization.load_pem_private_key(pem, password=None)
    except Exception as exc:  # the reader's refusal is the expected outcome
        with pytest.raises(type(exc)):
            load_signing_key(pem)
        return
    got = load_signing_key(pem)
    assert type(got) is type(expected)
    assert _numbers(got) == _numbers(expected)


def test_every_stored_key_reads_as_the_reader_reads_it() -> None:
    for _ in range(200):
        key = ec.generate_private_key(ec.SECP256R1())
        pem = signing_key_pem(key)
        got = load_signing_key(pem)
        assert isinstance(got, ec.EllipticCurvePrivateKey)
        assert _numbers(got) == _numbers(serialization.load_pem_private_key(pem, password=None))
        assert _numbers(got) == key.private_numbers()


def _pkcs8(key: Any, encoding: Any = serialization.Encoding.PEM) -> bytes:
    return key.private_bytes(encoding, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def _with_der(der: bytes) -> bytes:
    body = base64.encodebytes(der).replace(b"\n", b"")
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return b"-----BEGIN PRIVATE KEY-----\n" + b"\n".join(lines) + b"\n-----END PRIVATE KEY-----\n"


def test_anything_else_reads_as_the_reader_reads_it() -> None:
    p256 = ec.generate_private_key(ec.SECP256R1())
    der = bytearray(_pkcs8(p256, serialization.Encoding.DER))
    other = ec.generate_private_key(ec.SECP256R1()).public_key().public_numbers()
    wrong_point = bytes(der[:74]) + other.x.to_bytes(32, "big") + other.y.to_bytes(32, "big")
    zero_scalar = bytes(der[:36]) + bytes(32) + bytes(der[68:])
    big_scalar = bytes(der[:36]) + b"\xff" * 32 + bytes(der[68:])
    cases = [
        _with_der(wrong_point),  # a point that is not the scalar's
        _with_der(zero_scalar),
        _with_der(big_scalar),
        _with_der(bytes(der[:-1])),  # truncated
        _pkcs8(ec.generate_private_key(ec.SECP384R1())),
        _pkcs8(ec.generate_private_key(ec.SECP256K1())),
        _pkcs8(rsa.generate_private_key(public_exponent=65537, key_size=1024)),
        p256.private_bytes(  # SEC 1 ("EC PRIVATE KEY"), not PKCS #8
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        ),
        p256.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"password"),
        ),
        _pkcs8(p256).replace(b"\n", b"\r\n"),
        _pkcs8(p256).replace(b"\n-----END", b"!\n-----END"),  # not base64
        b"-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----\n",
        b"",
        b"not a key",
    ]
    for pem in cases:
        _same_as_the_reader(pem)


class _Keys:
    def __init__(self, pem: bytes) -> None:
        self.keys = [SigningKey("k1", load_signing_key(pem))]  # type: ignore[arg-type]

    def signing_keys(self) -> list[SigningKey]:
        return self.keys


def test_verifying_a_token_does_not_import_the_pem_reader() -> None:
    code = """
import sys
from workbench.identity.tokens import SigningKey, TokenService, load_signing_key

class Keys:
    def __init__(self, pem):
        self.keys = [SigningKey("k1", load_signing_key(pem))]
    def signing_keys(self):
        return self.keys

service = TokenService(Keys(sys.stdin.buffer.read()), "https://gw.example.test")
claims = service.verify(sys.argv[1], audience="https://gw.example.test/mcp")
print(claims["sub"], "cryptography.hazmat.primitives.serialization" in sys.modules)
"""
    pem = signing_key_pem(ec.generate_private_key(ec.SECP256R1()))
    minted = TokenService(_Keys(pem), "https://gw.example.test").mint(
        {"sub": "ada"}, audience="https://gw.example.test/mcp", ttl_seconds=60
    )
    done = subprocess.run(
        [sys.executable, "-c", code, minted],
        input=pem,
        capture_output=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert done.stdout.decode().split() == ["ada", "False"]  # verified, without the reader
