"""mkdocs hooks of the docs site: generated references and README sections, filled in at build time.

A page line ``<!-- ufuzz:commands -->`` becomes the command reference (every click command, from the code),
``<!-- ufuzz:product-toml -->`` the product-TOML reference (from its JSON Schema), and
``<!-- ufuzz:readme Heading -->`` the README section under ``## Heading`` (its own heading dropped, deeper
headings kept), so that text lives in one place.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_MARK = re.compile(r"^<!-- ufuzz:(commands|product-toml|readme (.+?)) -->$", re.M)


def readme_section(title: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    if m is None:
        raise ValueError(f"README.md has no section '## {title}'")
    return m.group(1).strip().replace("](docs/", "](") + "\n"  # README links into docs/ are page links here


def _fill(m: re.Match) -> str:
    from ufuzz.cli.reference import commands_markdown, product_toml_markdown

    what = m.group(1)
    if what == "commands":
        return commands_markdown()
    if what == "product-toml":
        return product_toml_markdown()
    return readme_section(m.group(2))


def _slug(title: str) -> str:
    """GitHub's heading anchor (what the README's own links use)."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def section_pages(docs: Path) -> dict[str, str]:
    """README section anchor -> the docs page that shows that section."""
    out = {}
    for page in sorted(docs.glob("*.md")):
        for m in _MARK.finditer(page.read_text(encoding="utf-8")):
            if m.group(2):
                out[_slug(m.group(2))] = page.name
    return out


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 - the mkdocs hook signature
    text = _MARK.sub(_fill, markdown)
    where = section_pages(Path(config["docs_dir"]))

    def link(m: re.Match) -> str:  # a README link to another section: to the page that shows it
        target = where.get(m.group(1))
        return m.group(0) if target is None or target == page.file.src_uri else f"]({target})"

    return re.sub(r"\]\(#([\w-]+)\)", link, text)
