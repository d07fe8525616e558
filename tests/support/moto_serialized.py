"""moto's server, with one request at a time inside moto (connections stay concurrent).

DynamoDB applies each write to an item atomically, and the engine's conditional writes rely on
it (refresh leases, refresh-token rotation, single-use codes). moto's threaded server does not:
two UpdateItems racing on one item can both read the old value. The tests race those writes on
purpose, so they run moto behind one lock, which gives them the guarantee the real service gives.

    python -m tests.support.moto_serialized -H 127.0.0.1 -p PORT
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import run_simple


class Serialized:
    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        with self.lock:
            return list(self.app(environ, start_response))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, required=True)
    args = parser.parse_args()
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(args.host, args.port, Serialized(app), threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
