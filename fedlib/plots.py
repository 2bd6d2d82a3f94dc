"""Figures: one function per figure kind, each returning a matplotlib Figure.

Captions live in the notebooks' markdown; figures carry axis labels, legends
and panel labels only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

EPSILON_COLOR = "#2ca02c"


def _alpha_label(alpha_q: float) -> str:
    return r"$\alpha Q=\infty$" if math.isinf(alpha_q) else rf"$\alpha Q={alpha_q:g}$"


def excess_risk_panels(
    curves: pd.DataFrame, alphas: Sequence[float], sigmas: Sequence[float] | None = None
) -> plt.Figure:
    """Figure 1a of Bietti et al.: excess risk vs iterations, one panel per noise level.

    ``curves`` has columns noise_multiplier, alpha_q, iteration, excess_risk,
    epsilon (the minimum over step sizes, see ``best_over_steps``). Private
    panels show the privacy guarantee epsilon on a second axis (dashed).
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
        ax.set_yscale("log")
        ax.set_xlabel("iterations")
        ax.set_ylabel("excess risk (best step size)")
        ax.text(0.97, 0.97, rf"$\sigma={sigma:g}$", transform=ax.transAxes, ha="right",
                va="top", fontsize=11, bbox={"facecolor": "white", "alpha": 0.8, "lw": 0})
        private = panel[(panel["alpha_q"] > 0) & (panel["noise_multiplier"] > 0)]
        if len(private):
            eps = private.groupby("iteration")["epsilon"].first()
            twin = ax.twinx()
            twin.plot(eps.index, eps.values, "--", color=EPSILON_COLOR)
            twin.set_ylabel(r"$\varepsilon$ (RDP, $\delta=10^{-4}$)", color=EPSILON_COLOR)
            twin.tick_params(axis="y", colors=EPSILON_COLOR)
            twin.grid(False)
    axes[0][0].legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    return fig
