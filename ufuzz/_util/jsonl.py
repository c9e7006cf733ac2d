"""Reading the versioned JSONL files ufuzz writes (seed suites, regression corpora).

Both formats are one JSON object per line, each with a ``kind``; the first line is the only ``header``.
:func:`iter_json_lines` does the line-level checks they share and raises the format's own error class
(a :class:`LineError`), whose message names ``file:line`` and the field at fault.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

__all__ = ["MAX_LINE_BYTES", "LineError", "iter_json_lines"]


class LineError(ValueError):
    """A malformed line of a JSONL file; the message is ``file:line: message (field 'x')``."""

    def __init__(self, path: str | Path, line: int | None, message: str, field: str | None = None) -> None:
        where = f"{path}:{line}" if line else str(path)
        self.path, self.line, self.field = str(path), line, field
        super().__init__(f"{where}: {message}" + (f" (field '{field}')" if field else ""))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (JSON has no NaN or Infinity)")


#: The longest line, in bytes; a longer one is refused before it is parsed. A seed file's checkpoint line holds
#: all its memories: 32 MiB is room for a LongMemEval-M haystack (~1.5 M tokens) in one checkpoint.
MAX_LINE_BYTES = 32 * 1024 * 1024


def iter_json_lines(path: Path, error_cls: type[LineError], kinds: Sequence[str], *,
                    max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """``(line number, kind, record)`` for every non-blank line of ``path``, in file order.

    Raises ``error_cls`` naming the line when the file cannot be opened, a line is longer than
    ``max_line_bytes`` (found without reading it whole), not UTF-8, not JSON (``NaN`` and ``Infinity``
    included: they are not JSON) or not a JSON object, its ``kind`` is not one of ``kinds``, or the header is
    not the first record or comes twice. Everything inside a record is the caller's to check.
    """
    try:
        fh = path.open("rb")  # decoded line by line, so that a non-UTF-8 byte is reported on its own line
    except OSError as exc:
        raise error_cls(path, None, f"cannot read: {exc.strerror or exc}") from None
    with fh:
        seen_header = False
        lineno = 0
        while True:
            try:
                data = fh.readline(max_line_bytes + 1)
            except OSError as exc:
                raise error_cls(path, lineno + 1, f"cannot read: {exc.strerror or exc}") from None
            if not data:
                break
            lineno += 1
            if len(data) > max_line_bytes and not data.endswith(b"\n"):
                raise error_cls(path, lineno, f"line longer than {max_line_bytes} bytes "
                                f"({max_line_bytes // (1024 * 1024)} MiB); refused before parsing it")
            try:
                raw = data.decode("utf-8")
            except UnicodeDecodeError:
                raise error_cls(path, lineno, "not UTF-8 text") from None
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw, parse_constant=_no_constant)
            except json.JSONDecodeError as exc:
                raise error_cls(path, lineno, f"invalid JSON: {exc.msg} at column {exc.colno}") from None
            except ValueError as exc:
                raise error_cls(path, lineno, f"invalid JSON: {exc}") from None
            except RecursionError:
                raise error_cls(path, lineno, "invalid JSON: nested too deeply") from None
            if not isinstance(rec, dict):
                raise error_cls(path, lineno, "each line must be a JSON object")
            kind = rec.get("kind")
            if "kind" not in rec:
                raise error_cls(path, lineno, f"no 'kind' field; every line has one of {list(kinds)}", "kind")
            if kind not in kinds:
                raise error_cls(path, lineno, f"unknown kind {kind!r}; expected one of {list(kinds)}", "kind")
            if not seen_header and kind != "header":
                raise error_cls(path, lineno, "first record must be the header", "kind")
            if seen_header and kind == "header":
                raise error_cls(path, lineno, "a second header", "kind")
            seen_header = True
            yield lineno, kind, rec
