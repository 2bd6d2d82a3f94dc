"""Bad arguments to the DP-SGD engine: each is refused up front with a message that names
the argument and says what to give instead, never run into a wrong or NaN result."""

from __future__ import annotations

import math

import pytest
import torch
from torch import Tensor, nn

from fedlib.nn.dpsgd import draw_batches, local_dpsgd
from fedlib.nn.dpsgd_reference import plain_local_dpsgd
from fedlib.nn.models import LogisticRegression, PfaCNN

N_CLIENTS, N_EXAMPLES, STEPS, BATCH = 2, 10, 2, 3


def problem(dtype: torch.dtype = torch.float32
            ) -> tuple[nn.Module, Tensor, Tensor, Tensor]:
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn((N_CLIENTS, N_EXAMPLES, 1, 28, 28), generator=gen, dtype=dtype)
    y = torch.randint(0, 10, (N_CLIENTS, N_EXAMPLES), generator=gen)
    batches = draw_batches(N_CLIENTS, N_EXAMPLES, STEPS, BATCH, gen)
    return LogisticRegression().to(dtype), x, y, batches


def run(model: nn.Module, x: Tensor, y: Tensor, batches: Tensor, lr: float = 0.1,
        clip: float = 1.0, nm: Tensor | float = 0.0, method: str = "auto"
        ) -> dict[str, Tensor]:
    return local_dpsgd(model, None, x, y, batches, lr, clip, nm,
                       torch.Generator().manual_seed(2), method=method)  # type: ignore[return-value]


# ---------------------------------------------------------------- batch indices

@pytest.mark.parametrize("method", ["auto", "layers", "func"])
@pytest.mark.parametrize("bad", [N_EXAMPLES, N_EXAMPLES + 5, -1])
def test_batch_indices_outside_the_clients_examples(method: str, bad: int) -> None:
    """Index n of client m would be example 0 of client m+1 (and -1 the last example of
    client m-1): one client's update would depend on another client's data."""
    model, x, y, batches = problem()
    batches = batches.clone()
    batches[0, 1, 2] = bad
    with pytest.raises(ValueError, match=r"batches holds example indices") as err:
        run(model, x, y, batches, method=method)
    message = str(err.value)
    assert f"[0, {N_EXAMPLES})" in message and "x.shape[1]" in message
    assert "draw_batches" in message and "another client's example" in message


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bool])
def test_batches_must_be_integer_indices(dtype: torch.dtype) -> None:
    model, x, y, batches = problem()
    with pytest.raises(ValueError, match=r"batches must hold integer example indices.*int64"):
        run(model, x, y, batches.to(dtype))


def test_batches_of_any_integer_dtype_are_taken() -> None:
    model, x, y, batches = problem(torch.float64)
    reference = run(model, x, y, batches)
    for dtype in (torch.int32, torch.int16, torch.uint8):
        delta = run(model, x, y, batches.to(dtype))
        assert all(torch.equal(delta[k], reference[k]) for k in delta)


def test_zero_clients() -> None:
    model, x, y, batches = problem()
    with pytest.raises(ValueError, match=r"no clients.*at least one client \(M >= 1\)"):
        run(model, x[:0], y[:0], batches[:0])


def test_batch_size_zero() -> None:
    model, x, y, batches = problem()
    with pytest.raises(ValueError, match=r"batch size B of 0.*at least one example \(B >= 1\)"):
        run(model, x, y, batches[:, :, :0])


@pytest.mark.parametrize("method", ["layers", "func"])
def test_zero_steps_give_zero_deltas(method: str) -> None:
    model, x, y, batches = problem()
    delta, final = local_dpsgd(model, None, x, y, batches[:, :0], 0.1, 1.0, 1.0,
                               method=method, prefetch=True, return_params=True)  # type: ignore[misc]
    for name, param in model.named_parameters():
        assert delta[name].shape == (N_CLIENTS, *param.shape)
        assert bool((delta[name] == 0).all())
        assert torch.equal(final[name], param.detach().expand_as(final[name]))


# ---------------------------------------------------------------- labels

@pytest.mark.parametrize("method", ["auto", "layers", "func"])
@pytest.mark.parametrize("bad", [-1, 10, 12])
def test_labels_outside_the_classes(method: str, bad: int) -> None:
    """A label -1 would wrap to the last class on the layers path; 10 has no logit."""
    model, x, y, batches = problem()
    y = y.clone()
    y[1, 4] = bad
    with pytest.raises(ValueError, match=r"y holds labels from") as err:
        run(model, x, y, batches, method=method)
    message = str(err.value)
    assert "returns 10 logits" in message and "class index in [0, 10)" in message
    assert "map the labels to 0..9" in message


def test_labels_are_checked_against_the_models_own_width() -> None:
    """A two-class model refuses label 2 on both paths."""
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 2))
    _, x, y, batches = problem()
    for method in ("layers", "func"):
        with pytest.raises(ValueError, match=r"returns 2 logits.*\[0, 2\)"):
            run(model, x, y, batches, method=method)
        run(model, x, y % 2, batches, method=method)  # in range: runs


@pytest.mark.parametrize("dtype", [torch.float32, torch.bool])
def test_labels_must_be_integers(dtype: torch.dtype) -> None:
    model, x, y, batches = problem()
    with pytest.raises(ValueError, match=r"y must hold integer class labels.*y\.long\(\)"):
        run(model, x, y.to(dtype), batches)


# ---------------------------------------------------------------- step size, clip, noise

@pytest.mark.parametrize("lr", [0.0, -0.1, math.nan, math.inf, "0.1"])
def test_learning_rate_must_be_finite_and_positive(lr: object) -> None:
    model, x, y, batches = problem()
    with pytest.raises(ValueError, match=r"lr must be a finite number > 0 \(the SGD step size\)"):
        run(model, x, y, batches, lr=lr)  # type: ignore[arg-type]


@pytest.mark.parametrize("clip", [0.0, -1.0, math.nan])
def test_clip_must_be_positive(clip: float) -> None:
    model, x, y, batches = problem()
    with pytest.raises(ValueError, match=r"clip must be a number > 0 \(the L2 bound C"):
        run(model, x, y, batches, clip=clip)


def test_infinite_clip_with_noise_is_refused() -> None:
    """The noise std is nm * C: with C = inf the update would be NaN or infinite."""
    model, x, y, batches = problem()
    with pytest.raises(ValueError, match=r"clip must be finite when a noise multiplier is > 0"
                       r".*give a finite clip, or zero noise multipliers"):
        run(model, x, y, batches, clip=math.inf, nm=torch.tensor([0.0, 1.0]))


@pytest.mark.parametrize("method", ["layers", "func"])
def test_infinite_clip_without_noise_is_plain_sgd(method: str) -> None:
    """clip = inf and no noise: no example is clipped, exactly as in the reference loop."""
    model, x, y, batches = problem(torch.float64)
    delta = run(model, x, y, batches, clip=math.inf, method=method)
    reference = plain_local_dpsgd(model, None, x, y, batches, 0.1, math.inf,
                                  torch.zeros(N_CLIENTS))
    assert max(float((delta[k] - reference[k]).abs().max()) for k in delta) < 1e-12
    assert all(bool(torch.isfinite(v).all()) for v in delta.values())


@pytest.mark.parametrize("nm", [torch.tensor([0.5, -1.0]), -0.1, math.nan,
                                torch.tensor([1.0, math.inf])])
def test_noise_multipliers_must_be_finite_and_non_negative(nm: Tensor | float) -> None:
    model, x, y, batches = problem()
    with pytest.raises(ValueError, match=r"noise_multipliers must be finite and >= 0 "
                                         r"\(0: no noise\)"):
        run(model, x, y, batches, nm=nm)


def test_noise_multipliers_one_or_one_per_client() -> None:
    model, x, y, batches = problem()
    with pytest.raises(ValueError, match=r"noise_multipliers must be one number or one per "
                                         r"client \(2,\), got shape \(3,\)"):
        run(model, x, y, batches, nm=torch.ones(3))


# ---------------------------------------------------------------- shapes and dtypes

@pytest.mark.parametrize("method", ["auto", "layers", "func"])
def test_wrong_feature_size_names_the_example_shape(method: str) -> None:
    """The message names the shape received and what the first layer takes, not the
    model's structure."""
    model, x, y, batches = problem()
    with pytest.raises(ValueError, match=r"x holds examples of shape \(1, 27, 27\)") as err:
        run(model, x[..., :27, :27], y, batches, method=method)
    message = str(err.value)
    assert "takes 784 features per example" in message
    assert "Sequential" not in message and "method='func'" not in message


@pytest.mark.parametrize("method", ["auto", "layers", "func"])
def test_wrong_channels_names_the_expected_channels(method: str) -> None:
    model = PfaCNN()
    _, x, y, batches = problem()
    with pytest.raises(ValueError, match=r"examples of shape \(3, 28, 28\).*"
                                         r"takes examples with 1 input channels"):
        run(model, x.expand(-1, -1, 3, -1, -1), y, batches, method=method)


def test_complex_inputs_are_refused() -> None:
    model, x, y, batches = problem()
    with pytest.raises(ValueError, match=r"x must hold real numbers"):
        run(model, x.to(torch.complex64), y, batches)


def test_integer_inputs_are_cast() -> None:
    """Integer x (e.g. word ids) is cast to the parameters' dtype."""
    model, x, y, batches = problem(torch.float64)
    ints = (x * 3).round()
    a = run(model, ints.long(), y, batches)
    b = run(model, ints, y, batches)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_clients_of_x_y_and_batches_must_agree() -> None:
    model, x, y, batches = problem()
    with pytest.raises(ValueError, match=r"M = 2 clients as in batches"):
        run(model, x, y[:, :5], batches)


def test_a_model_returning_no_logit_vector_is_refused() -> None:
    class NoBatch(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(784, 10)

        def forward(self, x: Tensor) -> Tensor:
            return self.fc(x.flatten(1)).sum(0)

    _, x, y, batches = problem()
    with pytest.raises(ValueError, match=r"must return logits \(batch, classes\)"):
        run(NoBatch(), x, y, batches)


def test_embedding_of_cast_ids_says_to_convert_them() -> None:
    model = nn.Sequential(nn.Embedding(20, 3), nn.Flatten(), nn.Linear(12, 2))
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(0, 20, (2, 6, 4), generator=gen)
    y = torch.randint(0, 2, (2, 6), generator=gen)
    with pytest.raises(ValueError, match=r"nn\.Embedding.*\.long\(\).*ImdbLSTM"):
        run(model, x, y, draw_batches(2, 6, 1, 2, gen))
