"""The PFA figures drawn from small hand-made tables: panels, lines, labels and values."""

from __future__ import annotations

from collections.abc import Iterator

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from fedlib.papers.pfa import figures
from fedlib.papers.pfa.experiment import LABELS, MAIN_AGGREGATORS
from fedlib.render.glue import left_out_note

NAMES = {"mnist": "MNIST", "fashion-mnist": "Fashion-MNIST", "cifar10": "CIFAR-10",
         "imdb": "IMDb"}


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    yield
    plt.close("all")


def _curve(aggregator: str, r: int) -> float:
    """A distinct accuracy for every aggregator and round."""
    return 0.05 * (1 + MAIN_AGGREGATORS.index(aggregator)) + 0.01 * r


def _curves(figure: str, panels: list[tuple[str, str]], aggregators=("fedavg", "pfa"),
            projection: str = "public") -> pd.DataFrame:
    return pd.DataFrame([
        {"figure": figure, "dataset": d, "model": m, "aggregator": a, "method": LABELS[a],
         "projection": projection, "round": r, "accuracy": _curve(a, r), "data": NAMES[d]}
        for d, m in panels for a in aggregators for r in range(4)])


def _drawn_lines(ax: plt.Axes) -> list[np.ndarray]:
    """The data lines of a panel (the legend's handles are empty lines)."""
    return [np.asarray(line.get_ydata(), dtype=float) for line in ax.get_lines()
            if len(line.get_ydata())]


def _expected(aggregators) -> list[np.ndarray]:
    return [np.array([_curve(a, r) for r in range(4)]) for a in aggregators]


def _same_lines(drawn: list[np.ndarray], expected: list[np.ndarray]) -> bool:
    key = lambda values: tuple(np.round(values, 9))  # noqa: E731
    return sorted(map(key, drawn)) == sorted(map(key, expected))


def test_order_follows_the_main_aggregators() -> None:
    assert figures.ORDER == ["FedAvg", "WeiAvg", "PFA", "PFA+", "Minimum", "Maximum",
                             "NP-FedAvg"]


def test_figure_3_has_four_panels_of_the_iid_public_runs() -> None:
    curves = pd.concat([
        _curves("fig3", figures.FIG3_PANELS),
        _curves("fig3", figures.FIG3_PANELS, ("weiavg",), projection="random"),
        _curves("fig8", [("mnist", "logr")], ("maximum",)),
    ])
    figure = figures.figure_3(curves)
    assert isinstance(figure, plt.Figure)
    assert len(figure.axes) == 4
    titles = [ax.get_title() for ax in figure.axes]
    assert titles == ["MNIST / logr (IID)", "MNIST / cnn (IID)", "Fashion-MNIST / logr (IID)",
                      "Fashion-MNIST / cnn (IID)"]
    for ax in figure.axes:
        assert _same_lines(_drawn_lines(ax), _expected(("fedavg", "pfa")))
        assert ax.get_ylim() == (0, 1)
        assert ax.get_xlabel() == "round"
    legend = figure.axes[0].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == figures.ORDER
    assert all(ax.get_legend() is None for ax in figure.axes[1:])


def test_accuracy_panels_follow_the_order_given() -> None:
    curves = _curves("fig8", figures.FIG8_PANELS, ("pfa", "fedavg"))
    figure = figures.accuracy_panels(curves, figures.FIG8_PANELS, "x", ["PFA", "FedAvg"])
    legend = figure.axes[0].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["PFA", "FedAvg"]


def test_figure_4_has_one_bar_per_distribution_and_method() -> None:
    final = pd.DataFrame([
        {"figure": "fig4", "distribution": d, "aggregator": a, "accuracy": v}
        for d, by in (("mixgauss1", {"fedavg": 0.2, "pfa": 0.4}),
                      ("uniform", {"fedavg": 0.6, "pfa": 0.5}))
        for a, v in by.items()] + [{"figure": "fig3", "distribution": "gauss",
                                    "aggregator": "pfa", "accuracy": 0.9}])
    figure = figures.figure_4(final)
    (ax,) = figure.axes
    # The paper's order of the distributions, whatever the order of the rows.
    assert [t.get_text() for t in ax.get_xticklabels()] == ["uniform", "mixgauss1"]
    heights = sorted(p.get_height() for p in ax.patches if p.get_height() > 0)
    assert heights == pytest.approx([0.2, 0.4, 0.5, 0.6])
    assert ax.get_ylim() == (0, 1)
    assert ax.get_ylabel() == "accuracy"


def test_figure_5_draws_cifar_and_imdb() -> None:
    curves = _curves("fig5", [("cifar10", "cnn4"), ("imdb", "lstm")])
    figure = figures.figure_5(curves)
    assert [ax.get_title() for ax in figure.axes] == ["CIFAR-10 / cnn4 (IID, M=50)",
                                                      "IMDb / lstm (IID, M=50)"]
    for ax in figure.axes:
        assert _same_lines(_drawn_lines(ax), _expected(("fedavg", "pfa")))


def test_show_figure_5_says_when_it_was_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    import IPython.display

    shown: list[object] = []
    monkeypatch.setattr(IPython.display, "display", shown.append)
    figures.show_figure_5(_curves("fig3", figures.FIG3_PANELS), "quick")
    assert len(shown) == 1 and "Not run at the `quick` tier" in shown[0].data
    shown.clear()
    figures.show_figure_5(_curves("fig5", [("cifar10", "cnn4"), ("imdb", "lstm")]), "paper")
    assert isinstance(shown[0], plt.Figure) and len(shown[0].axes) == 2
    assert "CIFAR-10 and IMDb" in shown[1].data
    assert not plt.get_fignums(), "the shown figure is closed"
    shown.clear()
    left_out = {"fig5": "14 of 14 runs of pfa-heterogeneous are neither cached nor published"}
    figures.show_figure_5(_curves("fig3", figures.FIG3_PANELS), "paper", left_out)
    assert len(shown) == 1 and shown[0].data == left_out_note(["fig5"], left_out)
    assert shown[0].data.startswith("Not drawn: the runs of `fig5` (14 of 14 runs of pfa")
    # One half stored: that dataset is drawn alone, and the other half says why not.
    shown.clear()
    half = {"fig5 (imdb)": "7 of 7 runs of pfa-heterogeneous are neither cached nor published"}
    figures.show_figure_5(_curves("fig5", [("cifar10", "cnn4")]), "paper", half)
    assert [ax.get_title() for ax in shown[0].axes] == ["CIFAR-10 / cnn4 (IID, M=50)"]
    assert "on CIFAR-10, 50 clients" in shown[1].data
    assert shown[2].data.startswith("Not drawn: the runs of `fig5 (imdb)` (7 of 7 runs")
    assert "judges the other dataset on its own" in shown[2].data


def test_figure_6_plots_pfa_plus_by_k_and_both_subspaces() -> None:
    rows = [("pfa+", 1, "public", 0.8), ("pfa+", 5, "public", 0.7), ("pfa+", 5, "public", 0.6),
            ("pfa", 1, "public", 0.75), ("pfa", 5, "public", 0.65),
            ("pfa", 1, "random", 0.5), ("pfa", 5, "random", 0.55), ("weiavg", 1, "public", 0.4),
            ("pfa", 1, "public-text", 0.7), ("pfa", 5, "public-text", 0.6),
            ("pfa", 1, "random-text", 0.2), ("pfa", 5, "random-text", 0.3)]
    final = pd.DataFrame([{"figure": "fig6", "aggregator": a, "k": k, "projection": p,
                           "accuracy": v} for a, k, p, v in rows])
    final = pd.concat([final, pd.DataFrame([{"figure": "fig3", "aggregator": "pfa+", "k": 1,
                                             "projection": "public", "accuracy": 0.0}])])
    figure = figures.figure_6(final)
    left, right = figure.axes
    plus, weiavg = left.get_lines()
    np.testing.assert_allclose(plus.get_xdata(), [1, 5])
    np.testing.assert_allclose(plus.get_ydata(), [0.8, 0.65])  # mean over the k=5 runs
    np.testing.assert_allclose(weiavg.get_ydata(), [0.4, 0.4])
    assert left.get_xscale() == "log" and left.get_xlabel() == "k"
    assert left.get_ylabel() == "accuracy"
    lines = {line.get_label(): line.get_ydata() for line in right.get_lines()}
    assert list(lines) == list(figures.SUBSPACE_LABELS.values())
    np.testing.assert_allclose(lines[figures.SUBSPACE_LABELS["public"]], [0.75, 0.65])
    np.testing.assert_allclose(lines[figures.SUBSPACE_LABELS["random"]], [0.5, 0.55])
    np.testing.assert_allclose(lines[figures.SUBSPACE_LABELS["public-text"]], [0.7, 0.6])
    np.testing.assert_allclose(lines[figures.SUBSPACE_LABELS["random-text"]], [0.2, 0.3])
    assert right.get_xscale() == "log"
    # The spread over the two k=5 runs is drawn as a band around PFA+'s mean.
    band = left.collections[0].get_paths()[0].vertices[:, 1]
    spread = np.std([0.7, 0.6], ddof=1)
    assert band.min() == pytest.approx(0.65 - spread) and band.max() == pytest.approx(0.8)


def test_figure_7_plots_cumulative_uplink_of_fedavg_and_pfa_plus() -> None:
    traffic = pd.DataFrame([
        {"model": m, "aggregator": a, "method": LABELS[a], "round": r,
         "MB": (r + 1) * (2.0 if a == "pfa+" else 10.0) * (1 if m == "logr" else 3)}
        for m in ("logr", "cnn") for a in ("fedavg", "weiavg", "pfa+") for r in range(3)])
    figure = figures.figure_7(traffic)
    assert [ax.get_title() for ax in figure.axes] == ["mnist / logr: cumulative uplink",
                                                      "mnist / cnn: cumulative uplink"]
    for ax, factor in zip(figure.axes, (1, 3), strict=True):
        drawn = _drawn_lines(ax)
        assert len(drawn) == 2  # WeiAvg is left out
        expected = [np.array([2.0, 4.0, 6.0]) * factor, np.array([10.0, 20.0, 30.0]) * factor]
        assert sorted(map(tuple, drawn)) == sorted(map(tuple, expected))
        assert ax.get_ylabel() == "MB"


def test_figure_7_colours_each_method_alike_in_both_panels() -> None:
    # The CNN panel's rows list PFA+ first: the colours must follow the method, not the
    # order the rows come in.
    rows = [{"model": m, "aggregator": a, "method": LABELS[a], "round": r, "MB": float(r)}
            for m, order in (("logr", ("fedavg", "pfa+")), ("cnn", ("pfa+", "fedavg")))
            for a in order for r in range(3)]
    figure = figures.figure_7(pd.DataFrame(rows))
    colours = [{t.get_text(): h.get_color() for t, h in
                zip(ax.get_legend().get_texts(), ax.get_legend().legend_handles, strict=True)}
               for ax in figure.axes]
    assert colours[0] == colours[1]
    assert colours[0][LABELS["fedavg"]] != colours[0][LABELS["pfa+"]]


def test_figure_8_has_the_two_non_iid_panels() -> None:
    curves = pd.concat([_curves("fig8", figures.FIG8_PANELS, ("weiavg", "pfa+")),
                        _curves("fig3", figures.FIG8_PANELS, ("fedavg",))])
    figure = figures.figure_8(curves)
    assert [ax.get_title() for ax in figure.axes] == ["MNIST / logr (non-IID)",
                                                      "MNIST / cnn (non-IID)"]
    for ax in figure.axes:
        assert _same_lines(_drawn_lines(ax), _expected(("weiavg", "pfa+")))


def test_figure_13_draws_the_shares_or_says_there_is_none() -> None:
    spectra = pd.DataFrame([
        {"model": m, "round": r, "index": i + 1, "share": s}
        for m, r, shares in (("logr", 1, (0.9, 0.1)), ("cnn", 3, (0.6, 0.4)))
        for i, s in enumerate(shares)])
    figure = figures.figure_13(spectra)
    (ax,) = figure.axes
    heights = sorted(p.get_height() for p in ax.patches if p.get_height() > 0)
    assert heights == pytest.approx([0.1, 0.4, 0.6, 0.9])
    assert ax.get_xlabel() == "eigenvalue (largest first)"
    assert ax.get_ylabel() == "share of the variance"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["logr, round 1",
                                                                   "cnn, round 3"]
    assert ax.get_legend().get_title().get_text() == "model, round"
    empty = figures.figure_13(pd.DataFrame())
    (ax,) = empty.axes
    assert not ax.axison
    assert [t.get_text() for t in ax.texts] == ["no round had two public updates: no spectrum"]


def test_figure_text_projection_and_the_learning_rate_grid() -> None:
    rows = []
    for seed in range(3):
        for (a, p), v in {("weiavg", "public"): 0.6, ("pfa", "public"): 0.7,
                          ("pfa", "public-text"): 0.8, ("fedavg", "public"): 0.1}.items():
            rows.append({"figure": "fig3", "dataset": "mnist", "model": "logr",
                         "calibration": "rdp", "distribution": "mixgauss1", "aggregator": a,
                         "projection": p, "seed": seed, "accuracy": v})
            rows.append({"figure": "authors", "dataset": "mnist", "model": "logr-authors",
                         "calibration": "rdp", "distribution": "mixgauss2", "aggregator": a,
                         "projection": p, "seed": seed, "accuracy": v - 0.1})
    figure = figures.figure_text_projection(pd.DataFrame(rows))
    ax = figure.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["Fig. 3 mnist-logr", "authors their LogR, mixgauss2"]
    heights = sorted(round(b.get_height(), 6) for b in ax.patches if b.get_height() > 0)
    assert heights == [0.5, 0.6, 0.6, 0.7, 0.7, 0.8]  # FedAvg is not drawn
    validation = pd.DataFrame([{"aggregator": "pfa", "projection": "public", "lr": lr,
                                "seed": 0, "val_accuracy": v}
                               for lr, v in ((0.1, 0.5), (0.01, 0.7))])
    chosen = pd.DataFrame([{"aggregator": "pfa", "projection": "public", "method": "PFA",
                            "lr": 0.01, "val_accuracy": 0.7}])
    ax = figures.figure_lr_grid(validation, chosen).axes[0]
    line, = ax.get_lines()
    np.testing.assert_allclose(line.get_xdata(), [0.01, 0.1])
    np.testing.assert_allclose(ax.collections[0].get_offsets(), [[0.01, 0.7]])
