"""An ASGI app served by uvicorn on a thread of the test process, on loopback."""

from __future__ import annotations

import threading
import time
from typing import Any

import uvicorn


def start_server_thread(
    app: Any, port: int, *, name: str, **config: Any
) -> tuple[uvicorn.Server, threading.Thread]:
    """Start serving `app` on 127.0.0.1:`port` (uvicorn `config` on top) and wait until it listens."""
    settings: dict[str, Any] = {"host": "127.0.0.1", "port": port, "log_level": "warning"}
    server = uvicorn.Server(uvicorn.Config(app, **{**settings, **config}))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError(f"{name} did not start")
        time.sleep(0.02)
    return server, thread
