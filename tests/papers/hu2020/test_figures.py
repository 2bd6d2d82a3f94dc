"""Hu et al. 2020 on HAR: the figures draw what they are given."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from fedlib.papers.hu2020 import experiment as hu  # noqa: E402
from fedlib.papers.hu2020 import figures as hu_figures  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _lines(ax) -> dict[str, np.ndarray]:
    """The y values of every labelled line of a panel."""
    return {line.get_label(): np.asarray(line.get_ydata(), dtype=float)
            for line in ax.get_lines() if not line.get_label().startswith("_")}


def _error_bars(ax) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(x, y) of the data line of every labelled error-bar series of a panel."""
    return {bars.get_label(): (np.asarray(bars.lines[0].get_xdata(), dtype=float),
                               np.asarray(bars.lines[0].get_ydata(), dtype=float))
            for bars in ax.containers}


def test_figure_2_has_one_panel_per_setting_with_both_solvers() -> None:
    rows = []
    for index, panel in enumerate(hu.FIG2_SETTINGS):
        for eps, scale in ((hu.EPSILON, 10.0), (np.nan, 1.0)):
            for repeat in range(2):
                for r in range(3):
                    rows.append({"figure": "fig2" + panel, "epsilon": eps, "repeat": repeat,
                                 "round": r, "primal": scale * (index + 1) * (r + 1 + repeat)})
    rows.append({"figure": "fig3", "epsilon": np.nan, "repeat": 0, "round": 0, "primal": 1e9})
    fig = hu_figures.figure_2(pd.DataFrame(rows))
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == 3
    for index, ax in enumerate(axes):
        assert ax.get_ylabel() == "primal objective" and ax.get_yscale() == "log"
        assert ax.get_xlabel() == "round"
        lines = _lines(ax)
        assert set(lines) == {f"private (eps={hu.EPSILON:g})", "non-private"}
        # mean over the two repeats: (r + 1) + 0.5
        rounds = np.arange(3) + 1.5
        np.testing.assert_allclose(lines["non-private"], (index + 1) * rounds)
        np.testing.assert_allclose(lines[f"private (eps={hu.EPSILON:g})"],
                                   10 * (index + 1) * rounds)
    titles = [t.get_text() for ax in axes for t in ax.texts]
    assert titles == ["(a) tau=0, P_drop=0", "(b) tau=0.5, P_drop=0",
                      "(c) tau=0.5, P_drop=0.2"]


def test_figures_3_and_4_plot_the_mean_error_per_parameter() -> None:
    rows = []
    for figure, column, values in (("fig3", "tau", (0.0, 0.5, 1.0)),
                                   ("fig4", "p_drop", (0.0, 0.2))):
        for eps in (hu.EPSILON, np.nan):
            for x in values:
                for repeat, spread in enumerate((-0.01, 0.01)):
                    error = x / 10 + (0.3 if eps == eps else 0.1) + spread
                    rows.append({"figure": figure, "epsilon": eps, "repeat": repeat,
                                 "tau": x if column == "tau" else 1.0,
                                 "p_drop": x if column == "p_drop" else 0.0, "error": error})
    rows.append({"figure": "fig5", "epsilon": 1.0, "repeat": 0, "tau": 1.0, "p_drop": 0.0,
                 "error": 9.0})
    fig = hu_figures.figures_3_and_4(pd.DataFrame(rows))
    assert len(fig.axes) == 2
    (tau_ax, drop_ax) = fig.axes
    assert tau_ax.get_xlabel() == "device variability tau"
    assert drop_ax.get_xlabel() == "drop probability P_drop"
    assert tau_ax.get_ylabel() == "mean test error"
    private = f"private (eps={hu.EPSILON:g})"
    for ax, xs in ((tau_ax, [0.0, 0.5, 1.0]), (drop_ax, [0.0, 0.2])):
        assert ax.get_xscale() == "linear"
        bars = _error_bars(ax)
        assert set(bars) == {private, "non-private"}
        for label, level in ((private, 0.3), ("non-private", 0.1)):
            x, y = bars[label]
            np.testing.assert_allclose(x, xs)
            np.testing.assert_allclose(y, np.array(xs) / 10 + level)


def test_figure_5_plots_error_against_epsilon_on_a_log_axis() -> None:
    fig5 = pd.DataFrame({"epsilon": [0.1, 0.1, 1.0, 1.0, 10.0, 10.0],
                         "error": [0.5, 0.7, 0.4, 0.4, 0.2, 0.1]})
    fig = hu_figures.figure_5(fig5, best_drop=0.2)
    assert len(fig.axes) == 1
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "epsilon"
    bars = _error_bars(ax)
    assert list(bars) == ["private, tau=1, P_drop=0.2"]
    x, y = bars["private, tau=1, P_drop=0.2"]
    np.testing.assert_allclose(x, [0.1, 1.0, 10.0])
    np.testing.assert_allclose(y, [0.6, 0.4, 0.15])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["private, tau=1, P_drop=0.2"]
