"""A dependency-free SVG line-plot writer (and a PNG twin when matplotlib happens to be importable).

:func:`line_chart_svg` draws panels side by side, each with its own axes, ticks, labels and one polyline per
series; the legend (shared colours across panels) sits below. The output is a standalone SVG 1.1 document.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

__all__ = ["Panel", "Series", "line_chart_svg", "write_chart", "nice_ticks", "PALETTE"]

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")


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


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round tick values covering [lo, hi]."""
    if not math.isfinite(lo) or not math.isfinite(hi):
        return [0.0]
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    ticks = []
    t = start
    while t <= hi + step * 1e-9:
        ticks.append(round(t, 10))
        t += step
    return ticks


def _fmt(v: float) -> str:
    if abs(v) >= 1000 and float(v).is_integer():
        return f"{int(v):,}".replace(",", " ")
    if float(v).is_integer():
        return str(int(v))
    return f"{v:.3g}"


def line_chart_svg(panels: Sequence[Panel], *, title: str = "", panel_width: int = 420,
                   panel_height: int = 300) -> str:
    """An SVG document with one chart per panel, side by side, and a shared legend."""
    margin_l, margin_r, margin_t, margin_b = 62, 18, 34, 46
    names: list[str] = []
    for p in panels:
        for s in p.series:
            if s.name not in names:
                names.append(s.name)
    colour = {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(names)}
    # every other series dashed, so that identical curves (e.g. two strategies that coincide) both show
    dash = {n: (' stroke-dasharray="7 4"' if i % 2 else "") for i, n in enumerate(names)}
    head = 30 if title else 0
    legend_rows = math.ceil(len(names) / 4) if names else 0
    width = panel_width * max(len(panels), 1)
    height = head + panel_height + 16 + 18 * legend_rows + 8
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
           f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>']
    if title:
        out.append(f'<text x="{width / 2:.1f}" y="20" text-anchor="middle" font-size="14" '
                   f'font-weight="bold">{escape(title)}</text>')
    for i, p in enumerate(panels):
        x0 = i * panel_width + margin_l
        y0 = head + margin_t
        w = panel_width - margin_l - margin_r
        h = panel_height - margin_t - margin_b
        xs = [float(x) for s in p.series for x in s.xs]
        ys = [float(y) for s in p.series for y in s.ys]
        xlo, xhi = (min(xs), max(xs)) if xs else (0.0, 1.0)
        ylo = p.ymin if p.ymin is not None else (min(0.0, min(ys)) if ys else 0.0)
        yhi = p.ymax if p.ymax is not None else (max(ys) if ys else 1.0)
        xt, yt = nice_ticks(xlo, xhi), nice_ticks(ylo, yhi)
        xlo, xhi = min(xlo, xt[0]), max(xhi, xt[-1])
        if p.ymax is None:
            yhi = max(yhi, yt[-1])
        ylo = min(ylo, yt[0])
        xspan = (xhi - xlo) or 1.0
        yspan = (yhi - ylo) or 1.0

        def px(x: float, xlo: float = xlo, xspan: float = xspan, x0: float = x0, w: float = w) -> float:
            return x0 + (x - xlo) / xspan * w

        def py(y: float, ylo: float = ylo, yspan: float = yspan, y0: float = y0, h: float = h) -> float:
            return y0 + h - (y - ylo) / yspan * h

        out.append(f'<g class="panel" id="panel-{i}">')
        out.append(f'<text x="{x0 + w / 2:.1f}" y="{y0 - 12:.1f}" text-anchor="middle" font-size="12" '
                   f'font-weight="bold">{escape(p.title)}</text>')
        for t in yt:
            if ylo - 1e-9 <= t <= yhi + 1e-9:
                yy = py(t)
                out.append(f'<line x1="{x0:.1f}" y1="{yy:.1f}" x2="{x0 + w:.1f}" y2="{yy:.1f}" stroke="#e6e6e6"/>')
                out.append(f'<text x="{x0 - 6:.1f}" y="{yy + 4:.1f}" text-anchor="end">{_fmt(t)}</text>')
        for t in xt:
            if xlo - 1e-9 <= t <= xhi + 1e-9:
                xx = px(t)
                out.append(f'<line x1="{xx:.1f}" y1="{y0:.1f}" x2="{xx:.1f}" y2="{y0 + h:.1f}" stroke="#f0f0f0"/>')
                out.append(f'<text x="{xx:.1f}" y="{y0 + h + 16:.1f}" text-anchor="middle">{_fmt(t)}</text>')
        out.append(f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{w:.1f}" height="{h:.1f}" fill="none" '
                   'stroke="#333"/>')
        out.append(f'<text x="{x0 + w / 2:.1f}" y="{y0 + h + 36:.1f}" text-anchor="middle">'
                   f'{escape(p.xlabel)}</text>')
        out.append(f'<text x="{x0 - 46:.1f}" y="{y0 + h / 2:.1f}" text-anchor="middle" '
                   f'transform="rotate(-90 {x0 - 46:.1f} {y0 + h / 2:.1f})">{escape(p.ylabel)}</text>')
        for s in p.series:
            pts = " ".join(f"{px(float(x)):.1f},{py(float(y)):.1f}" for x, y in zip(s.xs, s.ys))
            if pts:
                out.append(f'<polyline class="series" data-name="{escape(s.name, {chr(34): "&quot;"})}" '
                           f'fill="none" stroke="{colour[s.name]}" stroke-width="1.8"{dash[s.name]} points="{pts}"/>')
        out.append("</g>")
    ly = head + panel_height + 16
    for j, n in enumerate(names):
        lx = 20 + (j % 4) * (width - 40) / 4
        yy = ly + 18 * (j // 4)
        out.append(f'<line x1="{lx:.1f}" y1="{yy:.1f}" x2="{lx + 22:.1f}" y2="{yy:.1f}" stroke="{colour[n]}" '
                   f'stroke-width="3"{dash[n]}/>')
        out.append(f'<text x="{lx + 28:.1f}" y="{yy + 4:.1f}">{escape(n)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write_chart(path: str | Path, panels: Sequence[Panel], *, title: str = "") -> list[Path]:
    """Write ``path`` (SVG) and, if matplotlib is importable, a PNG beside it. Returns the files written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(line_chart_svg(panels, title=title), encoding="utf-8")
    written = [path]
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return written
    fig, axes = plt.subplots(1, max(len(panels), 1), figsize=(5 * max(len(panels), 1), 3.8), squeeze=False)
    for ax, p in zip(axes[0], panels):
        for i, s in enumerate(p.series):
            ax.plot(list(s.xs), list(s.ys), label=s.name, color=PALETTE[i % len(PALETTE)],
                    linestyle="--" if i % 2 else "-")
        ax.set_title(p.title)
        ax.set_xlabel(p.xlabel)
        ax.set_ylabel(p.ylabel)
        if p.ymin is not None or p.ymax is not None:
            ax.set_ylim(p.ymin, p.ymax)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    png = path.with_suffix(".png")
    fig.savefig(png, dpi=110)
    plt.close(fig)
    written.append(png)
    return written
