"""OpenAPI documents read in a child process (guard/child_worker.py), within a time and a memory limit.

Registering an OpenAPI app parses (JSON or YAML) and compiles a document the caller wrote: seconds
of CPU for a large or hostile one. On a pool thread the instance's other requests waited 60-150 ms at
a time (bench/hostile_inputs.py, 4 MB YAML, load 3 on 2 cores); in the child they do not, a document
that needs more memory than `memory_mb` or more time than the parse's limit fails that registration
only, and the answer (the operations, their schemas already bounded) costs the parent a few
milliseconds. Where no child can run, the document is read on the calling thread, as before.
"""

from __future__ import annotations

from typing import Any

from workbench.errors import InvalidInput
from workbench.external.documents import read_document
from workbench.external.openapi import Compiled, Operation
from workbench.guard.child_worker import ChildFailed, ChildWorker, Refused, serve

__all__ = ["DocumentWorker", "main"]

_MEMORY_MB = 768  # the child's address space may grow this much past what it holds at start
_KEEP_MB = 160  # a child whose resident memory passed this after a document exits (and is restarted)


class DocumentWorker(ChildWorker):
    """The child that reads OpenAPI documents, one at a time."""

    module = "workbench.external.document_worker"

    def __init__(
        self, *, document_seconds: float, memory_mb: int = _MEMORY_MB, keep_mb: int = _KEEP_MB
    ) -> None:
        super().__init__(memory_mb=memory_mb, keep_mb=keep_mb, on_unavailable=_unavailable)
        self.document_seconds = document_seconds

    @property
    def wall_seconds(self) -> float:
        """How long the parent waits for one document: parse and compile limits, start-up, a busy machine."""
        return 3.0 + 3.0 * self.document_seconds

    def read(self, document: Any, only: set[str] | None) -> tuple[Compiled, dict[str, Any]]:
        """The compiled document and its security schemes (blocking: call it off the event loop);
        InvalidInput when the document is not usable or over a limit."""
        try:
            answer = self.ask(
                lambda: (document, sorted(only) if only is not None else None), self.wall_seconds
            )
        except ChildFailed as failed:
            raise InvalidInput(f"document: {self._failure(failed.why)}") from None
        if answer is None:
            return _result(*read_document(document, only))
        status, payload = answer
        if status == "refused":
            raise InvalidInput(str(payload))
        if status == "memory":
            raise InvalidInput("document: it needs more memory than a registration may use")
        if status != "ok":
            raise InvalidInput(f"document could not be read ({payload})")
        title, version, base_url, ops, dropped, schemes = payload
        operations = [Operation.from_json(op) for op in ops]
        compiled = Compiled(title, version, base_url, operations, [tuple(d) for d in dropped])
        return compiled, schemes

    def _failure(self, why: str) -> str:
        if why == "slow":
            return f"reading the document took longer than {self.document_seconds:g} s"
        if why == "stopped":
            return "the document needs more memory than a registration may use"
        return "the document reader answered nonsense"


def _unavailable(error: str) -> None:
    from workbench.observability import log_event

    log_event("openapi_document_worker_unavailable", error=error)


def _result(parsed: Any, compiled: Compiled) -> tuple[Compiled, dict[str, Any]]:
    from workbench.external.openapi import security_schemes

    return compiled, security_schemes(parsed)


# -- in the child ----------------------------------------------------------------------------------


def _read(request: Any) -> tuple[Any, ...]:
    document, only = request
    try:
        compiled, schemes = _result(*read_document(document, set(only) if only is not None else None))
    except InvalidInput as exc:
        raise Refused(str(exc)) from None
    return (
        compiled.title,
        compiled.version,
        compiled.base_url,
        [op.as_json() for op in compiled.operations],
        [list(d) for d in compiled.dropped],
        schemes,
    )


def main(argv: list[str] | None = None) -> None:
    """The child: read documents from stdin until it closes, answer each on stdout."""
    serve(_read, argv=argv)


if __name__ == "__main__":
    main()
