"""The `workbench` command: help for everything, --version, keys create/list/revoke, a busy port
mints nothing, and the local portal's one-time sign-in link."""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from workbench import __version__
from workbench.cli import build_parser, main
from workbench.composition import build_gateway
from workbench.runtime.local_app import create_local_app
from workbench.settings import Settings
from workbench.web.local_signin import is_loopback_host, mint_signin_link
from workbench.web.sessions import SESSION_COOKIE

from tests.support.processes import REPO, free_port


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("WORKBENCH_STORE", raising=False)
    monkeypatch.delenv("WORKBENCH_PUBLIC_URL", raising=False)
    return tmp_path


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found.extend(_parsers(sub))
    return found


def test_every_command_and_option_has_help_text() -> None:
    parsers = _parsers(build_parser())
    assert {p.prog for p in parsers} >= {
        "workbench",
        "workbench serve",
        "workbench keys",
        "workbench keys create",
        "workbench keys list",
        "workbench keys revoke",
        "workbench signin-link",
    }
    for parser in parsers:
        assert parser.description, parser.prog
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for choice in action._choices_actions:
                    assert choice.help, (parser.prog, choice.dest)
            else:
                assert action.help, (parser.prog, action.dest)


def test_version_and_help_run_as_the_installed_command() -> None:
    exe = Path(sys.executable).parent / "workbench"
    out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == f"workbench {__version__}"
    helped = subprocess.run([str(exe), "keys", "--help"], capture_output=True, text=True, check=True)
    assert "revoke" in helped.stdout and "list" in helped.stdout


def test_keys_create_list_revoke(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["keys", "create", "ada@example.com", "--label", "laptop"]) == 0
    key = capsys.readouterr().out.strip()
    gw = build_gateway(Settings.from_env())
    assert gw.auth.api_keys.resolve(key).user.email == "ada@example.com"
    key_id = key.split("_")[1]

    assert main(["keys", "list", "ada@example.com"]) == 0
    listing = capsys.readouterr().out
    assert f"wb_{key_id}_…" in listing and "active" in listing and "laptop" in listing
    assert key.split("_", 2)[2] not in listing  # never the secret

    assert main(["keys", "revoke", f"wb_{key_id}_…"]) == 0
    assert f"revoked wb_{key_id}_…" in capsys.readouterr().out
    assert gw.stores.api_keys.get(key_id).revoked  # type: ignore[union-attr]
    assert main(["keys", "list", "ada@example.com"]) == 0
    assert "revoked" in capsys.readouterr().out

    # a second revoke, an unknown id and an unknown user are errors with a message, exit 1
    assert main(["keys", "revoke", key_id]) == 1
    assert "no active API key" in capsys.readouterr().err
    assert main(["keys", "revoke", "wb_nosuchkey000"]) == 1
    assert main(["keys", "list", "nobody@example.com"]) == 1
    assert "no user" in capsys.readouterr().err
    assert gw.stores.users.by_email("nobody@example.com") is None  # listing creates nobody


def test_keys_create_with_a_grant(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["keys", "create", "ada@example.com", "--read-only", "--integrations", "github, jots"]) == 0
    out = capsys.readouterr()
    key = out.out.strip()  # stdout is the key alone
    assert "grant: read-only; integrations: github, jots" in out.err
    gw = build_gateway(Settings.from_env())
    grant = gw.auth.api_keys.resolve(key).grant
    assert (grant.access, grant.integrations, grant.denied_tools) == ("read-only", ("github", "jots"), ())
    assert main(["keys", "create", "ada@example.com", "--approve-writes", "--deny-tools", "delete_jot"]) == 0
    grant = gw.auth.api_keys.resolve(capsys.readouterr().out.strip()).grant
    assert (grant.access, grant.integrations, grant.denied_tools) == ("approve", None, ("delete_jot",))
    assert main(["keys", "list", "ada@example.com"]) == 0
    listing = capsys.readouterr().out
    assert "read-only; integrations: github, jots" in listing and "approve; all integrations" in listing
    # An unknown integration and two access levels at once are refused; nothing is minted.
    before = len(gw.stores.api_keys.list_for(gw.stores.users.by_email("ada@example.com").id))  # type: ignore[union-attr]
    assert main(["keys", "create", "ada@example.com", "--integrations", "githubb"]) == 1
    assert "Unknown integration(s): githubb" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["keys", "create", "ada@example.com", "--read-only", "--approve-writes"])
    assert len(gw.stores.api_keys.list_for(gw.stores.users.by_email("ada@example.com").id)) == before  # type: ignore[union-attr]


def test_a_busy_port_fails_before_anything_is_minted(data_dir: Path) -> None:
    port = free_port()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", port))
        busy.listen(1)
        proc = subprocess.run(
            [sys.executable, "-m", "workbench.cli", "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=REPO,
        )
    assert proc.returncode == 1
    assert f"port {port} on 127.0.0.1 is already in use" in proc.stderr
    assert "wb_" not in proc.stdout + proc.stderr and "running" not in proc.stdout
    assert not (data_dir / ".initialized").exists()  # the first-run key is still to come
    assert not (data_dir / "workbench.sqlite3").exists()


def test_the_one_time_link_signs_the_local_user_in_once(data_dir: Path) -> None:
    gw = build_gateway(Settings.from_env())
    user = gw.stores.users.get_or_create("you@localhost")
    link = mint_signin_link(gw, user, "http://127.0.0.1:8787")
    path = link.removeprefix("http://127.0.0.1:8787")
    # TestClient's peer is "testclient"; a real loopback peer is what the link needs.
    app = create_local_app(gw)

    def client(peer: str, base: str = "http://127.0.0.1:8787") -> TestClient:
        return TestClient(app, base_url=base, follow_redirects=False, client=(peer, 50000))

    assert client("192.168.1.20").get(path).status_code == 403  # not from this machine
    assert client("127.0.0.1", "http://evil.example").get(path).status_code == 403  # rebinding Host
    first = client("127.0.0.1").get(path)
    assert first.status_code == 303 and first.headers["location"] == "/portal"
    assert gw.sessions.read(first.cookies[SESSION_COOKIE]) == user.id
    again = client("127.0.0.1").get(path)
    assert again.status_code == 400 and "already used" in again.text
    assert client("::1", "http://[::1]:8787").get(path + "x").status_code == 400


def test_signin_link_command_mints_a_link_the_server_accepts(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["signin-link", "--port", "8899"]) == 0
    link = capsys.readouterr().out.strip()
    assert link.startswith("http://127.0.0.1:8899/portal/signin/local?token=")
    gw = build_gateway(Settings.from_env())  # another process's view of the same SQLite store
    r = TestClient(create_local_app(gw), base_url="http://127.0.0.1:8899", client=("127.0.0.1", 1)).get(
        link.removeprefix("http://127.0.0.1:8899"), follow_redirects=False
    )
    assert r.status_code == 303


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.1:8787", True),
        ("127.9.9.9", True),
        ("localhost:1", True),
        ("[::1]:8787", True),
        ("::1", True),
        ("10.0.0.1", False),
        ("evil.example", False),
        ("localhost.evil.example", False),
        ("", False),
        (None, False),
    ],
)
def test_loopback_hosts(host: str | None, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback


def test_root_leads_to_the_portal(data_dir: Path) -> None:
    gw = build_gateway(Settings.from_env())
    r = TestClient(create_local_app(gw), follow_redirects=False).get("/")
    assert r.status_code == 303 and r.headers["location"] == "/portal"


def test_serve_tells_signin_link_its_port_and_stops_cleanly_on_ctrl_c(data_dir: Path) -> None:
    """`workbench signin-link` with no --port finds the running gateway's URL; Ctrl+C (SIGINT) ends
    `workbench serve` with one goodbye line, exit status 0 and no traceback."""
    import os
    import signal
    import time

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench.cli", "serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "WORKBENCH_DATA_DIR": str(data_dir)},
    )
    try:
        assert proc.stdout is not None
        banner = [proc.stdout.readline() for _ in range(6)]  # ends with "Press Ctrl+C to stop."
        assert banner[0] == "Workbench is running.\n" and banner[-1].startswith("Press Ctrl+C"), banner
        assert f"http://127.0.0.1:{port}/portal/signin/local?token=" in "".join(banner)
        linked = subprocess.run(
            [sys.executable, "-m", "workbench.cli", "signin-link"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=REPO,
            env={**os.environ, "WORKBENCH_DATA_DIR": str(data_dir)},
        )
        assert linked.returncode == 0, linked.stderr
        assert linked.stdout.startswith(f"http://127.0.0.1:{port}/portal/signin/local?token="), linked.stdout
        assert linked.stderr == ""
    finally:
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert out.strip().endswith("Workbench stopped.")
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert not (data_dir / "serve.json").exists()  # no stale pointer for the next signin-link


def test_signin_link_without_a_running_gateway_says_which_port_it_assumed(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (data_dir / "serve.json").write_text('{"pid": 999999999, "url": "http://127.0.0.1:1"}')  # stale
    assert main(["signin-link"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("http://127.0.0.1:8787/portal/signin/local?token=")
    assert "no running gateway found" in captured.err and "--port" in captured.err


def test_signin_hints_name_the_gateways_port(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_PUBLIC_URL", "http://127.0.0.1:8800")
    gw = build_gateway(Settings.from_env())
    client = TestClient(create_local_app(gw), base_url="http://127.0.0.1:8800", client=("127.0.0.1", 1))
    assert "workbench signin-link --port 8800" in client.get("/portal/signin").text
    assert "workbench signin-link --port 8800" in client.get("/portal/signin/local?token=nope").text


@pytest.mark.parametrize("attempt", range(3))
def test_ctrl_c_the_instant_the_banner_appears_stops_the_server_gracefully(
    data_dir: Path, attempt: int
) -> None:
    """A Ctrl+C between the banner and the server's own signal handlers is held, not lost and not
    raised into the middle of asyncio.run: the gateway starts, then stops with its goodbye line, exit
    status 0 and nothing on stderr (it used to print "coroutine 'Server.serve' was never awaited")."""
    import os
    import signal

    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench.cli", "serve", "--port", str(free_port())],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "WORKBENCH_DATA_DIR": str(data_dir), "PYTHONWARNINGS": "default"},
    )
    try:
        assert proc.stdout is not None
        for _ in range(6):
            proc.stdout.readline()
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out.strip().splitlines()[-1], err) == (0, "Workbench stopped.", "")
    assert not (data_dir / "serve.json").exists()


def test_ctrl_c_before_a_command_starts_exits_130_without_a_traceback(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import workbench.cli as cli

    def interrupted(args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_keys_list", interrupted)
    assert main(["keys", "list"]) == 130
