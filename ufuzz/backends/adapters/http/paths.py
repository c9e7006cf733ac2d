"""JSON paths into a product's responses: RFC 9535 JSONPath through the ``python-jsonpath`` library, with a
fast walk for the plain paths most configurations use."""


from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jsonpath import JSONPath, JSONPathEnvironment, JSONPathError
from jsonpath.segments import JSONPathChildSegment
from jsonpath.selectors import IndexSelector, NameSelector, WildcardSelector

# -- JSON paths (RFC 9535, through python-jsonpath) --------------------------------------------------------

#: strict = RFC 9535 as written: no unions or other extensions, so a config means the same in any JSONPath tool
_JSONPATH = JSONPathEnvironment(strict=True)


def _reason(exc: JSONPathError) -> str:
    """python-jsonpath's one-line reason and where it is (its ``str()`` draws a multi-line caret picture)."""
    msg = str(exc.args[0]) if exc.args else type(exc).__name__
    token = getattr(exc, "token", None)
    if token is None:
        return msg
    return f"{msg} at the end" if token.index < 0 else f"{msg} at position {token.index}"


@dataclass(frozen=True)
class JsonPath:
    """A JSONPath to a response field (``$.results[*].id``, ``$['memory']['text']``, ``$.hits[?@.score > 0]``).

    Parsing is python-jsonpath's RFC 9535 implementation, and so is evaluation of anything beyond plain
    ``.name``/``[n]``/``[*]`` steps; this class adds what the config needs: the path must start at the root
    ``$``, ``multi`` tells a list-valued path (one that is not an RFC "singular query") from a one-value path,
    and :meth:`prefix_found` tells a misconfigured path from an empty result.

    A path of plain steps only (what product configs use: ``$.results[*].id``) is evaluated by a direct walk
    over the library's parsed steps: python-jsonpath builds a match object with a normalized path string for
    every node it visits, about 50x the cost of the walk (``benchmarks/bench_http.py``), which would dominate
    ``list()`` of a large state. The walk follows the RFC as the library does (tested equal on generated
    documents and paths, tests/backends/test_http_backend.py).
    """

    text: str
    compiled: JSONPath
    steps: tuple[tuple[str, Any], ...] | None = None  # the plain steps, when the path has nothing else
    head: int = 0  # segments in the longest one-value prefix

    @property
    def multi(self) -> bool:
        return not self.compiled.singular_query()

    @classmethod
    def parse(cls, text: Any) -> JsonPath:
        if not isinstance(text, str) or not text.startswith("$"):
            raise ValueError(f"bad JSON path {text!r}: must start with '$'")
        try:
            compiled = _JSONPATH.compile(text)
        except JSONPathError as exc:
            raise ValueError(f"bad JSON path {text!r}: {_reason(exc)} (RFC 9535 JSONPath, e.g. "
                             "$.results[*].id)") from None
        if not isinstance(compiled, JSONPath):  # a union; strict mode does not parse one, but never guess
            raise ValueError(f"bad JSON path {text!r}: one path only, no unions")
        head = len(compiled.segments)
        while head and not JSONPath(env=_JSONPATH, segments=compiled.segments[:head]).singular_query():
            head -= 1
        return cls(text, compiled, _plain_steps(compiled), head)

    def prefix_found(self, doc: Any) -> bool:
        """Whether the longest one-value prefix of a list-valued path reaches a list or object (a wildcard
        path over a missing key is a misconfiguration, not an empty result)."""
        prefix = JSONPath(env=_JSONPATH, segments=self.compiled.segments[:self.head])
        steps = _plain_steps(prefix)  # a one-value prefix is names and indexes only
        head = _walk(steps, doc) if steps is not None else _find(prefix, doc)
        return bool(head) and (not self.multi or all(isinstance(v, list | dict) for v in head))

    def find(self, doc: Any) -> list[Any]:
        """Every value the path reaches, in document order (missing keys and indexes reach nothing)."""
        if self.steps is not None:
            return _walk(self.steps, doc)
        return _find(self.compiled, doc)


def _plain_steps(path: JSONPath) -> tuple[tuple[str, Any], ...] | None:
    """``(("name", "results"), ("all", None), ("name", "id"))`` for ``$.results[*].id``; None when the path has
    a step that is not one name, one index or the wildcard (descendants, slices, filters, several selectors)."""
    steps: list[tuple[str, Any]] = []
    for segment in path.segments:
        if type(segment) is not JSONPathChildSegment or len(segment.selectors) != 1:
            return None
        sel = segment.selectors[0]
        if type(sel) is NameSelector:
            steps.append(("name", sel.name))
        elif type(sel) is IndexSelector:
            steps.append(("index", sel.index))
        elif type(sel) is WildcardSelector:
            steps.append(("all", None))
        else:
            return None
    return tuple(steps)


def _walk(steps: tuple[tuple[str, Any], ...], doc: Any) -> list[Any]:
    """RFC 9535 child steps: a name selects an object member, an index an array element (negative from the
    end), the wildcard every member value or element in order; anything else selects nothing."""
    vals = [doc]
    for kind, arg in steps:
        nxt: list[Any] = []
        for v in vals:
            if kind == "name":
                if isinstance(v, dict) and arg in v:
                    nxt.append(v[arg])
            elif kind == "index":
                if isinstance(v, list) and -len(v) <= arg < len(v):
                    nxt.append(v[arg])
            elif isinstance(v, dict):
                nxt.extend(v.values())
            elif isinstance(v, list):
                nxt.extend(v)
        vals = nxt
    return vals


def _find(path: JSONPath, doc: Any) -> list[Any]:
    if isinstance(doc, str):  # python-jsonpath would parse a str as JSON text; here it is a JSON string value
        return [doc] if not path.segments else []
    try:
        return path.findall(doc)
    except JSONPathError as exc:  # e.g. a filter function given a value it cannot take
        raise ValueError(f"JSON path {str(path)!r} failed on the response: {_reason(exc)}") from None

