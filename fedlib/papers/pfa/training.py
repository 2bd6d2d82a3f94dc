"""Federated training under heterogeneous DP budgets, several aggregators side by side.

One call of :func:`train_variants` runs every aggregator variant of a setting
(FedAvg, WeiAvg, PFA with any k, PFA+, Minimum, Maximum, NP-FedAvg, random
projection) on the same federation: the same budgets, the same sampled clients
and the same minibatches each round (common random numbers), so that the
variants differ only in their noise and aggregation. Each variant draws its noise
(and its random directions) from streams of its own, seeded from the seed and the
variant, so a variant's run is the same whichever variants are trained with it. The
local DP-SGD of all
sampled clients of all private variants is one call of
:func:`fedlib.nn.dpsgd.local_dpsgd` per round (NP-FedAvg, plain SGD without clipping
or noise as the authors' non-private baseline, is a second one).

Client sampling follows the authors' code: each round K = round(0.8 M) clients
drawn uniformly among those with budget left, drawn again until at least one public
client is among them; once fewer than K clients, or no public client, can take
part, training stops (the model no longer changes). A client's noise multiplier is
calibrated once from its budget over the rounds it is expected to take part in
(T K / M), with an exact accountant or the authors' closed form
(:data:`fedlib.papers.pfa.budgets.CALIBRATIONS`); the ledger retires it when one more
round would exceed its budget. Minimum and Maximum calibrate every client at the
smallest or the largest budget; NP-FedAvg adds no noise.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import Tensor, nn
from torch.func import functional_call

from fedlib.checkpoints import Checkpointer
from fedlib.nn.dpsgd import draw_batches, local_dpsgd
from fedlib.papers.pfa.aggregation import (
    AGGREGATORS,
    Subspace,
    fedavg,
    pfa_plus_average,
    projected_average,
    public_subspace,
    random_subspace,
    text_subspace,
    upload_floats,
    weighted_average,
)
from fedlib.papers.pfa.budgets import (
    CALIBRATIONS,
    expected_rounds,
    make_ledger,
    public_clients,
)
from fedlib.privacy.ledger import PrivacyLedger

SAMPLING_RATIO = 0.8
PUBLIC_FRACTION = 0.1
PROJECTIONS = ("public", "random", "public-text", "random-text")
"""Where PFA's subspace comes from and how it is applied: ``"public"``, the released
code's (top-k eigenvectors of the centred covariance of the public updates, projection
centred at their mean); ``"random"``, a random Gaussian subspace applied the same way;
``"public-text"``, Algorithm 3 as the paper writes it (the top-k eigenvectors of x x^T, x
the epsilon-weighted public mean, and a linear projection with no mean offset);
``"random-text"``, a random Gaussian subspace applied that way."""


@dataclass(frozen=True)
class Variant:
    """One aggregator run: ``aggregator`` in :data:`fedlib.papers.pfa.aggregation.AGGREGATORS`;
    for PFA and PFA+ the projection dimension ``k`` and the subspace (one of
    :data:`PROJECTIONS`)."""

    aggregator: str
    k: int = 1
    projection: str = "public"

    def __post_init__(self) -> None:
        if self.aggregator not in AGGREGATORS:
            raise ValueError(f"unknown aggregator {self.aggregator!r}; use one of "
                             f"{', '.join(AGGREGATORS)}")
        if self.projection not in PROJECTIONS:
            raise ValueError(f"projection must be one of {', '.join(PROJECTIONS)}, "
                             f"got {self.projection!r}")
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ValueError(f"k must be a positive integer, got {self.k!r}")


@dataclass(frozen=True)
class Federation:
    """Client data (M, n, ...) and labels (M, n), a test set, the budgets, and optionally
    a validation set held out from the clients (for choosing hyperparameters)."""

    x: Tensor
    y: Tensor
    x_test: Tensor
    y_test: Tensor
    budgets: np.ndarray
    delta: float
    x_val: Tensor | None = None
    y_val: Tensor | None = None


@dataclass(frozen=True)
class Hyperparameters:
    """Rounds T, local steps tau, batch B, learning rate, clipping norm C, and how noise
    multipliers are calibrated (one of :data:`fedlib.papers.pfa.budgets.CALIBRATIONS`)."""

    rounds: int
    local_steps: int
    batch_size: int
    lr: float
    clip: float = 1.0
    eval_every: int = 1
    calibration: str = "rdp"

    def __post_init__(self) -> None:
        if self.calibration not in CALIBRATIONS:
            raise ValueError(f"calibration must be one of {', '.join(CALIBRATIONS)}, "
                             f"got {self.calibration!r}")


@dataclass
class TrainingResult:
    """Per-variant history tables, the final ledger, and the public spectra seen."""

    history: list[pd.DataFrame]
    ledger: PrivacyLedger
    noise_multipliers: dict[str, np.ndarray]
    spectra: dict[Variant, list[np.ndarray]]


def _accuracy(model: nn.Module, params: dict[str, Tensor], x: Tensor, y: Tensor) -> float:
    """Accuracy of the model with ``params`` on (x, y), computed where x lies."""
    params = {name: p.to(x.device) for name, p in params.items()}
    with torch.no_grad():
        correct = 0
        for start in range(0, len(x), 2000):
            logits = functional_call(model, params, (x[start:start + 2000],))
            correct += int((logits.argmax(dim=1) == y[start:start + 2000]).sum())
    return correct / len(x)


def _scores(model: nn.Module, params: dict[str, Tensor], federation: Federation,
            evaluate: bool) -> dict[str, float]:
    """Test accuracy, and validation accuracy when the federation has a validation set
    (NaN when not evaluated this round)."""
    scores = {"accuracy": (_accuracy(model, params, federation.x_test, federation.y_test)
                           if evaluate else math.nan)}
    if federation.x_val is not None and federation.y_val is not None:
        scores["val_accuracy"] = (_accuracy(model, params, federation.x_val, federation.y_val)
                                  if evaluate else math.nan)
    return scores


def _sample_round(eligible: np.ndarray, public: np.ndarray, n_sample: int,
                  rng: np.random.Generator) -> np.ndarray:
    """K clients drawn uniformly among the eligible, drawn again until at least one public
    client is among them (the authors' rule); none when fewer than K clients or no public
    client can take part (training stops)."""
    pool = np.flatnonzero(eligible)
    if len(pool) < n_sample or not (public & eligible).any():
        return np.zeros(0, dtype=int)
    while True:
        chosen = rng.choice(pool, size=n_sample, replace=False)
        if public[chosen].any():
            return np.sort(chosen)


def plan_participation(budgets: np.ndarray, n_examples: int, hyperparameters: Hyperparameters,
                       delta: float, seed: int
                       ) -> tuple[PrivacyLedger, np.ndarray, list[np.ndarray]]:
    """Who takes part in which round: the ledger after the last round, the public mask,
    and the sampled clients of every round (empty once training has stopped).

    Sampling does not depend on the models, so this is exactly the sequence
    :func:`train_variants` uses for the same arguments.
    """
    n_clients = len(budgets)
    n_sample = max(1, round(SAMPLING_RATIO * n_clients))
    rates = np.full(n_clients, hyperparameters.batch_size / n_examples)
    planned = expected_rounds(hyperparameters.rounds, n_sample, n_clients)
    ledger = make_ledger(hyperparameters.calibration, budgets, delta, rates,
                         hyperparameters.local_steps, planned)
    public = public_clients(budgets, PUBLIC_FRACTION)
    rng = np.random.default_rng(seed)
    rounds: list[np.ndarray] = []
    stopped = False
    for _ in range(hyperparameters.rounds):
        chosen = np.zeros(0, dtype=int)
        if not stopped:
            chosen = _sample_round(ledger.can_take_part(), public, n_sample, rng)
            stopped = len(chosen) == 0
        if len(chosen):
            ledger.record(chosen)
        rounds.append(chosen)
    return ledger, public, rounds


def variant_generator(seed: int, variant: Variant, purpose: str) -> torch.Generator:
    """The stream of ``variant``'s random draws for ``purpose`` (``"noise"``: its DP-SGD
    noise; ``"subspace"``: its random directions), from the seed and the variant alone."""
    name = f"{purpose}/{variant.aggregator}/{variant.k}/{variant.projection}".encode()
    state = np.random.SeedSequence([seed, zlib.crc32(name)]).generate_state(2, np.uint32)
    return torch.Generator().manual_seed(int(state[0]) << 31 | int(state[1]) >> 1)


def variant_noise(variant: Variant, ledger: PrivacyLedger) -> np.ndarray:
    """Noise multiplier of every client under ``variant``."""
    if variant.aggregator == "np-fedavg":
        return np.zeros(len(ledger.budgets))
    if variant.aggregator in ("minimum", "maximum"):
        pick = min if variant.aggregator == "minimum" else max
        uniform = type(ledger)(np.full(len(ledger.budgets), pick(ledger.budgets)),
                               ledger.delta, ledger.sampling_rates, ledger.steps_per_round,
                               ledger.planned_rounds)
        return uniform.noise_multipliers
    return ledger.noise_multipliers


def _clip_groups(variants: Sequence[Variant], clip: float) -> dict[float, list[int]]:
    """The variants' indices by clipping norm: NP-FedAvg runs plain SGD (no clipping, as the
    authors' non-private baseline), every other variant clips at ``clip``."""
    groups: dict[float, list[int]] = {}
    for v, variant in enumerate(variants):
        groups.setdefault(math.inf if variant.aggregator == "np-fedavg" else clip, []).append(v)
    return groups


def _aggregate(variant: Variant, layer: Tensor, eps: Tensor, public: Tensor,
               previous: Subspace | None, k: int, generator: torch.Generator
               ) -> tuple[Tensor, Subspace | None, int]:
    """One layer's aggregate, the subspace of this round's public updates (for PFA+ and
    the spectra), and the number of clients that sent only coefficients."""
    name = variant.aggregator
    if name in ("fedavg", "minimum", "maximum", "np-fedavg"):
        return fedavg(layer), None, 0
    if name == "weiavg" or not bool(public.any()):
        return weighted_average(layer, eps), None, 0
    current = _subspace(variant.projection, layer[public], eps[public], k, generator)
    if name == "pfa" or previous is None:  # PFA, or PFA+'s warm-up round
        return projected_average(layer, eps, public, current), current, 0
    private = ~public
    coefficients = previous.coefficients(layer[private])
    aggregate = pfa_plus_average(layer[public], coefficients, eps[public], eps[private],
                                 previous)
    return aggregate, current, int(private.sum())


def _subspace(projection: str, public_updates: Tensor, eps_public: Tensor, k: int,
              generator: torch.Generator) -> Subspace:
    """The subspace of one layer's public updates for ``projection`` (:data:`PROJECTIONS`)."""
    if projection == "public":
        return public_subspace(public_updates, k, generator)
    if projection == "public-text":
        return text_subspace(public_updates, eps_public, k, generator)
    return random_subspace(public_updates, k, generator, centred=projection == "random")


def _snapshot(t: int, params: list[dict[str, Tensor]],
              previous: list[dict[str, Subspace | None]], rows: list[list[dict]],
              spectra: dict[Variant, list[np.ndarray]], variants: Sequence[Variant],
              generators: dict[str, list[torch.Generator]]) -> dict[str, Any]:
    """The whole state of :func:`train_variants` after round ``t``, for a checkpoint."""
    return {
        "round": t,
        "params": params,
        "previous": [{name: None if s is None else [s.mean, s.basis, s.eigenvalues]
                      for name, s in layers.items()} for layers in previous],
        "rows": rows,
        "spectra": {str(v): [torch.from_numpy(a) for a in spectra[variant]]
                    for v, variant in enumerate(variants) if variant in spectra},
        "generators": {purpose: [g.get_state() for g in gens]
                       for purpose, gens in generators.items()},
    }


def _restore(state: dict[str, Any], variants: Sequence[Variant],
             generators: dict[str, list[torch.Generator]]
             ) -> tuple[int, list[dict[str, Tensor]], list[dict[str, Subspace | None]],
                        list[list[dict]], dict[Variant, list[np.ndarray]]]:
    """:func:`_snapshot` read back: (round, params, previous, rows, spectra); the
    generators are set to their saved states."""
    for purpose, gens in generators.items():
        for g, saved in zip(gens, state["generators"][purpose], strict=True):
            g.set_state(saved)
    previous = [{name: None if s is None else Subspace(*s) for name, s in layers.items()}
                for layers in state["previous"]]
    spectra = {variants[int(v)]: [a.numpy() for a in arrays]
               for v, arrays in state["spectra"].items()}
    return state["round"], state["params"], previous, state["rows"], spectra


def train_variants(model: nn.Module, federation: Federation, hyperparameters: Hyperparameters,
                   variants: Sequence[Variant], seed: int,
                   spectrum_rounds: Sequence[int] = (),
                   checkpointer: Checkpointer | None = None,
                   device: str | torch.device = "cpu") -> TrainingResult:
    """Train every variant on the same federation; see the module docstring.

    Returns one history table per variant with columns ``round``, ``accuracy``
    (test accuracy of the global model, NaN between evaluations), ``uplink_bytes``
    (this round), ``clients`` (sampled), ``public`` (sampled public clients), and
    ``val_accuracy`` (on the validation set, evaluated with the test accuracy) when the
    federation has one; the
    spectra, by variant, are those of the first layer's public updates in
    ``spectrum_rounds`` (every PFA variant with the public subspace).

    With a ``checkpointer`` the state is saved between rounds whenever it is due, a saved
    state is resumed, and the file is removed at the end: the result is the same, to the
    last bit, as a run without one.

    On a CUDA ``device`` the local DP-SGD steps and the evaluations run there and the
    aggregation stays on the CPU. Each client's noise then comes from a CUDA generator
    (seeded as on the CPU, but another stream): the runs are other draws of the same
    distribution, not the CPU's runs to rounding.
    """
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda', but torch sees no CUDA device here: run on a "
                         "machine with a GPU and a CUDA build of torch, or use device='cpu'")
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {str(device)!r}")
    if device.type == "cuda":
        federation = replace(federation, x_test=federation.x_test.to(device),
                             y_test=federation.y_test.to(device),
                             x_val=None if federation.x_val is None
                             else federation.x_val.to(device),
                             y_val=None if federation.y_val is None
                             else federation.y_val.to(device))
        model = model.to(device)
    n_clients, n_examples = federation.y.shape
    ledger, public, plan = plan_participation(federation.budgets, n_examples, hyperparameters,
                                              federation.delta, seed)
    nms = {v: variant_noise(v, ledger) for v in set(variants)}
    batch_gen = torch.Generator().manual_seed(seed)
    noise_gens = [variant_generator(seed, v, "noise") for v in variants]
    sub_gens = [variant_generator(seed, v, "subspace") for v in variants]
    names = [name for name, _ in model.named_parameters()]
    sizes = {name: p.numel() for name, p in model.named_parameters()}
    start = {name: p.detach().to("cpu", copy=True) for name, p in model.named_parameters()}
    params = [{name: t.clone() for name, t in start.items()} for _ in variants]
    previous: list[dict[str, Subspace | None]] = [dict.fromkeys(names) for _ in variants]
    rows: list[list[dict]] = [[] for _ in variants]
    spectra: dict[Variant, list[np.ndarray]] = {}
    generators = {"batches": [batch_gen], "noise": noise_gens, "subspace": sub_gens}
    state = checkpointer.load() if checkpointer is not None else None
    if state is None:
        done = 0
        scores0 = _scores(model, start, federation, True)
        for rows_v in rows:
            rows_v.append({"round": 0, **scores0, "uplink_bytes": 0, "clients": 0,
                           "public": 0})
    else:
        done, params, previous, rows, spectra = _restore(state, variants, generators)
    for t in range(done + 1, hyperparameters.rounds + 1):
        if checkpointer is not None and t > done + 1 and checkpointer.due():
            checkpointer.save(_snapshot(t - 1, params, previous, rows, spectra, variants,
                                        generators))
        chosen = plan[t - 1]
        evaluate = t % hyperparameters.eval_every == 0 or t == hyperparameters.rounds
        if len(chosen) == 0:  # training has stopped: the model no longer changes
            for v, rows_v in enumerate(rows):
                rows_v.append({"round": t, **_scores(model, params[v], federation, evaluate),
                               "uplink_bytes": 0, "clients": 0, "public": 0})
            continue
        n_k = len(chosen)
        batches = draw_batches(n_k, n_examples, hyperparameters.local_steps,
                               hyperparameters.batch_size, batch_gen)
        # Only the examples the batches use travel to the engine.
        flat = batches.view(n_k, -1)
        xs = federation.x[torch.as_tensor(chosen)[:, None], flat]
        ys = federation.y[torch.as_tensor(chosen)[:, None], flat]
        xs, ys = xs.to(device), ys.to(device)
        local = torch.arange(flat.shape[1], device=device).view(
            1, hyperparameters.local_steps, hyperparameters.batch_size)
        deltas = [{} for _ in variants]
        for clip, members in _clip_groups(variants, hyperparameters.clip).items():
            n_g = len(members)
            x_all = xs.repeat(n_g, *([1] * (xs.dim() - 1)))
            nm_all = torch.as_tensor(np.concatenate([nms[variants[v]][chosen] for v in members]),
                                     dtype=torch.float32)
            start_all = {name: torch.cat([params[v][name].expand(n_k, *params[v][name].shape)
                                          for v in members]).to(device) for name in names}
            group = local_dpsgd(model, start_all, x_all, ys.repeat(n_g, 1),
                                local.expand(n_k * n_g, -1, -1), hyperparameters.lr, clip,
                                nm_all, [noise_gens[v] for v in members])
            for j, v in enumerate(members):
                deltas[v] = {name: group[name][j * n_k:(j + 1) * n_k].cpu() for name in names}
        eps = torch.as_tensor(federation.budgets[chosen], dtype=torch.float32)
        pub = torch.as_tensor(public[chosen])
        for v, variant in enumerate(variants):
            coefficient_clients = 0
            for name in names:
                layer = deltas[v][name].reshape(n_k, -1)
                k = min(variant.k, sizes[name])
                aggregate, current, n_coef = _aggregate(variant, layer, eps, pub,
                                                        previous[v][name], k, sub_gens[v])
                coefficient_clients = max(coefficient_clients, n_coef)
                if variant.aggregator == "pfa+":
                    previous[v][name] = current
                if (variant.aggregator == "pfa" and variant.projection == "public"
                        and current is not None and t in spectrum_rounds
                        and name == names[0]):
                    spectra.setdefault(variant, []).append(
                        current.eigenvalues.numpy().copy())
                params[v][name] = params[v][name] - aggregate.view_as(params[v][name])
            floats = upload_floats(sizes, n_k - coefficient_clients, coefficient_clients,
                                   variant.k)
            rows[v].append({"round": t, **_scores(model, params[v], federation, evaluate),
                            "uplink_bytes": 4 * floats,
                            "clients": n_k, "public": int(pub.sum())})
    if checkpointer is not None:
        checkpointer.finish()
    history = [pd.DataFrame(r) for r in rows]
    noise = {f"{v.aggregator}": nms[v] for v in variants}
    return TrainingResult(history=history, ledger=ledger, noise_multipliers=noise,
                          spectra=spectra)
