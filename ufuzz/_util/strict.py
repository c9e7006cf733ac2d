"""Strict validation at the file-format boundary: pydantic models that never guess, and their errors in words.

Every file a user hands ufuzz (seed suites, regression corpora, HTTP product configs, ``campaign.json``) is
checked by a pydantic v2 model built on :class:`StrictModel` before anything is built from it. Strict means
what a hand-edited file gets wrong is refused rather than coerced: a string is never a bool (``"no"`` is not
``false``) nor a list (``"p1-m2"`` is not ``["p", "1", ...]``), a number is never a string, NaN and Infinity
are never numbers, and unknown keys are errors (a typo is not silently ignored). The models only *check*;
the frozen dataclasses of :mod:`ufuzz.model` stay what the rest of ufuzz works with.

:func:`first_error` turns a :class:`pydantic.ValidationError` into ``(field, message)`` — the field as a path
(``memories[3].text``) and a message a person can act on — so that each format's own error class can name
``file:line`` and the field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, StringConstraints, ValidationError

__all__ = ["StrictModel", "OpenModel", "Text", "IdText", "ID_PATTERN", "first_error", "field_path", "json_type",
           "validate_record"]


class StrictModel(BaseModel):
    """No coercion, no unknown keys, no NaN/Infinity."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, frozen=True)


class OpenModel(BaseModel):
    """Strict about the fields it declares; other keys are kept (headers carry free-form provenance)."""

    model_config = ConfigDict(strict=True, extra="allow", allow_inf_nan=False, frozen=True)


def Text(max_length: int, *, blank: bool = False) -> Any:  # noqa: N802 - used like a type
    """A string of at most ``max_length`` characters; unless ``blank``, with at least one non-space one."""
    if blank:
        return Annotated[str, StringConstraints(max_length=max_length)]
    return Annotated[str, StringConstraints(min_length=1, max_length=max_length, pattern=r"\S")]


#: an id: printable, at least one non-space character — no NUL, newline, tab or other control character, which
#: would cut or split the id in logs, terminals, file names and the corpus's keys
ID_PATTERN = r"^[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*$"


def IdText(max_length: int) -> Any:  # noqa: N802 - used like a type
    """An id string (:data:`ID_PATTERN`) of at most ``max_length`` characters."""
    return Annotated[str, StringConstraints(min_length=1, max_length=max_length, pattern=ID_PATTERN)]


def json_type(value: Any) -> str:
    """The JSON name of ``value``'s type, as a user who wrote the file would call it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def field_path(loc: tuple[Any, ...]) -> str:
    """``("memories", 3, "text")`` → ``memories[3].text``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


_EXPECTED = {"string_type": "a string", "bool_type": "true or false", "list_type": "an array",
             "dict_type": "an object", "model_type": "an object", "int_type": "an integer",
             "float_type": "a number", "none_required": "null", "tuple_type": "an array"}


def _excerpt(value: Any, n: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= n else text[:n] + "…"


def _message(err: dict[str, Any]) -> str:
    kind, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    if kind == "missing":
        return "missing required field"
    if kind == "extra_forbidden":
        return "unknown field"
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {json_type(value)} {_excerpt(value)}"
    if kind in ("finite_number", "float_parsing"):
        return f"expected a finite number, got {_excerpt(value)}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "string_pattern_mismatch":
        if ctx.get("pattern") == r"\S":
            return "must not be empty or blank"
        if ctx.get("pattern") == ID_PATTERN:
            bad = [c for c in value if ord(c) < 32 or ord(c) == 127] if isinstance(value, str) else []
            if bad:
                return f"an id must not hold control characters (found {bad[0]!r}), got {_excerpt(value)}"
            return "must not be empty or blank"
        return f"must match {ctx.get('pattern')}, got {_excerpt(value)}"
    if kind == "string_too_long":
        return f"longer than {ctx.get('max_length')} characters ({len(value) if isinstance(value, str) else '?'})"
    if kind == "too_short":
        n = ctx.get("min_length", 1)
        return "must not be empty" if n == 1 else f"needs at least {n} items"
    if kind == "too_long":
        return f"more than {ctx.get('max_length')} items"
    if kind == "literal_error":
        return f"must be {ctx.get('expected')}, got {_excerpt(value)}"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        bound = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=",
                 "less_than": "<"}[kind]
        limit = next(iter(ctx.values())) if ctx else "?"
        return f"must be {bound} {limit}, got {_excerpt(value)}"
    if kind == "value_error":
        return str(ctx.get("error") or err["msg"]).removeprefix("Value error, ")
    if kind == "union_tag_invalid":
        return f"must be one of {ctx.get('expected_tags')}, got {_excerpt(ctx.get('tag'))}"
    return str(err["msg"])


def first_error(exc: ValidationError, prefix: str = "") -> tuple[str, str]:
    """``(field, message)`` of the first problem pydantic found; ``prefix`` is prepended to the field."""
    err = exc.errors(include_url=False)[0]
    loc = tuple(err["loc"])
    path = field_path(loc)
    if prefix:
        path = f"{prefix}.{path}" if path and not path.startswith("[") else f"{prefix}{path}"
    return path, _message(err)


def validate_record(model: type[BaseModel], rec: dict[str, Any], fail: Callable[[str, str | None], Exception],
                    checked: tuple[type[Exception], ...] = ()) -> Any:
    """``rec`` as a ``model`` (and through the model's own ``check()``, when it has one): what every versioned file
    ufuzz reads does with each line. Any problem is raised as ``fail(message, field)`` — the first validation error in
    words, or an error of ``checked`` that ``check()`` raised (its ``field`` attribute naming the field)."""
    try:
        validated = model.model_validate(rec)
        if hasattr(validated, "check"):
            validated.check()
    except ValidationError as exc:
        field, message = first_error(exc)
        raise fail(message, field) from None
    except checked as exc:
        raise fail(str(exc), getattr(exc, "field", None)) from None
    return validated
