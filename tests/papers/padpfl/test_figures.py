"""PADPFL figures drawn from small hand-made runs: panels, curves, labels and plotted values."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from fedlib.papers.padpfl import experiment as pad
from fedlib.papers.padpfl import figures as pad_figures

SETUP = pad.PadpflSetup(rounds=3, hidden=4, seeds=(0, 1), client_divisor=1, sample_divisor=1,
                        small_exposures=1, test_examples=10)

NONPRIVATE = {"S1": pad_figures.figure_2, "S2": pad_figures.figure_4,
              "S3": pad_figures.figure_6, "S4": pad_figures.figure_8}
PRIVATE = {"S1": pad_figures.figure_3, "S2": pad_figures.figure_5,
           "S3": pad_figures.figure_7, "S4": pad_figures.figure_9}


def _loss(scenario: str, assignment: str, eps: float | None, exposures: int | None,
          seed: int, rnd: int) -> float:
    """A distinct, known loss for every run, seed and round."""
    base = 1.0 + list(pad.SCENARIOS).index(scenario) + 0.1 * len(assignment.split("-")[0])
    shift = 0.0 if eps is None else eps / 10 + (exposures or 0) / 100
    return base + shift + 0.5 / (1 + rnd) + 0.02 * seed + 0.001 * sum(map(ord, assignment))


def _runs() -> pd.DataFrame:
    rows = []
    for config in pad.configs(SETUP, 0):
        for rnd in range(SETUP.rounds + 1):
            rows.append({
                "scenario": config["scenario"], "seed": config["seed"],
                "assignment": config["assignment"],
                "epsilon": np.nan if config["epsilon"] is None else config["epsilon"],
                "exposures": np.nan if config["exposures"] is None else config["exposures"],
                "round": rnd,
                "train_loss": _loss(config["scenario"], config["assignment"], config["epsilon"],
                                    config["exposures"], config["seed"], rnd),
            })
    return pd.DataFrame(rows)


@pytest.fixture
def runs() -> Iterator[pd.DataFrame]:
    yield _runs()
    plt.close("all")


@pytest.mark.parametrize("scenario", list(NONPRIVATE))
def test_nonprivate_figures_draw_one_curve_per_assignment(runs: pd.DataFrame,
                                                          scenario: str) -> None:
    figure = NONPRIVATE[scenario](runs)
    spec = pad.SCENARIOS[scenario]
    (ax,) = figure.axes
    assert ax.get_xlabel() == "round" and ax.get_ylabel() == "global training loss"
    assert ax.get_yscale() == "linear"
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == [f"{a}, non-private" for a in spec.assignments]
    for line, assignment in zip(lines, spec.assignments, strict=True):
        np.testing.assert_array_equal(line.get_xdata(), np.arange(SETUP.rounds + 1))
        expected = [np.mean([_loss(scenario, assignment, None, None, s, r) for s in (0, 1)])
                    for r in range(SETUP.rounds + 1)]
        np.testing.assert_allclose(line.get_ydata(), expected)
    assert len(ax.collections) == len(spec.assignments)  # the range over seeds as bands
    plt.close(figure)


@pytest.mark.parametrize("scenario", list(PRIVATE))
def test_private_figures_show_the_judged_r_left_and_r_equal_t_right(runs: pd.DataFrame,
                                                                    scenario: str) -> None:
    figure = PRIVATE[scenario](runs, SETUP)
    spec = pad.SCENARIOS[scenario]
    assert len(figure.axes) == 2
    expected_labels = [f"{spec.private_assignment}, eps=5", f"{spec.private_assignment}, eps=20",
                       "1-1-1, eps=20"]
    titles = ("R = 1 (judged)", "R = T = 3 (ablation)")
    for ax, exposures, title in zip(figure.axes, (1, 3), titles, strict=True):
        assert [t.get_text() for t in ax.texts] == [title]
        assert ax.get_yscale() == "log"
        lines = ax.get_lines()
        assert [line.get_label() for line in lines] == expected_labels
        runs_drawn = [(spec.private_assignment, 5.0), (spec.private_assignment, 20.0),
                      ("1-1-1", 20.0)]
        for line, (assignment, eps) in zip(lines, runs_drawn, strict=True):
            expected = [np.mean([_loss(scenario, assignment, eps, exposures, s, r)
                                 for s in (0, 1)]) for r in range(SETUP.rounds + 1)]
            np.testing.assert_allclose(line.get_ydata(), expected)
    # One colour per run label, the same in both panels.
    left, right = ([line.get_color() for line in ax.get_lines()] for ax in figure.axes)
    assert left == right and len(set(left)) == 3
    plt.close(figure)


def test_a_private_figure_at_r_equal_t_has_one_panel(runs: pd.DataFrame) -> None:
    at_t = dataclasses.replace(SETUP, small_exposures=SETUP.rounds)
    figure = pad_figures.figure_3(runs, at_t)
    assert [[t.get_text() for t in ax.texts] for ax in figure.axes] == [["R = T = 3"]]
    plt.close(figure)


def test_figures_draw_only_their_own_scenario(runs: pd.DataFrame) -> None:
    s3_only = runs[runs["scenario"] == "S3"]
    figure = pad_figures.figure_6(s3_only)
    assert len(figure.axes[0].get_lines()) == 3
    plt.close(figure)
    with pytest.warns(UserWarning, match="No artists"):
        empty = pad_figures.figure_2(s3_only)  # no S1 runs: an empty panel
    assert empty.axes[0].get_lines() == []
    plt.close(empty)


def test_corruption_grid_shows_the_same_images_at_every_density() -> None:
    rng = np.random.default_rng(3)
    images = rng.random((20, 784)).astype(np.float32) * 0.6 + 0.2  # no pixel is 0 or 1
    figure = pad_figures.corruption_grid(images)
    densities = pad_figures.CORRUPTION_DENSITIES
    assert len(figure.axes) == len(densities) * 8
    rows = [[np.asarray(figure.axes[r * 8 + c].images[0].get_array()) for c in range(8)]
            for r in range(len(densities))]
    assert [figure.axes[r * 8].get_ylabel() for r in range(len(densities))] == [
        "clean (0)", "slight (0.05)", "moderate (0.2)", "severe (0.5)"]
    # The clean row shows eight distinct input images, unchanged.
    chosen = []
    for shown in rows[0]:
        match = [i for i, image in enumerate(images) if np.array_equal(image.reshape(28, 28),
                                                                          shown)]
        assert len(match) == 1
        chosen.append(match[0])
    assert len(set(chosen)) == 8
    # The corrupted rows change about a fraction `density` of the pixels to 0 or 1.
    for density, row in zip(densities[1:], rows[1:], strict=True):
        clean = np.stack(rows[0])
        noisy = np.stack(row)
        changed = noisy != clean
        assert set(np.unique(noisy[changed])) <= {0.0, 1.0}
        assert abs(changed.mean() - density) < 0.03
    plt.close(figure)


def test_each_figure_function_is_named_after_its_scenarios_paper_figure() -> None:
    for scenario, spec in pad.SCENARIOS.items():
        assert NONPRIVATE[scenario].__name__ == f"figure_{spec.figure_nonprivate}"
        assert PRIVATE[scenario].__name__ == f"figure_{spec.figure_private}"
