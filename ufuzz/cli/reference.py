"""Reference pages generated from the code, for the docs site (``mkdocs build``: scripts/mkdocs_hooks.py).

:func:`commands_markdown` walks the click command tree — every command, its arguments and options with their
types, defaults and help — so the command reference cannot drift from ``--help``; :func:`product_toml_markdown`
renders the JSON Schema of the product TOML (:func:`ufuzz.backends.adapters.http.schema.product_schema`).
"""

from __future__ import annotations

import inspect
import json
from typing import Any

import click

__all__ = ["commands_markdown", "product_toml_markdown", "walk"]


def walk(cmd: click.Command, path: tuple[str, ...] = ("ufuzz",)) -> list[tuple[tuple[str, ...], click.Command]]:
    """(full name, command) of ``cmd`` and every subcommand, depth first, in name order."""
    out = [(path, cmd)]
    if isinstance(cmd, click.Group):
        for name in sorted(cmd.commands):
            out += walk(cmd.commands[name], (*path, name))
    return out


def _cell(text: Any) -> str:
    return " ".join(str(text or "").split()).replace("|", " / ")


def _kind(p: click.Option, ctx: click.Context) -> str:
    if p.is_flag:
        return "flag"
    if isinstance(p.type, click.Choice):
        return ", ".join(f"`{c}`" for c in p.type.choices)
    return _cell(p.metavar or p.type.name)


def _param_row(p: click.Parameter, ctx: click.Context) -> str:
    if isinstance(p, click.Argument):
        return f"| `{p.human_readable_name}` | argument | {'required' if p.required else 'optional'} | |"
    assert isinstance(p, click.Option)
    names = ", ".join(f"`{o}`" for o in (*p.opts, *p.secondary_opts))
    default = p.default
    unset = default in (None, "", ()) or callable(default) or "UNSET" in repr(default) \
        or (p.is_flag and default is False)
    shown = "" if unset else f"`{default}`"
    return f"| {names} | {_kind(p, ctx)} | {shown} | {_cell(p.help)} |"


def commands_markdown() -> str:
    """Every ufuzz command as Markdown: usage, help and a table of its parameters."""
    from ufuzz.cli import main

    parts = []
    for path, cmd in walk(main):
        name = " ".join(path)
        ctx = click.Context(cmd, info_name=name)
        usage = " ".join(cmd.collect_usage_pieces(ctx))
        parts.append(f"## `{name}`\n")
        parts.append(f"```\n{name} {usage}\n```\n")
        parts.append(inspect.cleandoc(cmd.help or "") + "\n")
        params = [p for p in cmd.get_params(ctx) if "--help" not in getattr(p, "opts", ())]
        if params:
            parts.append("| parameter | type | default | what it does |\n|---|---|---|---|")
            parts += [_param_row(p, ctx) for p in params]
            parts.append("")
    return "\n".join(parts)


def _type(prop: dict[str, Any]) -> str:
    if "enum" in prop:
        return " \\| ".join(f"`{v}`" for v in dict.fromkeys(str(x).upper() if isinstance(x, str) and x.lower()
                                                             in ("get", "post", "put", "patch", "delete") else x
                                                             for x in prop["enum"]))
    if "anyOf" in prop:
        return " or ".join(_type(p) for p in prop["anyOf"])
    t = prop.get("type", "any")
    bounds = [f"≥ {prop['minimum']}" for _ in [0] if "minimum" in prop] + \
             [f"≤ {prop['maximum']}" for _ in [0] if "maximum" in prop]
    return t + (f" ({', '.join(bounds)})" if bounds else "")


def _rows(props: dict[str, Any], required: list[str]) -> list[str]:
    rows = []
    for key, prop in props.items():
        if prop.get("type") == "object" and "properties" in prop and key not in ("auth", "namespace"):
            continue
        default = prop.get("default")
        shown = "" if default is None else f"`{json.dumps(default)}`"
        rows.append(f"| `{key}` | {_type(prop)} | {'yes' if key in required else ''} | {shown} | "
                    f"{_cell(prop.get('description'))} |")
    return rows


def product_toml_markdown(with_schema: bool = True) -> str:
    """The product-TOML reference: top-level keys, then one table per operation; then, for the docs site, the JSON
    Schema itself (``with_schema``; the terminal's ``--format md`` points to the command that prints it)."""
    from ufuzz.backends.adapters.http.schema import product_schema

    s = product_schema()
    head = "| key | type | required | default | meaning |\n|---|---|---|---|---|"
    out = ["## Top level\n", head, *_rows(s["properties"], s["required"]), ""]
    for sub in ("auth", "namespace"):
        prop = s["properties"][sub]
        out += [f"## `[{sub}]`\n", _cell(prop["description"]) + "\n", head,
                *_rows(prop["properties"], []), ""]
    for name, prop in s["properties"].items():
        if "path" not in prop.get("properties", {}):
            continue
        need = ("required" if name in s["required"] else
                "one of `[search]`/`[answer]` is required" if name in ("search", "answer") else "optional")
        out += [f"## `[{name}]` ({need})\n", _cell(prop["description"]) + "\n", head,
                *_rows(prop["properties"], prop["required"]), ""]
    out += ["## The JSON Schema\n", "`ufuzz backends schema http` prints it" + (":\n" if with_schema else ".\n")]
    if with_schema:
        out.append("```json\n" + json.dumps(s, indent=2) + "\n```\n")
    return "\n".join(out)
