"""Figures: one function per figure kind, each returning a matplotlib Figure.

Captions live in the notebooks' markdown; figures carry axis labels, legends
and panel labels only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
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
