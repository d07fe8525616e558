"""Client registration (RFC 7591) and client ID metadata documents."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.oauth.conftest import AS, REDIRECT, make_as, pkce, redirect_query

# -- dynamic client registration ------------------------------------------------------------------------


def test_registration_response_echoes_metadata_and_defaults(auth: AS) -> None:
    r = auth.http.post(
        "/register",
        json={
            "client_name": "Cursor",
            "redirect_uris": ["cursor://anysphere.cursor-mcp/oauth/callback", REDIRECT],
            "grant_types": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_method": "none",
            "client_uri": "https://cursor.com",
            "application_type": "native",
            "software_id": "cursor",
            "unknown_member": {"ignored": True},
        },
    )
    assert r.status_code == 201
    assert r.headers["cache-control"] == "no-store"
    body = r.json()
    assert body["client_id"].startswith("wbc_")
    assert isinstance(body["client_id_issued_at"], int)
    assert body == {
        "client_id": body["client_id"],
        "client_id_issued_at": body["client_id_issued_at"],
        "client_name": "Cursor",
        "redirect_uris": ["cursor://anysphere.cursor-mcp/oauth/callback", REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "client_uri": "https://cursor.com",
        "application_type": "native",
        "software_id": "cursor",
    }
    # RFC 7591 defaults: client_secret_basic, authorization_code only.
    r = auth.http.post("/register", json={"redirect_uris": ["https://app.example.com/cb"]})
    body = r.json()
    assert body["token_endpoint_auth_method"] == "client_secret_basic"
    assert body["client_secret"].startswith("wbs_") and body["client_secret_expires_at"] == 0
    assert body["grant_types"] == ["authorization_code"]


@pytest.mark.parametrize(
    ("body", "error", "fragment"),
    [
        ({}, "invalid_redirect_uri", "redirect_uris must be a non-empty array"),
        ({"redirect_uris": []}, "invalid_redirect_uri", "non-empty"),
        ({"redirect_uris": "https://a.example/cb"}, "invalid_redirect_uri", "non-empty array"),
        ({"redirect_uris": ["http://evil.example/cb"]}, "invalid_redirect_uri", "only allowed on loopback"),
        ({"redirect_uris": ["javascript:alert(1)"]}, "invalid_redirect_uri", "not allowed"),
        ({"redirect_uris": ["data:text/html,hi"]}, "invalid_redirect_uri", "not allowed"),
        ({"redirect_uris": ["https://a.example/cb#frag"]}, "invalid_redirect_uri", "fragment"),
        ({"redirect_uris": ["/relative/cb"]}, "invalid_redirect_uri", "absolute"),
        ({"redirect_uris": ["https://a.example/c b"]}, "invalid_redirect_uri", "whitespace"),
        ({"redirect_uris": [5]}, "invalid_redirect_uri", "non-empty string"),
        ({"redirect_uris": [REDIRECT] * 21}, "invalid_redirect_uri", "at most 20"),
        (
            {"redirect_uris": [REDIRECT], "grant_types": ["client_credentials"]},
            "invalid_client_metadata",
            "unsupported grant_types",
        ),
        (
            {"redirect_uris": [REDIRECT], "grant_types": ["refresh_token"]},
            "invalid_client_metadata",
            "must include authorization_code",
        ),
        (
            {"redirect_uris": [REDIRECT], "response_types": ["token"]},
            "invalid_client_metadata",
            "response_types",
        ),
        (
            {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "private_key_jwt"},
            "invalid_client_metadata",
            "token_endpoint_auth_method",
        ),
        ({"redirect_uris": [REDIRECT], "client_name": "x" * 201}, "invalid_client_metadata", "client_name"),
        ({"redirect_uris": [REDIRECT], "logo_uri": "javascript:x"}, "invalid_client_metadata", "logo_uri"),
        ([1, 2], "invalid_client_metadata", "JSON object"),
    ],
)
def test_registration_refusals(auth: AS, body: Any, error: str, fragment: str) -> None:
    r = auth.http.post("/register", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["error"] == error
    assert fragment in r.json()["error_description"]


def test_registration_of_a_non_json_body(auth: AS) -> None:
    r = auth.http.post("/register", content=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    assert r.json() == {
        "error": "invalid_client_metadata",
        "error_description": "the body must be a JSON object",
    }


# -- client ID metadata documents ------------------------------------------------------------------------


class _Docs(BaseHTTPRequestHandler):
    documents: ClassVar[dict[str, tuple[int, Any, str]]] = {}
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.hits.append(self.path)
        status, doc, cache = self.documents.get(self.path, (404, {"error": "nope"}, ""))
        raw = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        if cache:
            self.send_header("Cache-Control", cache)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def docs_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Docs)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def docs(docs_server: str) -> tuple[str, type[_Docs]]:
    """A loopback server of client metadata documents (path -> status, body, Cache-Control)."""
    _Docs.documents, _Docs.hits = {}, []
    return docs_server, _Docs


@pytest.fixture
def cimd_auth(tmp_path: Path) -> Iterator[AS]:
    server = make_as(tmp_path, egress_allow="loopback")
    with server.http:
        yield server


def metadata_doc(url: str, **extra: Any) -> dict[str, Any]:
    return {
        "client_id": url,
        "client_name": "Example MCP Client",
        "client_uri": "https://app.example.com",
        "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        **extra,
    }


def test_url_client_id_is_fetched_validated_cached_and_used(
    cimd_auth: AS, docs: tuple[str, type[_Docs]]
) -> None:
    base, handler = docs
    url = f"{base}/oauth/client.json"
    handler.documents["/oauth/client.json"] = (200, metadata_doc(url), "max-age=600")
    verifier, challenge = pkce()
    params = {
        "response_type": "code",
        "client_id": url,
        "redirect_uri": REDIRECT,
        "state": "s",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    page = cimd_auth.authorize(params)
    assert page.status_code == 200, page.text
    assert "Example MCP Client wants to use Workbench" in page.text
    assert "client's metadata document at <strong>127.0.0.1" in page.text
    done = cimd_auth.consent(page)
    code = redirect_query(done.headers["location"])["code"][0]
    r = cimd_auth.token(
        {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT,
            "client_id": url,
            "code_verifier": verifier,
        }
    )
    assert r.status_code == 200, r.text
    assert "refresh_token" in r.json()
    assert handler.hits == ["/oauth/client.json"]  # cached for the second look-up
    cimd_auth.authorize(params)
    assert handler.hits == ["/oauth/client.json"]
    # A redirect URI the document does not list is refused without a redirect.
    r = cimd_auth.authorize({**params, "redirect_uri": "http://127.0.0.1:9/evil"})
    assert r.status_code == 400 and "location" not in r.headers


@pytest.mark.parametrize(
    ("doc", "fragment"),
    [
        ("other-id", "does not match the URL"),
        ({"client_name": ""}, "client_name is required"),
        ({"redirect_uris": []}, "redirect_uris"),
        ({"redirect_uris": ["http://evil.example/cb"]}, "loopback"),
        ({"client_secret": "s"}, "client_secret"),
        ({"token_endpoint_auth_method": "private_key_jwt"}, "token_endpoint_auth_method"),
        (b"not json", "not JSON"),
        (b"x" * 20000, "too large"),
        (404, "HTTP 404"),
    ],
)
def test_invalid_metadata_documents_are_refused(
    cimd_auth: AS, docs: tuple[str, type[_Docs]], doc: Any, fragment: str
) -> None:
    base, handler = docs
    url = f"{base}/client.json"
    if doc == "other-id":
        handler.documents["/client.json"] = (200, metadata_doc(f"{base}/other.json"), "")
    elif isinstance(doc, dict):
        handler.documents["/client.json"] = (200, metadata_doc(url, **doc), "")
    elif isinstance(doc, bytes):
        handler.documents["/client.json"] = (200, doc, "")
    _, challenge = pkce()
    r = cimd_auth.authorize(
        {
            "response_type": "code",
            "client_id": url,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
    )
    assert r.status_code == 400 and "location" not in r.headers
    assert fragment in r.text.replace("&#x27;", "'").replace("&quot;", '"')


async def test_metadata_document_urls_on_private_addresses_or_plain_http_are_refused(tmp_path: Path) -> None:
    server = make_as(tmp_path)  # the production setting: https only, public addresses only
    oauth = server.gw.oauth
    assert oauth is not None
    for url, reason in [
        ("https://127.0.0.1/client.json", "not a public internet address"),
        ("https://localhost/client.json", "not a public internet address"),
        ("https://10.0.0.8/client.json", "not a public internet address"),
        ("https://169.254.169.254/latest/meta-data", "not a public internet address"),
        ("https://[::1]/client.json", "not a public internet address"),
        ("https://[::ffff:127.0.0.1]/client.json", "not a public internet address"),
        ("https://0.0.0.0/client.json", "not a public internet address"),
        ("https://192.168.1.1:8443/client.json", "not a public internet address"),
        ("https://app.example.com/", "path component"),
        ("https://user:pw@app.example.com/c.json", "no credentials"),
        ("https://app.example.com/a/../c.json", "dot segments"),
    ]:
        with pytest.raises(Exception) as info:
            await oauth.clients.resolve(url)
        assert reason in str(info.value), url
    # http:// client ids are not URLs to fetch in production: they are unknown registered ids.
    assert await oauth.clients.resolve("http://127.0.0.1:1/client.json") is None
