"""`workbench` command line: run the local gateway, mint API keys."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace

from workbench.settings import Settings

__all__ = ["main"]


def _settings(args: argparse.Namespace) -> Settings:
    settings = Settings.from_env()
    serving = getattr(args, "port", None) is not None
    if serving and "WORKBENCH_PUBLIC_URL" not in os.environ:
        settings = replace(settings, public_url=f"http://{args.host}:{args.port}")
    return settings


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from workbench.composition import build_gateway
    from workbench.local import create_local_app, first_run
    from workbench.observability import configure_logging

    configure_logging()
    settings = _settings(args)
    gateway = build_gateway(settings)
    key = first_run(gateway)
    print(f"Workbench is running. MCP endpoint: {settings.mcp_url}", flush=True)
    if key:
        print(f"API key for you@localhost (shown once, keep it): {key}", flush=True)
    else:
        print("Mint an API key with: workbench keys create EMAIL", flush=True)
    uvicorn.run(create_local_app(gateway), host=args.host, port=args.port, log_level="warning")
    return 0


def _keys_create(args: argparse.Namespace) -> int:
    from workbench.composition import build_gateway

    gateway = build_gateway(_settings(args))
    user = gateway.stores.users.get_or_create(args.email)
    print(gateway.api_keys.mint(user, label="cli"))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="workbench", description="Workbench tool gateway")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the local gateway (SQLite + local key)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8787)
    serve.set_defaults(func=_serve)
    keys = sub.add_parser("keys", help="manage API keys")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    create = keys_sub.add_parser("create", help="print a new API key for EMAIL, creating the user")
    create.add_argument("email")
    create.set_defaults(func=_keys_create)
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
