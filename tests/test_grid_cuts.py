"""The book's paper tier: cuts of the papers' grids that only remove runs."""

from __future__ import annotations

import importlib
import json
import math
from dataclasses import dataclass, fields

import pytest

from fedlib.runs.grid_cuts import GridCut, PaperGrid, cut_paper_grid
from fedlib.runs.keys import code_files

CUT_PAPERS = ("dpditto", "hu2020", "pfa", "ppsgd")


@dataclass(frozen=True)
class Inner:
    steps: tuple[float, ...]
    epochs: int


@dataclass(frozen=True)
class Outer:
    panels: tuple[str, ...]
    compared: tuple[str, ...]
    inner: Inner
    repeats: int = 5

    def __post_init__(self) -> None:
        if not set(self.compared) <= set(self.panels):
            raise ValueError("compared panels must be run")


FULL = Outer(panels=("a", "b", "c"), compared=("a", "c"), inner=Inner((0.1, 0.5, 1.0), 20))


def _tier(scale: str, **overrides: object) -> Outer:
    given = {name: value for name, value in overrides.items() if value is not None}
    return Outer(**{**FULL.__dict__, **given})


def test_cuts_set_nested_fields_and_leave_the_others():
    cut = cut_paper_grid(FULL, [GridCut("inner.steps", (0.5,), ""), GridCut("repeats", 1, "")])
    assert cut == Outer(FULL.panels, FULL.compared, Inner((0.5,), 20), repeats=1)


def test_cuts_are_applied_together_so_fields_checked_against_each_other_agree():
    # Cutting panels first, alone, would leave compared naming a panel not run.
    cut = cut_paper_grid(FULL, [GridCut("panels", ("a", "b"), ""),
                                GridCut("compared", ("a",), "")])
    assert (cut.panels, cut.compared) == (("a", "b"), ("a",))


def test_a_cut_of_a_field_the_setup_lacks_names_it():
    with pytest.raises(ValueError, match="'inner.seeds'.*no field 'seeds'"):
        cut_paper_grid(FULL, [GridCut("inner.seeds", (0,), "")])


def test_a_field_set_by_the_caller_wins_over_a_cut():
    grid = PaperGrid(_tier, (GridCut("repeats", 1, "one"), GridCut("inner.steps", (1.0,), "")),
                     full_cpu_hours=10, cut_cpu_hours=2)
    assert grid.tier("paper", repeats=3).repeats == 3
    assert grid.tier("paper", repeats=None).repeats == 1
    assert grid.tier("paper").inner.steps == (1.0,)
    assert grid.tier("quick") == FULL
    assert "`repeats` = `1`: one" in grid.describe()


def _module(paper: str, name: str):
    return importlib.import_module(f"fedlib.papers.{paper}.{name}")


WHERE_COMPUTED = ("device",)
"""Config fields that say where a run is computed, not what the paper's grid sets (PFA's
Figure 5 on a GPU): a cut may move runs to another device, and the configurations are
compared without them."""


def _keys(configs: list[dict]) -> set[str]:
    configs = [{k: v for k, v in c.items() if k not in WHERE_COMPUTED} for c in configs]

    def plain(value):
        if isinstance(value, float) and not math.isfinite(value):
            return repr(value)
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [plain(v) for v in value]
        return value
    return {json.dumps(plain(c), sort_keys=True) for c in configs}


def _paper_configs(paper: str, setup) -> set[str]:
    """Every config a setup plans, over all of the chapter's figures or stages."""
    experiment = _module(paper, "experiment")
    if paper == "ppsgd":
        return _keys([c for figure in experiment.FIGURES
                      for c in experiment.configs(setup, 0, figure=figure)])
    if paper == "hu2020":
        return _keys(experiment.configs(setup, 0, stage="cv", features="uci-561")
                     + experiment.configs(setup, 0, stage="figures", features="uci-561",
                                          lam=0.01, xi="1")
                     + experiment.configs(setup, 0, stage="fig5", features="uci-561",
                                          lam=0.01, xi="1", best_drop=0.1))
    return _keys(experiment.configs(setup, 0))


@pytest.mark.parametrize("paper", CUT_PAPERS)
def test_the_book_paper_tier_runs_only_configurations_of_the_paper_grid(paper):
    grid = _module(paper, "paper_tier").PAPER_GRID
    full = _module(paper, "experiment").tier("paper")
    cut = grid.tier("paper")
    assert cut != full
    cut_configs, full_configs = _paper_configs(paper, cut), _paper_configs(paper, full)
    assert cut_configs and cut_configs < full_configs
    assert grid.cut_cpu_hours < grid.full_cpu_hours


@pytest.mark.parametrize("paper", CUT_PAPERS)
def test_the_cuts_touch_the_paper_tier_only_and_only_the_fields_they_name(paper):
    grid = _module(paper, "paper_tier").PAPER_GRID
    experiment = _module(paper, "experiment")
    assert grid.tier("smoke") == experiment.tier("smoke")
    for scale, changes in (("paper", grid.cuts), ("quick", grid.quick_repeats)):
        full, cut = experiment.tier(scale), grid.tier(scale)
        named = {c.field.split(".")[0] for c in changes}
        for field in fields(full):
            if field.name not in named:
                assert getattr(cut, field.name) == getattr(full, field.name), field.name


def test_quick_repeats_change_the_quick_tier_only() -> None:
    from dataclasses import dataclass

    from fedlib.runs.grid_cuts import GridCut, PaperGrid

    @dataclass(frozen=True)
    class Setup:
        seeds: tuple[int, ...]
        rounds: int

    tiers = {"smoke": Setup((0,), 2), "quick": Setup((0,), 5), "paper": Setup((0, 1), 9)}
    grid = PaperGrid(lambda scale, **_: tiers[scale], cuts=(GridCut("rounds", 7, "r"),),
                     full_cpu_hours=2.0, cut_cpu_hours=1.0,
                     quick_repeats=(GridCut("seeds", (0, 1, 2), "three seeds"),))
    assert grid.tier("quick") == Setup((0, 1, 2), 5)
    assert grid.tier("paper") == Setup((0, 1), 7)
    assert grid.tier("smoke") == tiers["smoke"]


@pytest.mark.parametrize("paper", CUT_PAPERS)
def test_editing_a_cut_never_changes_a_run_key(paper):
    """No runner imports the cuts: editing them keeps every cached and published run."""
    files = code_files(f"fedlib.papers.{paper}.experiment")
    assert f"papers/{paper}/experiment.py" in files
    assert f"papers/{paper}/paper_tier.py" not in files
    assert "runs/grid_cuts.py" not in files
