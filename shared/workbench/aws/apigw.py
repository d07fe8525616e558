"""API Gateway HTTP API (payload 2.0) events in, ASGI apps run, Lambda proxy responses out.

What Mangum does for these functions, in the part we use: one event becomes one ASGI `http`
request, the app's response becomes `{statusCode, headers, cookies, body, isBase64Encoded}`.
Written here because it is that small, and because Mangum (it adapts six event formats) and its
imports are a measurable share of every cold start.

The request scope carries `raw_path` (the path as the client sent it, still percent-encoded),
`aws.event` and `aws.context` (the request deadline reads API Gateway's arrival time and the
function's remaining time from them).

The response follows Mangum's rules, so the client receives the bytes the app sent: a body whose
content type is textual (and not compressed) is sent as text when it is UTF-8, and base64-encoded
otherwise — a Latin-1 CSV or a windows-1252 page is never decoded with replacement characters
(API Gateway sends a text body on as UTF-8, so only UTF-8 may travel as text). Repeated headers are
joined with "," and every Set-Cookie is its own entry of `cookies`, as Mangum does; header values
are read as UTF-8 (what API Gateway sends on), Latin-1 when they are not (where Mangum fails).
tests/aws/test_apigw_differential.py runs a corpus of responses through this adapter and Mangum and
compares what the client receives; the few places they differ on purpose are listed there.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from typing import Any
from urllib.parse import unquote

__all__ = ["ApiGatewayV2"]

_TEXT_TYPES = (
    "text/",
    "application/json",
    "application/javascript",
    "application/xml",
    "application/problem+json",
    "application/vnd.api+json",
    "application/x-www-form-urlencoded",
    "image/svg+xml",
)

logger = logging.getLogger("workbench")


def _scope(event: dict[str, Any], context: Any) -> dict[str, Any]:
    ctx = event.get("requestContext") or {}
    http = ctx.get("http") or {}
    headers: dict[str, str] = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
    cookies = event.get("cookies")
    if cookies:  # payload 2.0 moves Cookie headers into their own list
        headers["cookie"] = "; ".join(cookies)
    raw_path = str(event.get("rawPath") or http.get("path") or "/")
    host = headers.get("host") or str(ctx.get("domainName") or "localhost")
    forwarded_port = headers.get("x-forwarded-port", "").split(",")[-1].strip()  # the last hop's
    port = int(forwarded_port) if forwarded_port.isascii() and forwarded_port.isdigit() else 443
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": str(http.get("method") or "GET").upper(),
        "scheme": headers.get("x-forwarded-proto", "https"),
        "path": unquote(raw_path),
        "raw_path": raw_path.encode("utf-8", "surrogatepass"),
        "root_path": "",
        "query_string": str(event.get("rawQueryString") or "").encode("utf-8", "surrogatepass"),
        "headers": [(_wire(k), _wire(v)) for k, v in headers.items()],
        "server": (host.split(":")[0], port),
        "client": (str(http.get("sourceIp") or "0.0.0.0"), 0),  # noqa: S104 - a placeholder, never bound
        "aws.event": event,
        "aws.context": context,
    }


def _wire(text: str) -> bytes:
    """A header as bytes, the way a server would have read it off the wire: API Gateway hands over
    text, and a client may send UTF-8 (an emoji in a User-Agent) that latin-1 cannot carry."""
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def _body(event: dict[str, Any]) -> bytes:
    body = event.get("body")
    if body is None:
        return b""
    if event.get("isBase64Encoded"):
        return base64.b64decode(body, validate=True)
    return body.encode() if isinstance(body, str) else bytes(body)


def _is_text(headers: dict[str, str]) -> bool:
    if headers.get("content-encoding", "identity").lower() not in ("", "identity"):
        return False
    kind = headers.get("content-type", "").lower()
    return kind.startswith(_TEXT_TYPES)


class ApiGatewayV2:
    """A Lambda handler body for one ASGI app: `ApiGatewayV2(app)(event, context)`."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        loop = asyncio.get_event_loop()
        return loop.run_until_complete(self.run(event, context))

    async def run(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        try:
            body = _body(event)
        except ValueError:  # a body marked base64 that is not: what a server answers to garbage
            return {
                "statusCode": 400,
                "headers": {"content-type": "text/plain; charset=utf-8"},
                "body": "Bad Request",
                "isBase64Encoded": False,
            }
        sent_body = False
        status = 500
        headers: list[tuple[bytes, bytes]] = []
        chunks: list[bytes] = []
        finished = False
        started = False
        disconnected = asyncio.Event()

        async def receive() -> dict[str, Any]:
            nonlocal sent_body
            if not sent_body:
                sent_body = True
                return {"type": "http.request", "body": body, "more_body": False}
            await disconnected.wait()  # after the response: the client has gone
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status, headers, finished, started
            if message["type"] == "http.response.start":
                started = True
                status = int(message["status"])
                headers = list(message.get("headers") or [])
            elif message["type"] == "http.response.body":
                chunks.append(bytes(message.get("body", b"")))
                if not message.get("more_body", False):
                    finished = True
                    disconnected.set()

        scope = _scope(event, context)
        try:
            await self.app(scope, receive, send)
        except Exception as exc:
            from workbench.errors import as_unavailable

            outage = as_unavailable(exc)
            if outage is not None and not started:  # nothing sent yet: the surface's outage answer
                from workbench.guard.outage import log_outage, outage_reply

                log_outage(scope["path"], outage)
                return _response(*outage_reply(scope["path"], outage))
            logger.exception("unhandled error in the ASGI app")
            if finished:  # the app answered (Starlette sends its 500 page, then re-raises)
                return _response(status, headers, b"".join(chunks))
            # Nothing (or half a response) was sent: answer like any server does for a crash.
            return {
                "statusCode": 500,
                "headers": {"content-type": "text/plain; charset=utf-8"},
                "body": "Internal Server Error",
                "isBase64Encoded": False,
            }
        finally:
            disconnected.set()
        return _response(status, headers, b"".join(chunks))


def _response(status: int, raw_headers: list[tuple[bytes, bytes]], body: bytes) -> dict[str, Any]:
    headers: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in raw_headers:
        key = _text(name).lower()
        text = _text(value)
        if key == "set-cookie":
            cookies.append(text)  # payload 2.0: one list entry per cookie, never joined
        elif key in headers:
            headers[key] = f"{headers[key]},{text}"
        else:
            headers[key] = text
    out: dict[str, Any] = {"statusCode": status, "headers": headers}
    if cookies:
        out["cookies"] = cookies
    if _is_text(headers):
        try:
            out["body"] = body.decode("utf-8")  # strict: API Gateway re-encodes text as UTF-8
            out["isBase64Encoded"] = False
            return out
        except UnicodeDecodeError:
            pass  # text in another charset: its bytes travel as they are
    out["body"] = base64.b64encode(body).decode()
    out["isBase64Encoded"] = True
    return out


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")
