"""What the PFA chapter reads off its runs: the per-client ledger of a setting and the
verdict of Figure 5."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedlib.papers.pfa import claims as pfa_results
from fedlib.papers.pfa import experiment as pfa
from fedlib.papers.pfa.budgets import sample_budgets
from fedlib.papers.pfa.training import plan_participation

FIG5 = {"figure": "fig5", "dataset": "imdb", "model": "lstm", "partition": "iid",
        "distribution": "mixgauss1", "n_clients": 50, "rounds": 4, "local_steps": 3,
        "batch_size": 8, "lr": 0.5, "n_test": 100, "eval_every": 1, "seed": 0}


def test_examples_per_client_follow_the_dataset():
    assert pfa.setting_examples_per_client({**FIG5, "dataset": "mnist", "n_clients": 30}) == 1200
    assert pfa.setting_examples_per_client({**FIG5, "dataset": "cifar10"}) == 1000
    assert pfa.setting_examples_per_client(FIG5) == 500
    with pytest.raises(ValueError, match="unknown dataset 'svhn'"):
        pfa.setting_examples_per_client({**FIG5, "dataset": "svhn"})


def test_ledger_of_a_small_dataset_uses_its_share_of_examples():
    ledger = pfa_results.ledger_table(FIG5)
    budgets = sample_budgets(FIG5["distribution"], FIG5["n_clients"], FIG5["seed"])
    expected, _, _ = plan_participation(budgets, 500, pfa.schedule(FIG5), pfa.DELTA, 0)
    np.testing.assert_allclose(ledger["noise multiplier (RDP calibration)"],
                               expected.noise_multipliers)
    assert (ledger["epsilon spent (RDP)"] <= ledger["budget"] * (1 + 1e-9)).all()
    # The same budgets over 1,200 examples each would need less noise.
    wrong, _, _ = plan_participation(budgets, 1200, pfa.schedule(FIG5), pfa.DELTA, 0)
    assert (expected.noise_multipliers > wrong.noise_multipliers).all()


def _final(accuracies: dict[str, dict[str, float]]) -> pd.DataFrame:
    return pd.DataFrame([{"figure": "fig5", "dataset": d, "aggregator": a,
                          "projection": "public", "accuracy": v}
                         for d, by in accuracies.items() for a, v in by.items()])


GOOD = {"pfa": 0.70, "pfa+": 0.69, "weiavg": 0.68, "fedavg": 0.40}


def test_figure5_verdict_needs_both_datasets():
    empty = _final({}).reindex(columns=["figure", "dataset", "aggregator", "projection",
                                        "accuracy"])
    holds, reason = pfa_results.fig5_verdict(empty)
    assert holds is None and "paper tier" in reason
    holds, reason = pfa_results.fig5_verdict(_final({"cifar10": GOOD}))
    assert holds is None and "imdb" in reason


def test_figure5_verdict_on_both_datasets():
    holds, evidence = pfa_results.fig5_verdict(_final({"cifar10": GOOD, "imdb": GOOD}))
    assert holds is True and "cifar10: PFA 0.700" in evidence
    close_to_fedavg = {**GOOD, "fedavg": 0.66}
    assert pfa_results.fig5_verdict(_final({"cifar10": GOOD, "imdb": close_to_fedavg}))[0] is False
    below_weiavg = {**GOOD, "weiavg": 0.71}
    assert pfa_results.fig5_verdict(_final({"cifar10": below_weiavg, "imdb": GOOD}))[0] is False
