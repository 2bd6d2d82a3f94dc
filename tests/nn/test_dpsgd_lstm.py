"""The written-out IMDb LSTM path of the DP-SGD engine against its general torch.func path."""

from __future__ import annotations

import pytest
import torch
from torch import Tensor

from fedlib.nn.dpsgd import _layer_plan, draw_batches, local_dpsgd
from fedlib.nn.dpsgd_lstm import LstmPlan, lstm_prepare
from fedlib.nn.dpsgd_reference import plain_local_dpsgd
from fedlib.nn.models import ImdbLSTM


def reviews(n_clients: int, n_examples: int, length: int, vocabulary: int, seed: int,
            dtype: torch.dtype = torch.float32) -> tuple[Tensor, Tensor, Tensor]:
    """Word ids (as floats, as the PFA runner gives them), labels and batches; few words,
    so that examples repeat words."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randint(0, vocabulary, (n_clients, n_examples, length), generator=gen)
    y = torch.randint(0, 2, (n_clients, n_examples), generator=gen)
    batches = draw_batches(n_clients, n_examples, 3, 4, gen)
    return x.to(dtype), y, batches


def deviation(a: dict[str, Tensor], b: dict[str, Tensor]) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def test_the_imdb_model_runs_on_the_written_out_path() -> None:
    assert isinstance(_layer_plan(ImdbLSTM(100), (20,)), LstmPlan)


@pytest.mark.parametrize("clip", [0.02, 1e6])
def test_exact_against_per_example_autograd_with_noise(clip: float) -> None:
    """float64, heterogeneous noise: the same noise draws, the same result to 1e-10."""
    torch.manual_seed(3)
    model = ImdbLSTM(40, 6, 5).double()
    x, y, batches = reviews(3, 10, 9, 40, seed=1, dtype=torch.float64)
    nm = torch.tensor([0.0, 0.7, 2.0], dtype=torch.float64)
    layers = local_dpsgd(model, None, x, y, batches, 0.3, clip, nm,
                         torch.Generator().manual_seed(5), method="layers")
    func = local_dpsgd(model, None, x, y, batches, 0.3, clip, nm,
                       torch.Generator().manual_seed(5), method="func")
    assert deviation(layers, func) < 1e-10  # type: ignore[arg-type]
    clean = plain_local_dpsgd(model, None, x, y, batches, 0.3, clip, torch.zeros(3))
    noise_free = local_dpsgd(model, None, x, y, batches, 0.3, clip, torch.zeros(3),
                             method="layers")
    assert deviation(noise_free, clean) < 1e-10  # type: ignore[arg-type]


def test_float32_results_are_the_general_paths_within_rounding() -> None:
    """The model and data of the PFA runner in float32 with noise: the written-out path
    and the general path differ by float32 rounding only."""
    torch.manual_seed(0)
    model = ImdbLSTM(300, 8, 6)
    x, y, batches = reviews(4, 12, 25, 300, seed=2)
    nm = torch.tensor([0.5, 1.0, 3.0, 0.0])
    gens = [torch.Generator().manual_seed(7), torch.Generator().manual_seed(8)]
    layers = local_dpsgd(model, None, x, y, batches, 0.5, 0.5, nm, gens, method="layers",
                         return_params=True)
    gens = [torch.Generator().manual_seed(7), torch.Generator().manual_seed(8)]
    func = local_dpsgd(model, None, x, y, batches, 0.5, 0.5, nm, gens, method="func",
                       return_params=True)
    for a, b in zip(layers, func, strict=True):  # deltas, then final parameters
        for name in a:  # type: ignore[union-attr]
            torch.testing.assert_close(a[name], b[name], rtol=1e-5, atol=2e-6)  # type: ignore[index]


def test_repeated_words_share_a_segment_slot() -> None:
    plan = LstmPlan(vocabulary=10, width=2, hidden=2, classes=2, length=5)
    xb = torch.tensor([[[3.0, 1, 3, 3, 0], [2, 2, 2, 2, 2]]])  # (M=1, B=2, L=5)
    prepared = lstm_prepare(plan, xb)
    slots = prepared.slots.transpose(1, 2)[0]  # (B, L)
    assert slots[0].tolist() == [2, 1, 2, 2, 0]  # ranks of 0 < 1 < 3
    assert slots[1].tolist() == [5] * 5  # example 1 starts at slot 1 * L
    assert torch.equal(prepared.tokens.transpose(1, 2), xb.long())


@pytest.mark.parametrize("bad", [-1.0, 40.0, float("nan")])
def test_word_ids_outside_the_vocabulary_are_refused(bad: float) -> None:
    model = ImdbLSTM(40, 4, 3)
    x, y, batches = reviews(2, 10, 6, 40, seed=0)
    x[1, 3, 2] = bad
    with pytest.raises(ValueError, match=r"word ids.*40 words.*\[0, 40\)"):
        local_dpsgd(model, None, x, y, batches, 0.1, 1.0, 1.0, method="layers")
