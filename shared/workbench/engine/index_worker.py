"""Custom catalogs' search indexes built in a separate process, within a time and a memory limit.

A build on a pool thread keeps the event loop free only in name: it holds the GIL for most of its
run, so every other request of the instance waits behind it (0.6-5 s while 20,000 tools index), and
everything it allocates stays in the serving process. Here a catalog is indexed by a child process
(`python -m workbench.engine.index_worker`), started on the first build and kept for the next:

- the request goes down its stdin and the index comes back on its stdout (length-prefixed marshal
  frames; a subprocess and two pipes, which AWS Lambda allows, unlike multiprocessing's queues that
  need /dev/shm);
- the child's address space is capped (RLIMIT_AS, `memory_mb` above what it holds at start): a
  catalog that needs more fails with SearchBudgetExceeded, never the serving process;
- its CPU time is checked by the build itself (BuildBudget), and the parent gives up on an answer
  after `wall_seconds(budget)`, killing the child: a stuck or slow child fails that catalog only;
- a child that grew past `keep_mb` after a build exits, handing its memory back.

The parent waits on a pool thread (which releases the GIL while it waits), so the event loop goes
on; it then rebuilds the index object from the child's arrays with a few C-level calls. Where a
child cannot be started (no interpreter to run, fork refused), the build runs on the calling thread
as before, said once in the log.
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
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from workbench.engine.search import BuildBudget, SearchBudgetExceeded, SearchDoc, SearchIndex
from workbench.errors import WorkbenchError

__all__ = ["IndexWorker", "main"]

_HEADER = struct.Struct(">Q")
_MEMORY_MB = 256  # the child's address space may grow this much past what it holds at start
_KEEP_MB = 96  # a child whose resident memory passed this after a build exits (it is restarted)
_FRAME_MAX = 1 << 31
_SLICE = 8192  # list items per answer frame


def wall_seconds(budget: BuildBudget) -> float:
    """How long the parent waits for one build: the CPU budget, room for a busy machine, start-up."""
    return 2.0 + 3.0 * budget.cpu_seconds


class IndexWorker:
    """One child process building indexes, one build at a time (callers on other threads wait)."""

    def __init__(self, memory_mb: int = _MEMORY_MB, keep_mb: int = _KEEP_MB) -> None:
        self.memory_mb = memory_mb
        self.keep_mb = keep_mb
        self._lock = threading.Lock()
        self._child: subprocess.Popen[bytes] | None = None
        self._unavailable = False
        self.builds = 0  # builds answered by a child (tests, bench)

    def build(self, docs: Sequence[SearchDoc], budget: BuildBudget, label: str = "catalog") -> SearchIndex:
        """The index of `docs` (blocking: call it off the event loop); SearchBudgetExceeded when
        the catalog is over its budget in tools, CPU time, wall time or memory."""
        docs = list(docs)
        if len(docs) > budget.tools:  # refused without starting anything
            raise SearchBudgetExceeded(
                f"{label}: more than {budget.tools} tools to index; its tools are left out of search"
            )
        with self._lock:
            child = self._start()
            if child is None:
                return SearchIndex(docs, budget, label)
            request = marshal.dumps((_columns(docs), budget.tools, budget.cpu_seconds, label, self.keep_mb))
            try:
                answer = self._ask(child, request, wall_seconds(budget))
            except _ChildFailed as failed:
                self._stop()
                raise SearchBudgetExceeded(f"{label}: {failed}; its tools are left out of search") from None
            self.builds += 1
            status, payload, exiting = answer
            if exiting:
                self._reap()
        if status == "refused":
            raise SearchBudgetExceeded(payload)
        if status != "ok":
            raise SearchBudgetExceeded(
                f"{label}: indexing failed ({payload}); its tools are left out of search"
            )
        return SearchIndex.from_state(docs, payload)

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
                [sys.executable, "-m", "workbench.engine.index_worker", str(self.memory_mb)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
                close_fds=True,
            )
        except OSError as exc:
            from workbench.observability import log_event

            self._unavailable = True
            log_event("search_index_worker_unavailable", error=str(exc))
            return None
        # The child stops when its stdin closes: when this worker goes, or the process does.
        weakref.finalize(self, _finish, self._child)
        return self._child

    def _ask(self, child: subprocess.Popen[bytes], request: bytes, seconds: float) -> tuple[str, Any, bool]:
        assert child.stdin is not None and child.stdout is not None
        try:
            child.stdin.write(_HEADER.pack(len(request)))
            child.stdin.write(request)
            child.stdin.flush()
        except OSError:
            raise _ChildFailed("the indexing process stopped (over its memory budget)") from None
        deadline = time.monotonic() + seconds
        out = child.stdout.fileno()
        header = _read(out, _HEADER.size, deadline)
        (size,) = _HEADER.unpack(header)
        if size > _FRAME_MAX:
            raise _ChildFailed("the indexing process answered nonsense")
        status, payload, exiting = marshal.loads(_read(out, size, deadline))  # noqa: S302 - our child
        if status == "ok":  # the state follows, a frame per value or slice of a long list
            state: list[Any] = []
            for _ in range(payload):
                (size,) = _HEADER.unpack(_read(out, _HEADER.size, deadline))
                if size > _FRAME_MAX:
                    raise _ChildFailed("the indexing process answered nonsense")
                slot, value, part = marshal.loads(_read(out, size, deadline))  # noqa: S302
                if part and slot < len(state):
                    state[slot].extend(value)
                else:
                    state.append(value)
            payload = tuple(state)
        return status, payload, exiting

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


def _columns(docs: Sequence[SearchDoc]) -> tuple[str, ...]:
    """The documents as five strings, one per field, NUL between documents (a NUL inside a text
    becomes a space: no word has one). Five strings cost the parent a few C-level joins where a
    list of tuples would cost it a Python object per field, and the garbage collector's time."""
    return tuple(
        "\0".join(text.replace("\0", " ") if "\0" in text else text for text in column)
        for column in (
            [d.name for d in docs],
            [d.description for d in docs],
            [d.integration for d in docs],
            [d.keywords for d in docs],
            [d.arguments for d in docs],
        )
    )


def _documents(columns: tuple[str, ...]) -> list[SearchDoc]:
    return list(map(SearchDoc, *(column.split("\0") for column in columns)))


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


def _read(fd: int, size: int, deadline: float) -> bytes:
    """Exactly `size` bytes from a pipe by `deadline` (the thread waits without the GIL)."""
    parts: list[bytes] = []
    left = size
    while left:
        wait = deadline - time.monotonic()
        if wait <= 0 or not select.select([fd], [], [], wait)[0]:
            raise _ChildFailed("indexing took longer than its time budget")
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise _ChildFailed("the indexing process stopped (over its memory budget)")
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


def _frame(out: IO[bytes], value: Any) -> None:
    data = marshal.dumps(value)
    out.write(_HEADER.pack(len(data)))
    out.write(data)


def _answer(out: IO[bytes], status: str, payload: Any, exiting: bool) -> None:
    """One frame (status, payload, exiting); for "ok" the payload is the state's frame count, and
    the state follows: each value, its long lists in slices (each loaded by the parent in a few
    milliseconds, so the parent's other threads run between them)."""
    if status != "ok":
        _frame(out, (status, payload, exiting))
        out.flush()
        return
    frames: list[tuple[int, Any, bool]] = []
    for slot, value in enumerate(payload):
        if isinstance(value, list) and len(value) > _SLICE:
            frames += [(slot, value[i : i + _SLICE], i > 0) for i in range(0, len(value), _SLICE)]
        else:
            frames.append((slot, value, False))
    _frame(out, (status, len(frames), exiting))
    for frame in frames:
        _frame(out, frame)
    out.flush()


def main(argv: list[str] | None = None) -> None:
    """The child: read requests from stdin until it closes, answer each on stdout."""
    args = sys.argv[1:] if argv is None else argv
    _cap_memory(int(args[0]) if args else _MEMORY_MB)
    gc.disable()  # a build makes millions of objects and no cycles; the process is its own
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write into the answer pipe
    while True:
        header = stdin.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return  # the parent is gone or done
        data = stdin.read(_HEADER.unpack(header)[0])
        docs, tools, cpu_seconds, label, keep_mb = marshal.loads(data)  # noqa: S302 - from our parent
        del data
        try:
            index = SearchIndex(_documents(docs), BuildBudget(tools=tools, cpu_seconds=cpu_seconds), label)
            state = index.state()
            del index, docs
            exiting = _resident_mb() > keep_mb
            _answer(stdout, "ok", state, exiting)
        except SearchBudgetExceeded as exc:
            exiting = _resident_mb() > keep_mb
            _answer(stdout, "refused", str(exc), exiting)
        except MemoryError:
            docs = index = state = None  # type: ignore[assignment]
            gc.collect()
            _answer(
                stdout,
                "refused",
                f"{label}: indexing needed more memory than its budget; its tools are left out of search",
                True,
            )
            return
        if exiting:
            return
        gc.collect()


if __name__ == "__main__":
    main()
