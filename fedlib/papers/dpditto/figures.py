"""The DP-Ditto chapter's figures, one function per paper figure, and its panel names.

Every figure function returns a :class:`matplotlib.figure.Figure`; captions live
in the notebook. The panel names are kept apart from the runs, so that renaming
a panel does not invalidate cached runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from fedlib.papers.dpditto.experiment import DittoSetup
from fedlib.papers.dpditto.readouts import comparison, lambda_grid, loss_by_rounds

PANEL_NAMES = {"mnist-dnn": "MNIST, DNN", "mnist-mlr": "MNIST, MLR",
               "fmnist-cnn": "Fashion-MNIST, CNN", "cifar10-cnn": "CIFAR-10, CNN"}


def panel_label(panel: str) -> str:
    """The name of a panel in figures; CIFAR-10 says when it is the JPEG proxy."""
    if panel == "cifar10-cnn":
        return f"{_cifar10_name()}, CNN"
    try:
        return PANEL_NAMES[panel]
    except KeyError:
        raise ValueError(f"unknown panel {panel!r}; valid: {', '.join(PANEL_NAMES)}") from None


@lru_cache(maxsize=1)
def _cifar10_name() -> str:
    """"CIFAR-10", or its proxy's name when only the JPEG re-encoding is available."""
    from fedlib.data.cifar10 import load_cifar10  # the paper tier's data only

    return load_cifar10("test").name


def figure_2(curves: Mapping[float, tuple[int, np.ndarray]]) -> plt.Figure:
    """Figure 2: the reconstructed bound vs T, one line per epsilon, a dot at each T*.

    ``curves`` maps epsilon to (T*, bound at T = 1, 2, ...), as
    :func:`fedlib.papers.dpditto.bound.bound_curves` returns them.
    """
    fig, ax = plt.subplots(figsize=(6, 4))
    for eps, (t_star, curve) in curves.items():
        ax.plot(np.arange(1, len(curve) + 1), curve, label=f"eps={eps:g} (T*={t_star})")
        ax.plot(t_star, curve[t_star - 1], "ko")
    ax.set_yscale("log")
    ax.set_xlabel("aggregations T")
    ax.set_ylabel("E||v_T - v*||^2 (bound)")
    ax.legend()
    return fig


def compare_figure(runs: pd.DataFrame, setup: DittoSetup, panel: str) -> plt.Figure:
    """Figures 3 and 4 on one panel: test accuracy (top) and the std of the personal
    training losses (bottom) vs T at the two compared epsilons (columns), one line per
    method (:func:`fedlib.papers.dpditto.readouts.comparison`): the mean over seeds, with
    the range over seeds as a band."""
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    for col, eps in enumerate(setup.compare_epsilons):
        frame = comparison(runs, panel, eps)
        for method, sel in frame.groupby("method"):
            curve = sel.groupby("rounds")[["accuracy", "fairness"]].agg(["mean", "min", "max"])
            for row, metric in enumerate(("accuracy", "fairness")):
                ax = axes[row, col]
                ax.plot(curve.index, curve[(metric, "mean")], marker="o", label=method)
                ax.fill_between(curve.index, curve[(metric, "min")], curve[(metric, "max")],
                                alpha=0.15)
                ax.set_ylabel("test accuracy" if metric == "accuracy" else "std of train losses")
        axes[0, col].set_title(f"{panel_label(panel)}, eps = {eps:g}")
        axes[1, col].set_xlabel("aggregations T")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def figure_5(runs: pd.DataFrame, setup: DittoSetup) -> plt.Figure:
    """Figure 5: DP-Ditto's mean personal training loss vs T at the small lambda, one
    panel per dataset/model and one line per epsilon."""
    fig, axes = plt.subplots(1, len(setup.panels), figsize=(5 * len(setup.panels), 3.6),
                             squeeze=False)
    for ax, panel in zip(axes[0], setup.panels, strict=True):
        for eps in setup.epsilons:
            curve = loss_by_rounds(runs, panel, eps, setup.fig5_lambda)
            ax.plot(curve.index, curve.values, marker="o", label=f"eps={eps:g}")
        ax.set_title(f"{panel_label(panel)}, lambda={setup.fig5_lambda:g}")
        ax.set_xlabel("aggregations T")
        ax.set_ylabel("personal training loss")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _lambda_grid(runs: pd.DataFrame, setup: DittoSetup) -> pd.DataFrame:
    """The (lambda, T) grid of Figures 6 and 7: the first lambda panel at their epsilon."""
    return lambda_grid(runs, setup.lambda_panels[0], setup.fig6_epsilon)


def figure_6(runs: pd.DataFrame, setup: DittoSetup) -> plt.Figure:
    """Figure 6: accuracy (left) and the std of the training losses (right) vs T, one
    line per lambda, on the first lambda panel at the Figure 6 epsilon."""
    grid = _lambda_grid(runs, setup)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for lam, sel in grid.groupby(level="lam"):
        sel = sel.droplevel("lam")
        axes[0].plot(sel.index, sel["accuracy"], marker="o", label=f"lambda={lam:g}")
        axes[1].plot(sel.index, sel["fairness"], marker="o", label=f"lambda={lam:g}")
    axes[0].set_ylabel("test accuracy")
    axes[1].set_ylabel("std of train losses")
    for ax in axes:
        ax.set_xlabel("aggregations T")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def figure_7(runs: pd.DataFrame, setup: DittoSetup) -> plt.Figure:
    """Figure 7: the std of the training losses vs lambda, one line per T (left), and the
    personal training loss vs T, one line per lambda (right), on the grid of Figure 6."""
    grid = _lambda_grid(runs, setup)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for t, sel in grid.groupby(level="rounds"):
        sel = sel.droplevel("rounds")
        axes[0].plot(sel.index, sel["fairness"], marker="o", label=f"T={t}")
    for lam, sel in grid.groupby(level="lam"):
        sel = sel.droplevel("lam")
        axes[1].plot(sel.index, sel["loss"], marker="o", label=f"lambda={lam:g}")
    axes[0].set_xlabel("lambda")
    axes[0].set_ylabel("std of train losses")
    axes[1].set_xlabel("aggregations T")
    axes[1].set_ylabel("personal training loss")
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    return fig


def show(figure: plt.Figure) -> None:
    """Show a figure inline (one the book does not glue) and close it."""
    from IPython.display import display

    display(figure)
    plt.close(figure)
