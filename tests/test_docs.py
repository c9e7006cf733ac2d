"""The docs site: `mkdocs build --strict` passes; the command reference names every command and option; the
product-TOML reference comes from a JSON Schema that agrees with the loader `ufuzz backends check` runs."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import tomllib
from click.testing import CliRunner

from ufuzz.backends.adapters.http import parse_config
from ufuzz.backends.adapters.http.schema import product_schema
from ufuzz.cli import main
from ufuzz.cli.reference import commands_markdown, product_toml_markdown, walk

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = [ROOT / "examples" / "product.toml", ROOT / "examples" / "agent.toml"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("mkdocs", reason="mkdocs is in the dev extra: pip install -e '.[dev]'")
    out = tmp_path_factory.mktemp("site")
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                          "-d", str(out)], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode == 0, res.stdout + res.stderr
    return out


def test_the_site_builds_strictly_with_every_page(site):
    for page in ("index.html", "commands/index.html", "product-toml/index.html", "ci/index.html",
                 "concepts/index.html", "figures/index.html", "seeds/index.html", "triage/index.html"):
        assert (site / page).is_file(), page
    html = (site / "figures" / "index.html").read_text()
    assert "ufuzz:readme" not in html and len(html) > 5000  # the README section was filled in
    assert "two-commands" in (site / "quickstart" / "index.html").read_text()


def test_the_readme_is_a_quick_start_and_the_detail_is_in_docs():
    readme = (ROOT / "README.md").read_text()
    heads = re.findall(r"^## (.+)$", readme, re.M)
    assert heads == ["Two commands", "A first campaign", "Where to go next", "Measured figures"]
    for page in re.findall(r"\]\((docs/[\w-]+\.md)\)", readme):
        assert (ROOT / page).is_file(), page
    docs = {p.name: p.read_text() for p in (ROOT / "docs").glob("*.md")}
    for page, head in (("concepts.md", "## What counts as a failure"), ("ci.md", "--match-baseline"),
                       ("triage.md", "--format md"), ("seeds.md", "longmemeval"), ("backends.md", "graphiti")):
        assert head in docs[page], (page, head)


def test_every_command_and_option_is_in_the_reference(site):
    html = (site / "commands" / "index.html").read_text()
    md = commands_markdown()
    for path, cmd in walk(main):
        assert f"## `{' '.join(path)}`" in md
        for p in cmd.params:
            for opt in getattr(p, "opts", ()):
                if opt.startswith("--") and opt != "--help":
                    assert f"`{opt}`" in md, (path, opt)
    assert "ufuzz run" in html and "--match-baseline" in html and "Sentinel" not in md


def test_the_toml_reference_lists_every_key_of_the_schema(site):
    md = product_toml_markdown()
    schema = product_schema()
    for key, prop in schema["properties"].items():
        assert f"`{key}`" in md or f"`[{key}]`" in md
        for sub in prop.get("properties", {}):
            assert f"`{sub}`" in md
    assert "Product TOML reference" in (site / "product-toml" / "index.html").read_text()
    r = CliRunner().invoke(main, ["backends", "schema", "http"])
    assert r.exit_code == 0 and json.loads(r.output) == schema
    # the terminal's reference is the tables alone; the schema is one command away, not 800 lines below them
    r = CliRunner().invoke(main, ["backends", "schema", "http", "--format", "md"])
    assert r.exit_code == 0 and r.output.strip() == product_toml_markdown(with_schema=False).strip()
    assert "```json" not in r.output and "`not_found_when`" in r.output


def _bad_configs() -> list[tuple[str, dict]]:
    good = tomllib.loads(EXAMPLES[0].read_text())
    cases = []

    def change(name, fn):
        raw = copy.deepcopy(good)
        fn(raw)
        cases.append((name, raw))

    change("unknown top key", lambda r: r.update(nosuch=1))
    change("timeout a string", lambda r: r.update(timeout="10"))
    change("negative retries", lambda r: r.update(retries=-1))
    change("no [get]", lambda r: r.pop("get"))
    change("neither search nor answer", lambda r: r.pop("search"))
    change("unknown op key", lambda r: r["add"].update(ids="$.x"))
    change("search without ids", lambda r: r["search"].pop("ids"))
    change("path without slash", lambda r: r["get"].update(path="v1"))
    change("bad method", lambda r: r["get"].update(method="FETCH"))
    change("bad policy", lambda r: r["update"].update(policy="merge"))
    change("policy outside update", lambda r: r["get"].update(policy="rewrite"))
    change("auth header without env", lambda r: r["auth"].pop("env"))
    change("bad namespace prefix", lambda r: r["namespace"].update(prefix="a b"))
    return cases


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_the_examples_satisfy_the_schema_and_the_loader(path):
    raw = tomllib.loads(path.read_text())
    jsonschema.validate(raw, product_schema())
    parse_config(raw, path.name)


@pytest.mark.parametrize("name, raw", _bad_configs(), ids=[n for n, _ in _bad_configs()])
def test_the_schema_refuses_what_the_loader_refuses(name, raw):
    with pytest.raises(ValueError, match=re.escape("product.toml")):
        parse_config(raw, "product.toml")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(raw, product_schema())
