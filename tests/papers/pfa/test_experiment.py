"""The runs of the PFA chapter: tiers, configs, the runner and the sweep, and Figure 5's
CIFAR-10 CNN and IMDb LSTM in the DP-SGD engine."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from fedlib.nn.dpsgd import draw_batches, local_dpsgd
from fedlib.nn.dpsgd_reference import opacus_local_dpsgd
from fedlib.nn.models import Cifar10CNN, ImdbLSTM, n_parameters
from fedlib.papers.pfa import experiment as pfa
from fedlib.papers.pfa.authors import AUTHORS_FILES
from fedlib.papers.pfa.budgets import BUDGET_DISTRIBUTIONS, authors_budgets


def _max_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def test_cifar_cnn_in_the_engine_matches_the_opacus_loop():
    torch.manual_seed(3)
    model = Cifar10CNN().double()
    assert n_parameters(model) == 878_538
    n_clients, n_examples, steps, batch = 3, 12, 2, 4
    x = torch.randn(n_clients, n_examples, 3, 32, 32, dtype=torch.float64)
    y = torch.randint(0, 10, (n_clients, n_examples))
    batches = draw_batches(n_clients, n_examples, steps, batch, torch.Generator().manual_seed(1))
    zero = torch.zeros(n_clients)
    reference = opacus_local_dpsgd(model, None, x, y, batches, 0.1, 0.5, zero)
    assert max(float(v.abs().max()) for v in reference.values()) > 1e-4
    for method in ("layers", "func"):
        delta = local_dpsgd(model, None, x, y, batches, 0.1, 0.5, zero, method=method)
        assert _max_diff(delta, reference) < 1e-10, method


def test_lstm_is_torch_lstm_written_out():
    torch.manual_seed(0)
    model = ImdbLSTM(50, embedding_dim=6, hidden_size=5).double()
    reference = nn.LSTM(6, 5, batch_first=True).double()
    with torch.no_grad():
        reference.weight_ih_l0.copy_(model.input_weight)
        reference.weight_hh_l0.copy_(model.hidden_weight)
        reference.bias_ih_l0.copy_(model.bias)
        reference.bias_hh_l0.zero_()
    tokens = torch.randint(0, 50, (4, 9))
    _, (h, _) = reference(model.embedding(tokens))
    expected = model.classifier(h[0])
    torch.testing.assert_close(model(tokens), expected, rtol=0, atol=1e-12)
    torch.testing.assert_close(model(tokens.double()), expected, rtol=0, atol=1e-12)


def _per_example_loop(model: nn.Module, x, y, batches, lr: float, clip: float):
    """DP-SGD without noise, one example at a time with plain autograd."""
    deltas = []
    for m in range(x.shape[0]):
        client = ImdbLSTM(model.embedding.num_embeddings, model.embedding.embedding_dim,
                          model.hidden_size).double()
        client.load_state_dict(model.state_dict())
        params = dict(client.named_parameters())
        for t in range(batches.shape[1]):
            total = {k: torch.zeros_like(v) for k, v in params.items()}
            for i in batches[m, t].tolist():
                loss = nn.functional.cross_entropy(client(x[m, i:i + 1]), y[m, i:i + 1])
                grads = torch.autograd.grad(loss, list(params.values()))
                norm = torch.sqrt(sum(g.square().sum() for g in grads))
                factor = min(1.0, clip / (float(norm) + 1e-6))
                for k, g in zip(params, grads, strict=True):
                    total[k] += factor * g
            with torch.no_grad():
                for k, p in params.items():
                    p -= lr / batches.shape[2] * total[k]
        start = dict(model.named_parameters())
        deltas.append({k: (start[k] - p).detach() for k, p in params.items()})
    return {k: torch.stack([d[k] for d in deltas]) for k in deltas[0]}


def test_lstm_in_the_engine_matches_a_per_example_loop():
    torch.manual_seed(5)
    model = ImdbLSTM(30, embedding_dim=4, hidden_size=3).double()
    n_clients, n_examples, steps, batch = 2, 6, 3, 3
    x = torch.randint(0, 30, (n_clients, n_examples, 7)).double()
    y = torch.randint(0, 2, (n_clients, n_examples))
    batches = draw_batches(n_clients, n_examples, steps, batch, torch.Generator().manual_seed(2))
    reference = _per_example_loop(model, x, y, batches, lr=0.5, clip=0.05)
    assert max(float(v.abs().max()) for v in reference.values()) > 1e-3
    delta = local_dpsgd(model, None, x, y, batches, 0.5, 0.05, 0.0)
    assert _max_diff(delta, reference) < 1e-9


def test_figure5_runs_at_the_paper_tier_only():
    assert not [c for c in pfa.configs(pfa.tier("quick"), 0) if c["figure"] == "fig5"]
    fig5 = [c for c in pfa.configs(pfa.tier("paper"), 0) if c["figure"] == "fig5"]
    settings = {(c["dataset"], c["model"]) for c in fig5}
    assert settings == {("cifar10", "cnn4"), ("imdb", "lstm")}
    assert {c["n_clients"] for c in fig5} == {50}
    for dataset, model in settings:
        aggregators = {c["aggregator"] for c in fig5
                       if (c["dataset"], c["model"]) == (dataset, model) and c["seed"] == 0}
        assert aggregators == set(pfa.MAIN_AGGREGATORS)
    assert {c["device"] for c in fig5} == {"cpu"}
    assert {c["device"] for c in pfa.configs(pfa.tier("paper", fig5_device="cuda"), 0)
            if c["figure"] == "fig5"} == {"cuda"}
    with pytest.raises(ValueError, match="fig5_device must be 'cpu' or 'cuda'"):
        pfa.tier("paper", fig5_device="gpu")


def test_clients_share_a_small_training_set_equally():
    assert pfa.examples_per_client(60_000, 30) == 1200
    assert pfa.examples_per_client(50_000, 50) == 1000
    assert pfa.examples_per_client(25_000, 50) == 500
    idx = pfa.client_indices(torch.arange(1000).remainder(10).numpy(), 50, "iid", 0)
    assert idx.shape == (50, 20) and len(set(idx.ravel())) == 1000


def test_figure5_setting_trains_and_carries_the_data_label(monkeypatch):
    generator = torch.Generator().manual_seed(0)
    labels = torch.arange(400).remainder(10)
    images = torch.randn(400, 3, 32, 32, generator=generator)
    monkeypatch.setattr(pfa, "_examples", lambda dataset, split, standardise=True: (
        images, labels, "CIFAR-10 (JPEG proxy)"))
    base = {"figure": "fig5", "dataset": "cifar10", "model": "cnn4", "partition": "iid",
            "distribution": "mixgauss1", "n_clients": 10, "rounds": 2, "local_steps": 2,
            "batch_size": 4, "lr": 0.05, "n_test": 50, "eval_every": 1, "seed": 0}
    configs = [{**base, "aggregator": a, "k": 1, "projection": "public"}
               for a in ("np-fedavg", "pfa")]
    tables = pfa.run_group(configs)
    assert len(tables) == 2
    for table in tables:
        assert set(table["data"]) == {"CIFAR-10 (JPEG proxy)"}
        assert table["accuracy"].dropna().between(0, 1).all()
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="torch sees no CUDA device here"):
            pfa.run_group([{**c, "device": "cuda"} for c in configs])


def test_tier_overrides_replace_fields_and_none_keeps_them():
    assert pfa.tier("quick") is pfa.TIERS["quick"]
    assert pfa.tier("quick", rounds=None) == pfa.TIERS["quick"]
    changed = pfa.tier("quick", rounds=7, k=2)
    assert (changed.rounds, changed.k) == (7, 2)
    assert changed.n_clients == pfa.TIERS["quick"].n_clients
    with pytest.raises(ValueError, match="not a run tier"):
        pfa.tier("huge")
    with pytest.raises(TypeError):
        pfa.tier("quick", clients=3)


def test_configs_of_the_smoke_tier():
    setup = pfa.tier("smoke")
    configs = pfa.configs(setup, 4)
    per_figure = pd.Series([c["figure"] for c in configs]).value_counts().to_dict()
    main = len(pfa.MAIN_AGGREGATORS)
    # Figure 3: 2 datasets x 2 models, each with PFA as Algorithm 3 writes it too; Figure
    # 8: 2 models; Figure 4: one setting per distribution; Figure 6: PFA+, and PFA with
    # the four subspaces per k, and WeiAvg; the authors' defaults with PFA on a random
    # direction, and under RDP PFA as written with the public and a random subspace; the
    # learning-rate grid: every method and PFA as written at each rate.
    a = setup.authors
    authors = (len(a.distributions) * len(a.models)
               * (len(a.calibrations) * (len(a.aggregators) + 1) + 2))
    assert per_figure == {"fig3": 4 * (main + 1), "fig8": 2 * main,
                          "fig4": len(setup.distributions) * main,
                          "fig6": 5 * len(setup.k_grid) + 1, "authors": authors,
                          "lr": len(setup.lr_grid) * (main + 1)}
    assert {c["seed"] for c in configs if c["figure"] != "authors"} == {4}
    assert {c["seed"] for c in configs if c["figure"] == "authors"} == {4 + s for s in a.seeds}
    assert {c["calibration"] for c in configs if c["figure"] != "authors"} == {"rdp"}
    assert {c["calibration"] for c in configs if c["figure"] == "authors"} == {
        "rdp", "closed-form"}
    assert pfa.configs(setup, 4, figures=("authors",)) == [
        c for c in configs if c["figure"] == "authors"]
    with pytest.raises(ValueError, match="unknown figures"):
        pfa.configs(setup, 4, figures=("fig9",))
    assert all(set(pfa.BATCHED) <= set(c) for c in configs)
    assert {c["n_clients"] for c in configs} == {setup.n_clients}
    figures = [c for c in configs if c["figure"] not in ("authors", "lr")]
    assert {c["lr"] for c in figures if c["model"] == "logr"} == {setup.lr_logr}
    assert {c["lr"] for c in figures if c["model"] == "cnn"} == {setup.lr_cnn}
    assert {c["lr"] for c in configs if c["figure"] == "authors"} == {a.lr}
    repeated = pfa.configs(pfa.tier("smoke", repeats=2), 4, figures=("fig3", "fig4"))
    once = pfa.configs(setup, 4, figures=("fig3", "fig4"))
    assert len(repeated) == 2 * len(once) and {c["seed"] for c in repeated} == {4, 5}


def test_the_authors_setting_is_their_codes_defaults():
    a = pfa.tier("paper").authors
    assert (a.n_clients, a.rounds, a.local_steps, a.batch_size, a.lr, a.k) == (
        30, 100, 100, 4, 0.1, 1)
    assert (a.examples_per_client, a.n_test, a.seeds[0]) == (2000, 10_000, 10)
    configs = pfa.configs(pfa.tier("paper"), 0, figures=("authors",))
    assert {c["distribution"] for c in configs} == {"mixgauss1", "mixgauss2"}
    assert {c["model"] for c in configs} == {"logr", "logr-authors"}
    assert {(c["aggregator"], c["projection"]) for c in configs} == {
        ("fedavg", "public"), ("weiavg", "public"), ("pfa", "public"), ("pfa+", "public"),
        ("np-fedavg", "public"), ("pfa", "random"), ("pfa", "public-text"),
        ("pfa", "random-text")}
    config = configs[0]
    assert pfa.setting_examples_per_client(config) == 2000
    assert pfa.hyperparameters(config).batch_size == 4
    # Their epsfiles/mixgauss1.txt and mixgauss3.txt are our mixgauss2 and mixgauss1.
    assert BUDGET_DISTRIBUTIONS["mixgauss2"] == ((0.9, 0.5, 0.01), (0.1, 10.0, 0.1))
    assert BUDGET_DISTRIBUTIONS["mixgauss1"] == ((0.9, 0.1, 0.01), (0.1, 10.0, 0.1))
    assert AUTHORS_FILES == {"mixgauss2": "mixgauss1", "mixgauss1": "mixgauss3"}
    budgets = pfa.setting_budgets({**config, "distribution": "mixgauss2", "seed": 10})
    np.testing.assert_array_equal(budgets, authors_budgets("mixgauss2", 30, 10))
    with pytest.raises(ValueError, match="budget_draw"):
        pfa.setting_budgets({**config, "budget_draw": "theirs"})
    # The whole training set, dealt out: 30 clients of 2,000.
    idx = pfa.client_indices(np.arange(60_000) % 10, 30, "iid", 0, 2000)
    assert idx.shape == (30, 2000) and len(set(idx.ravel())) == 60_000


def test_the_authors_model_is_their_double_softmax_logr():
    model = pfa.build_model("logr-authors", 0)
    assert all(float(p.detach().abs().max()) == 0 for p in model.parameters())
    x = torch.rand(3, 1, 28, 28)
    torch.testing.assert_close(model(x), torch.full((3, 10), 0.1))
    assert "logr-authors" in pfa.UNIT_PIXEL_MODELS


def test_run_group_refuses_configs_of_different_settings():
    configs = [c for c in pfa.configs(pfa.tier("smoke"), 0) if c["figure"] == "fig3"]
    mixed = [configs[0], {**configs[1], "model": "cnn" if configs[0]["model"] == "logr"
                          else "logr"}]
    with pytest.raises(ValueError, match="differ only in aggregator, k, projection"):
        pfa.run_group(mixed)


def test_run_merges_every_config_into_its_rows(monkeypatch):
    calls: list[int] = []

    def fake_group(configs):
        calls.append(len(configs))
        return [pd.DataFrame({"round": [0, 1], "accuracy": [0.1, 0.2 + i]})
                for i, _ in enumerate(configs)]

    monkeypatch.setattr(pfa, "run_group", fake_group)
    setup = pfa.tier("smoke", distributions=("uniform",), k_grid=(1,))
    configs = pfa.configs(setup, 0)
    runs = pfa.run(setup, 0, workers=1, progress=False)
    assert len(runs) == 2 * len(configs)
    # one call per setting: 8 of the figures, 4 of the authors' defaults, one per rate
    assert sum(calls) == len(configs) and len(calls) == 12 + len(setup.lr_grid)
    for column in ("figure", "dataset", "model", "aggregator", "k", "projection", "seed"):
        assert column in runs
    first = runs[runs["run_key"] == runs["run_key"].iloc[0]]
    assert first[list(configs[0])].drop_duplicates().to_dict("records") == [configs[0]]


def test_describe_is_the_setup_as_a_dict():
    described = pfa.describe(pfa.tier("paper"))
    assert described["rounds"] == 100 and described["k_grid"] == pfa.PAPER_K_GRID


def test_pfa_evaluates_on_a_test_subset_of_every_class_when_the_set_is_stored_by_class() -> None:
    from fedlib.papers.pfa.experiment import test_subset

    labels = np.repeat([0, 1], 12_500)  # IMDb's test set: the negative reviews first
    kept = test_subset(len(labels), 10_000)
    assert len(set(kept)) == 10_000 and np.all(np.diff(kept) > 0)
    assert 4_800 < labels[kept].sum() < 5_200  # the first 10,000 would all be negative
    np.testing.assert_array_equal(kept, test_subset(len(labels), 10_000))  # same every run
    np.testing.assert_array_equal(test_subset(10_000, 10_000), np.arange(10_000))
