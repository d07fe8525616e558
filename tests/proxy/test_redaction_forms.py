"""The redaction list the proxy scrubs responses with: worked out once per credential, and the same
list a fresh computation gives, for every credential in turn."""

from __future__ import annotations

import base64

from workbench.proxy import app as proxy_app
from workbench.proxy.app import _redactions, secret_forms


def _fresh(*secrets: bytes) -> list[bytes]:
    return sorted({f for s in secrets for f in secret_forms(s)}, key=len, reverse=True)


def test_remembered_forms_equal_a_fresh_computation_every_time() -> None:
    cred = {"token": "tok-AAAA+/bbbb cc", "token_type": "Bearer"}
    injected = {"Authorization": "Bearer tok-AAAA+/bbbb cc"}
    first = _redactions(cred, injected)
    second = _redactions(cred, injected)
    expected = _fresh(b"tok-AAAA+/bbbb cc", b"Bearer tok-AAAA+/bbbb cc", b"tok-AAAA+/bbbb")
    assert sorted(first) == sorted(second) == sorted(expected)
    assert [len(f) for f in first] == sorted((len(f) for f in first), reverse=True)
    assert base64.b64encode(b"tok-AAAA+/bbbb cc") in first
    assert b"tok-AAAA%2B%2Fbbbb%20cc" in first and b"tok-AAAA%2b%2fbbbb+cc" in first


def test_a_callers_changes_to_its_list_do_not_reach_the_next_request() -> None:
    cred = {"api_key": "k-123456789abcdef"}
    first = _redactions(cred, {})
    first.clear()
    assert b"k-123456789abcdef" in _redactions(cred, {})


def test_each_credential_gets_its_own_forms_and_extra_forms_are_merged() -> None:
    one = _redactions({"api_key": "one-secret-value"}, {})
    two = _redactions({"api_key": "two-secret-value"}, {}, also=one)
    assert b"one-secret-value" not in _redactions({"api_key": "two-secret-value"}, {})
    assert b"one-secret-value" in two and b"two-secret-value" in two
    assert [len(f) for f in two] == sorted((len(f) for f in two), reverse=True)


def test_the_remembered_forms_are_bounded() -> None:
    for i in range(proxy_app._FORMS_KEPT + 50):
        _redactions({"api_key": f"secret-number-{i:06d}"}, {})
    assert len(proxy_app._forms_cache) <= proxy_app._FORMS_KEPT
    # the newest is still scrubbed, and one pushed out is worked out again
    assert b"secret-number-000000" in _redactions({"api_key": "secret-number-000000"}, {})
