"""workbench.identity.es256 against PyJWT, the library it stands in for on the verify path.

The oracle is TokenService.verify as it was written on PyJWT (get_unverified_header, the key by
kid, jwt.decode with algorithms=["ES256"], audience, issuer, the required claims, leeway 0, and
the same exception-to-message mapping). Every token below, valid or hostile, goes through both:
the same claims come out, or the same AuthError message.
"""

from __future__ import annotations

import base64
import itertools
import json
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from workbench.errors import AuthError
from workbench.identity import es256
from workbench.identity.tokens import SigningKey, TokenService

ISSUER = "https://gw.example.test"
AUDIENCE = "https://gw.example.test/c"
REQUIRE = ["exp", "iat", "aud", "iss", "sub"]


class _Keys:
    def __init__(self, keys: list[SigningKey]) -> None:
        self.keys = keys

    def signing_keys(self) -> list[SigningKey]:
        return self.keys


KEY = SigningKey("k1", ec.generate_private_key(ec.SECP256R1()))
OLD = SigningKey("k0", ec.generate_private_key(ec.SECP256R1()))
STRANGER = SigningKey("k1", ec.generate_private_key(ec.SECP256R1()))  # same kid, another key
P384 = SigningKey("k1", ec.generate_private_key(ec.SECP384R1()))
SERVICE = TokenService(_Keys([KEY, OLD]), ISSUER)


def oracle(token: Any, keys: list[SigningKey], audience: str = AUDIENCE) -> dict[str, Any] | str:
    """TokenService.verify on PyJWT, as it was: the claims, or the AuthError message."""
    try:
        kid = jwt.get_unverified_header(token).get("kid")
    except jwt.PyJWTError:
        return "malformed token"
    key = next((k for k in keys if k.kid == kid), None)
    if key is None:
        return "token signed by an unknown key"
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key.private_key.public_key(),
            algorithms=["ES256"],
            audience=audience,
            issuer=ISSUER,
            options={"require": REQUIRE},
            leeway=0,
        )
    except jwt.ExpiredSignatureError:
        return "token expired"
    except jwt.PyJWTError:
        return "invalid token"
    return claims


def ours(token: Any, keys: list[SigningKey], audience: str = AUDIENCE) -> dict[str, Any] | str:
    try:
        return TokenService(_Keys(keys), ISSUER).verify(token, audience=audience)
    except AuthError as exc:
        return str(exc)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _raw_signature(key: SigningKey, signing_input: bytes) -> bytes:
    r, s = decode_dss_signature(key.private_key.sign(signing_input, ec.ECDSA(hashes.SHA256())))
    return r.to_bytes(32, "big") + s.to_bytes(32, "big")


def forge(header: Any, payload: Any, key: SigningKey = KEY, *, raw_payload: bytes | None = None) -> str:
    """A token with exactly this header and payload (any JSON, or raw bytes), signed by `key`."""
    head = _b64(json.dumps(header).encode())
    body = _b64(raw_payload if raw_payload is not None else json.dumps(payload).encode())
    signing_input = f"{head}.{body}".encode()
    if key.private_key.curve.name != "secp256r1":
        sig = key.private_key.sign(signing_input, ec.ECDSA(hashes.SHA384()))
        r, s = decode_dss_signature(sig)
        return f"{head}.{body}.{_b64(r.to_bytes(48, 'big') + s.to_bytes(48, 'big'))}"
    return f"{head}.{body}.{_b64(_raw_signature(key, signing_input))}"


def _claims(**over: Any) -> dict[str, Any]:
    now = int(time.time())
    base: dict[str, Any] = {
        "sub": "usr_ada",
        "iss": ISSUER,
        "aud": AUDIENCE,
        "iat": now,
        "nbf": now,
        "exp": now + 600,
        "jti": "abc",
        "typ": "curl_session",
    }
    base.update(over)
    return {k: v for k, v in base.items() if v is not _DROP}


_DROP = object()
HEADER = {"alg": "ES256", "kid": "k1", "typ": "JWT"}


def _tokens() -> list[tuple[str, Any, list[SigningKey]]]:
    now = int(time.time())
    out: list[tuple[str, Any, list[SigningKey]]] = []
    keys = [KEY, OLD]
    out.append(
        (
            "minted",
            SERVICE.mint({"sub": "usr_ada", "typ": "curl_session"}, audience=AUDIENCE, ttl_seconds=60),
            keys,
        )
    )
    out.append(
        (
            "minted by the older key",
            TokenService(_Keys([OLD]), ISSUER).mint({"sub": "u"}, audience=AUDIENCE, ttl_seconds=60),
            keys,
        )
    )
    out.append(
        (
            "other audience",
            SERVICE.mint({"sub": "u"}, audience="https://gw.example.test", ttl_seconds=60),
            keys,
        )
    )
    out.append(("stranger's key, same kid", forge(HEADER, _claims(), STRANGER), keys))
    out.append(("P-384 key under ES256", forge(HEADER, _claims(), P384), [P384]))
    out.append(("unknown kid", forge({**HEADER, "kid": "k9"}, _claims()), keys))
    out.append(("no kid", forge({"alg": "ES256"}, _claims()), keys))
    # Claims, one by one.
    variants: dict[str, Any] = {
        "exp past": {"exp": now - 1},
        "exp now": {"exp": now},
        "exp as string": {"exp": str(now + 600)},
        "exp as float": {"exp": now + 600.75},
        "exp junk": {"exp": "soon"},
        "exp list": {"exp": [now + 600]},
        "exp bool": {"exp": True},
        "exp null": {"exp": None},
        "exp missing": {"exp": _DROP},
        "exp huge": {"exp": 10**30},
        "iat future": {"iat": now + 3600},
        "iat junk": {"iat": "x"},
        "iat missing": {"iat": _DROP},
        "nbf future": {"nbf": now + 3600},
        "nbf junk": {"nbf": {}},
        "nbf missing (optional)": {"nbf": _DROP},
        "iss other": {"iss": "https://evil.test"},
        "iss number": {"iss": 7},
        "iss missing": {"iss": _DROP},
        "aud list with ours": {"aud": ["x", AUDIENCE]},
        "aud list without": {"aud": ["x", "y"]},
        "aud list with a number": {"aud": [AUDIENCE, 3]},
        "aud empty": {"aud": ""},
        "aud empty list": {"aud": []},
        "aud dict": {"aud": {"a": AUDIENCE}},
        "aud missing": {"aud": _DROP},
        "sub number": {"sub": 12},
        "sub empty": {"sub": ""},
        "sub missing": {"sub": _DROP},
        "jti number": {"jti": 5},
        "jti missing (optional)": {"jti": _DROP},
        "expired and wrong aud": {"exp": now - 5, "aud": "x"},
        "expired and iat junk": {"exp": now - 5, "iat": "x"},
    }
    for name, over in variants.items():
        out.append((name, forge(HEADER, _claims(**over)), keys))
    # Headers.
    for name, header in {
        "alg none": {"alg": "none", "kid": "k1"},
        "alg HS256": {"alg": "HS256", "kid": "k1"},
        "alg ES384": {"alg": "ES384", "kid": "k1"},
        "alg lower": {"alg": "es256", "kid": "k1"},
        "alg missing": {"kid": "k1"},
        "alg empty": {"alg": "", "kid": "k1"},
        "alg list": {"alg": ["ES256"], "kid": "k1"},
        "kid number": {"alg": "ES256", "kid": 1},
        "crit b64": {"alg": "ES256", "kid": "k1", "crit": ["b64"], "b64": True},
        "crit unknown": {"alg": "ES256", "kid": "k1", "crit": ["exp"]},
        "crit empty": {"alg": "ES256", "kid": "k1", "crit": []},
        "crit not a list": {"alg": "ES256", "kid": "k1", "crit": "b64"},
        "crit names a missing header": {"alg": "ES256", "kid": "k1", "crit": ["b64"]},
        "b64 true": {"alg": "ES256", "kid": "k1", "b64": True},
        "b64 false": {"alg": "ES256", "kid": "k1", "b64": False, "crit": ["b64"]},
    }.items():
        out.append((name, forge(header, _claims()), keys))
    out.append(("header a list", forge(["ES256"], _claims()), keys))
    out.append(("payload a list", forge(HEADER, None, raw_payload=b"[1, 2]"), keys))
    out.append(("payload not JSON", forge(HEADER, None, raw_payload=b"{nope"), keys))
    out.append(("payload deep", forge(HEADER, None, raw_payload=b"[" * 100_000), keys))
    out.append(
        (
            "payload NaN exp",
            forge(HEADER, None, raw_payload=json.dumps(_claims()).replace(str(now + 600), "NaN").encode()),
            keys,
        )
    )
    out.append(
        (
            "payload Infinity exp",
            forge(
                HEADER, None, raw_payload=json.dumps(_claims()).replace(str(now + 600), "Infinity").encode()
            ),
            keys,
        )
    )
    out.append(("payload latin-1", forge(HEADER, None, raw_payload=b'{"sub": "\xe9"}'), keys))
    # Framing and encodings.
    good = forge(HEADER, _claims())
    head, body, sig = good.split(".")
    raw_sig = base64.urlsafe_b64decode(sig + "==")
    out += [
        ("good", good, keys),
        ("good as bytes", good.encode(), keys),
        ("two segments", f"{head}.{body}", keys),
        ("one segment", head, keys),
        ("four segments", f"{good}.x", keys),
        ("empty", "", keys),
        ("dots", "..", keys),
        ("padded signature", f"{head}.{body}.{sig}" + "=" * (-len(sig) % 4), keys),
        ("over-padded signature", f"{head}.{body}.{sig}===", keys),
        ("padded header", f"{head}{'=' * (-len(head) % 4)}.{body}.{sig}", keys),
        ("junk in the signature", f"{head}.{body}.{sig[:10]}!{sig[10:]}", keys),
        (
            "standard base64 signature",
            f"{head}.{body}.{base64.b64encode(raw_sig).decode().rstrip('=')}",
            keys,
        ),
        ("signature one char short", f"{head}.{body}.{sig[:-1]}", keys),
        ("signature of 63 bytes", f"{head}.{body}.{_b64(raw_sig[:63])}", keys),
        ("signature of 65 bytes", f"{head}.{body}.{_b64(raw_sig + b'x')}", keys),
        ("signature empty", f"{head}.{body}.", keys),
        ("signature zero", f"{head}.{body}.{_b64(bytes(64))}", keys),
        ("signature flipped", f"{head}.{body}.{_b64(raw_sig[:-1] + bytes([raw_sig[-1] ^ 1]))}", keys),
        ("payload swapped", f"{head}.{_b64(json.dumps(_claims(sub='usr_bob')).encode())}.{sig}", keys),
        ("header junk", f"{head[:-2]}!!.{body}.{sig}", keys),
        ("header not JSON", f"{_b64(b'nope')}.{body}.{sig}", keys),
        ("header not UTF-8", f"{_b64(bytes([0xFF, 0xFE, 0x7B]))}.{body}.{sig}", keys),
        ("non-canonical header", f"{head[:-1]}{'B' if head[-1] != 'B' else 'C'}.{body}.{sig}", keys),
        ("whitespace", f" {good}", keys),
        ("a number", 12345, keys),
        ("None", None, keys),
    ]
    # Every one-character change of a good token's last segment characters (malleability).
    for i, c in itertools.product(range(len(good) - 3, len(good)), "AQgw_-"):
        out.append((f"char {i}={c}", good[:i] + c + good[i + 1 :], keys))
    return out


@pytest.mark.parametrize(("name", "token", "keys"), _tokens(), ids=lambda v: v if isinstance(v, str) else "")
def test_es256_answers_what_pyjwt_answers(name: str, token: Any, keys: list[SigningKey]) -> None:
    expected = oracle(token, keys)
    assert ours(token, keys) == expected, name


def test_the_corpus_reaches_every_outcome() -> None:
    """Not a corpus of refusals only: valid tokens and each kind of refusal are among them."""
    outcomes = {(lambda v: "claims" if isinstance(v, dict) else v)(oracle(t, k)) for _, t, k in _tokens()}
    assert outcomes == {
        "claims",
        "malformed token",
        "token signed by an unknown key",
        "token expired",
        "invalid token",
    }


def test_unverified_header_refuses_what_pyjwt_refuses() -> None:
    for _, token, _ in _tokens():
        try:
            expected: Any = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            expected = "malformed"
        try:
            got: Any = es256.unverified_header(token)
        except AuthError:
            got = "malformed"
        assert got == expected


def test_minting_and_verifying_never_imports_pyjwt_on_the_verify_path() -> None:
    """A fresh interpreter verifying a token (what the curl proxy and the OAuth-token path do on a
    cold start) does not import jwt."""
    import subprocess
    import sys

    token = SERVICE.mint({"sub": "usr_ada"}, audience=AUDIENCE, ttl_seconds=60)
    pem = KEY.private_key.public_key().public_bytes(
        encoding=__import__(
            "cryptography.hazmat.primitives.serialization", fromlist=["Encoding"]
        ).Encoding.PEM,
        format=__import__(
            "cryptography.hazmat.primitives.serialization", fromlist=["PublicFormat"]
        ).PublicFormat.SubjectPublicKeyInfo,
    )
    code = (
        "import sys\n"
        "from cryptography.hazmat.primitives.serialization import load_pem_public_key\n"
        "from workbench.identity import es256\n"
        f"key = load_pem_public_key({pem!r})\n"
        f"claims = es256.verify({token!r}, key, audience={AUDIENCE!r}, issuer={ISSUER!r}, require={REQUIRE!r})\n"
        "assert claims['sub'] == 'usr_ada'\n"
        "print('jwt' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
