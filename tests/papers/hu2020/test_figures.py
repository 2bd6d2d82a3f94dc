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
    assert drop_ax.get_xlabel() == f"drop probability P_drop (tau={hu.FIG4_TAU:g})"
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
    fig5 = pd.DataFrame({"epsilon": [0.1, 0.1, 1.0, 1.0, 10.0, 10.0, 0.1, 1.0, 10.0],
                         "error": [0.5, 0.7, 0.4, 0.4, 0.2, 0.1, 0.3, 0.2, 0.1],
                         "dual": ["as-written"] * 6 + ["projected"] * 3})
    fig = hu_figures.figure_5(fig5, best_drop=0.2)
    assert len(fig.axes) == 1
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "epsilon (tau=1, P_drop=0.2)"
    bars = _error_bars(ax)
    assert sorted(bars) == ["private", "private, duals projected"]
    x, y = bars["private"]
    np.testing.assert_allclose(x, [0.1, 1.0, 10.0])
    np.testing.assert_allclose(y, [0.6, 0.4, 0.15])
    np.testing.assert_allclose(bars["private, duals projected"][1], [0.3, 0.2, 0.1])


def test_feature_distributions_draw_one_histogram_per_activity_and_feature() -> None:
    rng = np.random.default_rng(0)
    activity = np.repeat(np.arange(1, 7), 20)
    features = rng.uniform(-1, 1, (120, 3))
    names = ("a()", "b()", "c()")
    fig = hu_figures.feature_distributions(features, names, activity, ("c()", "a()"))
    assert [ax.get_xlabel() for ax in fig.axes] == ["c()", "a()"]
    for ax in fig.axes:
        assert len(ax.patches) == 6  # one step histogram per activity
    legend = [t.get_text() for t in fig.axes[-1].get_legend().get_texts()]
    assert legend == ["walking", "upstairs", "downstairs", "sitting", "standing", "lying"]
    plt.close(fig)


def test_recordings_figure_shows_the_signals_or_says_they_are_absent(monkeypatch) -> None:
    from fedlib.data import hapt
    from fedlib.data.errors import DatasetUnavailableError

    n = 50 * 20
    label = np.repeat([4, 7, 1, -1], n // 4).astype(np.int8)
    acc = np.tile([0.0, 0.0, 1.0], (n, 1))
    fake = hapt.HaptRecordings(acc=acc, gyro=np.zeros((n, 3)), label=label,
                               experiment_user=np.array([3], dtype=np.int8),
                               experiment_start=np.array([0, n]))
    monkeypatch.setattr(hapt, "load_hapt_recordings", lambda: fake)
    fig = hu_figures.recordings_figure(seconds=10.0)  # the first half only
    top, bottom = fig.axes
    assert len(top.lines) == 3 and len(bottom.lines) == 3
    np.testing.assert_allclose(top.lines[2].get_ydata(), 1.0)  # gravity along z
    assert len(top.lines[0].get_xdata()) == 500
    assert [t.get_text() for t in top.texts] == ["sitting"]  # the transition is not named
    plt.close(fig)
    fig = hu_figures.recordings_figure(seconds=60.0)  # longer than the recording
    assert len(fig.axes[0].lines[0].get_xdata()) == n
    assert [t.get_text() for t in fig.axes[0].texts] == ["sitting", "walking"]
    plt.close(fig)

    def absent():
        raise DatasetUnavailableError("not here")

    monkeypatch.setattr(hapt, "load_hapt_recordings", absent)
    fig = hu_figures.recordings_figure()
    assert "not available" in fig.axes[0].texts[0].get_text()
    plt.close(fig)
