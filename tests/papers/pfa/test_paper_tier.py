"""The PFA paper tier's repeats: the LogR settings at the seeds beyond the first."""

from __future__ import annotations

import pandas as pd

from fedlib.papers.pfa import experiment as pfa
from fedlib.papers.pfa import paper_tier
from fedlib.papers.pfa.paper_tier import (
    PAPER_GRID,
    REPEAT_FIGURES,
    REPEAT_SEEDS,
    REPEATS_PART,
    repeat_configs,
    run_repeats,
)
from fedlib.sweeps import MissingRunsError


def test_the_repeats_are_the_tiers_own_logr_runs_at_later_seeds() -> None:
    setup = PAPER_GRID.tier("paper")
    first = pfa.configs(setup, 0)
    found = repeat_configs(setup, 0, "paper")
    assert {c["seed"] for c in found} == set(REPEAT_SEEDS["paper"])
    assert {c["model"] for c in found} == {"logr"}
    assert {c["figure"] for c in found} == set(REPEAT_FIGURES)
    same = [c for c in first if c["model"] == "logr" and c["figure"] in REPEAT_FIGURES]
    assert len(found) == len(REPEAT_SEEDS["paper"]) * len(same)
    assert all({**c, "seed": 0} in first for c in found)
    # counted from the chapter's seed, and only for the figures asked for
    shifted = repeat_configs(setup, 7, "paper", ("fig6", "fig4", "authors"))
    assert {c["seed"] for c in shifted} == {7 + s for s in REPEAT_SEEDS["paper"]}
    assert {c["figure"] for c in shifted} == {"fig6"}
    assert repeat_configs(PAPER_GRID.tier("quick"), 0, "quick") == []
    none, left_out = run_repeats(PAPER_GRID.tier("quick"), 0, "quick")
    assert none.empty and left_out == {}


def _stored_only(column: str, value: str, asked: list[set[str]] | None = None):
    """A stand-in for ``sweep`` where only the runs whose config has ``column`` = ``value``
    are stored (two rounds each); the values of ``column`` it is asked for go to
    ``asked``."""
    def sweep(experiment, planned, runner, **kwargs):
        found = {c[column] for c in planned}
        if asked is not None:
            asked.append(found)
        if found != {value}:
            raise MissingRunsError(f"{len(planned)} of {len(planned)} runs of {experiment} "
                                   "are neither cached nor published. Run make publish")
        return pd.DataFrame({"run_key": [f"k{i}" for i in range(len(planned)) for _ in (0, 1)],
                             "round": [r for _ in planned for r in (0, 1)],
                             "accuracy": 0.5})

    return sweep


def test_repeats_not_stored_are_left_out_per_figure(monkeypatch) -> None:
    """Where only stored runs are read, a figure whose repeats are not all stored is left
    out, saying why, and the others are returned with their configs."""
    monkeypatch.setenv("FEDLIB_COMPUTE", "0")
    stored_for_fig3_only = _stored_only("figure", "fig3")
    monkeypatch.setattr(paper_tier, "sweep", stored_for_fig3_only)
    setup = PAPER_GRID.tier("paper")
    runs, left_out = run_repeats(setup, 0, "paper", ("fig3", "fig6", "fig8"))
    assert set(runs["figure"]) == {"fig3"} and set(runs["seed"]) == {1, 2, 3, 4}
    assert len(runs) == 2 * len(repeat_configs(setup, 0, "paper", ("fig3",)))
    n6 = len(repeat_configs(setup, 0, "paper", ("fig6",)))
    assert set(left_out) == {f"{REPEATS_PART} (fig6)", f"{REPEATS_PART} (fig8)"}
    assert left_out[f"{REPEATS_PART} (fig6)"] == (
        f"{n6} of {n6} runs of pfa-heterogeneous are neither cached nor published")

    monkeypatch.setattr(paper_tier, "sweep", lambda experiment, planned, runner, **kw:
                        stored_for_fig3_only(experiment, [{"figure": "x"}], runner))
    runs, left_out = run_repeats(setup, 0, "paper", ("fig3", "fig6"))
    assert runs.empty and list(left_out) == [f"{REPEATS_PART} (fig3, fig6)"]


def test_figure_5_half_that_is_stored_is_read_on_its_own(monkeypatch) -> None:
    """With Figure 5 left out because IMDb's runs are not stored, CIFAR-10's stored runs
    come back with their configs and only the IMDb half stays left out."""
    monkeypatch.setenv("FEDLIB_COMPUTE", "0")
    asked: list[set[str]] = []
    stored_for_cifar_only = _stored_only("dataset", "cifar10", asked)
    monkeypatch.setattr(paper_tier, "sweep", stored_for_cifar_only)
    setup = PAPER_GRID.tier("paper")
    left_out = {"fig5": "14 of 14 runs are neither cached nor published", "fig4": "why"}
    runs, after = paper_tier.run_figure_5_halves(setup, 0, left_out)
    cifar = [c for c in pfa.configs(setup, 0, figures=("fig5",)) if c["dataset"] == "cifar10"]
    assert set(runs["dataset"]) == {"cifar10"} and len(runs) == 2 * len(cifar)
    assert set(runs["aggregator"]) == {c["aggregator"] for c in cifar}
    assert after == {"fig4": "why", paper_tier.fig5_half("imdb"):
                     "7 of 7 runs of pfa-heterogeneous are neither cached nor published"}
    assert asked == [{"cifar10"}, {"imdb"}]
    # Figure 5 not left out: nothing is read; neither half stored: left out as it was.
    asked.clear()
    none, same = paper_tier.run_figure_5_halves(setup, 0, {"fig4": "why"})
    assert none.empty and same == {"fig4": "why"} and asked == []
    monkeypatch.setattr(paper_tier, "sweep", lambda experiment, planned, runner, **kw:
                        stored_for_cifar_only(experiment, [{"dataset": "x"}], runner))
    none, same = paper_tier.run_figure_5_halves(setup, 0, left_out)
    assert none.empty and same == left_out
