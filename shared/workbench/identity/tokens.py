"""Signed, self-contained tokens (JWT, ES256): OAuth access tokens for /mcp and curl proxy tokens.

Verification needs no database read: the verifier holds the public keys (by `kid`), and no PyJWT
import either (workbench.identity.es256, with PyJWT as its test oracle; minting uses PyJWT). Rotation:
several keys may verify; only the newest signs. In the embedded default the key pair is
generated on first use and kept 0600 in the data directory; on AWS the private key is stored
envelope-encrypted (see `SigningKeySource`).
"""

from __future__ import annotations

import base64
import binascii
import os
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from cryptography.hazmat.primitives.asymmetric import ec

from workbench.errors import AuthError
from workbench.identity import es256

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

__all__ = [
    "FileSigningKeys",
    "SigningKey",
    "SigningKeySource",
    "TokenService",
    "load_signing_key",
    "signing_key_pem",
]

# An unencrypted PKCS #8 P-256 key as cryptography writes it (DER, RFC 5208 + RFC 5915): version 0,
# id-ecPublicKey with prime256v1, then an ECPrivateKey (version 1, the 32-byte scalar, the public point).
_P256_PKCS8_HEAD = bytes.fromhex("308187020100301306072a8648ce3d020106082a8648ce3d030107046d306b0201010420")
_P256_PKCS8_POINT = bytes.fromhex("a14403420004")


def load_signing_key(pem: bytes) -> PrivateKeyTypes:
    """The private key of a stored signing key's PEM. The one layout the key stores write (above) is
    read here, the key derived from its scalar and checked against the point stored with it; anything
    else goes to cryptography's PEM reader, whose import (its SSH and PKCS #12 readers, about 20 ms)
    a cold start that only verifies a token then never pays. tests/unit/test_signing_key_pem.py holds
    it to that reader."""
    lines = pem.strip().split(b"\n")
    if (
        len(lines) > 2
        and lines[0] == b"-----BEGIN PRIVATE KEY-----"
        and lines[-1] == b"-----END PRIVATE KEY-----"
    ):
        try:
            der = base64.b64decode(b"".join(line.strip() for line in lines[1:-1]), validate=True)
        except binascii.Error:
            der = b""
        if len(der) == 138 and der.startswith(_P256_PKCS8_HEAD) and der[68:74] == _P256_PKCS8_POINT:
            try:
                key = ec.derive_private_key(int.from_bytes(der[36:68], "big"), ec.SECP256R1())
            except ValueError:  # a scalar out of range: the reader below says what it says
                pass
            else:
                point = key.public_key().public_numbers()
                if point.x.to_bytes(32, "big") + point.y.to_bytes(32, "big") == der[74:]:
                    return key
    from cryptography.hazmat.primitives import serialization

    return serialization.load_pem_private_key(pem, password=None)


def signing_key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    """The PEM a key store keeps: PKCS #8, unencrypted (the layout `load_signing_key` reads)."""
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@dataclass(frozen=True, slots=True)
class SigningKey:
    kid: str
    private_key: ec.EllipticCurvePrivateKey = field(repr=False)

    def public_jwk(self) -> dict[str, Any]:
        import jwt

        jwk: dict[str, Any] = jwt.algorithms.ECAlgorithm.to_jwk(self.private_key.public_key(), as_dict=True)
        return {**jwk, "kid": self.kid, "alg": "ES256", "use": "sig"}


class SigningKeySource(Protocol):
    def signing_keys(self) -> list[SigningKey]:
        """All keys that may verify, newest (the signing key) first."""
        ...


class FileSigningKeys:
    """PEM files `signing-<kid>.pem` (0600) in a directory; created on first use."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._cache: list[SigningKey] | None = None

    def signing_keys(self) -> list[SigningKey]:
        if self._cache is None:
            found = sorted(
                self.directory.glob("signing-*.pem"), key=lambda p: p.stat().st_mtime, reverse=True
            )
            if not found:
                found = [self.rotate()]
            self._cache = [
                SigningKey(
                    p.stem.removeprefix("signing-"),
                    load_signing_key(p.read_bytes()),  # type: ignore[arg-type]
                )
                for p in found
            ]
        return self._cache

    def rotate(self) -> Path:
        """Create a new signing key; older keys keep verifying until their files are removed."""
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        key = ec.generate_private_key(ec.SECP256R1())
        pem = signing_key_pem(key)
        path = self.directory / f"signing-{secrets.token_hex(8)}.pem"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(pem)
        self._cache = None
        return path


class TokenService:
    def __init__(
        self, source: SigningKeySource, issuer: str, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.source = source
        self.issuer = issuer
        self.clock = clock

    def jwks(self) -> dict[str, Any]:
        return {"keys": [k.public_jwk() for k in self.source.signing_keys()]}

    def mint(self, claims: Mapping[str, Any], *, audience: str, ttl_seconds: int) -> str:
        import jwt

        key = self.source.signing_keys()[0]
        now = int(self.clock())
        payload = {
            **claims,
            "iss": self.issuer,
            "aud": audience,
            "iat": now,
            "nbf": now,
            "exp": now + ttl_seconds,
            "jti": secrets.token_urlsafe(12),
        }
        return jwt.encode(payload, key.private_key, algorithm="ES256", headers={"kid": key.kid})

    def verify(self, token: str, *, audience: str) -> dict[str, Any]:
        """The claims of a valid token for `audience`; AuthError otherwise (any reason)."""
        kid = es256.unverified_header(token).get("kid")
        key = next((k for k in self.source.signing_keys() if k.kid == kid), None)
        if key is None:
            raise AuthError("token signed by an unknown key")
        return es256.verify(
            token,
            key.private_key.public_key(),
            audience=audience,
            issuer=self.issuer,
            require=("exp", "iat", "aud", "iss", "sub"),
        )
