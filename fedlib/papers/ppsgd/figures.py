"""Bietti et al. (2022): the chapter's figures, one function per figure of the paper.

Figure 1a (and its variant at a loose clipping norm) draws the synthetic
task's excess risk, Figures 1c and 1d the EMNIST test accuracy, Figure 2 the
accuracy-privacy trade-off. Each function returns a matplotlib Figure; the
captions live in the notebook.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from fedlib.papers.ppsgd.experiment import (
    EMNIST_FIGURE_ALPHA_Q,
    FIGURE_CLIP,
    SYNTHETIC_FIGURE_ALPHA_Q,
)
from fedlib.papers.ppsgd.readouts import (
    EMNIST_TRADEOFF,
    INTERMEDIATE_ALPHA_Q,
    SYNTHETIC_TRADEOFF,
    figure2_ends,
    figure2_tradeoffs,
    mean_over_seeds,
)
from fedlib.render.plots import epsilon_twin_axis, excess_risk_panels, seed_band

LOCAL_COLOR = "#d62728"
GLOBAL_COLOR = "#1f77b4"
INTERMEDIATE_COLOR = "#2ca02c"


def _alpha_label(alpha_q: float) -> str:
    return r"$\alpha Q=\infty$" if math.isinf(alpha_q) else rf"$\alpha Q={alpha_q:g}$"


def figure_1a(curves: pd.DataFrame, clip: float = FIGURE_CLIP) -> plt.Figure:
    """Excess risk against iterations, one panel per noise level, at clipping norm ``clip``.

    ``curves``: the best-over-steps curves of the Figure 1a runs (every clipping
    norm), averaged over seeds; the personalization levels the paper plots are drawn.
    """
    seeded = curves[curves["clip"] == clip]
    return excess_risk_panels(mean_over_seeds(seeded), SYNTHETIC_FIGURE_ALPHA_Q,
                              seeded=seeded)


def figure_1a_loose_clip(curves: pd.DataFrame) -> plt.Figure:
    """Figure 1a at the largest clipping norm of the runs, where clipping does not bind."""
    return figure_1a(curves, clip=curves["clip"].max())


def accuracy_panels(curves: pd.DataFrame, alphas: Sequence[float], sigmas: Sequence[float]
                    ) -> plt.Figure:
    """Test accuracy (best step size) against iterations, one panel per noise level.

    The levels of ``alphas`` present in ``curves`` get one line each (the mean over
    seeds, the seeds' range shaded where there are several); private panels show
    epsilon on a second axis (dashed).
    """
    sns.set_theme(style="whitegrid", context="notebook")
    seeded = curves
    curves = mean_over_seeds(curves)
    alphas = [a for a in alphas if a in set(curves["alpha_q"])]
    palette = sns.color_palette("viridis", n_colors=len(alphas))
    fig, axes = plt.subplots(1, len(sigmas), figsize=(4.6 * len(sigmas), 3.5), squeeze=False,
                             sharey=True)
    for ax, sigma in zip(axes[0], sigmas, strict=True):
        panel = curves[curves["noise_multiplier"] == sigma]
        for color, alpha_q in zip(palette, alphas, strict=True):
            line = panel[panel["alpha_q"] == alpha_q].sort_values("iteration")
            ax.plot(line["iteration"], line["accuracy"], color=color, marker=".",
                    label=_alpha_label(alpha_q))
            seed_band(ax, seeded[(seeded["noise_multiplier"] == sigma)
                                 & (seeded["alpha_q"] == alpha_q)], "iteration", "accuracy",
                      color)
        ax.set_xlabel("iterations")
        ax.set_ylabel("test accuracy (best step size)")
        ax.text(0.03, 0.97, rf"$\sigma={sigma:g}$", transform=ax.transAxes, va="top")
        epsilon_twin_axis(ax, panel)
    axes[0][0].legend(loc="center right", fontsize=8)
    fig.tight_layout()
    return fig


def figure_1c(curves: pd.DataFrame, panel_sigmas: Sequence[float]) -> plt.Figure:
    """Figure 1c: the linear model's test accuracy, one panel per noise level plotted."""
    return accuracy_panels(curves, EMNIST_FIGURE_ALPHA_Q, panel_sigmas)


def figure_1d(curves: pd.DataFrame, panel_sigmas: Sequence[float]) -> plt.Figure:
    """Figure 1d: the CNN's test accuracy, one panel per noise level plotted."""
    return accuracy_panels(curves, EMNIST_FIGURE_ALPHA_Q, panel_sigmas)


def tradeoff_panel(ax: plt.Axes, end: pd.DataFrame, table: pd.DataFrame, value: str,
                   label: str) -> None:
    """One panel of Figure 2: ``value`` against epsilon (log x) per personalization level.

    ``end``: the final value of every (noise, alpha) curve; ``table``: its
    trade-off table (local, global, intermediate and envelope per noise level).
    Only private noise levels (finite epsilon > 0) are drawn.
    """
    private = table[np.isfinite(table["epsilon"]) & (table["epsilon"] > 0)]
    eps = private["epsilon"]
    eps_of = dict(zip(private["noise_multiplier"], eps, strict=True))
    for alpha_q in sorted(end["alpha_q"].unique()):
        if alpha_q in (0.0, float("inf"), INTERMEDIATE_ALPHA_Q):
            continue
        # A level run beyond the grid runs at some noise levels only.
        line = end[(end["alpha_q"] == alpha_q) & end["noise_multiplier"].isin(
            eps_of)].sort_values("noise_multiplier")
        ax.plot(line["noise_multiplier"].map(eps_of).values, line[value].values,
                color=INTERMEDIATE_COLOR, alpha=0.25, lw=0.8)
    ax.plot(eps, private["intermediate"], color=INTERMEDIATE_COLOR, marker="o",
            label=rf"intermediate $\alpha Q={INTERMEDIATE_ALPHA_Q:g}$")
    ax.plot(eps, private["global"], color=GLOBAL_COLOR, marker="o", label="global only")
    ax.axhline(private["local"].iloc[0], color=LOCAL_COLOR, label="local only")
    ax.plot(eps, private["envelope"], color="black", lw=2.5, marker="s",
            label="best personalized")
    ax.set_xscale("log")
    ax.set_xlabel(r"privacy $\varepsilon$ (RDP, $\delta=10^{-4}$)")
    ax.set_ylabel(label)


def figure_2(curves_1a: pd.DataFrame, curves_1c: pd.DataFrame) -> plt.Figure:
    """Figure 2: final value against epsilon; left EMNIST linear (accuracy), right the
    synthetic task at C = 1 (excess risk, log scale)."""
    sns.set_theme(style="whitegrid", context="notebook")
    ends = figure2_ends(curves_1a, curves_1c)
    tables = figure2_tradeoffs(curves_1a, curves_1c)
    fig, (ax_emnist, ax_synth) = plt.subplots(1, 2, figsize=(10, 3.6))
    tradeoff_panel(ax_emnist, ends[EMNIST_TRADEOFF], tables[EMNIST_TRADEOFF], "accuracy",
                   "EMNIST linear: test accuracy")
    tradeoff_panel(ax_synth, ends[SYNTHETIC_TRADEOFF], tables[SYNTHETIC_TRADEOFF],
                   "excess_risk", "synthetic: excess risk")
    ax_synth.set_yscale("log")
    ax_emnist.legend(fontsize=8)
    fig.tight_layout()
    return fig
