"""The extension of a curve's grid of step sizes beyond an end its best step lies on, on
constructed runs (the runner is replaced by a closed form of the step)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from fedlib.papers.ppsgd import claims, experiment, extension, readouts
from fedlib.papers.ppsgd.paper_tier import run_repeats
from fedlib.runs.keys import run_key

INF = math.inf
GRID = (0.2, 0.4, 0.7, 1.0, 1.2, 1.5, 1.8)
"""A grid off the 1-2-5 ladder (the quick tier's synthetic grid)."""
SEEDS = (0, 1, 2)


def _risk(step: float, best: float) -> float:
    """An excess risk whose minimum over steps is at ``best`` (quadratic in log step)."""
    return 1.0 + math.log(step / best) ** 2


def _runs(best: dict[float, float], steps=GRID, seeds=SEEDS, iterations=(10, 20)
          ) -> pd.DataFrame:
    """Runs of one panel (sigma = 0, C = 1): per level alpha*Q, one run per seed and step
    whose risk is lowest at the step ``best[alpha_q]``."""
    return pd.DataFrame([
        {"clip": 1.0, "noise_multiplier": 0.0, "alpha_q": alpha_q, "step": float(step),
         "iteration": t, "seed": seed, "epsilon": 0.0,
         "excess_risk": _risk(step, at) * (1 + 0.001 * seed)}
        for alpha_q, at in best.items() for seed in seeds for step in steps
        for t in iterations])


def test_the_steps_beyond_an_end_continue_the_grids_spacing() -> None:
    assert extension.steps_beyond(GRID, "highest") == (3.6, 7.2, 14.4, 28.8)[
        :readouts.EXTENSIONS_PER_END]
    assert extension.steps_beyond(GRID, "lowest", count=2) == (0.1, 0.05)
    # The quick tier's first two lower steps are the paper tier's own.
    assert set(extension.steps_beyond(experiment.QUICK_SYNTHETIC_STEPS, "lowest", count=2)) <= set(
        experiment.PAPER_SYNTHETIC_STEPS)
    assert extension.steps_beyond(experiment.PAPER_LINEAR_STEPS, "highest", count=2) == (
        0.02, 0.05)
    assert extension.steps_beyond(experiment.PAPER_LINEAR_STEPS, "lowest", count=2) == (
        5e-5, 2e-5)
    assert extension.steps_beyond((0.5, 1.0), "highest", count=4) == (2.0, 5.0, 10.0, 20.0)
    assert extension.steps_beyond((0.5, 1.0), "lowest", count=3) == (0.2, 0.1, 0.05)
    with pytest.raises(ValueError, match="not an end"):
        extension.steps_beyond(GRID, "middle")
    with pytest.raises(ValueError, match="> 0"):
        extension.steps_beyond((0.0, 1.0), "lowest")


def test_a_curve_on_the_upper_end_gets_the_next_step_and_an_inside_one_none() -> None:
    curves = readouts.best_over_steps(_runs({INF: 5.0, 1.0: 0.7}))
    planned = extension.plan(curves, GRID)
    assert len(planned) == 1
    row = planned.iloc[0]
    assert (row["alpha_q"], row["end"], row["best_step"], row["beyond"], row["step"]) == (
        INF, "highest", 1.8, 0, 3.6)
    assert row["iteration"] == 20  # the last, by default
    # At an iteration the curves do not hold nothing is read; a lower end is planned too.
    low = readouts.best_over_steps(_runs({0.3: 0.01}))
    assert extension.plan(low, GRID, iterations=[5]).empty
    assert list(extension.plan(low, GRID, iterations=[10, 20])["step"]) == [0.1]


def test_a_curve_extended_to_the_limit_on_an_end_is_not_extended_further() -> None:
    beyond = extension.steps_beyond(GRID, "highest")
    last = readouts.EXTENSIONS_PER_END
    runs = _runs({INF: 100.0}, steps=(*GRID, *beyond))
    runs[readouts.EXTENDED] = runs["step"] > max(GRID)
    curves = readouts.best_over_steps(runs)
    planned = extension.plan(curves, GRID)
    assert len(planned) == 1
    assert planned.iloc[0]["beyond"] == last and math.isnan(planned.iloc[0]["step"])
    assert extension.extension_configs(planned, [{"clip": 1.0, "noise_multiplier": 0.0,
                                                  "alpha_q": INF, "seed": 0,
                                                  "step": 0.2}]) == []
    # Still on an open end: the claims read it so, and say the extensions ran out.
    edge = readouts.step_edge(curves, 0.0, INF)
    assert edge.end == "highest" and edge.grid() == f"0.2 ... {beyond[-1]:g}"
    assert edge.describe() == (f"best step {beyond[-1]:g} is the highest of the grid 0.2 ... "
                               f"{beyond[-1]:g}, extended {last} steps beyond 1.8 until its "
                               "extensions ran out, an open end")
    [reason] = claims.step_edge_reasons(curves, [INF], 0.0, claimed=False)
    assert "until its extensions ran out" in reason
    # One short of the limit: the last step is planned, and the reason says it is not run.
    short = runs[runs["step"] != beyond[-1]]
    assert list(extension.plan(readouts.best_over_steps(short), GRID)["step"]) == [beyond[-1]]
    assert readouts.step_edge(readouts.best_over_steps(short), 0.0, INF).describe().endswith(
        f"extended {last - 1} step{'s' if last > 2 else ''} beyond 1.8, its next extension "
        "not run, an open end")


def test_the_extension_configs_differ_from_the_base_configs_in_the_step_only() -> None:
    setup = experiment.tier("smoke")
    base = [c for seed in (0, 1) for c in experiment.configs(setup, seed, figure="1c")]
    planned = pd.DataFrame([
        # A local-only curve read at sigma = 3 is run at the noise level it was run at.
        {"clip": 1.0, "noise_multiplier": 3.0, "alpha_q": 0.0, "end": "lowest", "step": 0.001},
        {"clip": 1.0, "noise_multiplier": 0.0, "alpha_q": 0.0, "end": "lowest", "step": 0.001},
        {"clip": 1.0, "noise_multiplier": 3.0, "alpha_q": INF, "end": "highest", "step": 0.01},
        {"clip": 1.0, "noise_multiplier": 3.0, "alpha_q": 1.0, "end": "highest",
         "step": math.nan}])
    found = extension.extension_configs(planned, base)
    assert len(found) == 4  # local-only once per seed, global learning once per seed
    for config in found:
        twins = [b for b in base if {k: v for k, v in b.items() if k != "step"}
                 == {k: v for k, v in config.items() if k != "step"}]
        assert twins, config
        assert config["step"] not in {b["step"] for b in twins}
        assert set(config) == set(twins[0])
    assert {(c["seed"], c["alpha_q"], c["noise_multiplier"], c["step"]) for c in found} == {
        (s, 0.0, 0.0, 0.001) for s in (0, 1)} | {(s, INF, 3.0, 0.01) for s in (0, 1)}
    # The synthetic grid's configs likewise (every field but the step kept).
    synthetic = experiment.configs(setup, 0, figure="1a")
    row = pd.DataFrame([{"clip": 100.0, "noise_multiplier": 100.0, "alpha_q": 1.0,
                         "end": "highest", "step": 1.4}])
    [config] = extension.extension_configs(row, synthetic)
    assert config == {**next(c for c in synthetic if c["clip"] == 100.0
                             and c["noise_multiplier"] == 100.0 and c["alpha_q"] == 1.0),
                      "step": 1.4}


def _fake_sweep(best: dict[float, float], calls: list):
    """A stand-in for the figure's runner: each config's run, its risk lowest at
    ``best[alpha_q]``."""
    def sweep(*, experiment_name, configs, max_group_size, sweep_args):
        calls.append((sorted({c["step"] for c in configs}), sorted({c["seed"] for c in configs})))
        return pd.DataFrame([
            {"clip": c["clip"], "noise_multiplier": c["noise_multiplier"],
             "alpha_q": c["alpha_q"], "step": c["step"], "iteration": t, "epsilon": 0.0,
             "excess_risk": _risk(c["step"], best[c["alpha_q"]]) * (1 + 0.001 * c["seed"]),
             "run_key": run_key(c, experiment.run_group.__module__)}
            for c in configs for t in (1, 10, 20)])
    return sweep


def _base_configs(alphas) -> list[dict]:
    return [{"experiment": "x", "clip": 1.0, "noise_multiplier": 0.0, "alpha_q": a,
             "seed": s, "step": step} for s in SEEDS for a in alphas for step in GRID]


def test_extend_runs_beyond_an_end_until_the_best_is_inside_or_the_extensions_run_out(
        monkeypatch) -> None:
    best = {INF: 100.0, 3.0: 2.2, 1.0: 0.7}
    calls: list = []
    monkeypatch.setattr(extension, "_one_sweep", _fake_sweep(best, calls))
    runs = _runs(best)
    done = extension.extend(runs, _base_configs(best), base_steps=GRID,
                            read=readouts.best_over_steps, experiment_name="x")
    # One step a round, only for the curves on the end: one sweep a round over every seed.
    beyond = extension.steps_beyond(GRID, "highest")
    assert calls == [([step], sorted(SEEDS)) for step in beyond]
    assert done.runs_added == len(beyond) * len(SEEDS) + len(SEEDS)
    assert list(done.extended["alpha_q"]) == [3.0, INF]
    assert list(done.extended["steps"]) == ["3.6", ", ".join(f"{s:g}" for s in beyond)]
    # alpha*Q = 3: its best, 1.8, is now inside; global learning still on the end.
    assert len(done.ran_out) == 1 and done.ran_out.iloc[0]["alpha_q"] == INF
    assert done.not_run.empty
    # The extension runs keep only the iterations the grid's runs hold, and say what they are.
    extended = done.runs[done.runs[readouts.EXTENDED]]
    assert set(extended["iteration"]) == {10, 20}
    assert set(extended["seed"]) == set(SEEDS)
    curves = readouts.best_over_steps(done.runs)
    assert readouts.step_edge(curves, 0.0, 3.0).best == 1.8
    assert readouts.step_edge(curves, 0.0, 3.0).end == ""
    assert readouts.step_edge(curves, 0.0, 3.0).grid() == "0.2 ... 3.6"
    assert readouts.step_edge(curves, 0.0, 1.0).grid() == "0.2 ... 1.8"
    table = extension.extension_table({"1a": done})
    assert list(table["best step after"]) == ["inside", "highest (extensions ran out)"]
    assert "2 curves extended beyond 2 ends" in extension.extension_summary({"1a": done})


def test_extend_stops_where_its_runs_are_not_stored(monkeypatch) -> None:
    from fedlib.runs.cache import MissingRunsError

    def missing(**kwargs):
        raise MissingRunsError("2 runs of x are not stored. Compute them")

    monkeypatch.setattr(extension, "_one_sweep", missing)
    best = {INF: 100.0}
    runs = _runs(best).assign(run_key="k")
    done = extension.extend(runs, _base_configs(best), base_steps=GRID,
                            read=readouts.best_over_steps, experiment_name="x",
                            compute=False, part="the part")
    assert done.left_out == {"the part": "not stored, and read from stored runs only"}
    assert done.extended.empty and done.runs_added == 0
    assert list(done.not_run["step"]) == [3.6]
    note = extension.unextended_note({"Figure x": (done, runs, "x")})
    assert "alpha*Q=inf: best step 1.8 on the highest of 0.2 ... 1.8, next 3.6" in note
    assert f"That is {len(SEEDS)} runs" in note


def test_the_step_table_shows_the_extended_grid() -> None:
    beyond = extension.steps_beyond(GRID, "highest")
    runs = _runs({INF: 100.0, 1.0: 0.7}, steps=(*GRID, *beyond))
    runs = runs[(runs["alpha_q"] == INF) | (runs["step"] <= max(GRID))]
    runs[readouts.EXTENDED] = runs["step"] > max(GRID)
    curves = readouts.best_over_steps(runs)
    setup = experiment.tier("smoke")
    edges = readouts.plotted_step_edges(curves, curves.iloc[:0], curves.iloc[:0], setup)
    table = readouts.step_edge_table(edges)
    assert table.loc[("1a", "0"), "grid"] == (
        f"0.2 ... 1.8; alpha*Q=inf: 0.2 ... {beyond[-1]:g} (extended beyond 1.8)")
    assert table.loc[("1a", "0"), "alpha*Q=inf"] == f"{beyond[-1]:g} (highest)"
    summary = readouts.step_edge_summary(edges)
    assert "1 of the 2 curves were extended" in summary
    assert "1 still end on an end their extensions ran out on" in summary
    mean = readouts.mean_over_seeds(curves)
    assert set(readouts.STEP_EXTENSION) <= set(mean.columns)
    assert np.array_equal(mean.loc[mean["alpha_q"] == INF, "beyond_high"].unique(),
                          [readouts.EXTENSIONS_PER_END])


def test_the_command_computes_the_cnn_extensions_the_chapter_then_reads(mirror) -> None:
    setup = experiment.tier("smoke")
    runs = run_repeats(setup, 0, "smoke", figure="1d", source="leaf-sample", progress=False)
    planned = extension.plan(readouts.best_over_steps(runs, "accuracy", higher_is_better=True),
                             setup.cnn.steps)

    def read():
        return extension.extend_figure(runs, setup, 0, "smoke", "1d", progress=False)

    # The smoke grid is one step, so every curve's best step is on both ends of it.
    assert not planned.dropna(subset=["step"]).empty
    before = read()
    assert before.runs_added == 0
    assert before.left_out and not before.not_run.empty  # the chapter computes none
    assert extension._main(["--tier", "smoke", "--workers", "1"]) == 0
    after = read()
    assert not after.left_out and after.runs_added > 0
    assert set(after.runs.loc[after.runs[readouts.EXTENDED], "seed"]) == set(runs["seed"])


def test_figure_1d_extends_every_level_its_claims_read_not_only_those_it_draws(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """"Large alpha is best at poor privacy" reads the best of alpha*Q >= 10 (30 and 100
    are not drawn), so their curves' step grids are extended too."""
    seen = {}

    def spy(runs, configs, *, read, **kwargs):
        seen["read"] = read
        return None

    monkeypatch.setattr(extension, "extend", spy)
    monkeypatch.setattr(extension, "figure_configs", lambda *a, **k: [])
    setup = experiment.tier("smoke")
    extension.extend_figure(pd.DataFrame(), setup, 0, "smoke", "1d")
    levels = (0.0, 0.3, 3.0, 30.0, 100.0, INF)
    assert not set(levels[1:-1]) & set(experiment.EMNIST_FIGURE_ALPHA_Q)
    sigma = max(setup.cnn.panel_sigmas)
    runs = pd.DataFrame([
        {"clip": 1.0, "noise_multiplier": s, "alpha_q": a, "step": step, "iteration": 10,
         "seed": seed, "epsilon": 1.0, "accuracy": 0.5 + 0.1 * step}
        for a in levels for s in (sigma, 1234.0) for seed in SEEDS for step in (0.5, 1.0)])
    curves = seen["read"](runs)
    assert set(curves["alpha_q"]) == set(levels)
    assert set(curves["noise_multiplier"]) == {sigma}
