"""Hu et al. (2020) on HAR: the chapter's figures, one function per figure of the paper.

Figures 3 and 4 share one figure (two panels, one y axis), as the chapter shows them.
Captions live in the notebook.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from fedlib.papers.hu2020.experiment import EPSILON, FIG2_SETTINGS, FIG4_TAU, FIG5_TAU
from fedlib.render.plots import error_vs_parameter, loss_curve_panels


def _setting(frame: pd.DataFrame) -> np.ndarray:
    """Legend label of every row: private as written or with projected duals (at the
    chapter's epsilon), or non-private."""
    projected = frame["dual"] == "projected" if "dual" in frame else False
    return np.where(frame["epsilon"].isna(), "non-private",
                    np.where(projected, f"private, duals projected (eps={EPSILON:g})",
                             f"private (eps={EPSILON:g})"))


def figure_2(runs: pd.DataFrame) -> plt.Figure:
    """Primal objective against rounds, private and non-private, one panel per setting.

    ``runs`` holds every recorded round of the runs (those of Figure 2 are used).
    """
    curves = runs[runs["figure"].str.startswith("fig2")].assign(
        label=lambda f: _setting(f), seed=lambda f: f["repeat"])
    panels = [(f"({p}) tau={t:g}, P_drop={d:g}", curves[curves["figure"] == "fig2" + p])
              for p, (t, d) in FIG2_SETTINGS.items()]
    return loss_curve_panels(curves, panels, value="primal", ylabel="primal objective",
                             log_y=True)


MAJORITY_LABEL = "majority class"
"""Legend label of the majority-class error line on every error figure."""


def draw_majority(fig: plt.Figure, majority: float | None) -> plt.Figure:
    """Draw the majority-class error (always predicting a task's majority class) as a
    labelled horizontal line on every panel of ``fig`` (nothing when ``majority`` is None)."""
    if majority is None:
        return fig
    for ax in fig.axes:
        ax.axhline(majority, color="0.3", ls="--", lw=1.2,
                   label=f"{MAJORITY_LABEL} ({majority:.3f})")
        ax.legend(fontsize=8)
    return fig


def figures_3_and_4(last: pd.DataFrame, majority: float | None = None) -> plt.Figure:
    """Test error against tau (Figure 3) and against P_drop (Figure 4), private and not,
    with the majority-class error ``majority`` as a line.

    ``last`` holds one row per finished run (its final round).
    """
    fig3 = last[last["figure"] == "fig3"]
    fig4 = last[last["figure"] == "fig4"]
    return draw_majority(error_vs_parameter([
        ("device variability tau", fig3.assign(setting=_setting), "tau"),
        (f"drop probability P_drop (tau={FIG4_TAU:g})", fig4.assign(setting=_setting),
         "p_drop"),
    ], log_x=[False, False]), majority)


def figure_5(fig5: pd.DataFrame, best_drop: float, majority: float | None = None
             ) -> plt.Figure:
    """Private test error against epsilon at drop probability ``best_drop``, with the
    majority-class error ``majority`` as a line.

    ``fig5`` holds one row per finished run of Figure 5 (its final round).
    """
    label = np.where(fig5["dual"] == "projected", "private, duals projected", "private")
    return draw_majority(error_vs_parameter([
        (f"epsilon (tau={FIG5_TAU:g}, P_drop={best_drop:g})", fig5.assign(setting=label),
         "epsilon"),
    ], log_x=[True]), majority)


def probe_figure(points: dict[str, pd.DataFrame], majority: float | None = None
                 ) -> plt.Figure:
    """Test error of every probe point (one marker per repeat, the mean as a bar), with
    the majority-class error ``majority`` as a line."""
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="notebook")
    labels = list(points)
    fig, ax = plt.subplots(figsize=(8.0, 0.45 * len(labels) + 1.6))
    for row, label in enumerate(labels):
        errors = points[label]["error"].to_numpy()
        if len(errors):
            ax.barh(row, errors.mean(), color="0.8", height=0.6)
            ax.plot(errors, np.full(len(errors), row), "o", color="C0", ms=4)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("mean test error over the 30 tasks (private, epsilon=8; dots: repeats)")
    if majority is not None:
        ax.axvline(majority, color="0.3", ls="--", lw=1.2,
                   label=f"{MAJORITY_LABEL} ({majority:.3f})")
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


_ACTIVITY_NAMES = {1: "walking", 2: "upstairs", 3: "downstairs", 4: "sitting", 5: "standing",
                   6: "lying"}


def recordings_figure(seconds: float = 90.0, experiment: int = 0) -> plt.Figure:
    """The start of one raw recording: total acceleration (3 axes, in g) and angular
    velocity over time, with the labelled activities shaded and named.

    Where the recordings cannot be had (they are not needed when the published
    features are), the figure says so in words instead.
    """
    import seaborn as sns

    from fedlib.data.errors import DatasetUnavailableError
    from fedlib.data.hapt import SAMPLE_RATE_HZ, load_hapt_recordings

    try:
        recordings = load_hapt_recordings()
    except DatasetUnavailableError:
        fig, ax = plt.subplots(figsize=(10, 1.2))
        ax.axis("off")
        ax.text(0.5, 0.5, "The raw recordings (UCI HAPT, dataset 'hapt') are not available "
                "on this machine:\nthis build reads the published features instead.",
                ha="center", va="center", fontsize=10)
        return fig
    start, stop = recordings.experiment_start[experiment], recordings.experiment_start[
        experiment + 1]
    rows = slice(start, min(stop, start + int(seconds * SAMPLE_RATE_HZ)))
    time = np.arange(rows.stop - rows.start) / SAMPLE_RATE_HZ
    labels = recordings.label[rows]
    sns.set_theme(style="whitegrid", context="notebook")
    fig, axes = plt.subplots(2, 1, figsize=(10, 4.6), sharex=True)
    for ax, values, unit in ((axes[0], recordings.acc[rows], "acceleration (g)"),
                             (axes[1], recordings.gyro[rows], "angular velocity (rad/s)")):
        for axis, name in enumerate("xyz"):
            ax.plot(time, values[:, axis], lw=0.7, label=name)
        ax.set_ylabel(unit)
        edges = np.flatnonzero(np.diff(labels)) + 1
        for begin, end in zip(np.r_[0, edges], np.r_[edges, len(labels)], strict=True):
            code = int(labels[begin])
            if code in _ACTIVITY_NAMES:
                ax.axvspan(time[begin], time[end - 1], color="0.85", zorder=0)
                if ax is axes[0]:
                    ax.text((time[begin] + time[end - 1]) / 2, 0.98, _ACTIVITY_NAMES[code],
                            transform=ax.get_xaxis_transform(), ha="center", va="top",
                            fontsize=8)
    axes[0].legend(loc="lower right", fontsize=8, ncol=3)
    axes[1].set_xlabel(f"time (s), volunteer {recordings.experiment_user[experiment]}, "
                       "experiment 1 of the recordings")
    fig.tight_layout()
    return fig


def feature_distributions(features: np.ndarray, names: tuple[str, ...],
                          activity: np.ndarray, picks: tuple[str, ...]) -> plt.Figure:
    """Histograms of a few features, one colour per activity (the first match of each
    name: the bandsEnergy names repeat, these do not)."""
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="notebook")
    fig, axes = plt.subplots(1, len(picks), figsize=(3.3 * len(picks), 3.0), squeeze=False)
    palette = sns.color_palette("tab10", n_colors=len(_ACTIVITY_NAMES))
    for ax, name in zip(axes[0], picks, strict=True):
        column = features[:, names.index(name)]
        bins = np.linspace(column.min(), column.max(), 40)
        for color, (code, label) in zip(palette, _ACTIVITY_NAMES.items(), strict=True):
            ax.hist(column[activity == code], bins=bins, histtype="step", color=color,
                    label=label, density=True)
        ax.set_xlabel(name, fontsize=9)
        ax.set_yticks([])
    axes[0][0].set_ylabel("density")
    axes[0][-1].legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    return fig
