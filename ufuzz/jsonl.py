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

__all__ = ["LineError", "iter_json_lines"]


class LineError(ValueError):
    """A malformed line of a JSONL file; the message is ``file:line: message (field 'x')``."""

    def __init__(self, path: str | Path, line: int | None, message: str, field: str | None = None) -> None:
        where = f"{path}:{line}" if line else str(path)
        self.path, self.line, self.field = str(path), line, field
        super().__init__(f"{where}: {message}" + (f" (field '{field}')" if field else ""))


def iter_json_lines(path: Path, error_cls: type[LineError], kinds: Sequence[str]
                    ) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """``(line number, kind, record)`` for every non-blank line of ``path``, in file order.

    Raises ``error_cls`` naming the line when the file cannot be opened, a line is not UTF-8, not JSON or
    not a JSON object, its ``kind`` is not one of ``kinds``, or the header is not the first record or
    comes twice. Everything inside a record is the caller's to check.
    """
    try:
        fh = path.open("rb")  # decoded line by line, so that a non-UTF-8 byte is reported on its own line
    except OSError as exc:
        raise error_cls(path, None, f"cannot read: {exc.strerror or exc}") from None
    with fh:
        seen_header = False
        for lineno, data in enumerate(fh, start=1):
            try:
                raw = data.decode("utf-8")
            except UnicodeDecodeError:
                raise error_cls(path, lineno, "not UTF-8 text") from None
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise error_cls(path, lineno, f"invalid JSON: {exc.msg} at column {exc.colno}") from None
            if not isinstance(rec, dict):
                raise error_cls(path, lineno, "each line must be a JSON object")
            kind = rec.get("kind")
            if kind not in kinds:
                raise error_cls(path, lineno, f"unknown kind {kind!r}; expected one of {list(kinds)}", "kind")
            if not seen_header and kind != "header":
                raise error_cls(path, lineno, "first record must be the header", "kind")
            if seen_header and kind == "header":
                raise error_cls(path, lineno, "a second header", "kind")
            seen_header = True
            yield lineno, kind, rec
