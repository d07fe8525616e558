"""A small Chrome DevTools Protocol client over one browser-level websocket.

Uses flat sessions (`Target.attachToTarget {flatten: true}`): commands for a page carry a top-level
`sessionId`, and so do its events. Responses resolve the future of their `id`; events go to the
listeners registered with `listen` and to one-shot waiters created with `expect` (created *before*
the command that triggers the event, so the event cannot slip past).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Callable
from typing import Any

from workbench.errors import WorkbenchError

__all__ = ["CdpClosed", "CdpConnection", "CdpError", "EventListener"]

EventListener = Callable[[str, dict[str, Any], str | None], None]

# Screenshots of a full page can be several MB of base64.
_MAX_MESSAGE = 64 * 1024 * 1024


class CdpError(WorkbenchError):
    """The browser answered a command with an error."""

    def __init__(self, method: str, message: str, code: int | None = None) -> None:
        super().__init__(f"{method}: {message}")
        self.method = method
        self.cdp_message = message
        self.code = code


class CdpClosed(CdpError):
    """The websocket to the browser is gone."""

    def __init__(self, method: str = "connection") -> None:
        super().__init__(method, "the browser connection closed")


class CdpConnection:
    def __init__(self, ws: Any) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[str, asyncio.Future[dict[str, Any]]]] = {}
        self._listeners: list[EventListener] = []
        self._waiters: list[
            tuple[str, str | None, Callable[[dict[str, Any]], bool], asyncio.Future[Any]]
        ] = []
        self._closed = False
        self.loop = asyncio.get_running_loop()
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    async def connect(cls, ws_url: str, *, open_within: float = 10.0) -> CdpConnection:
        from websockets.asyncio.client import connect  # lazy: only when a browser is actually used

        ws = await connect(
            ws_url,
            max_size=_MAX_MESSAGE,
            open_timeout=open_within,
            ping_interval=None,  # chromium does not answer pings while busy rendering
            compression=None,
            proxy=None,
        )
        return cls(ws)

    @property
    def closed(self) -> bool:
        return self._closed

    async def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session_id: str | None = None,
        answer_within: float = 30.0,
    ) -> dict[str, Any]:
        if self._closed:
            raise CdpClosed(method)
        msg_id = next(self._ids)
        message: dict[str, Any] = {"id": msg_id, "method": method, "params": params or {}}
        if session_id is not None:
            message["sessionId"] = session_id
        future: asyncio.Future[dict[str, Any]] = self.loop.create_future()
        self._pending[msg_id] = (method, future)
        try:
            await self._ws.send(json.dumps(message))
            return await asyncio.wait_for(future, answer_within)
        except TimeoutError:
            raise CdpError(method, f"no answer within {answer_within:g}s") from None
        except Exception as exc:
            if isinstance(exc, CdpError):
                raise
            raise CdpClosed(method) from exc
        finally:
            self._pending.pop(msg_id, None)

    def listen(self, listener: EventListener) -> Callable[[], None]:
        """Call `listener(method, params, session_id)` for every event; returns an unsubscribe."""
        self._listeners.append(listener)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return remove

    def expect(
        self,
        method: str,
        session_id: str | None = None,
        predicate: Callable[[dict[str, Any]], bool] = lambda _: True,
    ) -> asyncio.Future[dict[str, Any]]:
        """A future resolved by the next `method` event on `session_id` that satisfies `predicate`."""
        future: asyncio.Future[dict[str, Any]] = self.loop.create_future()
        self._waiters.append((method, session_id, predicate, future))
        return future

    async def close(self) -> None:
        self._closed = True
        self._reader.cancel()
        with contextlib.suppress(Exception):
            await self._ws.close()
        self._fail_all()

    # -- internals -------------------------------------------------------------------------------

    async def _read(self) -> None:
        try:
            async for raw in self._ws:
                try:
                    message = json.loads(raw)
                except ValueError:
                    continue
                if "id" in message:
                    self._resolve(message)
                elif "method" in message:
                    self._dispatch(message["method"], message.get("params") or {}, message.get("sessionId"))
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: S110 - any transport failure means the connection is gone
            pass
        finally:
            self._closed = True
            self._fail_all()

    def _resolve(self, message: dict[str, Any]) -> None:
        entry = self._pending.get(message["id"])
        if entry is None:
            return
        method, future = entry
        if future.done():
            return
        if "error" in message:
            err = message["error"] or {}
            future.set_exception(CdpError(method, str(err.get("message", "error")), err.get("code")))
        else:
            future.set_result(message.get("result") or {})

    def _dispatch(self, method: str, params: dict[str, Any], session_id: str | None) -> None:
        for listener in list(self._listeners):
            with contextlib.suppress(Exception):
                listener(method, params, session_id)
        keep = []
        for waiter in self._waiters:
            name, sid, predicate, future = waiter
            if future.done():
                continue
            if name == method and (sid is None or sid == session_id):
                try:
                    matched = predicate(params)
                except Exception:
                    matched = False
                if matched:
                    future.set_result(params)
                    continue
            keep.append(waiter)
        self._waiters = keep

    def _fail_all(self) -> None:
        for method, future in self._pending.values():
            if not future.done():
                future.set_exception(CdpClosed(method))
        for name, _, _, future in self._waiters:
            if not future.done():
                future.set_exception(CdpClosed(name))
        self._waiters = []
