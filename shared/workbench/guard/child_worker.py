"""CPU-heavy work on untrusted input in a child process, within a time and a memory limit.

Reading a caller's OpenAPI document or indexing a custom catalog can take seconds of CPU and
hundreds of MB. On a pool thread that work keeps the event loop free only in name: the thread holds
the GIL between switches (the operating system may pause it while it holds it on a busy machine),
its millions of fresh objects bring full garbage collections that hold the GIL throughout, and what
it allocates stays in the serving process. A `ChildWorker` runs it in a child process instead
(`python -m <module>`, whose `main` calls `serve`), started on first use and kept for the next:

- a request goes down the child's stdin and the answer comes back on its stdout as length-prefixed
  marshal frames (a subprocess and two pipes, which AWS Lambda allows, unlike multiprocessing's
  queues that need /dev/shm); long lists come back in slices, each loaded by the parent in a few
  milliseconds, so the parent's other threads run between them;
- the child's address space is capped (RLIMIT_AS, `memory_mb` above what it holds at start): work
  that needs more is refused, never the serving process;
- the parent waits on a pool thread without the GIL, at most the caller's `seconds` (counted from
  the child's first frame, "ready", so a slow start-up on a busy machine is not the request's
  fault), then kills the child: stuck or slow work fails that one request only (ChildFailed);
- a child that grew past `keep_mb` after a request exits, handing its memory back.

Where a child cannot be started (no interpreter, fork refused), `ask` answers None once said through
`on_unavailable`, and the caller does the work itself.
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
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, ClassVar

from workbench.errors import WorkbenchError

__all__ = ["ChildFailed", "ChildWorker", "Refused", "serve"]

_HEADER = struct.Struct(">Q")
_FRAME_MAX = 1 << 31
_SLICE = 8192  # list items per answer frame
_START_SECONDS = 30.0  # a child's start-up (an interpreter and its imports), however busy the machine
_READY = _HEADER.pack(0)  # the child's first frame: ready for requests


class ChildFailed(WorkbenchError):
    """The child gave no answer: `why` is "slow" (past the time given), "stopped" (it died: over its
    memory cap, or killed) or "garbled" (a frame that cannot be ours)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


class Refused(WorkbenchError):
    """Raised by a child's handler: the input is refused with this message (the child goes on)."""


class ChildWorker:
    """One child process running `module`'s handler, one request at a time (callers on other threads
    wait their turn). Subclasses name the module and turn answers into their own results."""

    module: ClassVar[str]

    def __init__(self, *, memory_mb: int, keep_mb: int, on_unavailable: Callable[[str], None]) -> None:
        self.memory_mb = memory_mb
        self.keep_mb = keep_mb
        self._on_unavailable = on_unavailable
        self._lock = threading.Lock()
        self._child: subprocess.Popen[bytes] | None = None
        self._unavailable = False
        self.answered = 0  # requests a child answered (tests, bench)

    def ask(self, request: Callable[[], Any], seconds: float) -> tuple[str, Any] | None:
        """The child's answer to the request `request()` makes (blocking: call it off the event
        loop): ("ok", payload), ("refused", message), ("memory", None) when it ran out of memory, or
        ("failed", the error's type) when the handler broke. None when no child can run here.
        ChildFailed when it gave no answer within `seconds` (it is stopped; the next request starts
        a new one). The request is made here and let go of once sent: a catalog's text and its
        marshalled copy are not held while the answer, as large, is read."""
        with self._lock:
            child = self._start()
            if child is None:
                return None
            try:
                self._send(child, marshal.dumps((request(), self.keep_mb)))
                status, payload, exiting = self._receive(child, seconds)
            except ChildFailed:
                self._stop()
                raise
            self.answered += 1
            if exiting:
                self._reap()
        return status, payload

    def close(self) -> None:
        with self._lock:
            self._stop()

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
                [sys.executable, "-m", self.module, str(self.memory_mb)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
                close_fds=True,
            )
        except OSError as exc:
            self._unavailable = True
            self._on_unavailable(str(exc))
            return None
        # The child stops when its stdin closes: when this worker goes, or the process does.
        weakref.finalize(self, _finish, self._child)
        # It says when it is ready (its imports done): a request's time starts after that, so a
        # slow start-up on a busy machine is not the request's fault.
        assert self._child.stdout is not None
        try:
            ready = _read(self._child.stdout.fileno(), _HEADER.size, time.monotonic() + _START_SECONDS)
        except ChildFailed:
            self._stop()
            raise
        if ready != _READY:
            self._stop()
            raise ChildFailed("garbled")
        return self._child

    @staticmethod
    def _send(child: subprocess.Popen[bytes], request: bytes) -> None:
        assert child.stdin is not None
        try:
            child.stdin.write(_HEADER.pack(len(request)))
            child.stdin.write(request)
            child.stdin.flush()
        except OSError:
            raise ChildFailed("stopped") from None

    @staticmethod
    def _receive(child: subprocess.Popen[bytes], seconds: float) -> tuple[str, Any, bool]:
        assert child.stdout is not None
        deadline = time.monotonic() + seconds
        out = child.stdout.fileno()
        status, payload, exiting = _frame_in(out, deadline)
        if status == "ok":  # the payload follows, a frame per value or slice of a long list
            values: list[Any] = []
            for _ in range(payload):
                slot, value, part = _frame_in(out, deadline)
                if part and slot < len(values):
                    values[slot].extend(value)
                else:
                    values.append(value)
            payload = tuple(values)
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


def _frame_in(fd: int, deadline: float) -> Any:
    (size,) = _HEADER.unpack(_read(fd, _HEADER.size, deadline))
    if size > _FRAME_MAX:
        raise ChildFailed("garbled")
    try:
        return marshal.loads(_read(fd, size, deadline))  # noqa: S302 - our own child
    except (EOFError, ValueError, TypeError):
        raise ChildFailed("garbled") from None


def _read(fd: int, size: int, deadline: float) -> bytes:
    """Exactly `size` bytes from a pipe by `deadline` (the thread waits without the GIL)."""
    parts: list[bytes] = []
    left = size
    while left:
        wait = deadline - time.monotonic()
        if wait <= 0 or not select.select([fd], [], [], wait)[0]:
            raise ChildFailed("slow")
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise ChildFailed("stopped")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


# -- in the child ----------------------------------------------------------------------------------


def serve(
    handle: Callable[[Any], tuple[Any, ...]], *, argv: list[str] | None = None, collect: bool = True
) -> None:
    """The child's loop: read requests from stdin until it closes, answer each on stdout with
    `handle(request)` (a tuple), or "refused" with the message of a `Refused` it raised. Running out
    of memory answers "memory" and ends the child; so does any other error ("failed", its type).
    `collect=False` turns the garbage collector off (work that makes millions of objects and no
    cycles: the process is its own, and exits when it has grown)."""
    args = sys.argv[1:] if argv is None else argv
    if args:
        _cap_memory(int(args[0]))
    if not collect:
        gc.disable()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write into the answer pipe
    stdout.write(_READY)
    stdout.flush()
    while True:
        header = stdin.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return  # the parent is gone or done
        data = stdin.read(_HEADER.unpack(header)[0])
        request, keep_mb = marshal.loads(data)  # noqa: S302 - from our parent
        del data
        try:
            payload = handle(request)
            del request
            exiting = _resident_mb() > keep_mb
            _answer(stdout, "ok", payload, exiting)
        except Refused as exc:
            exiting = _resident_mb() > keep_mb
            _answer(stdout, "refused", str(exc), exiting)
        except MemoryError:
            request = payload = None
            gc.collect()
            _answer(stdout, "memory", None, True)
            return
        except Exception as exc:  # a bug on one input must not look like the child dying
            _answer(stdout, "failed", type(exc).__name__, True)
            return
        if exiting:
            return
        gc.collect()


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


def _frame_out(out: IO[bytes], value: Any) -> None:
    data = marshal.dumps(value)
    out.write(_HEADER.pack(len(data)))
    out.write(data)


def _answer(out: IO[bytes], status: str, payload: Any, exiting: bool) -> None:
    """One frame (status, payload, exiting); for "ok" the payload is its frame count, and its values
    follow, long lists in slices."""
    if status != "ok":
        _frame_out(out, (status, payload, exiting))
        out.flush()
        return
    frames: list[tuple[int, Any, bool]] = []
    for slot, value in enumerate(payload):
        if isinstance(value, list) and len(value) > _SLICE:
            frames += [(slot, value[i : i + _SLICE], i > 0) for i in range(0, len(value), _SLICE)]
        else:
            frames.append((slot, value, False))
    _frame_out(out, (status, len(frames), exiting))
    for frame in frames:
        _frame_out(out, frame)
    out.flush()
