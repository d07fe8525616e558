"""Compact JWS verification for the one algorithm Workbench signs with (ES256, P-256), on
cryptography's primitives alone.

This is PyJWT's `get_unverified_header` and `decode(..., algorithms=["ES256"], audience=...,
issuer=..., options={"require": [...]}, leeway=0)` as `identity.tokens` called them, step for step
and in the same order (segments, strict base64url, header, `kid`, `crit`, `b64`, algorithm, curve,
signature, payload, then the claims: required, iat, nbf, exp, iss, aud, sub, jti, against the
system clock as PyJWT reads it). It exists for cold starts: importing PyJWT costs a first request
on the curl proxy or with an OAuth token about 30 ms of CPU (its algorithms module loads
cryptography's X.509 and its JWKS client urllib.request), and verification is all those requests
need. Minting still uses PyJWT (the OAuth server and the curl token endpoint, warm paths).
tests/unit/test_es256.py keeps PyJWT as the oracle: the same tokens, valid and hostile, through
both, the same claims or the same refusal out.

Every refusal is an AuthError whose message is what TokenService said for PyJWT's exception:
"malformed token" (the header cannot be read), "token expired", "invalid token" (anything else).
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from workbench.errors import AuthError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePublicKey

__all__ = ["unverified_header", "verify"]

_ALPHABET = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
_SUPPORTED_CRIT = frozenset({"b64"})


def _segment(segment: bytes) -> bytes:
    """A base64url segment, read as strictly as PyJWT reads it (canonical, optional '=' padding)."""
    stripped = segment.rstrip(b"=")
    padding = len(segment) - len(stripped)
    if padding > 2 or (padding and len(segment) % 4 != 0):
        raise ValueError("padding")
    if len(stripped) % 4 == 1 or not _ALPHABET.issuperset(stripped):
        raise ValueError("alphabet")
    try:
        decoded = base64.urlsafe_b64decode(stripped + b"=" * (-len(stripped) % 4))
    except (TypeError, binascii.Error) as exc:
        raise ValueError("base64") from exc
    if base64.urlsafe_b64encode(decoded).replace(b"=", b"") != stripped:
        raise ValueError("not canonical")
    return decoded


def _load(token: str | bytes) -> tuple[bytes, bytes, dict[str, Any], bytes, bool]:
    """(payload, signing input, header, signature, payload segment empty); ValueError if unreadable."""
    raw = token.encode("utf-8") if isinstance(token, str) else token
    if not isinstance(raw, bytes):
        raise ValueError("type")
    signing_input, crypto = raw.rsplit(b".", 1)  # ValueError: not enough segments
    header_segment, payload_segment = signing_input.split(b".", 1)
    try:
        header = json.loads(_segment(header_segment))
    except RecursionError as exc:
        raise ValueError("header") from exc
    if not isinstance(header, dict):
        raise ValueError("header")
    if header.get("b64", True) is False:
        if payload_segment:
            raise ValueError("b64")
        payload = b""
    else:
        payload = _segment(payload_segment)
    return payload, signing_input, header, _segment(crypto), not payload_segment


def _check_header(header: dict[str, Any]) -> None:
    if "kid" in header and not isinstance(header["kid"], str):
        raise ValueError("kid")
    if "crit" in header:
        crit = header["crit"]
        if not isinstance(crit, list) or not crit:
            raise ValueError("crit")
        for ext in crit:
            if not isinstance(ext, str) or ext not in _SUPPORTED_CRIT or ext not in header:
                raise ValueError("crit")


def unverified_header(token: str | bytes) -> dict[str, Any]:
    """The token's JOSE header, unverified (to pick the key by `kid`); AuthError("malformed token")."""
    try:
        header = _load(token)[2]
        _check_header(header)
    except ValueError:
        raise AuthError("malformed token") from None
    return header


def verify(
    token: str | bytes,
    key: EllipticCurvePublicKey,
    *,
    audience: str,
    issuer: str,
    require: Iterable[str],
) -> dict[str, Any]:
    """The claims of an ES256 token signed by `key`, for `audience` from `issuer`, carrying every
    claim in `require`, at the current time (no leeway); AuthError otherwise."""
    try:
        return _verify(token, key, audience, issuer, require)  # AuthError("token expired") passes
    except ValueError:
        raise AuthError("invalid token") from None


def _verify(
    token: str | bytes, key: EllipticCurvePublicKey, audience: str, issuer: str, require: Iterable[str]
) -> dict[str, Any]:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ec import ECDSA, SECP256R1
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
    from cryptography.hazmat.primitives.hashes import SHA256

    payload, signing_input, header, signature, _ = _load(token)
    _check_header(header)
    if header.get("b64", True) is False:
        raise ValueError("detached payload")  # never used by Workbench's tokens
    alg = header.get("alg")
    if not alg or alg not in ("ES256",):
        raise ValueError("alg")
    if not isinstance(key.curve, SECP256R1):
        raise ValueError("curve")
    if len(signature) != 64:
        raise ValueError("signature")
    r, s = int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")
    try:
        key.verify(encode_dss_signature(r, s), signing_input, ECDSA(SHA256()))
    except InvalidSignature:
        raise ValueError("signature") from None
    try:
        claims = json.loads(payload)
    except RecursionError as exc:
        raise ValueError("payload") from exc
    if not isinstance(claims, dict):
        raise ValueError("payload")
    _check_claims(claims, audience, issuer, require)
    return claims


def _number(value: Any) -> int:
    try:
        return int(value)
    except (ValueError, TypeError, OverflowError):
        raise ValueError("not a number") from None


def _check_claims(claims: dict[str, Any], audience: str, issuer: str, require: Iterable[str]) -> None:
    for claim in require:
        if claims.get(claim) is None:
            raise ValueError(f"missing {claim}")
    now = time.time()
    if "iat" in claims and _number(claims["iat"]) > now:
        raise ValueError("iat in the future")
    if "nbf" in claims and _number(claims["nbf"]) > now:
        raise ValueError("not yet valid")
    if "exp" in claims and _number(claims["exp"]) <= now:
        raise AuthError("token expired")
    if "iss" not in claims or not isinstance(claims["iss"], str) or claims["iss"] != issuer:
        raise ValueError("iss")
    audiences = claims.get("aud")
    if not audiences:
        raise ValueError("aud")
    if isinstance(audiences, str):
        audiences = [audiences]
    if not isinstance(audiences, list) or any(not isinstance(a, str) for a in audiences):
        raise ValueError("aud")
    if audience not in audiences:
        raise ValueError("aud")
    if "sub" in claims and not isinstance(claims["sub"], str):
        raise ValueError("sub")
    if "jti" in claims and not isinstance(claims["jti"], str):
        raise ValueError("jti")
