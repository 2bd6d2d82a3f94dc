"""The federated loop under heterogeneous budgets: sampling, noise, aggregation, bytes."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from fedlib.nn.dpsgd import draw_batches, local_dpsgd
from fedlib.nn.models import LogisticRegression
from fedlib.papers.pfa.aggregation import upload_bytes
from fedlib.papers.pfa.budgets import ClosedFormLedger, closed_form_noise_multiplier
from fedlib.papers.pfa.training import (
    Federation,
    Hyperparameters,
    Variant,
    plan_participation,
    train_variants,
    variant_noise,
)
from fedlib.privacy.ledger import PrivacyLedger


def _federation(n_clients: int = 10, n: int = 40, seed: int = 0) -> Federation:
    gen = torch.Generator().manual_seed(seed)
    centres = torch.randn((10, 1, 4, 4), generator=gen) * 2
    y = torch.randint(0, 10, (n_clients, n), generator=gen)
    x = centres[y] + 0.5 * torch.randn((n_clients, n, 1, 4, 4), generator=gen)
    y_test = torch.randint(0, 10, (200,), generator=gen)
    x_test = centres[y_test] + 0.5 * torch.randn((200, 1, 4, 4), generator=gen)
    budgets = np.array([0.5, 0.6, 0.4, 0.5, 10.0, 0.5, 0.7, 0.5, 0.6, 0.5])[:n_clients]
    return Federation(x, y, x_test, y_test, budgets, 1e-5)


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return LogisticRegression(in_features=16)


HYPERPARAMETERS = Hyperparameters(rounds=6, local_steps=3, batch_size=4, lr=0.5)


def test_a_variant_trains_the_same_alone_and_beside_others() -> None:
    fed = _federation()
    alone = train_variants(_model(), fed, HYPERPARAMETERS, [Variant("np-fedavg")], seed=3)
    together = train_variants(_model(), fed, HYPERPARAMETERS,
                              [Variant("fedavg"), Variant("np-fedavg"), Variant("pfa+")], seed=3)
    np.testing.assert_allclose(alone.history[0]["accuracy"], together.history[1]["accuracy"])


def test_a_private_variant_draws_the_same_noise_alone_and_beside_others() -> None:
    """Each variant has noise and random directions of its own: its run does not depend
    on which variants are trained with it, nor on their order."""
    fed = _federation()
    mine = [Variant("pfa", k=2, projection="random"), Variant("fedavg"), Variant("pfa+")]
    others = [Variant("weiavg"), Variant("minimum"), Variant("pfa", k=1)]
    alone = [train_variants(_model(), fed, HYPERPARAMETERS, [v], seed=3).history[0]
             for v in mine]
    together = train_variants(_model(), fed, HYPERPARAMETERS, others[:1] + mine[::-1] + others[1:],
                              seed=3).history[1:4][::-1]
    for a, b in zip(alone, together, strict=True):
        pd.testing.assert_frame_equal(a, b)
    # The variants are not trained alike: their accuracies differ somewhere.
    assert not np.array_equal(alone[1]["accuracy"], alone[2]["accuracy"])


def test_non_private_fedavg_equals_a_hand_written_loop() -> None:
    fed = _federation()
    result = train_variants(_model(), fed, HYPERPARAMETERS, [Variant("np-fedavg")], seed=5)
    _, _, plan = plan_participation(fed.budgets, 40, HYPERPARAMETERS, fed.delta, seed=5)
    model = _model()
    params = {n: p.detach().clone() for n, p in model.named_parameters()}
    batch_gen = torch.Generator().manual_seed(5)
    for chosen in plan:
        if len(chosen) == 0:
            continue
        batches = draw_batches(len(chosen), 40, 3, 4, batch_gen)
        # NP-FedAvg is plain SGD: no clipping, no noise (the authors' baseline).
        deltas = local_dpsgd(model, params, fed.x[chosen], fed.y[chosen], batches, 0.5,
                             math.inf, 0.0)
        params = {n: params[n] - deltas[n].mean(dim=0) for n in params}
    logits = fed.x_test.flatten(1) @ params["1.weight"].T + params["1.bias"]
    expected = float((logits.argmax(1) == fed.y_test).float().mean())
    assert result.history[0]["accuracy"].iloc[-1] == pytest.approx(expected)


def test_no_client_takes_part_beyond_its_budget() -> None:
    fed = _federation()
    hyperparameters = Hyperparameters(rounds=12, local_steps=3, batch_size=4, lr=0.5)
    ledger, public, plan = plan_participation(fed.budgets, 40, hyperparameters, fed.delta,
                                              seed=0)
    assert public.sum() == 1 and public[4]
    assert np.all(ledger.spent() <= fed.budgets)
    assert ledger.rounds_taken.max() <= ledger.planned_rounds
    counts = np.bincount(np.concatenate(plan), minlength=10)
    np.testing.assert_array_equal(counts, ledger.rounds_taken)
    # Sampling keeps the public client in every round while it has budget left.
    public_rounds = [t for t, chosen in enumerate(plan) if 4 in chosen]
    assert public_rounds == list(range(ledger.rounds_taken[4]))


def test_training_stops_once_fewer_than_k_clients_can_take_part() -> None:
    fed = _federation()
    for calibration in ("rdp", "closed-form"):
        hyperparameters = Hyperparameters(rounds=20, local_steps=3, batch_size=4, lr=0.5,
                                          calibration=calibration)
        ledger, public, plan = plan_participation(fed.budgets, 40, hyperparameters,
                                                  fed.delta, seed=2)
        sizes = [len(chosen) for chosen in plan]
        stop = sizes.index(0)
        assert set(sizes[:stop]) == {8} and set(sizes[stop:]) == {0}
        assert all(public[chosen].any() for chosen in plan[:stop])
        eligible = ledger.can_take_part()
        assert eligible.sum() < 8 or not (eligible & public).any()


def test_closed_form_calibration_uses_the_authors_formula() -> None:
    fed = _federation()
    hyperparameters = Hyperparameters(rounds=6, local_steps=3, batch_size=4, lr=0.5,
                                      calibration="closed-form")
    result = train_variants(_model(), fed, hyperparameters,
                            [Variant("weiavg"), Variant("minimum")], seed=0)
    assert isinstance(result.ledger, ClosedFormLedger)
    planned = result.ledger.planned_rounds * 3
    expected = [closed_form_noise_multiplier(b, 0.1, planned, fed.delta) for b in fed.budgets]
    np.testing.assert_allclose(result.noise_multipliers["weiavg"], expected)
    np.testing.assert_allclose(result.noise_multipliers["minimum"], max(expected))
    with pytest.raises(ValueError, match="calibration must be one of"):
        Hyperparameters(rounds=1, local_steps=1, batch_size=1, lr=0.1, calibration="ma")


def test_minimum_and_maximum_calibrate_everyone_at_one_budget() -> None:
    fed = _federation()
    ledger = PrivacyLedger(fed.budgets, fed.delta, 0.1, 3, 5)
    low = variant_noise(Variant("minimum"), ledger)
    high = variant_noise(Variant("maximum"), ledger)
    assert np.all(low == low[0]) and np.all(high == high[0])
    assert low[0] == pytest.approx(ledger.noise_multipliers.max())
    assert high[0] == pytest.approx(ledger.noise_multipliers.min())
    assert np.all(variant_noise(Variant("np-fedavg"), ledger) == 0)


def test_pfa_plus_sends_coefficients_after_the_warm_up_round() -> None:
    fed = _federation()
    result = train_variants(_model(), fed, HYPERPARAMETERS,
                            [Variant("fedavg"), Variant("pfa+", k=2)], seed=1)
    sizes = {"1.weight": 160, "1.bias": 10}
    full, plus = result.history
    for (_, f), (_, p) in zip(full.iloc[1:].iterrows(), plus.iloc[1:].iterrows(), strict=True):
        assert f["uplink_bytes"] == upload_bytes(sizes, int(f["clients"]))
        if f["round"] == 1:
            assert p["uplink_bytes"] == f["uplink_bytes"]
        elif p["clients"] and p["public"] == 0:  # no public client left: WeiAvg, full uploads
            assert p["uplink_bytes"] == f["uplink_bytes"]
        elif p["clients"]:
            private = int(p["clients"] - p["public"])
            assert p["uplink_bytes"] == upload_bytes(sizes, int(p["public"]), private, 2)


def test_unknown_aggregator_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown aggregator 'median'"):
        Variant("median")
    with pytest.raises(ValueError, match="projection"):
        Variant("pfa", 1, "learned")


class _Stop(Exception):
    """Stands for a run stopped part-way (the end of a working session)."""


def test_a_run_stopped_part_way_resumes_from_its_checkpoint_to_the_same_result(
        tmp_path, monkeypatch) -> None:
    from fedlib.checkpoints import Checkpointer
    from fedlib.papers.pfa import training

    fed = _federation()
    variants = [Variant("pfa+", k=1), Variant("pfa", k=2, projection="random"),
                Variant("weiavg"), Variant("np-fedavg")]
    kwargs = {"seed": 3, "spectrum_rounds": (1, 3, 6)}
    whole = train_variants(_model(), fed, HYPERPARAMETERS, variants, **kwargs)
    path = tmp_path / "run.pt"
    scores = training._scores
    for stop_at in (2, 5):  # after round 1 (one round saved), after round 4
        # _scores runs once for round 0, then once per variant and round: stop at the
        # first variant of round stop_at, with rounds up to stop_at - 1 saved.
        stop_call = 1 + (stop_at - 1) * len(variants) + 1

        def stopping(*args, calls=[0], stop_call=stop_call, **kw):  # noqa: B006
            calls[0] += 1
            if calls[0] == stop_call:
                raise _Stop
            return scores(*args, **kw)

        monkeypatch.setattr(training, "_scores", stopping)
        with pytest.raises(_Stop):
            train_variants(_model(), fed, HYPERPARAMETERS, variants,
                           checkpointer=Checkpointer(path, "runs", every_seconds=0), **kwargs)
        assert path.exists()
        saved = Checkpointer(path, "runs").load()
        assert saved["round"] == stop_at - 1
        monkeypatch.setattr(training, "_scores", scores)
        counted = []

        def counting(*args, counted=counted, **kw):
            counted.append(1)
            return scores(*args, **kw)

        monkeypatch.setattr(training, "_scores", counting)
        resumed = train_variants(_model(), fed, HYPERPARAMETERS, variants,
                                 checkpointer=Checkpointer(path, "runs", every_seconds=0),
                                 **kwargs)
        monkeypatch.setattr(training, "_scores", scores)
        # only the rounds after the checkpoint were computed again
        assert len(counted) == (HYPERPARAMETERS.rounds - (stop_at - 1)) * len(variants)
        assert not path.exists()  # a finished run leaves no checkpoint
        for a, b in zip(whole.history, resumed.history, strict=True):
            pd.testing.assert_frame_equal(a, b)
        assert whole.spectra.keys() == resumed.spectra.keys()
        for v in whole.spectra:
            for a, b in zip(whole.spectra[v], resumed.spectra[v], strict=True):
                np.testing.assert_array_equal(a, b)


def test_a_checkpoint_of_other_runs_or_damaged_is_not_resumed(tmp_path) -> None:
    from fedlib.checkpoints import LAYOUT, Checkpointer

    path = tmp_path / "run.pt"
    Checkpointer(path, "these runs").save({"round": 3})
    with pytest.warns(RuntimeWarning, match="belongs to other runs"):
        assert Checkpointer(path, "other runs").load() is None
    assert not path.exists()
    Checkpointer(path, "these runs").save({"round": 3})
    assert Checkpointer(path, "these runs").load() == {"round": 3}
    path.write_bytes(path.read_bytes()[:40])  # half a file copied
    with pytest.warns(RuntimeWarning, match="cannot be read"):
        assert Checkpointer(path, "these runs").load() is None
    assert not path.exists()
    torch.save({"layout": "fedlib-checkpoint/0", "tag": "these runs", "state": {}}, path)
    with pytest.warns(RuntimeWarning, match=f"not {LAYOUT!r}"):
        assert Checkpointer(path, "these runs").load() is None
    fed = _federation()
    torch.save({"layout": LAYOUT, "tag": "x", "state": {}}, path)
    with pytest.warns(RuntimeWarning, match="other runs"):
        result = train_variants(_model(), fed, HYPERPARAMETERS, [Variant("fedavg")], seed=3,
                                checkpointer=Checkpointer(path, "y", every_seconds=0))
    plain = train_variants(_model(), fed, HYPERPARAMETERS, [Variant("fedavg")], seed=3)
    pd.testing.assert_frame_equal(result.history[0], plain.history[0])
    with pytest.raises(ValueError, match="every_seconds"):
        Checkpointer(path, "y", every_seconds=-1)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal where torch sees "
                    "no GPU; tests/nn/test_dpsgd_cuda.py runs the loop on one")
def test_a_cuda_device_without_a_gpu_says_what_to_do() -> None:
    with pytest.raises(ValueError, match="torch sees no CUDA device here"):
        train_variants(_model(), _federation(), HYPERPARAMETERS, [Variant("fedavg")], seed=0,
                       device="cuda")


def test_an_unknown_device_is_refused() -> None:
    with pytest.raises(ValueError, match="device must be 'cpu' or 'cuda'"):
        train_variants(_model(), _federation(), HYPERPARAMETERS, [Variant("fedavg")], seed=0,
                       device="meta")
