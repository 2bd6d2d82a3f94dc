"""A generated grid of architectures: the engine is exact or refuses, never silently different.

Every case runs :func:`fedlib.nn.dpsgd.local_dpsgd` with ``method`` "auto", "layers" and
"func" in float64, with clipping active and no noise, against the per-example-autograd
loop :func:`fedlib.nn.dpsgd_reference.plain_local_dpsgd`. Each run either matches it to
1e-10 (largest absolute deviation of the deltas) or raises a ValueError whose message
names the reason; which of the two is part of the case. Sizes (clients, examples, batch
size, steps, shared or per-client starts) are drawn per case from a seeded generator.
"""

from __future__ import annotations

import random
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call, grad, vmap

from fedlib.nn.dpsgd import _layer_plan, draw_batches, local_dpsgd
from fedlib.nn.dpsgd_reference import opacus_local_dpsgd, plain_local_dpsgd
from fedlib.nn.models import ImdbLSTM, LogisticRegression, PfaCNN

METHODS = ("auto", "layers", "func")
TOLERANCE = 1e-10


@dataclass(frozen=True)
class Case:
    """One architecture with its input and the expected outcome.

    ``layers`` is None when the ``"layers"`` path must run the model exactly, else a
    pattern its refusal must contain; ``func`` likewise for "auto" and "func" once the
    layers path is refused; ``refused`` is a pattern of the error every method raises.
    """

    name: str
    build: Callable[[], nn.Module]
    example: tuple[int, ...]
    layers: str | None = None
    func: str | None = None
    refused: str | None = None
    vocabulary: int = 0  # > 0: examples are integer ids below it (as floats)
    classes: int = 3
    batch_size: int = 0  # > 0: this batch size instead of a drawn one


# ---------------------------------------------------------------- modules used by cases

class ScaledLinear(nn.Linear):
    """A Linear subclass whose forward differs from nn.Linear's."""

    def forward(self, x: Tensor) -> Tensor:
        return 2.0 * super().forward(x) + 0.1


class SameLinear(nn.Linear):
    """A Linear subclass that overrides nothing (refused all the same: exact types only)."""


class ShiftedTanh(nn.Tanh):
    """A parameter-free subclass with a forward of its own."""

    def forward(self, x: Tensor) -> Tensor:
        return torch.tanh(x - 0.3)


class FlippedConv(nn.Conv2d):
    """A Conv2d subclass that flips its input before convolving."""

    def forward(self, x: Tensor) -> Tensor:
        return super().forward(x.flip(-1))


class ReversedSequential(nn.Sequential):
    """A Sequential subclass with its own forward: a residual around its body."""

    def forward(self, x: Tensor) -> Tensor:
        h = x
        for module in self:
            h = module(h)
        return h + x[:, : h.shape[1]]


class NamedSequential(nn.Sequential):
    """A Sequential subclass that only adds a constructor, as the project's models do."""

    def __init__(self) -> None:
        super().__init__(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 3))


class LastStep(nn.Module):
    """A torch recurrent layer read at its last time step, then a linear classifier."""

    def __init__(self, rnn: nn.Module) -> None:
        super().__init__()
        self.rnn = rnn
        self.fc = nn.Linear(6, 3)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(self.rnn(x)[0][:, -1])


class StateFromInput(nn.Module):
    """A torch recurrent layer given an initial state computed from its input."""

    def __init__(self, rnn: nn.RNNBase) -> None:
        super().__init__()
        self.rnn = rnn
        self.fc = nn.Linear(6, 3)

    def forward(self, x: Tensor) -> Tensor:
        h0 = torch.zeros_like(x[:, :1, :1]).expand(-1, 1, 6).transpose(0, 1).contiguous()
        state = (h0, h0) if isinstance(self.rnn, nn.LSTM) else h0
        return self.fc(self.rnn(x, state)[0][:, -1])


class TimeMajor(nn.Module):
    """An nn.LSTM with batch_first=False fed batch-first examples: it mixes the batch."""

    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.LSTM(4, 6)
        self.fc = nn.Linear(6, 3)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(self.rnn(x)[0][:, -1])


class BatchCentred(nn.Module):
    """A linear classifier on inputs centred by the batch mean: mixes the batch."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(6, 3)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(x - x.mean(0, keepdim=True))


class CellLoop(nn.Module):
    """A recurrent cell stepped over the sequence by hand, then a linear classifier."""

    def __init__(self, cell: nn.Module) -> None:
        super().__init__()
        self.cell = cell
        self.fc = nn.Linear(6, 3)

    def forward(self, x: Tensor) -> Tensor:
        h = x.new_zeros(x.shape[0], 6)
        c = torch.zeros_like(h)
        for t in range(x.shape[1]):
            if isinstance(self.cell, nn.LSTMCell):
                h, c = self.cell(x[:, t], (h, c))
            else:
                h = self.cell(x[:, t], h)
        return self.fc(h)


class Residual(nn.Module):
    """Not a Sequential."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(6, 6)
        self.b = nn.Linear(6, 3)

    def forward(self, x: Tensor) -> Tensor:
        return self.b(x + torch.tanh(self.a(x)))


class ShiftedLSTM(ImdbLSTM):
    """An ImdbLSTM subclass whose forward shifts the logits."""

    def forward(self, tokens: Tensor) -> Tensor:
        return super().forward(tokens) + 0.1


def padded_lstm() -> nn.Module:
    model = ImdbLSTM(30, 4, 5, n_classes=3)
    model.embedding = nn.Embedding(30, 4, padding_idx=0)
    return model


def hooked_lstm() -> nn.Module:
    model = ImdbLSTM(30, 4, 5, n_classes=3)
    model.classifier.register_forward_hook(lambda module, args, out: 0.5 * out)
    return model


def shared_activation() -> nn.Module:
    act = nn.Tanh()
    return nn.Sequential(nn.Linear(6, 5), act, nn.Linear(5, 4), act, nn.Linear(4, 3))


def shared_linear() -> nn.Module:
    middle = nn.Linear(5, 5)
    return nn.Sequential(nn.Linear(6, 5), nn.Tanh(), middle, nn.Tanh(), middle, nn.Linear(5, 3))


def tied_weights() -> nn.Module:
    a, b = nn.Linear(5, 5), nn.Linear(5, 5, bias=False)
    b.weight = a.weight
    return nn.Sequential(nn.Linear(6, 5), nn.Tanh(), a, nn.Tanh(), b, nn.Linear(5, 3))


def instance_forward() -> nn.Module:
    layer = nn.Linear(6, 5)
    layer.forward = lambda h: 0.5 * F.linear(h, layer.weight, layer.bias)  # type: ignore[method-assign]
    return nn.Sequential(layer, nn.Tanh(), nn.Linear(5, 3))


def forward_hook() -> nn.Module:
    model = nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 3))
    model[0].register_forward_hook(lambda module, args, out: 0.5 * out + 0.1)
    return model


def relu_with_parameter() -> nn.Module:
    act = nn.ReLU()
    act.register_parameter("unused", nn.Parameter(torch.ones(2)))
    return nn.Sequential(nn.Linear(6, 5), act, nn.Linear(5, 3))


def old_weight_norm() -> nn.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        layer = nn.utils.weight_norm(nn.Linear(6, 5))
    return nn.Sequential(layer, nn.Tanh(), nn.Linear(5, 3))


def parametrized_weight_norm() -> nn.Module:
    layer = nn.utils.parametrizations.weight_norm(nn.Linear(6, 5))
    return nn.Sequential(layer, nn.Tanh(), nn.Linear(5, 3))


def frozen(build: Callable[[], nn.Module], *names: str) -> Callable[[], nn.Module]:
    """``build`` with the named parameters set to requires_grad=False."""

    def make() -> nn.Module:
        model = build()
        params = dict(model.named_parameters())
        for name in names:
            params[name].requires_grad_(False)
        return model

    return make


def evaluated(build: Callable[[], nn.Module]) -> Callable[[], nn.Module]:
    return lambda: build().eval()


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 3))


def small_cnn() -> nn.Module:
    return nn.Sequential(nn.Conv2d(2, 3, 3, stride=2, padding=1), nn.ReLU(),
                         nn.Conv2d(3, 4, 2), nn.Tanh(), nn.Flatten(), nn.Linear(36, 3))


# ---------------------------------------------------------------- generated cases

ACTIVATIONS: list[Callable[[], nn.Module]] = [
    nn.ReLU, nn.Tanh, nn.Sigmoid, nn.GELU, nn.SiLU, nn.Softplus, nn.ELU, nn.Identity,
    lambda: nn.LeakyReLU(0.2), lambda: nn.ReLU(inplace=True), lambda: nn.ELU(inplace=True),
    lambda: nn.LeakyReLU(0.1, inplace=True), lambda: nn.SiLU(inplace=True),
]


def _conv_net(rng: random.Random) -> tuple[Callable[[], nn.Module], tuple[int, ...]]:
    """A random valid stack of one or two convolutions (with pooling sometimes) and a
    linear head, and its example shape."""
    while True:
        channels, size = rng.choice([1, 2, 3]), rng.choice([6, 7, 8, 9])
        specs = []
        for _ in range(rng.choice([1, 2])):
            kh, kw = rng.choice([1, 2, 3, 4]), rng.choice([1, 2, 3])
            specs.append(dict(
                out_channels=rng.choice([2, 3, 5]), kernel_size=(kh, kw),
                stride=(rng.choice([1, 2, 3]), rng.choice([1, 2])),
                padding=(rng.choice([0, 1, 2]), rng.choice([0, 1])),
                dilation=rng.choice([(1, 1), (1, 1), (2, 1), (2, 2)]),
                bias=rng.random() < 0.7))
        activation = rng.choice(ACTIVATIONS)
        pool = rng.choice([None, None, lambda: nn.MaxPool2d(2, stride=1),
                           lambda: nn.AvgPool2d(2)])

        def build(specs=specs, channels=channels, size=size, activation=activation,
                  pool=pool) -> nn.Module:
            layers: list[nn.Module] = []
            c = channels
            for spec in specs:
                layers += [nn.Conv2d(c, **spec), activation()]
                c = spec["out_channels"]
            if pool is not None:
                layers.append(pool())
            layers.append(nn.Flatten())
            body = nn.Sequential(*layers)
            width = body(torch.zeros(1, channels, size, size)).shape[1]
            return nn.Sequential(body, nn.Linear(width, 3))

        try:
            build()
        except RuntimeError:  # a geometry with no output: draw again
            continue
        return build, (channels, size, size)


def _mlp(rng: random.Random) -> Callable[[], nn.Module]:
    widths = [6] + [rng.choice([3, 4, 7]) for _ in range(rng.choice([0, 1, 2]))] + [3]
    biases = [rng.random() < 0.7 for _ in widths[1:]]
    activations = [rng.choice(ACTIVATIONS) for _ in widths[1:]]

    def build() -> nn.Module:
        layers: list[nn.Module] = []
        for i, (a, b) in enumerate(zip(widths[:-1], widths[1:], strict=True)):
            layers.append(nn.Linear(a, b, bias=biases[i]))
            if i < len(widths) - 2:
                layers.append(activations[i]())
        return nn.Sequential(*layers)

    return build


def _generated() -> list[Case]:
    rng = random.Random(20240611)
    cases = []
    for i in range(10):
        build, example = _conv_net(rng)
        cases.append(Case(f"conv-net-{i}", build, example))
    for i in range(6):
        cases.append(Case(f"mlp-{i}", _mlp(rng), (6,)))
    return cases


ONLY_FUNC = "not one of the layers"
RECURRENT = r"initial state computed from their input.*ImdbLSTM"
MIXED = "depend on the other examples of its batch"

CASES: list[Case] = [
    *_generated(),
    # Pooling.
    Case("maxpool-3-2-1", lambda: nn.Sequential(
        nn.Conv2d(1, 3, 3), nn.ReLU(), nn.MaxPool2d(3, stride=2, padding=1), nn.Flatten(),
        nn.Linear(27, 3)), (1, 8, 8)),
    Case("maxpool-ceil", lambda: nn.Sequential(
        nn.Conv2d(2, 3, 2), nn.MaxPool2d(2, ceil_mode=True), nn.Flatten(), nn.Linear(48, 3)),
        (2, 8, 8)),
    Case("maxpool-dilated", lambda: nn.Sequential(
        nn.Conv2d(1, 2, 3, padding=1), nn.MaxPool2d(2, dilation=2), nn.Flatten(),
        nn.Linear(18, 3)), (1, 7, 7)),
    Case("avgpool-padded", lambda: nn.Sequential(
        nn.Conv2d(1, 3, 2), nn.Sigmoid(), nn.AvgPool2d(3, stride=2, padding=1,
                                                       count_include_pad=False),
        nn.Flatten(), nn.Linear(48, 3)), (1, 8, 8)),
    Case("pool-first", lambda: nn.Sequential(
        nn.MaxPool2d(2), nn.Conv2d(2, 3, 2), nn.ELU(), nn.Flatten(), nn.Linear(27, 3)),
        (2, 8, 8)),
    Case("pool-1d", lambda: nn.Sequential(
        nn.Linear(6, 8), nn.MaxPool1d(2), nn.Tanh(), nn.Linear(4, 6), nn.AvgPool1d(2),
        nn.Linear(3, 3)), (6,)),
    # Normalisation.
    Case("layernorm", lambda: nn.Sequential(nn.Linear(6, 5), nn.LayerNorm(5), nn.Linear(5, 3)),
         (6,), layers="LayerNorm"),
    Case("groupnorm", lambda: nn.Sequential(
        nn.Conv2d(1, 4, 3), nn.GroupNorm(2, 4), nn.ReLU(), nn.Flatten(), nn.Linear(64, 3)),
        (1, 6, 6), layers="GroupNorm"),
    Case("instancenorm", lambda: nn.Sequential(
        nn.Conv2d(1, 4, 3), nn.InstanceNorm2d(4, affine=True), nn.Flatten(), nn.Linear(64, 3)),
        (1, 6, 6), layers="InstanceNorm2d"),
    Case("batchnorm-eval", evaluated(lambda: nn.Sequential(
        nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(64, 3))),
        (1, 6, 6), layers="buffers"),
    Case("batchnorm-train", lambda: nn.Sequential(
        nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(64, 3)),
        (1, 6, 6), refused=r"BatchNorm2d\) is in training mode.*GroupNorm.*model\.eval\(\)"),
    Case("instancenorm-running-stats", lambda: nn.Sequential(
        nn.Conv2d(1, 4, 3), nn.InstanceNorm2d(4, track_running_stats=True), nn.Flatten(),
        nn.Linear(64, 3)), (1, 6, 6), refused="running statistics.*model.eval"),
    # Bias-free layers and nesting.
    Case("bias-free", lambda: nn.Sequential(
        nn.Conv2d(1, 3, 3, bias=False), nn.ReLU(), nn.Flatten(), nn.Linear(48, 4, bias=False),
        nn.Tanh(), nn.Linear(4, 3, bias=False)), (1, 6, 6)),
    Case("nested", lambda: nn.Sequential(
        nn.Sequential(nn.Linear(6, 5), nn.Sequential(nn.Tanh())),
        nn.Sequential(nn.Linear(5, 3))), (6,)),
    Case("bare-linear", lambda: nn.Linear(6, 3), (6,)),
    Case("sequential-subclass", NamedSequential, (6,)),
    # Modules or parameters used twice.
    Case("shared-activation", shared_activation, (6,), layers="same module object"),
    Case("shared-linear", shared_linear, (6,), layers="same module object"),
    Case("tied-weights", tied_weights, (6,), layers="tied weights"),
    # Code the layers path would skip.
    Case("linear-subclass-forward", lambda: nn.Sequential(
        ScaledLinear(6, 5), nn.Tanh(), nn.Linear(5, 3)), (6,), layers="subclass of nn.Linear"),
    Case("linear-subclass-plain", lambda: nn.Sequential(
        SameLinear(6, 5), nn.Tanh(), nn.Linear(5, 3)), (6,), layers="subclass of nn.Linear"),
    Case("activation-subclass", lambda: nn.Sequential(
        nn.Linear(6, 5), ShiftedTanh(), nn.Linear(5, 3)), (6,), layers="subclass of nn.Tanh"),
    Case("conv-subclass", lambda: nn.Sequential(
        FlippedConv(1, 2, 3), nn.Flatten(), nn.Linear(32, 3)), (1, 6, 6),
        layers="subclass of nn.Conv2d"),
    Case("sequential-forward", lambda: ReversedSequential(
        nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 3)), (6,),
        layers="subclass of nn.Sequential with its own forward"),
    Case("instance-forward", instance_forward, (6,), layers="forward of its own"),
    Case("forward-hook", forward_hook, (6,), layers="hooks"),
    Case("weight-norm", old_weight_norm, (6,), layers="hooks"),
    Case("weight-norm-parametrized", parametrized_weight_norm, (6,), layers="parametrised"),
    Case("parameter-on-activation", relu_with_parameter, (6,), layers="holds parameters"),
    # Frozen parameters (requires_grad=False).
    Case("frozen-first-weight", frozen(mlp, "0.weight"), (6,)),
    Case("frozen-bias", frozen(mlp, "2.bias"), (6,)),
    Case("frozen-layer", frozen(mlp, "2.weight", "2.bias"), (6,)),
    Case("frozen-conv-weight", frozen(small_cnn, "0.weight", "5.bias"), (2, 7, 7)),
    Case("frozen-conv-bias", frozen(small_cnn, "2.bias"), (2, 7, 7)),
    Case("frozen-all", frozen(mlp, "0.weight", "0.bias", "2.weight", "2.bias", "4.weight",
                              "4.bias"), (6,), refused="requires_grad=False.*nothing to train"),
    # Recurrent layers: exact where torch.func runs them per example, else refused.
    Case("lstm", lambda: LastStep(nn.LSTM(4, 6, batch_first=True)), (5, 4),
         layers="LastStep", func=RECURRENT, batch_size=3),
    Case("gru", lambda: LastStep(nn.GRU(4, 6, batch_first=True)), (5, 4),
         layers="LastStep", func=RECURRENT, batch_size=3),
    Case("rnn", lambda: LastStep(nn.RNN(4, 6, batch_first=True)), (5, 4),
         layers="LastStep", func=RECURRENT, batch_size=3),
    Case("lstm-state-from-input", lambda: StateFromInput(nn.LSTM(4, 6, batch_first=True)),
         (5, 4), layers="StateFromInput"),
    Case("gru-state-from-input", lambda: StateFromInput(nn.GRU(4, 6, batch_first=True)),
         (5, 4), layers="StateFromInput"),
    Case("rnn-state-from-input", lambda: StateFromInput(nn.RNN(4, 6, batch_first=True)),
         (5, 4), layers="StateFromInput"),
    Case("lstm-time-major", TimeMajor, (5, 4), layers="TimeMajor", func=MIXED),
    Case("gru-cell", lambda: CellLoop(nn.GRUCell(4, 6)), (5, 4), layers="CellLoop"),
    Case("rnn-cell", lambda: CellLoop(nn.RNNCell(4, 6)), (5, 4), layers="CellLoop"),
    Case("lstm-cell", lambda: CellLoop(nn.LSTMCell(4, 6)), (5, 4), layers="CellLoop"),
    Case("imdb-lstm", lambda: ImdbLSTM(30, 4, 5, n_classes=3), (6,), vocabulary=30),
    Case("imdb-lstm-one-word", lambda: ImdbLSTM(11, 2, 3, n_classes=3), (1,), vocabulary=11,
         batch_size=4),
    Case("imdb-lstm-repeated-words", lambda: ImdbLSTM(4, 3, 2, n_classes=3), (9,),
         vocabulary=4),
    Case("imdb-lstm-frozen-embedding", frozen(lambda: ImdbLSTM(30, 4, 5, n_classes=3),
                                              "embedding.weight"), (6,), vocabulary=30),
    Case("imdb-lstm-frozen-recurrent", frozen(lambda: ImdbLSTM(30, 4, 5, n_classes=3),
                                              "hidden_weight", "classifier.bias"), (6,),
         vocabulary=30),
    Case("imdb-lstm-frozen-input", frozen(lambda: ImdbLSTM(30, 4, 5, n_classes=3),
                                          "input_weight", "bias", "classifier.weight"), (6,),
         vocabulary=30),
    Case("imdb-lstm-subclass", lambda: ShiftedLSTM(30, 4, 5, n_classes=3), (6,),
         layers="is not ImdbLSTM", vocabulary=30),
    Case("imdb-lstm-padding", padded_lstm, (6,), layers="padding index", vocabulary=30),
    Case("imdb-lstm-hook", hooked_lstm, (6,), layers="hooks", vocabulary=30),
    Case("batch-centred", BatchCentred, (6,), layers="BatchCentred", func=MIXED),
    # Dropout.
    Case("dropout-train", lambda: nn.Sequential(nn.Linear(6, 5), nn.Dropout(0.3),
                                                nn.Linear(5, 3)), (6,),
         refused=r"Dropout\) is in training mode.*model\.eval\(\)"),
    Case("dropout-eval", evaluated(lambda: nn.Sequential(nn.Linear(6, 5), nn.Dropout(0.3),
                                                         nn.Linear(5, 3))), (6,),
         layers="Dropout"),
    # Other modules and layouts the layers path leaves to torch.func.
    Case("residual", Residual, (6,), layers=ONLY_FUNC),
    Case("embedding-of-floats", lambda: nn.Sequential(nn.Embedding(20, 3), nn.Flatten(),
                                                      nn.Linear(12, 3)), (4,),
         refused="Embedding", vocabulary=20),
    Case("conv1d", lambda: nn.Sequential(nn.Conv1d(2, 3, 2), nn.Flatten(), nn.Linear(15, 3)),
         (2, 6), layers="Conv1d"),
    Case("hardtanh", lambda: nn.Sequential(nn.Linear(6, 5), nn.Hardtanh(), nn.Linear(5, 3)),
         (6,), layers="Hardtanh"),
    Case("sequence-input", lambda: nn.Sequential(
        nn.Linear(4, 5), nn.Tanh(), nn.Flatten(), nn.Linear(25, 3)), (5, 4),
        layers="not one flat vector"),
    Case("flatten-from-2", lambda: nn.Sequential(
        nn.Flatten(2), nn.Linear(16, 4), nn.Flatten(), nn.Linear(8, 3)), (2, 4, 4),
        layers="start_dim=1"),
    Case("conv-groups", lambda: nn.Sequential(
        nn.Conv2d(2, 4, 3, groups=2), nn.Flatten(), nn.Linear(64, 3)), (2, 6, 6),
        layers="groups=2"),
    Case("conv-reflect", lambda: nn.Sequential(
        nn.Conv2d(1, 2, 3, padding=1, padding_mode="reflect"), nn.Flatten(),
        nn.Linear(72, 3)), (1, 6, 6), layers="padding_mode='reflect'"),
    Case("conv-same", lambda: nn.Sequential(
        nn.Conv2d(1, 2, 3, padding="same"), nn.Flatten(), nn.Linear(72, 3)), (1, 6, 6),
        layers="padding='same'"),
    # The project's models (Cifar10CNN is checked against Opacus with the PFA experiments).
    Case("LogisticRegression", LogisticRegression, (1, 28, 28), classes=10),
    Case("PfaCNN", PfaCNN, (1, 28, 28), classes=10),
    Case("ImdbLSTM", lambda: ImdbLSTM(50), (7,), vocabulary=50, classes=2),
]


# ---------------------------------------------------------------- the check

@dataclass
class Problem:
    model: nn.Module
    start: dict[str, Tensor] | None
    x: Tensor
    y: Tensor
    batches: Tensor
    clip: float


def _first_step_norms(model: nn.Module, x: Tensor, y: Tensor, batches: Tensor) -> Tensor:
    """Norms of the per-example gradients (trained parameters) at the model's own
    parameters on the first step, (M, B)."""
    trained = {k: v.detach() for k, v in model.named_parameters() if v.requires_grad}
    fixed = {k: v.detach() for k, v in model.named_parameters() if not v.requires_grad}

    def loss(p: dict[str, Tensor], xi: Tensor, yi: Tensor) -> Tensor:
        out = functional_call(model, {**p, **fixed}, (xi.unsqueeze(0),))
        return F.cross_entropy(out, yi.unsqueeze(0))

    rows = []
    for m in range(x.shape[0]):
        idx = batches[m, 0]
        g = vmap(grad(loss), in_dims=(None, 0, 0))(trained, x[m, idx], y[m, idx])
        rows.append(torch.sqrt(sum(v.flatten(1).square().sum(1) for v in g.values())))
    return torch.stack(rows)


_PROBLEMS: dict[str, Problem] = {}


def _problem(index: int, case: Case) -> Problem:
    """The case's model (float64) with seeded sizes, data, batches and clip; built once
    per case and shared by its methods (every run checks that the model is unchanged)."""
    if case.name not in _PROBLEMS:
        _PROBLEMS[case.name] = _new_problem(index, case)
    return _PROBLEMS[case.name]


def _new_problem(index: int, case: Case) -> Problem:
    rng = random.Random(1000 + index)
    torch.manual_seed(index)
    model = case.build().double()
    n_clients = rng.choice([1, 2, 3])
    n_examples = rng.choice([5, 6, 7, 9])
    batch_size = rng.randint(1, 4)
    if n_clients * batch_size < 3:  # enough examples for a median to clip at
        batch_size = 3
    batch_size = case.batch_size or batch_size
    steps = rng.choice([1, 2])
    gen = torch.Generator().manual_seed(index)
    if case.vocabulary:
        x = torch.randint(0, case.vocabulary, (n_clients, n_examples, *case.example),
                          generator=gen).double()
    else:
        x = torch.randn((n_clients, n_examples, *case.example), generator=gen,
                        dtype=torch.float64)
        x += torch.arange(n_clients, dtype=torch.float64).view(-1, *[1] * (x.dim() - 1))
    y = torch.randint(0, case.classes, (n_clients, n_examples), generator=gen)
    batches = draw_batches(n_clients, n_examples, steps, batch_size, gen)
    start = None
    if rng.random() < 0.4:
        start = {k: v.detach() + 0.05 * torch.randn((n_clients, *v.shape), generator=gen,
                                                    dtype=v.dtype)
                 for k, v in model.named_parameters()}
    clip = 1.0
    if case.refused is None and case.func is None:
        norms = _first_step_norms(model, x, y, batches)
        clip = float(norms.median())
        assert bool((norms > clip * 1.001).any()), "clipping must be active"
    return Problem(model, start, x, y, batches, clip)


_REFERENCES: dict[str, dict[str, Tensor]] = {}


def _reference(index: int, case: Case, problem: Problem) -> dict[str, Tensor]:
    if case.name not in _REFERENCES:
        p = problem
        _REFERENCES[case.name] = plain_local_dpsgd(p.model, p.start, p.x, p.y, p.batches, 0.5,
                                                   p.clip, torch.zeros(p.x.shape[0]))
    return _REFERENCES[case.name]


@pytest.mark.filterwarnings("ignore:There is a performance drop:UserWarning")  # weight_norm
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(("index", "case"), list(enumerate(CASES)), ids=[c.name for c in CASES])
def test_exact_or_refused_with_a_reason(index: int, case: Case, method: str) -> None:
    p = _problem(index, case)
    zero = torch.zeros(p.x.shape[0])
    before = [(name, param, param.detach().clone())
              for name, param in p.model.named_parameters(remove_duplicate=False)]

    def run() -> dict[str, Tensor]:
        return local_dpsgd(p.model, p.start, p.x, p.y, p.batches, 0.5, p.clip, zero,
                           method=method)  # type: ignore[return-value]

    if case.refused is not None:
        with pytest.raises(ValueError, match=case.refused):
            run()
        return
    if method == "layers" and case.layers is not None:
        with pytest.raises(ValueError, match=re.escape(case.layers)) as refusal:
            run()
        assert "method='func'" in str(refusal.value)
        return
    if method != "layers" and case.func is not None:
        with pytest.raises(ValueError, match=case.func):
            run()
        return
    if method == "auto":  # picks the layers path exactly where it is allowed
        assert (_layer_plan(p.model, case.example) is not None) == (case.layers is None)
    delta = run()
    # The model is left as it was: the same parameter objects with the same values.
    after = list(p.model.named_parameters(remove_duplicate=False))
    assert [(name, id(param)) for name, param, _ in before] == [
        (name, id(param)) for name, param in after]
    assert all(torch.equal(param, value) for _, param, value in before)
    reference = _reference(index, case, p)
    assert list(delta) == list(reference)
    deviation = max(float((delta[k] - reference[k]).abs().max()) for k in delta)
    assert deviation <= TOLERANCE, f"{case.name} {method}: deviation {deviation:.3g}"
    for name, param in p.model.named_parameters():
        if not param.requires_grad:
            assert bool((delta[name] == 0).all()), f"frozen {name} moved"
    assert max(float(v.abs().max()) for v in delta.values()) > 1e-8  # something moved


def test_the_grid_covers_every_outcome() -> None:
    """Exact on both paths, exact on torch.func only, and refused outright all occur."""
    assert sum(c.layers is None and c.refused is None for c in CASES) >= 30
    assert sum(c.layers is not None and c.func is None and c.refused is None
               for c in CASES) >= 20
    assert sum(c.func is not None or c.refused is not None for c in CASES) >= 10
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("method", ["layers", "func"])
def test_frozen_parameters_follow_opacus(method: str) -> None:
    """Frozen weights and biases keep their starting values and stay out of the clipping
    norm, as under Opacus; final parameters of frozen ones are their starts."""
    torch.manual_seed(5)
    model = frozen(small_cnn, "0.bias", "2.weight")().double()
    gen = torch.Generator().manual_seed(6)
    x = torch.randn((3, 8, 2, 7, 7), generator=gen, dtype=torch.float64)
    y = torch.randint(0, 3, (3, 8), generator=gen)
    batches = draw_batches(3, 8, 2, 4, gen)
    clip = float(_first_step_norms(model, x, y, batches).median())
    zero = torch.zeros(3)
    delta, final = local_dpsgd(model, None, x, y, batches, 0.5, clip, zero, method=method,
                               return_params=True)  # type: ignore[misc]
    reference = opacus_local_dpsgd(model, None, x, y, batches, 0.5, clip, zero)
    assert max(float((delta[k] - reference[k]).abs().max()) for k in delta) < TOLERANCE
    for name in ("0.bias", "2.weight"):
        assert bool((delta[name] == 0).all())
        torch.testing.assert_close(final[name], dict(model.named_parameters())[name]
                                   .detach().expand_as(final[name]), rtol=0, atol=0)


def test_frozen_parameters_get_no_noise() -> None:
    """With noise on, frozen parameters still do not move, on both paths."""
    torch.manual_seed(0)
    model = frozen(mlp, "2.weight")()
    x = torch.randn(2, 6, 6)
    y = torch.randint(0, 3, (2, 6))
    batches = draw_batches(2, 6, 3, 2)
    for method in ("layers", "func"):
        delta = local_dpsgd(model, None, x, y, batches, 0.5, 1.0, 2.0,
                            torch.Generator().manual_seed(1), method=method)
        assert bool((delta["2.weight"] == 0).all())  # type: ignore[index]
        assert float(delta["2.bias"].abs().min()) > 0  # type: ignore[index]
