"""Figures and tables handed to the book (myst-nb glue), with the numbers each figure
plots kept beside it as CSV."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from fedlib.render.plots import _FIGURE_DATA


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
    from fedlib.render.markdown import markdown_code, markdown_text

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

    from fedlib.verdicts.claims import flipped

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
