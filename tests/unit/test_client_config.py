"""`workbench client add`: each client's file in the format its documentation gives, merged into what
is there, backed up first, idempotent, and never a half-written or clobbered file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from workbench.cli import main
from workbench.web.client_config import CLIENTS, config_path

URL = "http://127.0.0.1:8787/mcp"
KEY = "wb_abc_secret"

# Each client's documented server entry (the fields it reads for a remote server).
_HEADERS = {"type": "object", "additionalProperties": {"type": "string"}}
ENTRY_SCHEMAS: dict[str, tuple[str, dict[str, Any]]] = {
    # Claude Code: .mcp.json / ~/.claude.json, "mcpServers": {"type": "http", "url", "headers"}
    "claude-code": (
        "mcpServers",
        {
            "type": "object",
            "required": ["type", "url"],
            "properties": {"type": {"const": "http"}, "url": {"const": URL}, "headers": _HEADERS},
            "additionalProperties": False,
        },
    ),
    # Claude Desktop: stdio servers only: "command", "args", "env"
    "claude-desktop": (
        "mcpServers",
        {
            "type": "object",
            "required": ["command", "args"],
            "properties": {
                "command": {"type": "string"},
                "args": {"type": "array", "items": {"type": "string"}, "contains": {"const": URL}},
                "env": _HEADERS,
            },
            "additionalProperties": False,
        },
    ),
    # Cursor: "mcpServers": {"url", "headers"}
    "cursor": (
        "mcpServers",
        {
            "type": "object",
            "required": ["url"],
            "properties": {"url": {"const": URL}, "headers": _HEADERS},
            "additionalProperties": False,
        },
    ),
    # VS Code: "servers": {"type": "http", "url", "headers"}
    "vscode": (
        "servers",
        {
            "type": "object",
            "required": ["type", "url"],
            "properties": {"type": {"const": "http"}, "url": {"const": URL}, "headers": _HEADERS},
            "additionalProperties": False,
        },
    ),
    # Windsurf: "mcpServers": {"serverUrl", "headers"}
    "windsurf": (
        "mcpServers",
        {
            "type": "object",
            "required": ["serverUrl"],
            "properties": {"serverUrl": {"const": URL}, "headers": _HEADERS},
            "additionalProperties": False,
        },
    ),
}


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("WORKBENCH_PUBLIC_URL", raising=False)
    monkeypatch.delenv("WORKBENCH_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


def test_every_supported_client_has_a_documented_format() -> None:
    assert set(CLIENTS) == set(ENTRY_SCHEMAS)


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("key", [KEY, None])
def test_print_shows_a_configuration_the_clients_format_accepts(
    client: str, key: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["client", "add", client, "--print", *(["--key", key] if key else [])]) == 0
    document = json.loads(capsys.readouterr().out)
    top, schema = ENTRY_SCHEMAS[client]
    assert list(document) == [top] and list(document[top]) == ["workbench"]
    entry = document[top]["workbench"]
    jsonschema.validate(entry, schema)
    text = json.dumps(entry)
    if key:
        assert f"Bearer {key}" in text
    else:
        assert "Bearer" not in text and "Authorization" not in text  # the OAuth variant: no key at all


@pytest.mark.parametrize("client", CLIENTS)
def test_add_writes_merges_backs_up_and_is_idempotent(
    client: str, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config_path(client)
    assert str(path).startswith(str(home))
    top, schema = ENTRY_SCHEMAS[client]
    path.parent.mkdir(parents=True, exist_ok=True)
    original = {"theme": "dark", top: {"other": {"url": "https://other.example/mcp"}}}
    path.write_text(json.dumps(original))

    assert main(["client", "add", client, "--key", KEY]) == 0
    assert "Added 'workbench'" in capsys.readouterr().out
    written = json.loads(path.read_text())
    assert written["theme"] == "dark" and written[top]["other"] == original[top]["other"]  # kept
    jsonschema.validate(written[top]["workbench"], schema)
    backup = path.with_name(path.name + ".workbench-backup")
    assert json.loads(backup.read_text()) == original
    assert path.stat().st_mode & 0o077 == 0  # it holds a key: the owner's alone

    before = path.read_bytes()
    backup.unlink()
    assert main(["client", "add", client, "--key", KEY]) == 0  # again: nothing to do
    assert "nothing changed" in capsys.readouterr().out
    assert path.read_bytes() == before and not backup.exists()

    assert main(["client", "add", client]) == 0  # switching to OAuth replaces the entry, once
    entry = json.loads(path.read_text())[top]["workbench"]
    assert "Bearer" not in json.dumps(entry)
    assert json.loads(backup.read_text())[top]["workbench"] != entry  # the key variant was saved first


def test_a_new_file_is_created_with_its_folders(home: Path) -> None:
    assert main(["client", "add", "cursor"]) == 0
    assert json.loads((home / ".cursor" / "mcp.json").read_text()) == {
        "mcpServers": {"workbench": {"url": URL}}
    }


@pytest.mark.parametrize(
    ("client", "relative"),
    [
        ("claude-code", ".mcp.json"),
        ("cursor", ".cursor/mcp.json"),
        ("vscode", ".vscode/mcp.json"),
    ],
)
def test_project_files(client: str, relative: str, tmp_path: Path) -> None:
    assert main(["client", "add", client, "--project"]) == 0
    assert (tmp_path / relative).exists()


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"mcpServers": []}'])
def test_a_file_that_is_not_a_config_object_is_refused_untouched(
    content: str, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir(parents=True)
    path.write_text(content)
    assert main(["client", "add", "cursor"]) == 1
    assert "workbench:" in capsys.readouterr().err
    assert path.read_text() == content
    assert not path.with_name("mcp.json.workbench-backup").exists()


def test_the_running_gateways_url_is_used(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import os

    data = tmp_path / "data"
    data.mkdir()
    (data / "serve.json").write_text(json.dumps({"pid": os.getpid(), "url": "http://127.0.0.1:8911"}))
    assert main(["client", "add", "vscode", "--print"]) == 0
    assert json.loads(capsys.readouterr().out)["servers"]["workbench"]["url"] == "http://127.0.0.1:8911/mcp"


def test_the_portal_offers_the_command_beside_each_snippet() -> None:
    from workbench.web.client_setup import setup_section

    page = setup_section(URL, None)
    for client in CLIENTS:
        if client == "windsurf":
            continue  # no portal snippet; the command alone
        assert f"workbench client add {client}" in page
