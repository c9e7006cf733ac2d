"""Backend options, declared on the adapter class and checked in one place.

An adapter lists what ``--opt NAME=VALUE`` accepts as :class:`Option` values in its ``options_spec`` (and
cross-option rules as :class:`Requires` in ``option_rules``); :meth:`MemoryBackend.check_options
<ufuzz.backends.protocol.MemoryBackend.check_options>` turns the options a user gave into typed settings
with defaults, and ``ufuzz backends`` prints the declarations. So an adapter writes no checking code, every
backend reports a bad option the same way (``embedded backend: option 'retrieval': must be one of dense,
bm25, hybrid (got 'foo')``), and an unknown option is an error that names the known ones.

Values arrive typed from ``--opt`` (``true`` -> True, ``3`` -> 3), from TOML and JSON, or as strings from
Python callers, so each type accepts its textual form too. ``None`` means "not given" (the default);
``""`` means "unset" for an option whose default is None (or that says ``nullable``). A ``secret`` option's
value is never echoed: not in error messages, not in ``describe()``, not in recorded configurations.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MASK = "***"
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")
_TYPES = (str, int, float, bool)


class OptionError(ValueError):
    """A bad backend option; the message names the backend and the option."""


@dataclass(frozen=True)
class Option:
    """One option an adapter accepts.

    ``type`` is str, int, float or bool. ``choices`` (str) are matched case-insensitively and stored as
    declared; ``min``/``max`` (int, float) bound the value, ``min`` exclusively with ``exclusive_min``;
    ``url`` (str) asks for an http(s) URL; ``path`` (str) names a file, made absolute where the campaign starts
    (:func:`absolute`) so that lanes and workers, which run elsewhere, find it. ``required`` options have no default.
    """

    name: str
    type: type = str
    default: Any = None
    help: str = ""
    choices: tuple[str, ...] = ()
    min: float | None = None
    max: float | None = None
    exclusive_min: bool = False
    url: bool = False
    path: bool = False
    required: bool = False
    nullable: bool | None = None  # "" means None; by default when the default is None
    secret: bool = False

    def __post_init__(self) -> None:
        if self.type not in _TYPES:
            raise TypeError(f"option {self.name!r}: type must be one of str, int, float, bool")
        if self.choices and self.type is not str:
            raise TypeError(f"option {self.name!r}: choices need type str")
        if self.required and self.default is not None:
            raise TypeError(f"option {self.name!r}: a required option has no default")

    @property
    def may_be_unset(self) -> bool:
        return self.default is None if self.nullable is None else self.nullable

    # -- checking --------------------------------------------------------------------------------------------
    def value(self, raw: Any) -> Any:
        """The typed value of ``raw`` (as given by a user); raises OptionError without the backend's name."""
        if raw is None:
            if self.required:
                raise OptionError(self._required())
            return self.default
        if isinstance(raw, str) and not raw.strip() and self.may_be_unset and not self.required:
            return None
        if isinstance(raw, str) and not raw.strip() and self.required:
            raise OptionError(self._required())
        if self.type is bool:
            return self._bool(raw)
        if self.type in (int, float):
            return self._number(raw)
        return self._str(raw)

    def _required(self) -> str:
        return "is required" + (f" ({self.help})" if self.help else "")

    def _got(self, raw: Any) -> str:
        return "" if self.secret else f" (got {raw!r})"

    def _bool(self, raw: Any) -> bool:
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, int) and raw in (0, 1):
            return bool(raw)
        text = str(raw).strip().lower() if isinstance(raw, str) else None
        if text in _TRUE or text in _FALSE:
            return text in _TRUE
        raise OptionError(f"must be true or false{self._got(raw)}")

    def _number(self, raw: Any) -> int | float:
        what = "an integer" if self.type is int else "a number"
        if isinstance(raw, bool) or not isinstance(raw, int | float | str):
            raise OptionError(f"must be {what}{self._got(raw)}")
        try:
            num = float(raw.strip()) if isinstance(raw, str) else float(raw)
        except ValueError:
            raise OptionError(f"must be {what}{self._got(raw)}") from None
        if not math.isfinite(num) or (self.type is int and not num.is_integer()):
            raise OptionError(f"must be {what}{self._got(raw)}")
        value: int | float = int(num) if self.type is int else num
        low_ok = self.min is None or (value > self.min if self.exclusive_min else value >= self.min)
        if not low_ok or (self.max is not None and value > self.max):
            raise OptionError(f"must be {self.range_text()}{self._got(raw)}")
        return value

    def _str(self, raw: Any) -> str:
        if isinstance(raw, bool) or not isinstance(raw, str | int | float):
            raise OptionError(f"must be a string{self._got(raw)}")
        text = str(raw).strip()
        if self.choices:
            for choice in self.choices:
                if text.lower() == choice.lower():
                    return choice
            raise OptionError(f"must be one of {', '.join(self.choices)}{self._got(raw)}")
        if not text:
            raise OptionError("must not be empty")
        if self.url and not text.startswith(("http://", "https://")):
            raise OptionError(f"must be an http(s) URL{self._got(raw)}")
        return text

    # -- description -----------------------------------------------------------------------------------------
    def range_text(self) -> str:
        lo = None if self.min is None else f"{'>' if self.exclusive_min else '>='} {self.min:g}"
        hi = None if self.max is None else f"<= {self.max:g}"
        if lo and hi and not self.exclusive_min:
            return f"between {self.min:g} and {self.max:g}"
        return " and ".join(x for x in (lo, hi) if x)

    def kind(self) -> str:
        """What the value is, for listings: ``dense|bm25|hybrid``, ``number in [0, 1]``, ``URL``."""
        if self.choices:
            return "|".join(self.choices)
        if self.type is bool:
            return "true|false"
        if self.type in (int, float):
            base = "integer" if self.type is int else "number"
            rng = self.range_text()
            return f"{base} {rng}" if rng else base
        return "URL" if self.url else "text"

    def default_text(self) -> str:
        if self.required:
            return "required"
        if self.default is None:
            return "default: unset"
        if self.secret:
            return f"default: {MASK}"
        if isinstance(self.default, bool):
            return f"default: {'true' if self.default else 'false'}"
        return f"default: {self.default:g}" if isinstance(self.default, float) else f"default: {self.default}"


#: ``Requires(..., value=SET)`` applies whenever the option holds any value (is not unset)
SET = object()


@dataclass(frozen=True)
class Requires:
    """Option ``option`` (when it equals ``value``, or has any value with the default ``SET``) needs every
    option in ``needs`` to be set too: ``Requires("write_mode", ("llm_base_url", "llm_model"), "episode")``."""

    option: str
    needs: tuple[str, ...]
    value: Any = SET
    why: str = ""

    def applies(self, settings: Mapping[str, Any]) -> bool:
        got = settings.get(self.option)
        return got is not None if self.value is SET else got == self.value

    def text(self) -> str:
        when = self.option if self.value is SET else f"{self.option}={self.value}"
        names = " and ".join(self.needs) if len(self.needs) <= 2 else ", ".join(self.needs)
        return f"{when} needs option{'s' if len(self.needs) > 1 else ''} {names}" + (
            f" ({self.why})" if self.why else "")


def check(backend: str, spec: Iterable[Option], rules: Iterable[Requires], options: Mapping[str, Any]
          ) -> dict[str, Any]:
    """Typed settings (every declared option, defaults filled in) for ``options``; OptionError otherwise."""
    declared = {o.name: o for o in spec}
    where = f"{backend} backend"
    unknown = sorted(set(options) - set(declared))
    if unknown:
        names = ", ".join(map(repr, unknown))
        known = f"known options: {', '.join(declared)}" if declared else "it takes no options"
        raise OptionError(f"{where}: unknown option{'s' if len(unknown) > 1 else ''} {names}; {known}")
    settings: dict[str, Any] = {}
    for name, opt in declared.items():
        try:
            settings[name] = opt.value(options.get(name))
        except OptionError as exc:
            raise OptionError(f"{where}: option {name!r} {exc}" if str(exc).startswith("is required")
                              else f"{where}: option {name!r}: {exc}") from None
    for rule in rules:
        if rule.applies(settings) and any(settings.get(n) is None for n in rule.needs):
            raise OptionError(f"{where}: {rule.text()}")
    return settings


def absolute_path(value: Any) -> Any:
    """A file named by an option, absolute (from this process's working directory, ``~`` expanded); an unset or
    blank value as it is."""
    return str(Path(value).expanduser().resolve()) if isinstance(value, str) and value.strip() else value


def absolute(spec: Iterable[Option], options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with every path option's value absolute (:func:`absolute_path`): a lane or a worker process runs
    in a directory of its own, and a campaign's recorded options must name the same files to a replay run from
    anywhere."""
    paths = {o.name for o in spec if o.path}
    return {k: (absolute_path(v) if k in paths else v) for k, v in options.items()}


def public(spec: Iterable[Option], options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with every secret option's value masked, for logs and recorded configurations."""
    secret = {o.name for o in spec if o.secret}
    return {k: (MASK if k in secret and v is not None else v) for k, v in options.items()}


def listing(spec: Iterable[Option], rules: Iterable[Requires] = ()) -> list[str]:
    """Lines describing the options, one per option then one per rule, for ``ufuzz backends``."""
    opts = list(spec)
    width = max((len(o.name) for o in opts), default=0)
    lines = [f"{o.name:<{width}}  {o.kind()}; {o.default_text()}" + (f" — {o.help}" if o.help else "")
             + (" [secret]" if o.secret else "") for o in opts]
    lines += [f"rule: {r.text()}" for r in rules]
    return lines
