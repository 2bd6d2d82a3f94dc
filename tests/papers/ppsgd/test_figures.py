"""The PPSGD figures drawn from small hand-made curves: panels, lines, labels and values."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from fedlib.papers.ppsgd import figures, readouts  # noqa: E402

INF = math.inf


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _eps(alpha_q: float, sigma: float, t: int) -> float:
    if alpha_q == 0:
        return 0.0
    return INF if sigma == 0 else 0.1 * t / sigma


def synthetic_curves(alphas=(0.0, 0.3, 1.0, 3.0, INF), sigmas=(0.0, 100.0),
                     clips=(1.0, 100.0), iterations=5) -> pd.DataFrame:
    """Best-over-steps curves: risk = (alpha index + 1) * clip / t."""
    rows = [
        {"clip": c, "noise_multiplier": s, "alpha_q": a, "iteration": t,
         "excess_risk": (i + 1) * c / t, "best_step": 0.1, "epsilon": _eps(a, s, t)}
        for c in clips for s in sigmas for i, a in enumerate(alphas)
        for t in range(1, iterations + 1)
    ]
    return pd.DataFrame(rows)


def accuracy_curves(alphas=(0.0, 0.1, 1.0, 10.0, INF), sigmas=(0.0, 3.0),
                    at=(0, 5, 10)) -> pd.DataFrame:
    """Best-over-steps EMNIST curves: accuracy = 0.1 * (alpha index + 1) + t / 100 - sigma / 100."""
    rows = [
        {"clip": 1.0, "noise_multiplier": s, "alpha_q": a, "iteration": t,
         "accuracy": 0.1 * (i + 1) + t / 100 - s / 100, "best_step": 0.1,
         "epsilon": _eps(a, s, t)}
        for s in sigmas for i, a in enumerate(alphas) for t in at
    ]
    return pd.DataFrame(rows)


def _twins(fig: plt.Figure) -> list[plt.Axes]:
    return [ax for ax in fig.axes if ax.get_ylabel().startswith(r"$\varepsilon$")]


def test_figure_1a_draws_one_panel_per_noise_level_at_the_plots_clip() -> None:
    curves = synthetic_curves()
    fig = figures.figure_1a(curves)
    assert isinstance(fig, plt.Figure)
    panels = [ax for ax in fig.axes if ax.get_ylabel() == "excess risk (best step size)"]
    assert len(panels) == 2
    assert len(_twins(fig)) == 1  # only the private panel shows epsilon
    for ax, sigma in zip(panels, (0.0, 100.0), strict=True):
        assert ax.get_xlabel() == "iterations" and ax.get_yscale() == "log"
        assert ax.texts[0].get_text() == rf"$\sigma={sigma:g}$"
        assert len(ax.get_lines()) == 5
        for i, line in enumerate(ax.get_lines()):
            np.testing.assert_allclose(line.get_xdata(), np.arange(1, 6))
            np.testing.assert_allclose(line.get_ydata(), (i + 1) * 1.0 / np.arange(1, 6))
    labels = [t.get_text() for t in panels[0].get_legend().get_texts()]
    assert labels == [r"$\alpha Q=0$", r"$\alpha Q=0.3$", r"$\alpha Q=1$", r"$\alpha Q=3$",
                      r"$\alpha Q=\infty$"]
    (twin,) = _twins(fig)
    np.testing.assert_allclose(twin.get_lines()[0].get_ydata(), 0.1 * np.arange(1, 6) / 100)


def test_figure_1a_loose_clip_draws_the_largest_clipping_norm() -> None:
    fig = figures.figure_1a_loose_clip(synthetic_curves())
    panels = [ax for ax in fig.axes if ax.get_ylabel() == "excess risk (best step size)"]
    first = panels[0].get_lines()[0]
    np.testing.assert_allclose(first.get_ydata(), 100.0 / np.arange(1, 6))


def test_figure_1c_and_1d_draw_accuracy_per_noise_panel() -> None:
    curves = accuracy_curves()
    for draw in (figures.figure_1c, figures.figure_1d):
        fig = draw(curves, (0.0, 3.0))
        panels = [ax for ax in fig.axes if ax.get_ylabel() == "test accuracy (best step size)"]
        assert len(panels) == 2 and len(_twins(fig)) == 1
        for ax, sigma in zip(panels, (0.0, 3.0), strict=True):
            assert ax.get_xlabel() == "iterations"
            assert len(ax.get_lines()) == 5
            for i, line in enumerate(ax.get_lines()):
                np.testing.assert_allclose(line.get_xdata(), [0, 5, 10])
                np.testing.assert_allclose(line.get_ydata(),
                                           0.1 * (i + 1) + np.array([0, 5, 10]) / 100 - sigma / 100)
        plt.close(fig)


def test_accuracy_panels_skip_levels_without_curves() -> None:
    curves = accuracy_curves(alphas=(0.0, 1.0, INF))
    fig = figures.accuracy_panels(curves, (0.0, 0.1, 1.0, 10.0, INF), (3.0,))
    (panel,) = [ax for ax in fig.axes if ax.get_ylabel() == "test accuracy (best step size)"]
    assert len(panel.get_lines()) == 3
    labels = [t.get_text() for t in panel.get_legend().get_texts()]
    assert labels == [r"$\alpha Q=0$", r"$\alpha Q=1$", r"$\alpha Q=\infty$"]


def test_figure_2_draws_the_tradeoff_of_each_task() -> None:
    curves_1a = synthetic_curves(sigmas=(0.0, 10.0, 100.0))
    curves_1c = accuracy_curves(sigmas=(0.0, 1.0, 3.0))
    fig = figures.figure_2(curves_1a, curves_1c)
    assert len(fig.axes) == 2
    ax_emnist, ax_synth = fig.axes
    assert ax_emnist.get_ylabel() == "EMNIST linear: test accuracy"
    assert ax_synth.get_ylabel() == "synthetic: excess risk"
    assert ax_emnist.get_xscale() == "log" and ax_synth.get_yscale() == "log"
    tables = readouts.figure2_tradeoffs(curves_1a, curves_1c)
    table = tables["EMNIST linear (accuracy)"]
    private = table[table["noise_multiplier"] > 0]
    by_label = {line.get_label(): line for line in ax_emnist.get_lines()}
    assert {"global only", "local only", "best personalized",
            r"intermediate $\alpha Q=1$"} <= set(by_label)
    np.testing.assert_allclose(by_label["best personalized"].get_xdata(), private["epsilon"])
    np.testing.assert_allclose(by_label["best personalized"].get_ydata(), private["envelope"])
    np.testing.assert_allclose(by_label["global only"].get_ydata(), private["global"])
    np.testing.assert_allclose(by_label["local only"].get_ydata(), [private["local"].iloc[0]] * 2)
    faint = [line for line in ax_emnist.get_lines() if line.get_alpha() == 0.25]
    assert len(faint) == 2  # alpha*Q = 0.1 and 10
    # Synthetic at T, lower is better: the envelope is the best level, alpha*Q = 0.
    synthetic = tables["synthetic (excess risk)"]
    envelope = [line for line in ax_synth.get_lines() if line.get_label() == "best personalized"]
    np.testing.assert_allclose(envelope[0].get_ydata(),
                               synthetic[synthetic["noise_multiplier"] > 0]["envelope"])
    np.testing.assert_allclose(envelope[0].get_ydata(), [1.0 / 5] * 2)


def _bands(ax: plt.Axes) -> list[np.ndarray]:
    """The (x, y) vertices of every shaded band of ``ax``."""
    from matplotlib.collections import PolyCollection

    return [c.get_paths()[0].vertices for c in ax.collections if isinstance(c, PolyCollection)]


def test_the_figures_shade_the_range_over_seeds_around_the_mean() -> None:
    seeded = pd.concat([accuracy_curves().assign(seed=0),
                        accuracy_curves().assign(seed=1, accuracy=lambda f: f["accuracy"] + 0.04)])
    fig = figures.figure_1d(seeded, (0.0, 3.0))
    panel = [ax for ax in fig.axes if ax.get_ylabel() == "test accuracy (best step size)"][0]
    bands = _bands(panel)
    assert len(bands) == 5  # one per level
    first = bands[0]
    assert first[:, 1].min() == pytest.approx(0.1) and first[:, 1].max() == pytest.approx(0.24)
    np.testing.assert_allclose(panel.get_lines()[0].get_ydata(), [0.12, 0.17, 0.22])
    assert not _bands(figures.figure_1d(accuracy_curves(), (0.0, 3.0)).axes[0])  # one seed
    tripled = synthetic_curves().assign(seed=1, excess_risk=lambda f: 3 * f["excess_risk"])
    risk = pd.concat([synthetic_curves().assign(seed=0), tripled])
    panel = figures.figure_1a(risk).axes[0]
    assert len(_bands(panel)) == 5
    np.testing.assert_allclose(panel.get_lines()[0].get_ydata(), 2.0 / np.arange(1, 6))
