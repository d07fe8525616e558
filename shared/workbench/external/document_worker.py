"""OpenAPI documents read in a separate process, within a time and a memory limit.

Registering an OpenAPI app parses (JSON or YAML) and compiles a document the caller wrote: seconds
of CPU for a large or hostile one. On a pool thread that work keeps the event loop free only in name:
the thread holds the GIL between switches, the operating system may pause it while it holds it on a
busy machine, and the parse's million fresh objects bring full garbage collections that hold the
GIL throughout; the instance's other requests waited 60-150 ms at a time (bench/hostile_inputs.py,
4 MB YAML, load 3 on 2 cores). Here a child process (`python -m workbench.external.document_worker`),
started on first use and kept for the next, does the work:

- the document goes down its stdin, the compiled operations come back on its stdout (length-prefixed
  marshal frames over two pipes, which AWS Lambda allows);
- the child's address space is capped (RLIMIT_AS, `memory_mb` above what it holds at start): a
  document that needs more is refused, never the serving process;
- the parent waits on a pool thread without the GIL, at most `wall_seconds` (the parse's own time
  limit plus start-up), then kills the child: a stuck or slow document fails that registration only;
- a child that grew past `keep_mb` after a document exits, handing its memory back.

The answer is small next to the document (the operations, their schemas already bounded), so the
parent's share is a few milliseconds. Where a child cannot be started (no interpreter, fork refused),
the work runs on the calling thread as before, said once in the log.
"""

from __future__ import annotations

import contextlib
import gc
import marshal
import os
import select
import struct
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import IO, Any

from workbench.errors import InvalidInput, WorkbenchError
from workbench.external.documents import read_document
from workbench.external.openapi import Compiled, Operation

__all__ = ["DocumentWorker", "main"]

_HEADER = struct.Struct(">Q")
_MEMORY_MB = 768  # the child's address space may grow this much past what it holds at start
_KEEP_MB = 160  # a child whose resident memory passed this after a document exits (and is restarted)
_FRAME_MAX = 1 << 30


class DocumentWorker:
    """One child process reading documents, one at a time (callers on other threads wait)."""

    def __init__(
        self, *, document_seconds: float, memory_mb: int = _MEMORY_MB, keep_mb: int = _KEEP_MB
    ) -> None:
        self.document_seconds = document_seconds
        self.memory_mb = memory_mb
        self.keep_mb = keep_mb
        self._lock = threading.Lock()
        self._child: subprocess.Popen[bytes] | None = None
        self._unavailable = False
        self.answered = 0  # documents read by a child (tests, bench)

    @property
    def wall_seconds(self) -> float:
        """How long the parent waits for one document: parse and compile limits, start-up, a busy machine."""
        return 3.0 + 3.0 * self.document_seconds

    def read(self, document: Any, only: set[str] | None) -> tuple[Compiled, dict[str, Any]]:
        """The compiled document and its security schemes (blocking: call it off the event loop);
        InvalidInput when the document is not usable or over a limit."""
        with self._lock:
            child = self._start()
            if child is None:
                return _result(*read_document(document, only))
            request = marshal.dumps((document, sorted(only) if only is not None else None, self.keep_mb))
            try:
                status, payload, exiting = self._ask(child, request)
            except _ChildFailed as failed:
                self._stop()
                raise InvalidInput(f"document: {failed}") from None
            self.answered += 1
            if exiting:
                self._reap()
        if status != "ok":
            raise InvalidInput(str(payload))
        title, version, base_url, ops, dropped, schemes = payload
        operations = [Operation.from_json(op) for op in ops]
        compiled = Compiled(title, version, base_url, operations, [tuple(d) for d in dropped])
        return compiled, schemes

    def close(self) -> None:
        with self._lock:
            self._stop()

    # -- the child ------------------------------------------------------------------------------------

    def _start(self) -> subprocess.Popen[bytes] | None:
        if self._child is not None and self._child.poll() is None:
            return self._child
        self._child = None
        if self._unavailable:
            return None
        root = str(Path(__file__).resolve().parents[2])  # the directory holding the workbench package
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        try:
            self._child = subprocess.Popen(  # noqa: S603 - our own interpreter and module
                [sys.executable, "-m", "workbench.external.document_worker", str(self.memory_mb)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
                close_fds=True,
            )
        except OSError as exc:
            from workbench.observability import log_event

            self._unavailable = True
            log_event("openapi_document_worker_unavailable", error=str(exc))
            return None
        # The child stops when its stdin closes: when this worker goes, or the process does.
        weakref.finalize(self, _finish, self._child)
        return self._child

    def _ask(self, child: subprocess.Popen[bytes], request: bytes) -> tuple[str, Any, bool]:
        assert child.stdin is not None and child.stdout is not None
        try:
            child.stdin.write(_HEADER.pack(len(request)))
            child.stdin.write(request)
            child.stdin.flush()
        except OSError:
            raise _ChildFailed("the document reader stopped (over its memory limit)") from None
        deadline = time.monotonic() + self.wall_seconds
        out = child.stdout.fileno()
        (size,) = _HEADER.unpack(_read(out, _HEADER.size, deadline, self.document_seconds))
        if size > _FRAME_MAX:
            raise _ChildFailed("the document reader answered nonsense")
        answer = marshal.loads(_read(out, size, deadline, self.document_seconds))  # noqa: S302 - our child
        status, payload, exiting = answer
        return str(status), payload, bool(exiting)

    def _reap(self) -> None:
        child, self._child = self._child, None
        if child is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=5)
            _close(child)

    def _stop(self) -> None:
        child, self._child = self._child, None
        if child is not None:
            if child.poll() is None:
                child.kill()  # our own child, by its handle
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=5)
            _close(child)


class _ChildFailed(WorkbenchError):
    pass


def _result(parsed: Any, compiled: Compiled) -> tuple[Compiled, dict[str, Any]]:
    from workbench.external.openapi import security_schemes

    return compiled, security_schemes(parsed)


def _finish(child: subprocess.Popen[bytes]) -> None:
    _close(child)
    try:
        child.wait(timeout=2)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def _close(child: subprocess.Popen[bytes]) -> None:
    for stream in (child.stdin, child.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


def _read(fd: int, size: int, deadline: float, limit: float) -> bytes:
    """Exactly `size` bytes from a pipe by `deadline` (the thread waits without the GIL)."""
    parts: list[bytes] = []
    left = size
    while left:
        wait = deadline - time.monotonic()
        if wait <= 0 or not select.select([fd], [], [], wait)[0]:
            raise _ChildFailed(f"reading the document took longer than {limit:g} s")
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise _ChildFailed("the document needs more memory than a registration may use")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


# -- in the child ----------------------------------------------------------------------------------


def _resident_mb() -> float:
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):  # not Linux: the peak instead
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def _cap_memory(memory_mb: int) -> None:
    try:
        import resource

        with open("/proc/self/statm", "rb") as f:
            size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        limit = size + memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, OSError, ValueError):  # pragma: no cover - not Linux: no cap
        pass


def _answer(out: IO[bytes], status: str, payload: Any, exiting: bool) -> None:
    data = marshal.dumps((status, payload, exiting))
    out.write(_HEADER.pack(len(data)))
    out.write(data)
    out.flush()


def main(argv: list[str] | None = None) -> None:
    """The child: read requests from stdin until it closes, answer each on stdout."""
    args = sys.argv[1:] if argv is None else argv
    _cap_memory(int(args[0]) if args else _MEMORY_MB)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write into the answer pipe
    while True:
        header = stdin.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return  # the parent is gone or done
        data = stdin.read(_HEADER.unpack(header)[0])
        document, only, keep_mb = marshal.loads(data)  # noqa: S302 - from our parent
        del data
        try:
            compiled, schemes = _result(*read_document(document, set(only) if only is not None else None))
            payload = (
                compiled.title,
                compiled.version,
                compiled.base_url,
                [op.as_json() for op in compiled.operations],
                [list(d) for d in compiled.dropped],
                schemes,
            )
            del document, compiled
            exiting = _resident_mb() > keep_mb
            _answer(stdout, "ok", payload, exiting)
        except InvalidInput as exc:
            exiting = _resident_mb() > keep_mb
            _answer(stdout, "refused", str(exc), exiting)
        except MemoryError:
            document = compiled = payload = None  # type: ignore[assignment]
            gc.collect()
            _answer(stdout, "refused", "document: it needs more memory than a registration may use", True)
            return
        except Exception as exc:  # a bug reading one document must not look like the child dying
            _answer(stdout, "refused", f"document could not be read ({type(exc).__name__})", True)
            return
        if exiting:
            return
        gc.collect()


if __name__ == "__main__":
    main()
