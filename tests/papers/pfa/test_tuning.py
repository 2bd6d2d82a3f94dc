"""The PFA chapter's tuning: a tuning run is the full run stopped early and never sees
the test set; the search's choices are made again, the same, from the stored table."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from fedlib.papers.pfa import experiment as pfa
from fedlib.papers.pfa import tuned, tuning


@pytest.fixture
def synthetic(monkeypatch: pytest.MonkeyPatch) -> dict[str, torch.Tensor]:
    """MNIST-shaped examples with a learnable label (the mean brightness of a band), and a
    test set whose labels are shuffled apart from the training set's."""
    generator = torch.Generator().manual_seed(0)
    sets = {}
    for split, n in (("train", 60_000), ("test", 10_000)):
        x = torch.randn(n, 1, 28, 28, generator=generator)
        y = (x[:, 0, 10:14].mean(dim=(1, 2)) * 20).clamp(-4.9, 4.9).add(5).long()
        sets[split] = (x, y)
    monkeypatch.setattr(pfa, "_examples", lambda dataset, split, standardise=True: (
        *sets[split], "MNIST"))
    return sets


def _config(**changes) -> dict:
    base = {"dataset": "mnist", "model": "logr", "partition": "iid", "distribution": "uniform",
            "n_clients": 10, "rounds": 4, "local_steps": 3, "batch_size": 4, "lr": 0.1,
            "n_test": 200, "eval_every": 1, "seed": 3, "examples_per_client": 60,
            "calibration": "rdp", "n_validation": 300, "tuning_rounds": 2,
            "aggregator": "pfa", "k": 1, "projection": "public"}
    return {**base, **changes}


def test_a_tuning_run_is_the_full_run_stopped_and_scores_validation_only(synthetic):
    configs = [_config(aggregator=a) for a in ("fedavg", "pfa")]
    stopped = tuning.run_group(configs)
    full = pfa.run_group([{**c, "figure": "fig4"} for c in configs])
    for short, long in zip(stopped, full, strict=True):
        assert "accuracy" not in short.columns  # the test set is not evaluated
        assert list(short["round"]) == [0, 1, 2]
        # The same rounds, to the last bit, as the full run's validation scores: the same
        # noise (calibrated for all 4 rounds), clients and batches.
        pd.testing.assert_series_equal(short["val_accuracy"],
                                       long["val_accuracy"].iloc[:3], check_names=False)
        assert not short["val_accuracy"].equals(long["accuracy"].iloc[:3])


def test_a_tuning_run_needs_validation_data_and_a_budget_inside_its_rounds(synthetic):
    with pytest.raises(ValueError, match="validation"):
        tuning.run_group([_config(n_validation=0)])
    with pytest.raises(ValueError, match="exceeds the run's rounds"):
        tuning.run_group([_config(tuning_rounds=5)])


def test_the_choices_are_made_again_the_same_from_the_stored_table(synthetic, monkeypatch):
    setup = pfa.tier("smoke", n_clients=10, rounds=4, local_steps=2)
    where = tuned.Setting("test", "mnist", "logr", "iid", "uniform", ("fig4",))
    monkeypatch.setattr(tuned, "TUNED_AGGREGATORS", ("fedavg", "pfa"))
    monkeypatch.setattr(tuned, "BUDGET", tuned.TuningBudget(0.5, (100,), 300, 2))
    first = tuned.tune(where, 0, setup=setup, workers=1)
    assert first.complete
    assert set(first.table["seed"]) == {100}  # a seed apart from the verdicts' seeds
    again = tuned.stored_tuning(where, 0, setup)
    pd.testing.assert_frame_equal(first.choices, again.choices)
    # The paper tier at the choice: each tuned method at its rate (and k).
    chosen = first.choices.set_index("aggregator")
    planned = tuned.tuned_configs(first, 0, setup)
    assert {c["aggregator"] for c in planned} <= {"fedavg", "pfa"} - set(first.untuned())
    for config in planned:
        assert config["lr"] == chosen.loc[config["aggregator"], "lr"]
        assert "n_validation" not in config and config["seed"] < 100


def test_an_unfinished_search_read_from_the_store_is_untuned(synthetic, monkeypatch):
    setup = pfa.tier("smoke", n_clients=10, rounds=4, local_steps=2)
    where = tuned.Setting("test", "mnist", "logr", "iid", "uniform", ("fig4",))
    monkeypatch.setattr(tuned, "TUNED_AGGREGATORS", ("fedavg",))
    monkeypatch.setattr(tuned, "BUDGET", tuned.TuningBudget(0.5, (100,), 300, 2))
    nothing = tuned.stored_tuning(where, 0, setup)
    assert not nothing.complete
    assert "tuning incomplete" in nothing.untuned()["fedavg"]
    assert tuned.tuned_configs(nothing, 0, setup) == []
    with pytest.raises(ValueError, match="unknown tuning setting"):
        tuned.setting("mnist-cnn-everything")


@pytest.mark.parametrize("stored, read", [(5, 5), (3, 3), (2, 0)])
def test_a_setting_is_read_over_three_seeds_at_least(synthetic, monkeypatch, stored, read):
    setup = pfa.tier("smoke", n_clients=10, rounds=4, local_steps=2)
    where = tuned.Setting("test", "mnist", "logr", "iid", "uniform", ("fig4",))
    monkeypatch.setattr(tuned, "TUNED_AGGREGATORS", ("fedavg",))
    monkeypatch.setattr(tuned, "BUDGET", tuned.TuningBudget(0.5, (100,), 300, 2))
    monkeypatch.setitem(tuned.TUNED_REPEATS, "smoke", 5)
    monkeypatch.setattr(tuned, "tier_settings", lambda setup, scale: [where])
    done = tuned.tune(where, 0, setup=setup, workers=1)

    def sweep(planned, workers, progress):
        if any(c["seed"] >= stored for c in planned):
            raise tuned.MissingRunsError("not stored")
        return pd.DataFrame([{**c, "round": 4, "accuracy": 0.5} for c in planned])

    monkeypatch.setattr(tuned, "tune", lambda *a, **k: done)
    monkeypatch.setattr(tuned, "_sweep", sweep)
    protocol = tuned.tuned_runs("smoke", 0, setup)
    assert protocol.seeds("test") == list(range(read))
    summary = protocol.summary()
    if read == 5:
        assert "Not yet read" not in summary and "fewer than" not in summary
    elif read == 3:  # read, and the page says over which seeds
        assert "test over seeds 0, 1, 2" in summary
        assert "3 of the tier's 5 seeds (seeds 3, 4 missing)" in protocol.left_out["test"]
    else:  # two seeds decide nothing: the arm stays untuned, saying why
        assert "read over at least 3 seeds" in summary
        runs = pd.DataFrame([{"figure": "fig4", "dataset": "mnist", "model": "logr",
                              "partition": "iid", "distribution": "uniform",
                              "aggregator": "fedavg", "projection": "public", "lr": 0.1,
                              "k": 1, "seed": 0}])
        assert "read over at least 3 seeds" in protocol.apply(runs)["untuned"].iloc[0]


def test_k_is_bounded_by_the_largest_layer_where_pfa_is_weiavg() -> None:
    # PFA's CNN: its largest tensor is the first dense layer, 32 * 4 * 4 inputs by 32.
    assert tuned.largest_layer("cnn") == 32 * 4 * 4 * 32
    assert tuned.largest_layer("logr") == 28 * 28 * 10
    before = torch.random.get_rng_state()
    tuned.largest_layer.cache_clear()
    tuned.largest_layer("cnn")
    assert torch.equal(torch.random.get_rng_state(), before)  # the global draw is untouched
    where = tuned.setting("mnist-cnn-uniform")
    axis = tuned.k_axis(where)
    assert axis.ladder() == [1, 2, 5, 10, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
    assert axis.beyond(16384, "high") is None
    assert tuned.k_axis(tuned.setting("mnist-logr-mixgauss1")).ladder()[-3:] == [2048, 4096,
                                                                                 7840]
    # A tuning run of PFA or PFA+ at the bound is WeiAvg's at the same rate.
    setup = pfa.tier("paper")
    at_bound = tuned.tuning_config(where, 0, "pfa+", {"lr": 0.05, "k": 16384}, setup)
    assert at_bound == tuned.tuning_config(where, 0, "weiavg", {"lr": 0.05}, setup)
    below = tuned.tuning_config(where, 0, "pfa+", {"lr": 0.05, "k": 8192}, setup)
    assert (below["aggregator"], below["k"]) == ("pfa+", 8192)


def _row(aggregator, lr, k, score):
    return {"aggregator": aggregator, "lr": lr, "k": k, "seed": 100, "val_accuracy": score}


def test_weiavg_stands_for_pfa_at_the_bound_only_where_the_search_reached_it() -> None:
    where = tuned.setting("mnist-cnn-uniform")
    weiavg = [_row("weiavg", lr, 1, s) for lr, s in ((0.01, 0.70), (0.025, 0.80),
                                                    (0.05, 0.90))]
    grid = [_row("pfa", lr, 1, 0.5) for lr in (0.01, 0.025, 0.05)]
    early = tuned._arm_table(pd.DataFrame(weiavg + grid), "pfa", where)
    assert set(early["aggregator"]) == {"pfa"} and set(early["k"]) == {1}  # not reached
    # The search stands on the rung below the bound at 0.025: WeiAvg at 0.025 is its
    # neighbour; it scores higher, so the choice moves to the bound, whose whole line of
    # rates is then read (WeiAvg's grid).
    reached = tuned._arm_table(pd.DataFrame(weiavg + grid + [_row("pfa", 0.025, 8192, 0.75)]),
                               "pfa", where)
    at_bound = reached[reached["k"] == 16384]
    assert sorted(at_bound["lr"]) == [0.01, 0.025, 0.05]
    # Where the bound's neighbour loses, only it is read.
    lost = tuned._arm_table(pd.DataFrame(weiavg + grid + [_row("pfa", 0.025, 8192, 0.85)]),
                            "pfa", where)
    assert sorted(lost.loc[lost["k"] == 16384, "lr"]) == [0.025]
    assert tuned._arm_table(pd.DataFrame(weiavg + grid), "weiavg", where)["k"].tolist() == [
        1, 1, 1]


def _closed_form_search(monkeypatch, score, missing=()):
    """:func:`tuned.tune` on MNIST-CNN Uniform with tuning runs replaced by ``score`` of
    each config (no training); the configs in ``missing`` are not stored."""
    from fedlib.runs.cache import MissingRunsError
    from fedlib.runs.keys import config_text

    def run(configs, workers=None, progress=True):
        if any(config_text(c) in missing for c in configs):
            raise MissingRunsError("not stored")
        return pd.DataFrame([{**c, "run_key": config_text(c), "round": r,
                              "val_accuracy": score(c)} for c in configs for r in (1, 2)])

    monkeypatch.setattr(tuned.tuning, "run", run)
    monkeypatch.setattr(tuned, "TUNED_AGGREGATORS", ("weiavg", "pfa"))
    return tuned.tune(tuned.setting("mnist-cnn-uniform"), 0, setup=pfa.tier("paper"))


def _pfa_grows_with_k_at_lr_0_2(config):
    import math

    if config["aggregator"] == "weiavg":  # its own search stops at 0.01; 0.2 is better
        return 0.9 if config["lr"] == 0.2 else 0.5 - abs(math.log2(config["lr"] / 0.01)) / 100
    return 0.5 - abs(math.log2(config["lr"] / 0.2)) / 100 + math.log2(config["k"]) / 50


def test_pfa_reaching_the_bound_does_not_move_weiavgs_own_choice(monkeypatch):
    done = _closed_form_search(monkeypatch, _pfa_grows_with_k_at_lr_0_2)
    chosen = done.choices.set_index("aggregator")
    assert chosen.loc["pfa", "k"] == 16384 and chosen.loc["pfa", "k_edge"] == "bound"
    assert chosen.loc["pfa", "lr"] == 0.2
    # WeiAvg's run at 0.2 was asked for by PFA's search; WeiAvg's own stopped at 0.01.
    assert 0.2 in set(done.table.loc[done.table["aggregator"] == "weiavg", "lr"])
    assert chosen.loc["weiavg", "lr"] == 0.01
    assert chosen.loc["weiavg", "runs"] == 6  # its grid, and nothing PFA asked for
    assert "read WeiAvg in its place" in done.untuned()["pfa"]


def test_a_missing_run_at_the_bound_is_pending_for_the_method_that_asked(monkeypatch):
    where = tuned.setting("mnist-cnn-uniform")
    at_bound = tuned.tuning_config(where, 0, "pfa", {"lr": 0.2, "k": 16384}, pfa.tier("paper"))
    from fedlib.runs.keys import config_text

    done = _closed_form_search(monkeypatch, _pfa_grows_with_k_at_lr_0_2,
                               missing={config_text(at_bound)})
    assert at_bound["aggregator"] == "weiavg"
    assert done.pending == {"pfa": 1}
    assert "tuning incomplete" in done.untuned()["pfa"] and "weiavg" not in done.untuned()
