"""YAML from untrusted callers, with limits a hostile document cannot get around.

PyYAML's `safe_load` refuses arbitrary objects, but not size: anchors and aliases let a few hundred
characters stand for billions of nodes (the "billion laughs" document), and a depth check that walks
the loaded value walks every alias expansion. `load` counts while composing, before any value is
built:

- aliases: at most `max_aliases` in the document;
- nesting: at most `max_depth` levels, counted through aliases (an alias stands for its node);
- expansion: the document as a tree, every alias expanded, holds at most `max_nodes` nodes; computed
  on the node graph with one visit per node, so checking it costs no more than the text;
- recursion: an alias inside the node it names is refused (its expansion is infinite);
- time: composing stops after `max_seconds` of this thread's CPU time (a busy machine does not
  make an honest document fail; the document worker's wall limit bounds the rest).

Construction then builds each aliased node once (PyYAML shares the object), so building the value
is bounded by the text too. The work is CPU-bound: callers run it off the event loop.
"""

from __future__ import annotations

import io
import time
from typing import Any

from workbench.errors import InvalidInput

__all__ = ["YamlRejected", "load"]


class YamlRejected(InvalidInput, ValueError):
    """A YAML document over one of the limits, or not YAML; the message says which."""


def load(
    text: str,
    *,
    max_depth: int = 128,
    max_aliases: int = 1000,
    max_nodes: int = 1_000_000,
    max_seconds: float = 5.0,
) -> Any:
    import yaml  # type: ignore[import-untyped]  # only where YAML is accepted

    class Loader(yaml.SafeLoader):  # type: ignore[misc]
        """SafeLoader that counts aliases, nesting and time while composing."""

        def __init__(self, stream: io.StringIO) -> None:
            super().__init__(stream)
            self.aliases = 0
            self.depth = 0
            self.steps = 0
            self.stop_at = time.thread_time() + max_seconds

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                self.aliases += 1
                if self.aliases > max_aliases:
                    raise YamlRejected(f"document uses more than {max_aliases} YAML aliases")
            self.steps += 1
            if self.steps % 512 == 0 and time.thread_time() > self.stop_at:
                raise YamlRejected(f"document took longer than {max_seconds:g} s to read")
            self.depth += 1
            if self.depth > max_depth:
                raise YamlRejected(f"document is nested deeper than {max_depth} levels")
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    # A stream, not the string: PyYAML checks a string's characters in one regex call over all of it
    # (a single C call holding the GIL, 50-110 ms for 4 MB, which stalls the event loop even from a
    # pool thread); a stream is read and checked 4,096 characters at a time.
    loader = Loader(io.StringIO(text))
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_graph(node, max_depth=max_depth, max_nodes=max_nodes)
        return loader.construct_document(node)
    except YamlRejected:
        raise
    except yaml.YAMLError as exc:
        raise YamlRejected(f"document is not valid YAML ({type(exc).__name__})") from None
    except RecursionError:  # pragma: no cover - the depth limit stops composing first
        raise YamlRejected(f"document is nested deeper than {max_depth} levels") from None
    finally:
        loader.dispose()


def _children(node: Any) -> list[Any]:
    import yaml

    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_graph(root: Any, *, max_depth: int, max_nodes: int) -> None:
    """Expanded size and depth of the composed node graph (aliases are shared nodes), each node
    visited once (iterative, post-order); a node reached again while open is a recursive alias."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            kids = _children(node)
            total = 1 + sum(size[id(k)] for k in kids)
            deep = 1 + max((depth[id(k)] for k in kids), default=0)
            if total > max_nodes:
                raise YamlRejected(f"document expands to more than {max_nodes} nodes (YAML aliases)")
            if deep > max_depth:
                raise YamlRejected(f"document is nested deeper than {max_depth} levels")
            size[key], depth[key] = total, deep
            open_.discard(key)
            continue
        if key in size:
            continue
        if key in open_:
            raise YamlRejected("document has a YAML alias inside the node it names (recursive)")
        open_.add(key)
        stack.append((node, True))
        for kid in _children(node):
            if id(kid) in open_:
                raise YamlRejected("document has a YAML alias inside the node it names (recursive)")
            if id(kid) not in size:
                stack.append((kid, False))
