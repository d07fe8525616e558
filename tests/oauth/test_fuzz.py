"""Property tests: whatever arrives at /token, /register, /revoke or /authorize, the answer is a
well-formed 2xx/3xx/4xx, never a 5xx."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.oauth.conftest import AS, MCP, REDIRECT, TOKEN_KEYS, make_as, pkce

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

text = st.text(max_size=80)
interesting = st.one_of(
    text,
    st.sampled_from(["authorization_code", "refresh_token", "password", "", MCP, REDIRECT, "S256", "wbr_x"]),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def fuzz_as(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[AS, str, str]]:
    server = make_as(Path(tmp_path_factory.mktemp("fuzz")))
    with server.http:
        client = server.register()["client_id"]
        confidential = server.register(token_endpoint_auth_method="client_secret_post")["client_id"]
        yield server, client, confidential


def _ok(r: Any) -> None:
    assert r.status_code < 500, (r.status_code, r.text)
    if r.status_code >= 400 and r.headers.get("content-type") == "application/json":
        body = r.json()
        assert isinstance(body["error"], str) and isinstance(body["error_description"], str)


@FUZZ
@given(
    form=st.dictionaries(st.sampled_from(TOKEN_KEYS) | text, interesting, max_size=8),
    which_client=st.sampled_from(["public", "confidential", "none", "random"]),
    basic=st.none()
    | st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=40)
    | st.builds(lambda a, b: base64.b64encode(f"{a}:{b}".encode()).decode(), interesting, text),
)
def test_token_endpoint_never_fails_with_5xx(
    fuzz_as: tuple[AS, str, str], form: dict[str, str], which_client: str, basic: str | None
) -> None:
    auth, client, confidential = fuzz_as
    if which_client == "public":
        form["client_id"] = client
    elif which_client == "confidential":
        form["client_id"] = confidential
    headers = {"Authorization": f"Basic {basic}"} if basic is not None else {}
    _ok(auth.token(form, headers=headers))
    _ok(auth.http.post("/revoke", data=form, headers=headers))


@FUZZ
@given(
    body=st.binary(max_size=200),
    content_type=st.sampled_from(["application/x-www-form-urlencoded", "text/plain", "application/json", ""]),
)
def test_token_endpoint_survives_arbitrary_bytes(
    fuzz_as: tuple[AS, str, str], body: bytes, content_type: str
) -> None:
    auth, _, _ = fuzz_as
    _ok(auth.http.post("/token", content=body, headers={"Content-Type": content_type}))
    _ok(auth.http.post("/register", content=body, headers={"Content-Type": content_type}))


registration = st.fixed_dictionaries(
    {},
    optional={
        "redirect_uris": st.one_of(st.lists(interesting | json_values, max_size=3), json_values),
        "client_name": json_values,
        "grant_types": st.one_of(
            st.lists(st.sampled_from(["authorization_code", "refresh_token", "implicit"]), max_size=3),
            json_values,
        ),
        "response_types": json_values,
        "token_endpoint_auth_method": st.sampled_from(["none", "client_secret_basic", "x"]) | json_values,
        "client_uri": json_values,
        "logo_uri": json_values,
        "scope": json_values,
        "contacts": json_values,
        "application_type": json_values,
    },
)


@FUZZ
@given(body=st.one_of(registration, json_values))
def test_registration_never_fails_with_5xx(fuzz_as: tuple[AS, str, str], body: Any) -> None:
    auth, _, _ = fuzz_as
    r = auth.http.post("/register", json=body)
    _ok(r)
    if r.status_code == 201:
        assert r.json()["client_id"].startswith("wbc_")


@FUZZ
@given(
    params=st.dictionaries(
        st.sampled_from(
            [
                "response_type",
                "client_id",
                "redirect_uri",
                "state",
                "code_challenge",
                "code_challenge_method",
                "resource",
                "scope",
            ]
        )
        | text,
        interesting,
        max_size=8,
    )
)
def test_authorize_never_fails_with_5xx(fuzz_as: tuple[AS, str, str], params: dict[str, str]) -> None:
    auth, client, _ = fuzz_as
    if params.get("client_id") == "":
        params["client_id"] = client
    params.setdefault("code_challenge", pkce()[1])
    r = auth.http.get("/authorize?" + urlencode(params), headers={"Cookie": auth.cookie})
    assert r.status_code in (200, 303, 400), (r.status_code, r.text)
