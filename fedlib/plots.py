"""Figures: one function per figure kind, each returning a matplotlib Figure.

Captions live in the notebooks' markdown; figures carry axis labels, legends
and panel labels only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

EPSILON_COLOR = "#2ca02c"


def _alpha_label(alpha_q: float) -> str:
    return r"$\alpha Q=\infty$" if math.isinf(alpha_q) else rf"$\alpha Q={alpha_q:g}$"


def epsilon_twin_axis(ax: plt.Axes, panel: pd.DataFrame) -> plt.Axes | None:
    """Draw the privacy guarantee of a panel's released models on a second y axis (dashed).

    ``panel`` holds one noise level's curves (columns alpha_q, noise_multiplier,
    iteration, epsilon); the runs that release a global model (alpha_q > 0) under
    noise share one epsilon per iteration. Returns the second axis, or None when
    nothing private is drawn (no noise, or local learning only).
    """
    private = panel[(panel["alpha_q"] > 0) & (panel["noise_multiplier"] > 0)]
    if not len(private):
        return None
    eps = private.groupby("iteration")["epsilon"].first()
    twin = ax.twinx()
    twin.plot(eps.index, eps.values, "--", color=EPSILON_COLOR)
    twin.set_ylabel(r"$\varepsilon$ (RDP, $\delta=10^{-4}$)", color=EPSILON_COLOR)
    twin.tick_params(axis="y", colors=EPSILON_COLOR)
    twin.grid(False)
    return twin


def seed_band(ax: plt.Axes, seeded: pd.DataFrame, x: str, value: str, color: object) -> None:
    """Shade the range over seeds of ``value`` against ``x`` (``seeded``: one curve, a
    ``seed`` column); nothing with fewer than two seeds."""
    if "seed" not in seeded.columns or seeded["seed"].nunique() < 2:
        return
    spread = seeded.groupby(x)[value].agg(["min", "max"]).sort_index()
    ax.fill_between(spread.index, spread["min"], spread["max"], color=color, alpha=0.2, lw=0)


def excess_risk_panels(
    curves: pd.DataFrame, alphas: Sequence[float], sigmas: Sequence[float] | None = None,
    seeded: pd.DataFrame | None = None,
) -> plt.Figure:
    """Figure 1a of Bietti et al.: excess risk vs iterations, one panel per noise level.

    ``curves`` has columns noise_multiplier, alpha_q, iteration, excess_risk,
    epsilon (the minimum over step sizes, see ``best_over_steps``; the mean over seeds).
    ``seeded``: the same curves per seed, whose range is shaded around each line where
    there are several. Private panels show the privacy guarantee epsilon on a second axis
    (dashed).
    """
    sns.set_theme(style="whitegrid", context="notebook")
    sigmas = sorted(curves["noise_multiplier"].unique()) if sigmas is None else list(sigmas)
    palette = sns.color_palette("viridis", n_colors=len(alphas))
    cols = min(2, len(sigmas))
    rows = -(-len(sigmas) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.6 * rows), squeeze=False,
                             sharey=True)
    for ax in axes.flat[len(sigmas):]:
        ax.set_visible(False)
    for ax, sigma in zip(axes.flat, sigmas, strict=False):
        panel = curves[curves["noise_multiplier"] == sigma]
        for color, alpha_q in zip(palette, alphas, strict=True):
            line = panel[panel["alpha_q"] == alpha_q].sort_values("iteration")
            ax.plot(line["iteration"], line["excess_risk"], color=color,
                    label=_alpha_label(alpha_q))
            if seeded is not None:
                seed_band(ax, seeded[(seeded["noise_multiplier"] == sigma)
                                     & (seeded["alpha_q"] == alpha_q)],
                          "iteration", "excess_risk", color)
        ax.set_yscale("log")
        ax.set_xlabel("iterations")
        ax.set_ylabel("excess risk (best step size)")
        ax.text(0.97, 0.97, rf"$\sigma={sigma:g}$", transform=ax.transAxes, ha="right",
                va="top", fontsize=11, bbox={"facecolor": "white", "alpha": 0.8, "lw": 0})
        epsilon_twin_axis(ax, panel)
    axes[0][0].legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    return fig


def loss_curve_panels(
    runs: pd.DataFrame,
    panels: Sequence[tuple[str, pd.DataFrame]],
    label: str = "label",
    value: str = "train_loss",
    ylabel: str = "global training loss",
    log_y: bool = False,
) -> plt.Figure:
    """Loss vs round, one panel per (title, runs) pair: the mean over seeds as a line and
    the range over seeds as a band, one colour per value of the ``label`` column.

    ``runs`` fixes the colours (every label that appears in any panel).
    """
    sns.set_theme(style="whitegrid", context="notebook")
    labels = list(dict.fromkeys(runs[label]))
    palette = dict(zip(labels, sns.color_palette("tab10", n_colors=len(labels)), strict=True))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.4 * len(panels), 3.8), squeeze=False,
                             sharey=True)
    for ax, (title, frame) in zip(axes[0], panels, strict=True):
        for name in [n for n in labels if n in set(frame[label])]:
            stats = frame[frame[label] == name].groupby("round")[value].agg(["mean", "min", "max"])
            ax.plot(stats.index, stats["mean"], color=palette[name], label=name)
            ax.fill_between(stats.index, stats["min"], stats["max"], color=palette[name],
                            alpha=0.2, lw=0)
        ax.set_xlabel("round")
        ax.set_ylabel(ylabel)
        if log_y:
            ax.set_yscale("log")
        if title:
            ax.text(0.97, 0.97, title, transform=ax.transAxes, ha="right", va="top", fontsize=10,
                    bbox={"facecolor": "white", "alpha": 0.8, "lw": 0})
        ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    return fig


def image_grid(images: Sequence, row_labels: Sequence[str], columns: int) -> plt.Figure:
    """A grid of grey-scale images, one row per label (28x28 or flat 784 arrays)."""
    rows = len(row_labels)
    fig, axes = plt.subplots(rows, columns, figsize=(1.1 * columns, 1.2 * rows), squeeze=False)
    for r, name in enumerate(row_labels):
        for c in range(columns):
            ax = axes[r][c]
            ax.imshow(images[r * columns + c].reshape(28, 28), cmap="gray_r", vmin=0, vmax=1)
            ax.set_xticks([])
            ax.set_yticks([])
        axes[r][0].set_ylabel(name, rotation=0, ha="right", va="center", fontsize=9)
    fig.tight_layout()
    return fig


def error_vs_parameter(
    panels: Sequence[tuple[str, pd.DataFrame, str]],
    value: str = "error",
    hue: str = "setting",
    ylabel: str = "mean test error",
    log_x: Sequence[bool] | None = None,
) -> plt.Figure:
    """One panel per (x label, frame, x column): mean of ``value`` over repeats with the
    range over repeats as error bars, one line per value of ``hue``."""
    sns.set_theme(style="whitegrid", context="notebook")
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.6), squeeze=False,
                             sharey=True)
    for index, (ax, (xlabel, frame, column)) in enumerate(zip(axes[0], panels, strict=True)):
        for name, part in frame.groupby(hue, sort=False):
            stats = part.groupby(column)[value].agg(["mean", "min", "max"]).sort_index()
            ax.errorbar(stats.index, stats["mean"],
                        yerr=[stats["mean"] - stats["min"], stats["max"] - stats["mean"]],
                        marker="o", ms=4, capsize=3, label=str(name))
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if log_x is not None and log_x[index]:
            ax.set_xscale("log")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


_FIGURE_DATA: dict[str, Any] = {}


def keep_figure_data(folder: Path | None, *, prefix: str = "", link: str = "../data/") -> None:
    """Where :func:`glue_figure` writes each figure's plotted numbers (None: nowhere),
    as ``<prefix><name>.csv``. The book copies ``<generated>/extra`` to the site's root,
    so a chapter links its CSV files as ``<link><prefix><name>.csv`` (``../data/`` from
    a chapter, ``../../data/`` from a page one folder deeper)."""
    _FIGURE_DATA.clear()
    if folder is not None:
        _FIGURE_DATA.update(folder=Path(folder), prefix=prefix, link=link)


def figure_table(figure: plt.Figure) -> pd.DataFrame:
    """Every number a figure plots, one row per point: the panel (its title or the
    text in its corner), the axis labels, the series (legend label), x and y. Lines,
    error bars, scatter points, bars and histogram outlines are read off the artists
    themselves, so the table is what the image shows."""
    from matplotlib.collections import PathCollection
    from matplotlib.container import BarContainer, ErrorbarContainer
    from matplotlib.patches import Polygon, Rectangle

    rows: list[dict] = []
    for index, ax in enumerate(figure.axes):
        texts = [t.get_text() for t in ax.texts if t.get_text()]
        panel = ax.get_title() or (texts[0] if texts else f"panel {index + 1}")
        base = {"panel": panel, "x label": ax.get_xlabel(), "y label": ax.get_ylabel()}

        def add(series: str, xs, ys, base=base) -> None:
            for xv, yv in zip(np.asarray(xs, float), np.asarray(ys, float), strict=False):
                rows.append({**base, "series": series.lstrip("_"), "x": xv, "y": yv})

        done: set[int] = set()
        for container in ax.containers:
            label = container.get_label() or ""
            if isinstance(container, ErrorbarContainer):
                line, caps, bars = container.lines
                if line is not None:
                    add(label, line.get_xdata(), line.get_ydata())
                    done.add(id(line))
                done |= {id(a) for a in (*caps, *bars)}
            elif isinstance(container, BarContainer):
                add(label, [r.get_x() + r.get_width() / 2 for r in container.patches],
                    [r.get_height() for r in container.patches])
                done |= {id(r) for r in container.patches}
        for line in ax.get_lines():
            if id(line) not in done:
                add(line.get_label(), line.get_xdata(), line.get_ydata())
        for collection in ax.collections:
            if isinstance(collection, PathCollection) and id(collection) not in done:
                offsets = np.asarray(collection.get_offsets(), float).reshape(-1, 2)
                add(collection.get_label(), offsets[:, 0], offsets[:, 1])
        for patch in ax.patches:
            if id(patch) in done:
                continue
            if isinstance(patch, Rectangle) and patch.get_height():
                add(patch.get_label(), [patch.get_x() + patch.get_width() / 2],
                    [patch.get_height()])
            elif isinstance(patch, Polygon):
                xy = np.asarray(patch.get_xy(), float)
                add(patch.get_label(), xy[:, 0], xy[:, 1])
    return pd.DataFrame(rows, columns=["panel", "x label", "y label", "series", "x", "y"])


def glue_figure(name: str, figure: plt.Figure) -> None:
    """Hand a figure to the book (for a ``{glue:figure}`` directive) and close it, so that
    the notebook does not also show it inline. Where :func:`keep_figure_data` set a
    folder, the plotted numbers go there as ``<name>.csv`` and a download link is shown."""
    from myst_nb import glue

    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name) \
            or ".." in name:
        raise ValueError(f"figure name {name!r} must be a plain file name (letters, digits, "
                         "'_.-'): it names the CSV of the figure's numbers; rename it")
    folder = _FIGURE_DATA.get("folder")
    if folder is not None:
        from IPython.display import Markdown, display

        from fedlib.paths import atomic_path

        file = f"{_FIGURE_DATA['prefix']}{name}.csv"
        with atomic_path(folder / file) as tmp:
            figure_table(figure).to_csv(tmp, index=False)
        # An HTML link: a Markdown link to a file that is not a page of the book would be
        # read as a cross-reference to a missing document.
        display(Markdown(f'<a href="{_url(_FIGURE_DATA["link"] + file)}" download>'
                         "Plotted numbers of this figure (CSV)</a>"))
    glue(name, figure, display=False)
    plt.close(figure)


def _url(path: str) -> str:
    """``path`` percent-encoded for a link: no space, quote, parenthesis, bracket or
    angle bracket of it ends the link or starts markup."""
    from urllib.parse import quote

    return quote(path)


def left_out_note(parts: Sequence[str], left_out: dict[str, str]) -> str | None:
    """What a chapter shows in place of something that reads ``parts`` when some were left
    out (``left_out``, from :func:`fedlib.sweeps.run_parts`): which, and why (Markdown,
    every name and reason shown as written); None when none was."""
    from fedlib.chapter import markdown_code, markdown_text

    missing = [f"{markdown_code(part)} ({markdown_text(left_out[part])})" for part in parts
               if part in left_out]
    if not missing:
        return None
    return ("Not drawn: the runs of " + "; ".join(missing) + " are not on this page, and "
            "the claims that read them are reported as not run.")


def glue_figure_of_parts(name: str, parts: Sequence[str], left_out: dict[str, str],
                         draw: Callable[[], plt.Figure]) -> None:
    """:func:`glue_figure` of ``draw()``, or, when a part of the chapter that the figure
    reads was left out, :func:`left_out_note` in its place (nothing is drawn from part of
    the runs)."""
    note = left_out_note(parts, left_out)
    if note is None:
        glue_figure(name, draw())
        return
    from IPython.display import Markdown
    from myst_nb import glue

    glue(name, Markdown(note), display=False)


def glue_claims_table(name: str, claims: Sequence, other_tiers: Sequence = ()) -> pd.DataFrame:
    """Hand a paper's evaluated claims to the book as a table (for ``{glue:figure}``),
    with the verdict and evidence of each claim at the other tiers (``other_tiers``,
    claims of the same paper) beside this build's, and the claims whose verdict flips."""
    from myst_nb import glue

    from fedlib.claims import flipped

    rows = []
    for c in claims:
        row = {"claim": c.claim_id, f"verdict ({c.scale})": c.status, "statement": c.text,
               f"measured ({c.scale})": c.evidence}
        same = [o for o in other_tiers if o.claim_id == c.claim_id]
        for o in same:
            row[f"verdict ({o.scale})"] = o.status
            row[f"measured ({o.scale})"] = o.evidence
        if other_tiers:
            row["flips"] = "yes" if flipped([c, *same]) else ""
        row["paper"] = c.paper_value
        rows.append(row)
    table = pd.DataFrame(rows)
    glue(name, escaped_style(table), display=False)
    return table


def escaped_style(table: pd.DataFrame) -> Any:
    """``table`` styled for a page without its row numbers, every cell and column name
    HTML-escaped (pandas' Styler writes them as they are by default)."""
    return (table.style.hide(axis="index").format(escape="html")
            .format_index(escape="html", axis=1))
