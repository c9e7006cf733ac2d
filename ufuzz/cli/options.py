"""Option parsing shared by the commands: ``--opt KEY=VALUE`` values and ``--config`` TOML files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click


def _parse_value(raw: str) -> Any:
    low = raw.lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        return float(raw)
    except ValueError:
        return raw


def parse_opts(values: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for v in values:
        key, sep, raw = v.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected KEY=VALUE, got {v!r}", param_hint="'--opt'")
        out[key.strip()] = _parse_value(raw.strip())
    return out


def load_config_file(path: str) -> dict[str, Any]:
    import tomllib

    p = Path(path)
    try:
        with p.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise click.BadParameter(f"no such file: {path}", param_hint="'--config'") from None
    except tomllib.TOMLDecodeError as exc:
        raise click.BadParameter(f"{path}: {exc}", param_hint="'--config'") from None
    return data
