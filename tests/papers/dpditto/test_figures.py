"""DP-Ditto figures: panels, lines, labels and plotted values on hand-made runs."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from fedlib.papers.dpditto import experiment as dd  # noqa: E402
from fedlib.papers.dpditto import figures  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_panel_labels() -> None:
    assert figures.panel_label("mnist-mlr") == "MNIST, MLR"
    with pytest.raises(ValueError, match="unknown panel 'svhn'"):
        figures.panel_label("svhn")


def test_figure_2_draws_each_curve_and_marks_its_optimum() -> None:
    curves = {1.0: (3, np.array([4.0, 2.0, 1.0, 3.0])), 10.0: (2, np.array([5.0, 0.5, 2.0, 6.0]))}
    fig = figures.figure_2(curves)
    (ax,) = fig.axes
    lines = ax.get_lines()
    assert len(lines) == 4  # one curve and one dot per epsilon
    assert [line.get_label() for line in lines[::2]] == ["eps=1 (T*=3)", "eps=10 (T*=2)"]
    np.testing.assert_array_equal(lines[0].get_xdata(), [1, 2, 3, 4])
    np.testing.assert_array_equal(lines[0].get_ydata(), [4.0, 2.0, 1.0, 3.0])
    assert list(lines[1].get_xdata()) == [3] and list(lines[1].get_ydata()) == [1.0]
    assert list(lines[3].get_xdata()) == [2] and list(lines[3].get_ydata()) == [0.5]
    assert ax.get_yscale() == "log"
    assert ax.get_xlabel() == "aggregations T"


def _comparison_runs() -> pd.DataFrame:
    """Two seeds, T in (1, 2): DP-Ditto at lambda 0.5 and 1 for both epsilons, the local
    models (lambda 0, eps inf) and FedAMP."""
    rows = []
    for seed in (0, 1):
        for t in (1, 2):
            for eps in (10.0, 100.0):
                for lam, acc in ((0.5, 0.8), (1.0, 0.6)):
                    rows.append({"panel": "mnist-mlr", "seed": seed, "rounds": t,
                                 "method": "DP-Ditto", "epsilon": eps, "lam": lam,
                                 "accuracy": acc + 0.1 * seed + 0.01 * t,
                                 "fairness": 0.1 * lam + 0.01 * seed, "loss": 1.0})
                rows.append({"panel": "mnist-mlr", "seed": seed, "rounds": t,
                             "method": "FedAMP", "epsilon": eps, "lam": np.nan,
                             "accuracy": 0.5 + 0.1 * seed, "fairness": 0.3, "loss": 1.0})
            rows.append({"panel": "mnist-mlr", "seed": seed, "rounds": t, "method": "DP-Ditto",
                         "epsilon": np.inf, "lam": 0.0, "accuracy": 0.7, "fairness": 0.05,
                         "loss": 1.0})
    return pd.DataFrame(rows)


def test_compare_figure_has_accuracy_and_fairness_at_both_epsilons() -> None:
    setup = dd.tier("smoke")
    fig = figures.compare_figure(_comparison_runs(), setup, "mnist-mlr")
    assert len(fig.axes) == 4
    top, bottom = fig.axes[:2], fig.axes[2:]
    assert [ax.get_title() for ax in top] == ["MNIST, MLR, eps = 10", "MNIST, MLR, eps = 100"]
    assert {ax.get_ylabel() for ax in top} == {"test accuracy"}
    assert {ax.get_ylabel() for ax in bottom} == {"std of train losses"}
    assert [ax.get_xlabel() for ax in bottom] == ["aggregations T"] * 2
    for ax in fig.axes:
        assert sorted(line.get_label() for line in ax.get_lines()) == [
            "DP-Ditto (lambda=0.5)", "DP-FedAvg", "FedAMP", "Local"]
        assert len(ax.collections) == 4  # a band per method
    ditto = next(line for line in top[0].get_lines() if line.get_label().startswith("DP-Ditto"))
    np.testing.assert_array_equal(ditto.get_xdata(), [1, 2])
    np.testing.assert_allclose(ditto.get_ydata(), [0.85 + 0.01, 0.85 + 0.02])  # seed mean
    fedavg = next(line for line in bottom[1].get_lines() if line.get_label() == "DP-FedAvg")
    np.testing.assert_allclose(fedavg.get_ydata(), [0.105, 0.105])


def test_figure_5_has_a_panel_per_dataset_and_a_line_per_epsilon(smoke_runs) -> None:
    setup = dd.tier("smoke")
    fig = figures.figure_5(smoke_runs, setup)
    assert len(fig.axes) == len(setup.panels)
    for ax, panel in zip(fig.axes, setup.panels, strict=True):
        assert ax.get_title() == f"{figures.panel_label(panel)}, lambda=0.05"
        assert ax.get_ylabel() == "personal training loss"
        assert [line.get_label() for line in ax.get_lines()] == [
            "eps=1", "eps=10", "eps=100", "eps=inf"]
    # loss = 0.5 + 0.01 lam + 1/eps + 0.01 seed - 0.01 T, mean over seeds 0 and 1
    eps1 = fig.axes[0].get_lines()[0]
    np.testing.assert_array_equal(eps1.get_xdata(), setup.rounds_of(setup.panels[0]))
    np.testing.assert_allclose(eps1.get_ydata(),
                               [0.5 + 0.0005 + 1.0 + 0.005 - 0.01 * t for t in (2, 4)])


def test_figures_6_and_7_draw_the_lambda_grid(smoke_runs) -> None:
    setup = dd.tier("smoke")
    lambdas = [f"lambda={lam:g}" for lam in dd.LAMBDAS]
    fig6 = figures.figure_6(smoke_runs, setup)
    assert len(fig6.axes) == 2
    assert [ax.get_ylabel() for ax in fig6.axes] == ["test accuracy", "std of train losses"]
    for ax in fig6.axes:
        assert [line.get_label() for line in ax.get_lines()] == lambdas
    fair = fig6.axes[1].get_lines()[dd.LAMBDAS.index(0.5)]
    # fairness = 0.05 + 0.1 lam + 0.001 seed + 0.001 T at eps = 10
    np.testing.assert_allclose(fair.get_ydata(), [0.1005 + 0.002, 0.1005 + 0.004])
    fig7 = figures.figure_7(smoke_runs, setup)
    left, right = fig7.axes
    assert [line.get_label() for line in left.get_lines()] == ["T=2", "T=4"]
    assert left.get_xlabel() == "lambda"
    np.testing.assert_array_equal(left.get_lines()[0].get_xdata(), dd.LAMBDAS)
    assert [line.get_label() for line in right.get_lines()] == lambdas
    assert right.get_ylabel() == "personal training loss"


def test_show_closes_the_figure(monkeypatch) -> None:
    shown = []
    monkeypatch.setattr("IPython.display.display", shown.append)
    fig = figures.figure_2({1.0: (1, np.array([1.0, 2.0]))})
    figures.show(fig)
    assert shown == [fig]
    assert not plt.fignum_exists(fig.number)
