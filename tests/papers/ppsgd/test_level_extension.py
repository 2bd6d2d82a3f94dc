"""The extension of the strictly personalized levels beyond an end the best of them lies on,
on constructed runs (the runner is replaced by a closed form of the level)."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from fedlib.papers.ppsgd import experiment, extension, figures, level_extension, readouts  # noqa: E402
from fedlib.runs.keys import run_key  # noqa: E402

INF = math.inf
LEVELS = (0.0, 0.1, 0.3, 1.0, 3.0, INF)
STEPS = (0.5, 1.0)
SEEDS = (0, 1, 2)


def _risk(alpha_q: float, step: float, sigma: float, best: dict[float, float], seed: int
          ) -> float:
    """An excess risk whose minimum over the strictly personalized levels at ``sigma`` is at
    ``best[sigma]`` (quadratic in log alpha*Q), lowest at step 1; local and global learning
    far behind."""
    if alpha_q in (0.0, INF):
        core = 50.0
    else:
        core = 1.0 + math.log(alpha_q / best[sigma]) ** 2
    return core * (1.0 + (step - 1.0) ** 2) * (1.0 + 0.001 * seed)


def _row(c: dict, t: int, best: dict[float, float]) -> dict:
    return {"clip": c["clip"], "noise_multiplier": c["noise_multiplier"],
            "alpha_q": c["alpha_q"], "step": c["step"], "iteration": t, "seed": c["seed"],
            "epsilon": 1.0 / (1.0 + c["noise_multiplier"]),
            "excess_risk": _risk(c["alpha_q"], c["step"], c["noise_multiplier"], best,
                                 c["seed"])}


def _configs(sigmas) -> list[dict]:
    return [{"experiment": "x", "clip": 1.0, "noise_multiplier": sigma, "alpha_q": a,
             "seed": s, "step": step} for sigma in sigmas for s in SEEDS for a in LEVELS
            for step in STEPS]


def _runs(best: dict[float, float], iterations=(10, 20)) -> pd.DataFrame:
    return pd.DataFrame([_row(c, t, best) for c in _configs(best) for t in iterations])


def _fake_sweep(best: dict[float, float], calls: list):
    def sweep(*, experiment_name, configs, max_group_size, sweep_args):
        calls.append(sorted({(c["noise_multiplier"], c["alpha_q"]) for c in configs}))
        rows = [{**_row(c, t, best), "run_key": run_key(c, experiment.run_group.__module__)}
                for c in configs for t in (1, 10, 20)]
        return pd.DataFrame(rows).drop(columns="seed")
    return sweep


def _read(runs: pd.DataFrame) -> pd.DataFrame:
    return readouts.synthetic_final(readouts.best_over_steps(runs))


def test_the_levels_beyond_an_end_continue_the_papers_spacing() -> None:
    paper = experiment.PAPER_ALPHA_Q
    assert level_extension.levels_beyond(paper, "lowest") == (0.03, 0.01, 0.003, 0.001)[
        :extension.EXTENSIONS_PER_END]
    assert level_extension.levels_beyond(paper, "highest") == (300.0, 1000.0, 3000.0,
                                                               10000.0)[
        :extension.EXTENSIONS_PER_END]
    # The quick tier's levels: the first one below is the paper tier's own.
    assert level_extension.levels_beyond(experiment.SYNTHETIC_FIGURE_ALPHA_Q, "lowest",
                                         count=2) == (0.1, 0.03)
    # Off the 1-3 spacing: a factor of 3 a level.
    assert level_extension.levels_beyond((0.2, 0.5), "lowest", count=2) == pytest.approx(
        (0.2 / 3, 0.2 / 9))
    with pytest.raises(ValueError, match="no strictly personalized level"):
        level_extension.levels_beyond((0.0, INF), "lowest")


def test_a_best_level_on_an_end_gets_the_next_level_and_an_inside_one_none() -> None:
    # sigma = 10: best at 0.5 (inside); sigma = 100: best below 0.1; sigma = 0: not read.
    best = {0.0: 0.01, 10.0: 0.5, 100.0: 0.001}
    planned = level_extension.level_plan(_read(_runs(best)), LEVELS)
    assert planned[["noise_multiplier", "end", "best_level", "beyond"]].values.tolist() == [
        [100.0, "lowest", 0.1, 0]]
    assert planned["alpha_q"].tolist() == [0.03]
    # Best above the largest finite level: the next one is above it.
    high = level_extension.level_plan(_read(_runs({10.0: 50.0})), LEVELS)
    assert high[["end", "best_level", "alpha_q"]].values.tolist() == [["highest", 3.0, 10.0]]


def test_the_level_configs_differ_from_the_base_configs_in_alpha_q_only() -> None:
    base = _configs((10.0, 100.0))
    planned = pd.DataFrame([
        {"clip": 1.0, "noise_multiplier": 100.0, "end": "lowest", "best_level": 0.1,
         "levels": "", "beyond": 0, "alpha_q": 0.03},
        {"clip": 1.0, "noise_multiplier": 10.0, "end": "lowest", "best_level": 0.1,
         "levels": "", "beyond": 4, "alpha_q": math.nan}])
    found = level_extension.level_configs(planned, base, LEVELS)
    # Every seed and step of the curve on the end (0.1 at sigma = 100), nothing else.
    assert len(found) == len(SEEDS) * len(STEPS)
    for config in found:
        twin = {**config, "alpha_q": 0.1}
        assert twin in base
        assert config["alpha_q"] == 0.03 and config["noise_multiplier"] == 100.0


def test_extend_levels_runs_until_the_best_is_inside_or_the_extensions_run_out(
        monkeypatch) -> None:
    # sigma = 100: best at 0.01, inside once 0.003 is run; sigma = 300: best far below
    # every level there is: the extensions run out.
    best = {10.0: 0.5, 100.0: 0.01, 300.0: 1e-6}
    calls: list = []
    monkeypatch.setattr(extension, "_one_sweep", _fake_sweep(best, calls))
    runs = _runs(best)
    done = level_extension.extend_levels(runs, _configs(best), base_levels=LEVELS,
                                         read=_read, experiment_name="x")
    below = level_extension.levels_beyond(LEVELS, "lowest")
    assert calls[0] == [(100.0, below[0]), (300.0, below[0])]
    assert calls[2] == [(100.0, below[2]), (300.0, below[2])]
    assert calls[-1] == [(300.0, below[-1])]
    assert len(calls) == extension.EXTENSIONS_PER_END
    table = level_extension.level_table(done)
    assert table["sigma"].tolist() == ["100", "300"]
    assert table["levels run beyond it"].tolist() == [
        ", ".join(f"{a:g}" for a in sorted(below[:3])),
        ", ".join(f"{a:g}" for a in sorted(below))]
    assert table["best level after"].tolist() == [
        "inside", f"{below[-1]:g}, the lowest (extensions ran out)"]
    assert done.runs_added == len(done.configs) == (3 + len(below)) * len(SEEDS) * len(STEPS)
    # The new runs keep the iterations the grid's runs hold, with their seeds.
    new = done.runs[done.runs["alpha_q"].isin(below)]
    assert set(new["iteration"]) == {10, 20} and set(new["seed"]) == set(SEEDS)
    # The best level at sigma = 100 is now inside the levels run there.
    after = level_extension.level_plan(_read(done.runs), LEVELS)
    assert after["noise_multiplier"].tolist() == [300.0]


def test_extend_levels_stops_where_its_runs_are_not_stored(monkeypatch) -> None:
    from fedlib.runs.cache import MissingRunsError

    def missing(**kwargs):
        raise MissingRunsError("6 runs of x are not stored. Compute them")

    monkeypatch.setattr(extension, "_one_sweep", missing)
    best = {100.0: 0.001}
    done = level_extension.extend_levels(_runs(best), _configs(best), base_levels=LEVELS,
                                         read=_read, experiment_name="x", compute=False,
                                         part="the part")
    assert done.left_out == {"the part": "not stored, and read from stored runs only"}
    assert done.runs_added == 0 and done.extended.empty
    assert level_extension.level_table(done)["best level after"].tolist() == [
        "0.1, the lowest; the next level, 0.03, not run"]


def test_a_level_run_at_some_noise_levels_only_is_drawn_at_their_epsilons() -> None:
    best = {10.0: 0.5, 100.0: 0.01, 300.0: 0.01}
    runs = pd.concat([_runs(best), _runs(best).query("noise_multiplier == 100.0").assign(
        alpha_q=0.03)], ignore_index=True)
    end = readouts.final(readouts.mean_over_seeds(readouts.best_over_steps(runs)))
    table = readouts.tradeoff(end, "excess_risk", higher_is_better=False)
    fig, ax = plt.subplots()
    try:
        figures.tradeoff_panel(ax, end, table, "excess_risk", "risk")
        [line] = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == 1]
        eps_100 = float(table.loc[table["noise_multiplier"] == 100.0, "epsilon"].iloc[0])
        assert line.get_xdata()[0] == pytest.approx(eps_100)
    finally:
        plt.close(fig)
