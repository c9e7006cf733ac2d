"""Charts as SVG, drawn by matplotlib: bench curves (``curves.svg``) and the HTML report's charts.

:func:`line_chart_svg` draws panels side by side, each with its own axes and one line per series (shared
colours across panels; every other series dashed so that identical curves both show); :func:`bar_chart_svg`
draws grouped horizontal bars. The output is a standalone SVG document, deterministic for the same data (no
date, a fixed hash salt), with text kept as ``<text>`` and every series a ``<g id="series-P-S">`` (panel P,
series S) so it can be inspected. :func:`inline_svg` makes one fit inside an HTML page beside others.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Panel", "Series", "line_chart_svg", "bar_chart_svg", "write_chart", "inline_svg", "PALETTE"]

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")

_RC = {"svg.fonttype": "none", "svg.hashsalt": "ufuzz", "path.simplify": False, "text.parse_math": False,
       "font.family": "sans-serif", "font.size": 9, "axes.titlesize": 10, "axes.titleweight": "bold"}


@dataclass
class Series:
    name: str
    xs: Sequence[float]
    ys: Sequence[float]


@dataclass
class Panel:
    title: str
    xlabel: str
    ylabel: str
    series: list[Series] = field(default_factory=list)
    ymin: float | None = None  # fixed y range (e.g. 0..1 for a ratio); None = from the data
    ymax: float | None = None
    step: bool = False  # draw as a step function (counts that change at discrete executions)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _save(fig, fmt: str = "svg") -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, metadata={"Date": None} if fmt == "svg" else None, dpi=110)
    return buf.getvalue()


def _line_figure(panels: Sequence[Panel], title: str, panel_width: float, panel_height: float):
    plt = _pyplot()
    names: list[str] = []
    for p in panels:
        for s in p.series:
            if s.name not in names:
                names.append(s.name)
    n = max(len(panels), 1)
    fig, axes = plt.subplots(1, n, figsize=(panel_width * n, panel_height), squeeze=False)
    for pi, (ax, p) in enumerate(zip(axes[0], panels)):
        for s in p.series:
            i = names.index(s.name)
            kw = {"color": PALETTE[i % len(PALETTE)], "linestyle": "--" if i % 2 else "-", "linewidth": 1.6,
                  "label": s.name, "gid": f"series-{pi}-{i}"}
            if p.step:
                ax.step(list(s.xs), list(s.ys), where="post", **kw)
            else:
                ax.plot(list(s.xs), list(s.ys), **kw)
        ax.set_title(p.title)
        ax.set_xlabel(p.xlabel)
        ax.set_ylabel(p.ylabel)
        if p.ymin is not None or p.ymax is not None:
            ax.set_ylim(p.ymin, p.ymax)
        ax.grid(alpha=0.3)
    if names:
        handles: dict[str, object] = {}
        for ax in axes[0]:
            for h, label in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(label, h)
        fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=min(len(names), 5),
                   frameon=False)
    if title:
        fig.suptitle(title, fontweight="bold")
    fig.tight_layout(rect=(0, 0.08 if names else 0, 1, 1))
    return fig


def line_chart_svg(panels: Sequence[Panel], *, title: str = "", panel_width: float = 4.6,
                   panel_height: float = 3.4) -> str:
    """An SVG document with one chart per panel, side by side, and a shared legend below."""
    import matplotlib

    with matplotlib.rc_context(_RC):
        fig = _line_figure(panels, title, panel_width, panel_height)
        try:
            return _save(fig).decode("utf-8")
        finally:
            _pyplot().close(fig)


def bar_chart_svg(labels: Sequence[str], groups: dict[str, Sequence[float]], *, title: str = "", xlabel: str = "",
                  width: float = 6.4) -> str:
    """Horizontal bars, one row per label and one bar per group (e.g. unique failures and causes)."""
    import matplotlib

    with matplotlib.rc_context(_RC):
        plt = _pyplot()
        rows = max(len(labels), 1)
        fig, ax = plt.subplots(figsize=(width, 1.0 + 0.22 * rows * max(len(groups), 1)))
        h = 0.8 / max(len(groups), 1)
        for gi, (name, values) in enumerate(groups.items()):
            ys = [r + gi * h for r in range(len(labels))]
            ax.barh(ys, list(values), height=h, color=PALETTE[gi % len(PALETTE)], label=name, gid=f"bars-{gi}")
        ax.set_yticks([r + h * (len(groups) - 1) / 2 for r in range(len(labels))], list(labels))
        ax.invert_yaxis()
        ax.set_xlabel(xlabel)
        if title:
            ax.set_title(title)
        ax.grid(axis="x", alpha=0.3)
        if len(groups) > 1:
            ax.legend(frameon=False)
        fig.tight_layout()
        try:
            return _save(fig).decode("utf-8")
        finally:
            plt.close(fig)


def write_chart(path: str | Path, panels: Sequence[Panel], *, title: str = "") -> list[Path]:
    """Write ``path`` (SVG) and a PNG beside it. Returns the files written."""
    import matplotlib

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(line_chart_svg(panels, title=title), encoding="utf-8")
    with matplotlib.rc_context(_RC):
        fig = _line_figure(panels, title, 4.6, 3.4)
        try:
            png = path.with_suffix(".png")
            png.write_bytes(_save(fig, "png"))
        finally:
            _pyplot().close(fig)
    return [path, png]


_ID = re.compile(r'\bid="([^"]+)"')


def inline_svg(svg: str, prefix: str) -> str:
    """An SVG document as an element to put inside HTML: no XML prolog or DOCTYPE, and every id (and each
    reference to it) prefixed so that several charts on one page keep their clip paths apart."""
    start = svg.find("<svg")
    body = svg[start:] if start >= 0 else svg
    for ident in sorted(set(_ID.findall(body)), key=len, reverse=True):
        new = f"{prefix}-{ident}"
        body = body.replace(f'id="{ident}"', f'id="{new}"').replace(f"#{ident})", f"#{new})") \
            .replace(f'"#{ident}"', f'"#{new}"')
    return body
