"""The PFA paper tier's repeats: the settings it runs at the seeds beyond the first."""

from __future__ import annotations

import pandas as pd

from fedlib.papers.pfa import experiment as pfa
from fedlib.papers.pfa import paper_tier
from fedlib.papers.pfa.paper_tier import (
    PAPER_GRID,
    REPEAT_AGGREGATORS,
    REPEATS,
    REPEATS_PART,
    repeat_configs,
    repeat_parts,
    repeats_text,
    run_repeats,
)
from fedlib.runs.cache import MissingRunsError


def test_the_repeats_are_the_tiers_own_runs_at_later_seeds() -> None:
    setup = PAPER_GRID.tier("paper")
    first = pfa.configs(setup, 0)
    found = repeat_configs(setup, 0, "paper")
    for (figure, model), offsets in REPEATS["paper"].items():
        here = [c for c in found if c["figure"] == figure and c["model"] == model]
        same = [c for c in first if c["figure"] == figure and c["model"] == model
                and c["aggregator"] in REPEAT_AGGREGATORS.get((figure, model),
                                                              (c["aggregator"],))]
        assert same and {c["seed"] for c in here} == set(offsets)
        assert len(here) == len(offsets) * len(same)
    assert {(c["figure"], c["model"]) for c in found} == set(REPEATS["paper"])
    assert all({**c, "seed": 0} in first for c in found)
    # the CNN settings of Figures 3 and 8 run five seeds as their LogR settings do
    assert {c["seed"] for c in found if c["figure"] == "fig3" and c["model"] == "cnn"} \
        == {1, 2, 3, 4}
    assert {c["seed"] for c in found if c["figure"] == "fig8" and c["model"] == "cnn"} \
        == {1, 2, 3, 4}
    assert {c["seed"] for c in found if c["figure"] == "fig8" and c["model"] == "logr"} \
        == {1, 2, 3, 4}
    # Figure 4's later seeds run the four aggregators its claims read, on each of the
    # five budget distributions of the tier
    fig4 = [c for c in found if c["figure"] == "fig4"]
    assert {c["seed"] for c in fig4} == {1, 2, 3, 4}
    assert {(c["distribution"], c["aggregator"]) for c in fig4} == {
        (d, a) for d in ("uniform", "gauss", "mixgauss1", "mixgauss2", "mixgauss4")
        for a in ("fedavg", "weiavg", "pfa", "pfa+")}
    # Figure 5's later seeds run the four aggregators its claim reads, on CIFAR-10 only
    fig5 = [c for c in found if c["figure"] == "fig5"]
    assert {(c["dataset"], c["aggregator"]) for c in fig5} == {
        ("cifar10", a) for a in ("fedavg", "weiavg", "pfa", "pfa+")}
    assert {c["device"] for c in fig5} == {"cuda"}
    # counted from the chapter's seed, and only for the figures and parts asked for
    shifted = repeat_configs(setup, 7, "paper", ("fig6", "authors"))
    assert {c["seed"] for c in shifted} == {7 + s for s in REPEATS["paper"][("fig6", "logr")]}
    assert {c["figure"] for c in shifted} == {"fig6"}
    cnn_only = repeat_configs(setup, 0, "paper", parts=("fig3 cnn",))
    assert {(c["figure"], c["model"]) for c in cnn_only} == {("fig3", "cnn")}
    assert repeat_parts("paper", ("fig3", "fig6")) == ["fig3 logr", "fig6 logr", "fig3 cnn"]
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


def test_repeats_not_stored_are_left_out_per_setting(monkeypatch) -> None:
    """Where only stored runs are read, a repeated setting whose runs are not all stored is
    left out, saying why, and the others are returned with their configs: Figure 3's CNN
    repeats missing leave its LogR repeats in."""
    monkeypatch.setenv("FEDLIB_COMPUTE", "0")
    stored_for_logr_only = _stored_only("model", "logr")
    monkeypatch.setattr(paper_tier, "sweep", stored_for_logr_only)
    setup = PAPER_GRID.tier("paper")
    runs, left_out = run_repeats(setup, 0, "paper", ("fig3", "fig6", "fig8"))
    assert set(runs["model"]) == {"logr"} and set(runs["seed"]) == {1, 2, 3, 4}
    assert set(runs["figure"]) == {"fig3", "fig6", "fig8"}
    logr = repeat_configs(setup, 0, "paper", parts=("fig3 logr", "fig6 logr", "fig8 logr"))
    assert len(runs) == 2 * len(logr)
    n3 = len(repeat_configs(setup, 0, "paper", parts=("fig3 cnn",)))
    n8 = len(repeat_configs(setup, 0, "paper", parts=("fig8 cnn",)))
    assert left_out == {f"{REPEATS_PART} (fig{f} cnn)":
                        f"{n} of {n} runs of pfa-heterogeneous are neither cached nor "
                        "published" for f, n in (("3", n3), ("8", n8))}

    monkeypatch.setattr(paper_tier, "sweep", lambda experiment, planned, runner, **kw:
                        stored_for_logr_only(experiment, [{"model": "x"}], runner))
    runs, left_out = run_repeats(setup, 0, "paper", ("fig3", "fig6"))
    assert runs.empty
    assert list(left_out) == [f"{REPEATS_PART} (fig3 logr, fig6 logr, fig3 cnn)"]


def test_figure_5_half_that_is_stored_is_read_on_its_own(monkeypatch) -> None:
    """With Figure 5 left out because IMDb's runs are not stored, CIFAR-10's stored runs
    come back with their configs and only the IMDb half stays left out (on a machine
    with a GPU: where there is none, the check of runs made on one comes first)."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
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


def test_repeats_text_names_each_settings_seeds() -> None:
    setup = PAPER_GRID.tier("paper")
    assert repeats_text(setup, "paper") == (
        "1 (5 of the LogR settings of fig3, fig6 and fig8; 5 of the CNN settings of fig3, "
        "fig8 and fig4; 2 of the CIFAR-10 CNN settings of fig5)")
    quick = PAPER_GRID.tier("quick")
    assert repeats_text(quick, "quick") == str(quick.repeats)


def test_another_tiers_stored_figure_has_its_stored_repeats(monkeypatch) -> None:
    """A chapter quoting the paper tier's Figure 3 reads its first seed and the repeats
    that are stored (here the LogR ones, not the CNN's); nothing when the first seed is
    not stored."""
    first = pd.DataFrame({"run_key": ["a", "a"], "round": [0, 1], "accuracy": 0.5,
                          "figure": "fig3", "model": "cnn", "seed": 0})
    monkeypatch.setattr(pfa, "run", lambda setup, seed, **kw: first)
    monkeypatch.setattr(paper_tier, "sweep", _stored_only("model", "logr"))
    runs = paper_tier.stored_figure_runs("paper", 0, "fig3")
    logr = repeat_configs(PAPER_GRID.tier("paper"), 0, "paper", parts=("fig3 logr",))
    assert len(runs) == 2 + 2 * len(logr)
    assert set(runs[runs["model"] == "logr"]["seed"]) == {1, 2, 3, 4}
    assert set(runs[runs["model"] == "cnn"]["seed"]) == {0}

    def not_stored(setup, seed, **kw):
        raise MissingRunsError("3 of 3 runs of pfa-heterogeneous are neither cached nor "
                               "published")

    monkeypatch.setattr(pfa, "run", not_stored)
    assert paper_tier.stored_figure_runs("paper", 0, "fig3") is None


def test_runs_made_on_a_gpu_are_read_from_the_store_where_torch_sees_none(monkeypatch) -> None:
    """Figure 5's runs are made on a GPU at the paper tier: where torch sees none they are
    read from the store, and where they are not stored the setting is said to need a GPU
    before anything else of the sweep is computed."""
    import pytest
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    asked: list[set[str]] = []
    monkeypatch.setattr(paper_tier, "sweep", _stored_only("dataset", "cifar10", asked))
    setup = PAPER_GRID.tier("paper")
    cifar = [c for c in pfa.configs(setup, 0, figures=("fig5",)) if c["dataset"] == "cifar10"]
    assert len(paper_tier._sweep_configs(cifar)) == 2 * len(cifar)
    assert asked == [{"cifar10"}, {"cifar10"}]  # checked stored, then read
    with pytest.raises(MissingRunsError, match=r"^\d+ of 14 runs .* neither cached nor published, "
                       r"and they are computed on a GPU \(fig5_device='cuda'\), which torch "
                       r"does not see here\. .*fig5_device='cpu'"):
        paper_tier.run_figures(setup, 0, ("fig5", "fig6"))
    assert asked[-1] == {"imdb", "cifar10"}  # nothing of Figure 6 was asked for
    cpu = [{**c, "device": "cpu"} for c in cifar]
    assert len(paper_tier._sweep_configs(cpu)) == 2 * len(cifar)
    assert asked[-1] == {"cifar10"}
