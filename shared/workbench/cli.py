"""`workbench` command line: run the local gateway, manage API keys, sign in to the local portal,
clear the external-server discovery caches."""

from __future__ import annotations

import argparse
import contextlib
import errno
import gc
import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from workbench import __version__
from workbench.errors import InvalidInput, WorkbenchError
from workbench.identity.grants import Grant
from workbench.settings import DEFAULT_PORT, Settings

if TYPE_CHECKING:
    from workbench.composition import Gateway

__all__ = ["main"]

DEFAULT_HOST = "127.0.0.1"
LOCAL_EMAIL = "you@localhost"  # the local gateway's own user (first run mints its key)


class CliError(WorkbenchError):
    """A problem the user can fix; printed as one line, exit status 1."""


def _settings(args: argparse.Namespace) -> Settings:
    settings = Settings.from_env()
    serving = getattr(args, "port", None) is not None
    if serving and "WORKBENCH_PUBLIC_URL" not in os.environ:
        host = "127.0.0.1" if args.host in ("0.0.0.0", "::", "") else args.host  # noqa: S104
        host = f"[{host}]" if ":" in host else host
        settings = replace(settings, public_url=f"http://{host}:{args.port}")
    return settings


def _gateway(args: argparse.Namespace) -> Gateway:
    from workbench.composition import build_gateway

    settings = _settings(args)
    stack = getattr(args, "stack", None)
    if stack:
        settings = _stack_settings(stack, getattr(args, "region", None), settings)
    return build_gateway(settings)


def _stack_settings(stack: str, region: str | None, settings: Settings) -> Settings:
    """The deployed stack's tables and key, found from its outputs with the caller's AWS credentials."""
    from workbench.aws.stack import stack_settings
    from workbench.errors import ConfigError

    if region:
        settings = replace(settings, aws_region=region)
    try:
        return stack_settings(stack, settings)
    except ConfigError as exc:
        raise CliError(str(exc)) from exc
    except ImportError as exc:
        raise CliError(
            "--stack needs the AWS SDK: install it beside workbench (pip install boto3, or uv sync --extra aws)"
        ) from exc


def _bind(host: str, port: int) -> socket.socket:
    """Take the port before anything is minted: a busy port must not cost a one-time key."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise CliError(f"cannot resolve --host {host!r}: {exc.strerror}") from exc
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT only; a listener still refuses
    try:
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise CliError(
                f"port {port} on {host} is already in use (another workbench?). Stop that process or "
                f"choose another port: workbench serve --port {port + 1}"
            ) from exc
        raise CliError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    return sock


def _loopback_base(settings: Settings, port: int) -> str:
    """Where the one-time sign-in link points: the public URL when it is loopback, else 127.0.0.1."""
    from urllib.parse import urlsplit

    from workbench.web.local_signin import is_loopback_host

    if is_loopback_host(urlsplit(settings.public_url).netloc):
        return settings.public_url.rstrip("/")
    return f"http://127.0.0.1:{port}"


def _runfile(settings: Settings) -> Path:
    """Where a running `workbench serve` says which URL it serves, for `workbench signin-link`."""
    return settings.data_dir / "serve.json"


def _running_url(settings: Settings) -> str | None:
    """The loopback URL of the gateway serving this data directory, if one is running."""
    try:
        info = json.loads(_runfile(settings).read_text())
        pid, url = int(info["pid"]), str(info["url"])
        os.kill(pid, 0)  # raises when no such process (a stale file from a killed server)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return url


def _serve(args: argparse.Namespace) -> int:
    sock = _bind(args.host, args.port)
    runfile = _runfile(_settings(args))
    try:
        _run_gateway(args, sock, runfile)
    except KeyboardInterrupt:
        # Ctrl+C: uvicorn shuts down gracefully and then re-raises the signal it captured; one during
        # start-up simply abandons the start. Either way the user asked to stop: no traceback.
        pass
    finally:
        _hold_ctrl_c(False)
        sock.close()
        if _owns(runfile):  # never another running gateway's
            runfile.unlink(missing_ok=True)
    print("Workbench stopped.", flush=True)
    return 0


def _owns(runfile: Path) -> bool:
    try:
        return bool(json.loads(runfile.read_text()).get("pid") == os.getpid())
    except (OSError, ValueError, AttributeError):
        return False


def _run_gateway(args: argparse.Namespace, sock: socket.socket, runfile: Path) -> None:
    import uvicorn

    from workbench.observability import configure_logging
    from workbench.runtime.local_app import create_local_app, first_run
    from workbench.runtime.uvicorn_server import http_protocol, server_options
    from workbench.web.local_signin import mint_signin_link

    configure_logging()
    gateway = _gateway(args)
    settings = gateway.settings
    gateway.schema.migrate()  # the local data's first use by this version: bring its schema forward
    key = first_run(gateway, LOCAL_EMAIL)
    user = gateway.auth.sign_in(LOCAL_EMAIL)
    loopback = _loopback_base(settings, sock.getsockname()[1])
    link = mint_signin_link(gateway, user, loopback)
    base = settings.public_url.rstrip("/")
    app = create_local_app(gateway)
    # What start-up built (registry, catalog, routes, imported modules) lives as long as the process:
    # moved out of the collector's generations, so that a full collection, which the requests' own
    # garbage sets off every few thousand requests, no longer walks it (bench/mcp_throughput.py: a
    # full collection cost ~50 ms of the loop's time before, ~8 ms after).
    gc.freeze()
    config = uvicorn.Config(
        app,
        log_level="warning",
        http=http_protocol(),
        **server_options(settings.trusted_proxies),
    )
    # From the banner until uvicorn has its own handlers, a Ctrl+C is held (not lost): delivered then,
    # it stops the server gracefully instead of landing between asyncio.run and the serve coroutine.
    _hold_ctrl_c(True)
    runfile.write_text(json.dumps({"pid": os.getpid(), "url": loopback}))
    lines = [
        "Workbench is running.",
        f"  MCP endpoint: {settings.mcp_url}",
        (
            f"  API key for {LOCAL_EMAIL} (shown once, keep it): {key}"
            if key
            else "  API keys: workbench keys create EMAIL (or the portal's API key page)"
        ),
        f"  Portal: {base}/portal",
        f"  Sign in to the portal (one-time link, this machine only): {link}",
        "Press Ctrl+C to stop.",
    ]
    print("\n".join(lines), flush=True)
    # Tool and service modules import on first use (keeping them off a Lambda's cold start); a
    # long-running server imports them now, on a thread, so no request's first use imports them on the
    # event loop while other requests wait (the apps tools and the custom-app service: ~0.4 s).
    threading.Thread(target=_warm, args=(gateway,), name="workbench-warm", daemon=True).start()
    _server_class()(config).run(sockets=[sock])


def _warm(gateway: Gateway) -> None:
    try:
        gateway.preload()
    except Exception as exc:  # a broken plugin says so when its tools are used, as before
        from workbench.observability import log_warning

        log_warning("tool_modules_not_preloaded", error=f"{type(exc).__name__}: {exc}")


def _hold_ctrl_c(hold: bool) -> None:
    if hasattr(signal, "pthread_sigmask"):  # POSIX; elsewhere the window stays (as uvicorn has it)
        signal.pthread_sigmask(signal.SIG_BLOCK if hold else signal.SIG_UNBLOCK, {signal.SIGINT})


def _server_class() -> type:
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            with super().capture_signals():
                _hold_ctrl_c(False)  # a held Ctrl+C arrives here
                yield

    return Server


def _keys_create(args: argparse.Namespace) -> int:
    gateway = _gateway(args)
    access = "read-only" if args.read_only else "approve" if args.approve_writes else "full"
    try:
        user = gateway.auth.sign_in(args.email)
        grant = gateway.catalog.choose_grant(
            user.id, access=access, integrations=args.integrations, denied_tools=args.deny_tools
        )
    except InvalidInput as exc:
        raise CliError(str(exc)) from exc
    print(gateway.auth.mint_key(user, label=args.label, grant=grant))
    if not grant.is_full:  # stdout stays the key alone, for scripts
        print(f"grant: {grant.describe()}", file=sys.stderr)
    if getattr(args, "stack", None):  # stdout stays the key alone, for scripts
        print(f"API key for {args.email} on stack {args.stack}: {gateway.settings.mcp_url}", file=sys.stderr)
    return 0


def _keys_list(args: argparse.Namespace) -> int:
    gateway = _gateway(args)
    user = gateway.auth.user_by_email(args.email)
    if user is None:
        raise CliError(f"no user {args.email!r} on this gateway")
    keys = sorted(gateway.auth.keys_of(user.id), key=lambda k: k.created_at)
    if not keys:
        print(f"{args.email} has no API keys. Create one: workbench keys create {args.email}")
        return 0
    print(f"{'KEY':<20} {'STATUS':<8} {'CREATED (UTC)':<17} {'LABEL':<12} GRANT")
    for k in keys:
        created = time.strftime("%Y-%m-%d %H:%M", time.gmtime(k.created_at))
        status = "revoked" if k.revoked else "active"
        try:
            grant = Grant.loads(k.grant).describe()
        except (InvalidInput, ValueError):
            grant = "unreadable (the key is refused)"
        print(f"{'wb_' + k.key_id + '_…':<20} {status:<8} {created:<17} {k.label:<12} {grant}")
    return 0


def _key_id(value: str) -> str:
    """Accept the id alone, `wb_<id>`, `wb_<id>_…` as listed, or the whole key."""
    value = value.strip()
    if value.startswith("wb_"):
        value = value[3:].split("_", 1)[0]
    return value


def _keys_revoke(args: argparse.Namespace) -> int:
    gateway = _gateway(args)
    key_id = _key_id(args.key)
    rec = gateway.auth.key(key_id) if key_id else None
    if rec is None or rec.revoked or not gateway.auth.revoke_key(rec.user_id, key_id):
        raise CliError(f"no active API key wb_{key_id}_… (see: workbench keys list EMAIL)")
    print(f"revoked wb_{key_id}_…")
    return 0


def _signin_link(args: argparse.Namespace) -> int:
    from workbench.web.local_signin import mint_signin_link

    gateway = _gateway(args)
    settings = gateway.settings
    base = _loopback_base(settings, args.port) if args.port is not None else _running_url(settings)
    if base is None:
        base = _loopback_base(settings, DEFAULT_PORT)
        print(
            f"workbench: no running gateway found for {settings.data_dir}; this link is for port "
            f"{DEFAULT_PORT} (use --port PORT for another)",
            file=sys.stderr,
        )
    user = gateway.auth.sign_in(LOCAL_EMAIL)
    print(mint_signin_link(gateway, user, base))
    return 0


def _client_add(args: argparse.Namespace) -> int:
    from workbench.web.client_config import ClientConfigError, config_path, render, write_config

    settings = Settings.from_env()
    running = _running_url(settings)
    url = args.url or (f"{running}/mcp" if running else settings.mcp_url)
    key = args.key or os.environ.get("WORKBENCH_API_KEY") or None
    if args.print:
        print(render(args.client, url, key, name=args.name), end="")
        return 0
    try:
        path = (
            Path(args.config).expanduser() if args.config else config_path(args.client, project=args.project)
        )
        done = write_config(args.client, path, url, key, name=args.name)
    except (ClientConfigError, OSError) as exc:
        raise CliError(str(exc)) from exc
    how = "with the API key" if key else "signing in with OAuth (no key)"
    if not done.changed:
        print(f"{path} already has {args.name!r} for {url} ({how}); nothing changed.")
        return 0
    saved = f" (the previous file is {done.backup})" if done.backup else ""
    print(f"Added {args.name!r} ({url}, {how}) to {path}{saved}. Restart {args.client} to load it.")
    return 0


def _migrate(args: argparse.Namespace) -> int:
    """Bring the data (local, or a stack's tables) to this version's schema; idempotent."""
    schema = _gateway(args).schema
    before = schema.version()
    applied = schema.migrate()
    if applied:
        print(f"schema version {before} -> {applied[-1]} (applied {', '.join(map(str, applied))})")
    else:
        print(f"schema version {schema.version()}: up to date (this version writes {schema.latest})")
    return 0


def _external_clear(args: argparse.Namespace) -> int:
    """Admin clear of the external-server discovery cache. Caches live in each running instance,
    so the clear is stored: every instance (local process or Lambda) sees it on its next request."""
    gateway = _gateway(args)
    assert gateway.external is not None
    user_id = None
    if args.user:
        user = gateway.auth.user_by_email(args.user)
        if user is None:
            raise CliError(f"no user {args.user!r} on this gateway")
        user_id = user.id
    gateway.external.clear_cache(user_id)
    who = f"user {args.user}" if args.user else "every user"
    print(f"Cleared the external-server discovery cache for {who}.")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="workbench",
        description=(
            "Workbench: a tool gateway for AI agents. One MCP endpoint, nine meta-tools, per-user "
            "encrypted credentials. Data lives in WORKBENCH_DATA_DIR (default ~/.workbench)."
        ),
        epilog="Run `workbench COMMAND --help` for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"workbench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # Admin commands work on the local gateway's data, or on a deployed stack's.
    deployed = argparse.ArgumentParser(add_help=False)
    target = deployed.add_argument_group("deployed stack (AWS)")
    target.add_argument(
        "--stack",
        metavar="NAME",
        help="act on this CloudFormation stack's tables and KMS key (found from its outputs) instead of "
        "the local data directory; needs AWS credentials allowed to read them",
    )
    target.add_argument("--region", help="the stack's region (default: AWS_REGION / AWS_DEFAULT_REGION)")

    serve = sub.add_parser(
        "serve",
        help="run the local gateway (MCP, REST, portal, OAuth) on one port",
        description=(
            "Run the local gateway: /mcp, /rest, the curl proxy, the OAuth server and the portal on one "
            "port. The port is taken before anything is created. The first start creates "
            f"{LOCAL_EMAIL} and prints its API key once; every start prints the MCP URL, the portal URL "
            "and a one-time portal sign-in link that works only from this machine."
        ),
    )
    serve.add_argument(
        "--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST}, loopback only)"
    )
    serve.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port to listen on (default {DEFAULT_PORT})"
    )
    serve.set_defaults(func=_serve)

    keys = sub.add_parser(
        "keys",
        help="create, list and revoke Workbench API keys",
        description="Workbench API keys (wb_<id>_<secret>): only a hash is stored, the key is shown once.",
    )
    keys_sub = keys.add_subparsers(dest="keys_command", required=True, metavar="ACTION")
    create = keys_sub.add_parser(
        "create",
        help="print a new API key for EMAIL (creating the user)",
        description=(
            "Mint an API key for EMAIL, creating the user if needed, and print it once. With --stack, "
            "straight into a deployed stack's tables (AWS credentials only; no portal or SSO needed)."
        ),
        parents=[deployed],
    )
    create.add_argument("email", metavar="EMAIL", help="the Workbench user the key acts as")
    create.add_argument("--label", default="cli", help="a note to tell keys apart (default: cli)")
    access = create.add_mutually_exclusive_group()
    access.add_argument(
        "--read-only",
        action="store_true",
        help="the key runs only read-only tools (the curl proxy: GET, HEAD, OPTIONS only)",
    )
    access.add_argument(
        "--approve-writes",
        action="store_true",
        help="read-only tools run; every other call waits for EMAIL's approval in the portal",
    )
    create.add_argument(
        "--integrations",
        metavar="NAMES",
        help="only these integrations, comma-separated, as list_integrations names them (default: all)",
    )
    create.add_argument("--deny-tools", metavar="NAMES", help="tools the key may never call, comma-separated")
    create.set_defaults(func=_keys_create)
    listing = keys_sub.add_parser(
        "list",
        help="list a user's keys (id, status, created, label)",
        description="List a user's API keys: the public id, active or revoked, when created, the label.",
        parents=[deployed],
    )
    listing.add_argument(
        "email", metavar="EMAIL", nargs="?", default=LOCAL_EMAIL, help=f"whose keys (default {LOCAL_EMAIL})"
    )
    listing.set_defaults(func=_keys_list)
    revoke = keys_sub.add_parser(
        "revoke",
        help="revoke a key by its id",
        description="Revoke an API key at once. Give its id as `keys list` shows it (wb_<id>_…) or the key.",
        parents=[deployed],
    )
    revoke.add_argument("key", metavar="KEY", help="the key id (wb_<id>, <id>) or the whole key")
    revoke.set_defaults(func=_keys_revoke)

    link = sub.add_parser(
        "signin-link",
        help="print a fresh one-time portal sign-in link for the local user",
        description=(
            f"Print a one-time link that signs {LOCAL_EMAIL} in to the local portal. It works only "
            "from this machine, once, within 24 hours."
        ),
    )
    link.add_argument(
        "--port",
        type=int,
        help=f"the running gateway's port (default: the one `workbench serve` runs on, else {DEFAULT_PORT})",
    )
    link.set_defaults(func=_signin_link, host=DEFAULT_HOST)

    client = sub.add_parser(
        "client",
        help="set up an MCP client (Claude Code, Claude Desktop, Cursor, VS Code, Windsurf)",
        description="Write Workbench into an MCP client's own configuration file.",
    )
    client_sub = client.add_subparsers(dest="client_command", required=True, metavar="ACTION")
    add = client_sub.add_parser(
        "add",
        help="add (or update) Workbench in a client's configuration file",
        description=(
            "Add Workbench to CLIENT's MCP configuration, keeping everything else in the file. The file "
            "is backed up (FILE.workbench-backup) before it changes, and left alone when it already has "
            "this entry. Without --key the client signs in with OAuth through the portal."
        ),
    )
    from workbench.web.client_names import WRITABLE_CLIENTS as CLIENTS

    add.add_argument("client", metavar="CLIENT", choices=CLIENTS, help=f"one of: {', '.join(CLIENTS)}")
    add.add_argument(
        "--key", help="the API key the client sends (default: $WORKBENCH_API_KEY; none means OAuth)"
    )
    add.add_argument(
        "--url", help="the MCP endpoint (default: the running local gateway's, else WORKBENCH_PUBLIC_URL's)"
    )
    add.add_argument(
        "--name", default="workbench", help="the server's name in the client (default: workbench)"
    )
    add.add_argument(
        "--project",
        action="store_true",
        help="write the current folder's project file (.mcp.json, .cursor/mcp.json, .vscode/mcp.json)",
    )
    add.add_argument("--config", metavar="FILE", help="write this file instead of the client's usual one")
    add.add_argument("--print", action="store_true", help="print the configuration instead of writing it")
    add.set_defaults(func=_client_add)

    migrate = sub.add_parser(
        "migrate",
        parents=[deployed],
        help="bring the stored data to this version's schema (idempotent)",
        description=(
            "Apply the data migrations this version has and the data lacks (workbench/stores/migrations.py), "
            "recording the schema version in the data. Safe to run any number of times and from several "
            "places at once; a deployed stack also runs it on every deploy (its CodeDeploy hook)."
        ),
    )
    migrate.set_defaults(func=_migrate)

    external = sub.add_parser(
        "external",
        help="external tool servers and custom apps (admin)",
        description="External MCP servers and OpenAPI apps merged into users' catalogs.",
    )
    external_sub = external.add_subparsers(dest="external_command", required=True, metavar="ACTION")
    clear = external_sub.add_parser(
        "clear-cache",
        help="clear the discovery cache of every instance, for everyone or one user",
        description=(
            "Forget every cached tool list and failure back-off, so the next search discovers again. "
            "The clear is stored, so every running instance sees it."
        ),
        parents=[deployed],
    )
    clear.add_argument("--user", metavar="EMAIL", help="only this user's entries")
    clear.set_defaults(func=_external_clear)

    index = sub.add_parser(
        "catalog-index",
        help="write the catalog's prebuilt search index (the layer build runs this)",
        description="Build the search index of every installed integration into FILE (infra/layer/Makefile).",
    )
    index.add_argument("file", metavar="FILE", help="where to write it (workbench/engine/catalog_index.bin)")
    index.set_defaults(func=_catalog_index)

    vectors = sub.add_parser(
        "catalog-vectors",
        help="write the catalog's prebuilt vectors for multilingual search (needs the multilingual extra)",
        description="Embed every installed tool with the semantic component's model into FILE.",
    )
    vectors.add_argument(
        "file",
        metavar="FILE",
        nargs="?",
        help="where to write it (default: workbench/engine/catalog_vectors.bin)",
    )
    vectors.set_defaults(func=_catalog_vectors)
    return parser


def _catalog_index(args: argparse.Namespace) -> int:
    from workbench.composition import build_registry
    from workbench.engine import catalog_index

    out = Path(args.file)
    registry = build_registry()
    out.write_bytes(catalog_index.build(registry))
    print(f"{out}: search index of {len(registry.manifests())} integrations")
    return 0


def _catalog_vectors(args: argparse.Namespace) -> int:
    from workbench.composition import build_registry
    from workbench.engine import semantic
    from workbench.engine.search import catalog_docs

    docs = catalog_docs(build_registry())
    out = Path(args.file) if args.file else semantic.VECTORS_PATH
    out.write_bytes(semantic.CatalogVectors.build(docs).to_bytes())
    print(f"{out}: vectors of {len(docs)} tools ({semantic.MODEL})")
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        code: int = args.func(args)
    except CliError as exc:
        print(f"workbench: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl+C before a command got going (serve handles its own): no traceback
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
