"""Figures of the PADPFL chapter: the paper's Figures 2-9 and the corruption the clients get.

Figures 2, 4, 6 and 8 are the non-private loss curves of scenarios S1-S4 (one
panel); Figures 3, 5, 7 and 9 the private ones, with the R the claims are judged at
(R < T, the server adds noise) on the left and R = T (the ablation, no server noise)
on the right (log scale). Every curve is the mean over seeds with the
range over seeds as a band, labelled by :func:`~fedlib.papers.padpfl.claims.curve_label`.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from fedlib.data.corruption import salt_and_pepper
from fedlib.papers.padpfl.claims import curve_label
from fedlib.papers.padpfl.experiment import DENSITY_NAMES, PadpflSetup
from fedlib.render.plots import image_grid, loss_curve_panels

CORRUPTION_DENSITIES = (0.0, 0.05, 0.2, 0.5)
"""The salt-and-pepper densities the scenarios use: clean, slight, moderate, severe."""


def _labelled(runs: pd.DataFrame) -> pd.DataFrame:
    return runs.assign(label=runs.apply(curve_label, axis=1))


def _nonprivate(runs: pd.DataFrame, scenario: str) -> plt.Figure:
    frame = _labelled(runs[(runs["scenario"] == scenario) & runs["epsilon"].isna()])
    return loss_curve_panels(frame, [("", frame)])


def _private(runs: pd.DataFrame, scenario: str, setup: PadpflSetup) -> plt.Figure:
    big, small = setup.rounds, setup.small_exposures
    both = _labelled(runs[(runs["scenario"] == scenario) & runs["epsilon"].notna()])
    if small == big:
        return loss_curve_panels(both, [(f"R = T = {big}", both[both["exposures"] == big])],
                                 log_y=True)
    panels = [(f"R = {small} (judged)", both[both["exposures"] == small]),
              (f"R = T = {big} (ablation)", both[both["exposures"] == big])]
    return loss_curve_panels(both, panels, log_y=True)


def figure_2(runs: pd.DataFrame) -> plt.Figure:
    """S1 without privacy: the non-private assignments' global training loss per round."""
    return _nonprivate(runs, "S1")


def figure_3(runs: pd.DataFrame, setup: PadpflSetup) -> plt.Figure:
    """S1 with privacy: left the R of ``setup`` the claims are judged at, right R = T
    (log scale)."""
    return _private(runs, "S1", setup)


def figure_4(runs: pd.DataFrame) -> plt.Figure:
    """S2 without privacy."""
    return _nonprivate(runs, "S2")


def figure_5(runs: pd.DataFrame, setup: PadpflSetup) -> plt.Figure:
    """S2 with privacy: left the judged R, right R = T (log scale)."""
    return _private(runs, "S2", setup)


def figure_6(runs: pd.DataFrame) -> plt.Figure:
    """S3 without privacy."""
    return _nonprivate(runs, "S3")


def figure_7(runs: pd.DataFrame, setup: PadpflSetup) -> plt.Figure:
    """S3 with privacy: left the judged R, right R = T (log scale)."""
    return _private(runs, "S3", setup)


def figure_8(runs: pd.DataFrame) -> plt.Figure:
    """S4 without privacy (the parts' data quality is reversed during training)."""
    return _nonprivate(runs, "S4")


def figure_9(runs: pd.DataFrame, setup: PadpflSetup) -> plt.Figure:
    """S4 with privacy and adaptive factors: left the judged R, right R = T (log
    scale)."""
    return _private(runs, "S4", setup)


def corruption_grid(
    images: np.ndarray, densities: Sequence[float] = CORRUPTION_DENSITIES, columns: int = 8
) -> plt.Figure:
    """The same ``columns`` images, drawn at random from ``images`` (flat 784-pixel rows in
    [0, 1]), with salt-and-pepper noise at each density, one row per density."""
    rng = np.random.default_rng(0)
    sample = images[rng.choice(len(images), columns, replace=False)]
    rows = [salt_and_pepper(sample, d, np.random.default_rng(1)) for d in densities]
    return image_grid(np.concatenate(rows),
                      [f"{DENSITY_NAMES[d]} ({d:g})" for d in densities], columns=columns)


def ablation_figure(ablation: pd.DataFrame, arms: Sequence[str]) -> plt.Figure:
    """Final training loss of the equal-total-noise ablation: one panel per scenario, one
    bar per arm (in the order of ``arms``) with the 95% interval over the seeds, and the
    initial loss as a dashed line."""
    from fedlib.verdicts.compare import estimate

    scenarios = sorted(ablation["scenario"].unique())
    last = ablation[ablation["round"] == ablation["round"].max()]
    fig, axes = plt.subplots(1, len(scenarios), figsize=(4.2 * len(scenarios), 3.6),
                             sharey=True, squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, scenario in zip(axes[0], scenarios, strict=True):
        for i, arm in enumerate(arms):
            values = last[(last["scenario"] == scenario) & (last["arm"] == arm)]
            est = estimate(values.set_index("seed")["train_loss"])
            ax.bar(i, est.mean, color=colors[i % len(colors)], label=arm,
                   yerr=[[est.mean - est.low], [est.high - est.mean]], capsize=3)
        start = ablation[(ablation["scenario"] == scenario) & (ablation["round"] == 0)]
        ax.axhline(start["train_loss"].mean(), color="grey", ls="--", lw=1,
                   label="initial loss")
        ax.set_title(scenario)
        ax.set_xticks([])
    axes[0][0].set_ylabel("final training loss")
    axes[0][0].set_ylim(bottom=min(0.0, float(last["train_loss"].min())))
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig
