"""DP-Ditto: personalized FL with a differentially private global model, batched.

Every client of every run is one row of a stacked parameter matrix ``theta``
of shape (B, P), B = runs x clients (row ``g * N + i`` is client ``i`` of run
``g``), P the number of model parameters. A round of DP-Ditto:

1. the server broadcasts the noisy global model ``w~``;
2. each client runs E local SGD steps on its loss F_i from ``w~``, clips the
   *model* ``w_i <- w_i / max(1, ||w_i|| / C)`` and uploads ``w_i + n_i``,
   ``n_i ~ N(0, sigma_i^2 I)``;
3. each client takes E_p steps on its personal model,
   ``v_i <- v_i - eta_p [(1 - lambda) grad F_i(v_i) + lambda (v_i - w~)]``
   (never uploaded);
4. the server averages the noisy uploads into the next ``w~``.

``lambda = 0`` trains purely local models (they never see the noise);
``lambda = 1`` *is* the global model: the personal model is defined as ``w~``
(the update above would only approach it geometrically).

The models (multinomial logistic regression, the 784-100-10 ReLU network and
the two-layer CNN) compute losses and gradients for all B rows at once: MLR and
the MLP in closed form (batched matrix products), the CNN with autograd over a
grouped convolution. Runs in one batch share the initial model, the minibatch
draws and the standard-normal noise draws (scaled by each run's own sigma).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from fedlib.privacy.calibration import dpditto_sigma

# ---------------------------------------------------------------------------
# Models over stacked flat parameters
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Model:
    """A classifier over flat parameter rows: layout, init, logits, loss and gradient.

    ``kind`` is ``"mlr"``, ``"dnn"`` or ``"cnn"``; ``in_shape`` the shape of one
    example (``(784,)`` for MLR and DNN, ``(C, H, W)`` for the CNN).
    """

    kind: str
    in_shape: tuple[int, ...]
    n_classes: int = 10
    hidden: int = 100

    def __post_init__(self) -> None:
        if self.kind not in ("mlr", "dnn", "cnn"):
            raise ValueError(f"model kind must be 'mlr', 'dnn' or 'cnn', got {self.kind!r}")
        if self.kind == "cnn" and len(self.in_shape) != 3:
            raise ValueError(f"the CNN needs (C, H, W) inputs, got {self.in_shape}")
        if self.kind != "cnn" and len(self.in_shape) != 1:
            raise ValueError(f"{self.kind} needs flat inputs (d,), got {self.in_shape}")

    @property
    def shapes(self) -> list[tuple[str, tuple[int, ...], int]]:
        """(name, shape, fan_in) of every parameter tensor, in storage order."""
        k = self.n_classes
        if self.kind == "mlr":
            d = self.in_shape[0]
            return [("W", (d, k), d), ("b", (k,), d)]
        if self.kind == "dnn":
            d, h = self.in_shape[0], self.hidden
            return [("W1", (d, h), d), ("b1", (h,), d), ("W2", (h, k), h), ("b2", (k,), h)]
        c, height, width = self.in_shape
        side_h, side_w = ((height - 4) // 2 - 4) // 2, ((width - 4) // 2 - 4) // 2
        flat = 64 * side_h * side_w
        return [("conv1", (32, c, 5, 5), c * 25), ("cb1", (32,), c * 25),
                ("conv2", (64, 32, 5, 5), 800), ("cb2", (64,), 800),
                ("fc1", (flat, 512), flat), ("fb1", (512,), flat),
                ("fc2", (512, k), 512), ("fb2", (k,), 512)]

    @property
    def n_params(self) -> int:
        return sum(math.prod(s) for _, s, _ in self.shapes)

    def head_slice(self, layers: int) -> slice:
        """Flat slice of the last ``layers`` parameter tensors (FedALA's adaptive part)."""
        sizes = [math.prod(s) for _, s, _ in self.shapes]
        layers = min(layers, len(sizes))
        return slice(sum(sizes[:len(sizes) - layers]), sum(sizes))

    def unflatten(self, theta: torch.Tensor) -> list[torch.Tensor]:
        """Views (B, *shape) of the parameter tensors of the rows of ``theta``."""
        out, start = [], 0
        for _, shape, _ in self.shapes:
            size = math.prod(shape)
            out.append(theta[:, start:start + size].reshape(theta.shape[0], *shape))
            start += size
        return out

    def init(self, generator: torch.Generator, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """One flat parameter vector: PyTorch's default init, U(+-1/sqrt(fan_in))."""
        parts = []
        for _, shape, fan_in in self.shapes:
            bound = 1.0 / math.sqrt(fan_in)
            parts.append((torch.rand(math.prod(shape), generator=generator, dtype=dtype) * 2 - 1)
                         * bound)
        return torch.cat(parts)

    def logits(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Logits (B, m, k) of row b's model on its examples ``x[b]`` (B, m, *in_shape)."""
        p = self.unflatten(theta)
        if self.kind == "mlr":
            return torch.baddbmm(p[1][:, None, :], x, p[0])
        if self.kind == "dnn":
            hidden = torch.baddbmm(p[1][:, None, :], x, p[0]).clamp_min_(0)
            return torch.baddbmm(p[3][:, None, :], hidden, p[2])
        return self._cnn_logits(p, x)

    def _cnn_logits(self, p: list[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        b, m = x.shape[:2]
        c, height, width = self.in_shape
        f = torch.nn.functional
        z = x.transpose(0, 1).reshape(m, b * c, height, width)
        z = f.conv2d(z, p[0].reshape(b * 32, c, 5, 5), p[1].reshape(-1), groups=b)
        z = f.max_pool2d(z.relu_(), 2)
        z = f.conv2d(z, p[2].reshape(b * 64, 32, 5, 5), p[3].reshape(-1), groups=b)
        z = f.max_pool2d(z.relu_(), 2)
        z = z.reshape(m, b, -1).transpose(0, 1)  # (B, m, flat), per model: channel-major
        z = torch.baddbmm(p[5][:, None, :], z, p[4]).relu_()
        return torch.baddbmm(p[7][:, None, :], z, p[6])

    def loss_grad(
        self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean cross-entropy of every row on its batch (B,) and its gradient (B, P).

        ``x`` is (B, m, *in_shape), ``y`` (B, m) int64 labels.
        """
        if self.kind == "cnn":
            return self._autograd_loss_grad(theta, x, y)
        m = x.shape[1]
        p = self.unflatten(theta)
        onehot = torch.nn.functional.one_hot(y, self.n_classes).to(theta.dtype)
        if self.kind == "mlr":
            logits = torch.baddbmm(p[1][:, None, :], x, p[0])
            logp = torch.log_softmax(logits, dim=-1)
            d = (logp.exp() - onehot) / m
            grads = [torch.bmm(x.transpose(1, 2), d), d.sum(dim=1)]
        else:
            z1 = torch.baddbmm(p[1][:, None, :], x, p[0])
            hidden = z1.clamp_min(0)
            logits = torch.baddbmm(p[3][:, None, :], hidden, p[2])
            logp = torch.log_softmax(logits, dim=-1)
            d = (logp.exp() - onehot) / m
            dz = torch.bmm(d, p[2].transpose(1, 2)).mul_(z1 > 0)
            grads = [torch.bmm(x.transpose(1, 2), dz), dz.sum(dim=1),
                     torch.bmm(hidden.transpose(1, 2), d), d.sum(dim=1)]
        loss = -(logp * onehot).sum(dim=(1, 2)) / m
        return loss, torch.cat([g.reshape(theta.shape[0], -1) for g in grads], dim=1)

    def _autograd_loss_grad(
        self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.enable_grad():
            leaf = theta.detach().requires_grad_(True)
            logits = self.logits(leaf, x)
            loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, self.n_classes), y.reshape(-1), reduction="none"
            ).reshape(y.shape).mean(dim=1)
            (grad,) = torch.autograd.grad(loss.sum(), leaf)
        return loss.detach(), grad

    def evaluate(
        self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor,
        chunk: int = 512,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean loss and accuracy (B,) of row b's model on its masked examples ``x[b]``."""
        loss = torch.zeros(theta.shape[0], dtype=torch.float64, device=theta.device)
        correct = torch.zeros_like(loss)
        for start in range(0, x.shape[1], chunk):
            xb, yb, mb = (t[:, start:start + chunk] for t in (x, y, mask))
            logits = self.logits(theta, xb)
            logp = torch.log_softmax(logits, dim=-1)
            picked = logp.gather(2, yb[..., None]).squeeze(2)
            loss -= (picked * mb).sum(dim=1).double()
            correct += ((logits.argmax(dim=-1) == yb) & mb).sum(dim=1).double()
        count = mask.sum(dim=1).double()
        return loss / count, correct / count


def make_model(kind: str, dataset_shape: tuple[int, ...], n_classes: int = 10) -> Model:
    """The paper's model ``kind`` for examples of ``dataset_shape`` (e.g. (28, 28))."""
    if kind == "cnn":
        shape = dataset_shape if len(dataset_shape) == 3 else (1, *dataset_shape)
        return Model("cnn", tuple(shape), n_classes)
    return Model(kind, (math.prod(dataset_shape),), n_classes)


# ---------------------------------------------------------------------------
# Clients' data and minibatches
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Clients:
    """N clients' training and test sets, padded to common lengths.

    ``x_train`` (N, n, *in_shape), ``y_train`` (N, n), ``n_train`` (N,) true sizes
    (rows beyond are padding); ``x_eval``/``y_eval``/``eval_mask`` the training
    examples the personal training loss is measured on (all of them or a
    subsample); ``x_test``/``y_test``/``test_mask`` the test sets.
    """

    x_train: torch.Tensor
    y_train: torch.Tensor
    n_train: torch.Tensor
    x_eval: torch.Tensor
    y_eval: torch.Tensor
    eval_mask: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    test_mask: torch.Tensor

    @property
    def n_clients(self) -> int:
        return self.x_train.shape[0]

    def __post_init__(self) -> None:
        if int(self.n_train.min()) < 1:
            raise ValueError("every client needs at least one training example")


def pad_clients(
    parts: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
    eval_examples: int | None = None,
    dtype: torch.dtype = torch.float32,
) -> Clients:
    """Stack per-client ``(x_train, y_train, x_test, y_test)`` arrays into :class:`Clients`.

    ``eval_examples`` caps the training examples the training loss is measured on
    (the first ones of each client, whose order is already random); None uses all.
    """
    def stack(arrays: list[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
        n = max(len(a) for a in arrays)
        out = np.zeros((len(arrays), n, *arrays[0].shape[1:]), dtype=arrays[0].dtype)
        mask = np.zeros((len(arrays), n), dtype=bool)
        for i, a in enumerate(arrays):
            out[i, :len(a)] = a
            mask[i, :len(a)] = True
        return torch.from_numpy(out), torch.from_numpy(mask)

    xs, ys, xt, yt = (list(z) for z in zip(*parts, strict=True))
    x_train, mask = stack(xs)
    y_train, _ = stack(ys)
    cap = max(len(a) for a in xs) if eval_examples is None else eval_examples
    x_test, test_mask = stack(xt)
    y_test, _ = stack(yt)
    return Clients(
        x_train=x_train.to(dtype), y_train=y_train.long(), n_train=mask.sum(dim=1),
        x_eval=x_train[:, :cap].to(dtype), y_eval=y_train[:, :cap].long(),
        eval_mask=mask[:, :cap],
        x_test=x_test.to(dtype), y_test=y_test.long(), test_mask=test_mask,
    )


class Batches:
    """Minibatch indices of every client, drawn from a seeded generator.

    Each step, client i draws ``batch_size`` indices uniformly from its
    ``n_train[i]`` examples (with replacement across steps). Every run of a batch
    (and every method simulated with the same seed) sees the same draws.
    """

    def __init__(self, n_train: torch.Tensor, batch_size: int, seed: int) -> None:
        self.n_train = n_train
        self.batch_size = batch_size
        self.generator = torch.Generator().manual_seed(int(seed) * 1_000_003 + 17)

    def draw(self) -> torch.Tensor:
        u = torch.rand((len(self.n_train), self.batch_size), generator=self.generator,
                       dtype=torch.float64)
        return (u * self.n_train[:, None]).long().clamp_max_(self.n_train[:, None] - 1)


def gather_batch(
    clients: Clients, idx: torch.Tensor, runs: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The batch ``idx`` (N, m) of every client, repeated for ``runs`` runs: (runs N, m, ...)."""
    rows = torch.arange(clients.n_clients)[:, None]
    x, y = clients.x_train[rows, idx], clients.y_train[rows, idx]
    return (x.repeat(runs, *[1] * (x.dim() - 1)), y.repeat(runs, 1))


def repeat_clients(tensor: torch.Tensor, runs: int) -> torch.Tensor:
    """Tile a per-client tensor (N, ...) for ``runs`` runs: (runs N, ...)."""
    return tensor.repeat(runs, *[1] * (tensor.dim() - 1))


# ---------------------------------------------------------------------------
# Privacy: clipping and noise
# ---------------------------------------------------------------------------


def clip_models(theta: torch.Tensor, clip: float) -> torch.Tensor:
    """Scale every row to norm at most ``clip``: ``w / max(1, ||w|| / C)``."""
    norms = theta.norm(dim=1, keepdim=True)
    return theta / torch.clamp(norms / clip, min=1.0)


def check_lambda(value: float) -> float:
    """Return the Ditto weight ``lambda`` if it lies in [0, 1], else raise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"lambda must be a number in [0, 1] (0: local models only, 1: the "
                         f"global model), got {value!r}")
    return float(value)


def noise_sigmas(
    epsilons: Sequence[float], n_train: torch.Tensor, clip: float, delta: float, rounds: int
) -> torch.Tensor:
    """(G, N) noise standard deviation of each run's and client's uploads.

    ``sigma_i = (2 C / |D_i|) sqrt(2 q T ln(1/delta)) / epsilon`` with q = 1
    (:func:`fedlib.privacy.calibration.dpditto_sigma`); ``epsilon = inf`` is no noise.
    """
    out = np.zeros((len(epsilons), len(n_train)))
    for g, eps in enumerate(epsilons):
        if eps is None or (isinstance(eps, float) and math.isinf(eps) and eps > 0):
            continue
        for i, size in enumerate(n_train.tolist()):
            out[g, i] = dpditto_sigma(clip, int(size), eps, delta, rounds)
    return torch.as_tensor(out)


class Noise:
    """Standard-normal draws shared by the runs of a batch (common random numbers)."""

    def __init__(self, seed: int, stream: int) -> None:
        self.generator = torch.Generator().manual_seed(int(seed) * 7919 + 101 * stream + 3)

    def add(self, uploads: torch.Tensor, sigma: torch.Tensor, n_clients: int) -> torch.Tensor:
        """``uploads`` (G N, P) plus ``sigma`` (G, N) times one (N, P) draw per client."""
        runs = uploads.shape[0] // n_clients
        if not torch.any(sigma > 0):
            return uploads
        z = torch.randn((n_clients, uploads.shape[1]), generator=self.generator,
                        dtype=uploads.dtype)
        noisy = uploads.view(runs, n_clients, -1) + sigma.to(uploads.dtype)[:, :, None] * z
        return noisy.reshape(uploads.shape)


def private_upload(
    theta: torch.Tensor, clip: float, sigma: torch.Tensor, noise: Noise, n_clients: int
) -> torch.Tensor:
    """Clip every row's model to norm ``clip`` and add its Gaussian noise."""
    return noise.add(clip_models(theta, clip), sigma, n_clients)


def average_clients(uploads: torch.Tensor, n_clients: int) -> torch.Tensor:
    """(G, P) plain average of the N uploads of each run."""
    return uploads.view(-1, n_clients, uploads.shape[1]).mean(dim=1)


# ---------------------------------------------------------------------------
# Local training
# ---------------------------------------------------------------------------


def _factors(model: Model, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor):
    """Per layer, the gradient of the mean cross-entropy as a product ``(left, right)``
    (weight matrices: ``left @ right``) or a vector (biases), for MLR and DNN."""
    m = x.shape[1]
    p = model.unflatten(theta)
    onehot = torch.nn.functional.one_hot(y, model.n_classes).to(theta.dtype)
    xt = x.transpose(1, 2)
    if model.kind == "mlr":
        logits = torch.baddbmm(p[1][:, None, :], x, p[0])
        d = (torch.softmax(logits, dim=-1) - onehot) / m
        return [(xt, d), d.sum(dim=1)]
    z1 = torch.baddbmm(p[1][:, None, :], x, p[0])
    hidden = z1.clamp_min(0)
    logits = torch.baddbmm(p[3][:, None, :], hidden, p[2])
    d = (torch.softmax(logits, dim=-1) - onehot) / m
    dz = torch.bmm(d, p[2].transpose(1, 2)).mul_(z1 > 0)
    return [(xt, dz), dz.sum(dim=1), (hidden.transpose(1, 2), d), d.sum(dim=1)]


def sgd_step(
    model: Model, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, lr: float,
    weight: torch.Tensor | float = 1.0, mu: torch.Tensor | float = 0.0,
    anchor: torch.Tensor | None = None,
) -> torch.Tensor:
    """One step on ``weight * F(theta; batch) + (mu / 2) ||theta - anchor||^2``, in place.

    ``theta <- (1 - lr mu) theta + lr mu anchor - lr weight grad F(theta)``;
    ``weight`` and ``mu`` are scalars or (B,) per row. MLR and DNN update every
    layer in place without forming the (B, P) gradient.
    """
    rows = theta.shape[0]

    def per_row(value: torch.Tensor | float) -> torch.Tensor:
        if isinstance(value, torch.Tensor):
            return value.to(theta.dtype).reshape(rows)
        return torch.full((rows,), float(value), dtype=theta.dtype)

    scale = -lr * per_row(weight)
    if model.kind == "cnn":
        _, grad = model.loss_grad(theta, x, y)
        factors = None
    else:
        factors = _factors(model, theta, x, y)  # at the pre-step theta
    if anchor is not None:  # (1 - c) theta + c anchor in one pass over theta
        theta.lerp_(anchor, (lr * per_row(mu))[:, None])
    if factors is None:
        theta.addcmul_(grad, scale[:, None])
        return theta
    for view, factor in zip(model.unflatten(theta), factors, strict=True):
        if isinstance(factor, tuple):
            left, right = factor  # accumulated in place: no (B, P) gradient is formed
            view.baddbmm_(left, right * scale[:, None, None])
        else:
            view.addcmul_(factor, scale[:, None])
    return theta


@dataclass(frozen=True)
class Hyper:
    """Training hyperparameters shared by DP-Ditto and the baselines.

    ``lr`` (eta_l) and ``personal_lr`` (eta_p) are the global and personal
    learning rates, ``local_steps`` (E) and ``personal_steps`` (E_p) SGD steps
    per round, ``batch_size`` the minibatch size, ``clip`` the model clipping
    norm C and ``delta`` the privacy delta.
    """

    lr: float = 0.005
    personal_lr: float = 0.005
    local_steps: int = 5
    personal_steps: int = 5
    batch_size: int = 10
    clip: float = 10.0
    delta: float = 0.01

    def __post_init__(self) -> None:
        for name in ("lr", "personal_lr", "clip"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("local_steps", "personal_steps", "batch_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if not 0 < self.delta < 1:
            raise ValueError(f"delta must satisfy 0 < delta < 1, got {self.delta!r}")


def check_epsilons(epsilons: Sequence[float]) -> list[float]:
    """Privacy budgets > 0 (``inf`` for no noise); raise naming the bad one."""
    out = []
    for eps in epsilons:
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps > 0 \
                or math.isnan(eps):
            raise ValueError(f"epsilon must be > 0 (float('inf') for no privacy), got {eps!r}")
        out.append(float(eps))
    return out


@dataclass(frozen=True, eq=False)
class PersonalResult:
    """Each run's personal models evaluated: (runs, N) per-client arrays."""

    train_loss: np.ndarray
    test_accuracy: np.ndarray

    @property
    def accuracy(self) -> np.ndarray:
        """Mean test accuracy over clients, (runs,)."""
        return self.test_accuracy.mean(axis=1)

    @property
    def fairness(self) -> np.ndarray:
        """Standard deviation over clients of the personal training losses, (runs,)."""
        return self.train_loss.std(axis=1)

    @property
    def mean_loss(self) -> np.ndarray:
        return self.train_loss.mean(axis=1)


def evaluate_personal(model: Model, theta: torch.Tensor, clients: Clients) -> PersonalResult:
    """Evaluate rows (runs N, P) of personal models on their own clients' data."""
    n = clients.n_clients
    runs = theta.shape[0] // n
    losses, accs = [], []
    for g in range(runs):
        rows = theta[g * n:(g + 1) * n]
        loss, _ = model.evaluate(rows, clients.x_eval, clients.y_eval, clients.eval_mask)
        _, acc = model.evaluate(rows, clients.x_test, clients.y_test, clients.test_mask)
        losses.append(loss.cpu().numpy())
        accs.append(acc.cpu().numpy())
    return PersonalResult(np.stack(losses), np.stack(accs))


# ---------------------------------------------------------------------------
# DP-Ditto
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class DittoResult:
    """Global runs (one per epsilon) and personal runs (one per (global run, lambda))."""

    global_model: torch.Tensor
    personal: PersonalResult
    pairs: list[tuple[int, float]]
    sigmas: np.ndarray


def run_ditto(
    model: Model,
    clients: Clients,
    epsilons: Sequence[float],
    pairs: Sequence[tuple[int, float]],
    rounds: int,
    hyper: Hyper | None = None,
    seed: int = 0,
    init: torch.Tensor | None = None,
) -> DittoResult:
    """Simulate DP-Ditto: one global FL run per epsilon, personal models per (run, lambda).

    Parameters
    ----------
    epsilons
        Privacy budget of each global run (``inf``: no noise, i.e. Ditto).
    pairs
        Personal runs as (index into ``epsilons``, lambda). lambda = 1 is the
        global model itself; lambda = 0 trains a local model that never sees
        the global one.
    rounds
        Number of global aggregations T (also sets the noise level).
    init
        Initial model (P,); default :meth:`Model.init` seeded by ``seed``.
    """
    epsilons = check_epsilons(epsilons)
    hyper = hyper or Hyper()
    pairs = [(int(g), check_lambda(lam)) for g, lam in pairs]
    if any(not 0 <= g < len(epsilons) for g, _ in pairs):
        raise ValueError(f"pairs refer to global runs 0..{len(epsilons) - 1}, got {pairs}")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"rounds (T) must be an integer >= 1, got {rounds!r}")
    n = clients.n_clients
    dtype = clients.x_train.dtype
    if init is None:
        init = model.init(torch.Generator().manual_seed(int(seed)), dtype)
    sigma = noise_sigmas(epsilons, clients.n_train, hyper.clip, hyper.delta, rounds)
    G = len(epsilons)
    trained = [p for p in pairs if p[1] < 1.0]
    owner = torch.tensor([g for g, _ in trained], dtype=torch.long)
    lam = torch.tensor([lam for _, lam in trained], dtype=dtype)
    lam_rows = lam.repeat_interleave(n)
    global_w = init.expand(G, -1).clone()
    personal = init.expand(len(trained) * n, -1).clone()
    batches = Batches(clients.n_train, hyper.batch_size, seed)
    noise = Noise(seed, stream=0)
    for _ in range(rounds):
        broadcast = global_w.repeat_interleave(n, dim=0)  # (G N, P)
        local = broadcast.clone()
        for _ in range(hyper.local_steps):
            x, y = gather_batch(clients, batches.draw(), G)
            sgd_step(model, local, x, y, hyper.lr)
        if trained:
            anchor = broadcast.view(G, n, -1)[owner].reshape(len(trained) * n, -1)
            for _ in range(hyper.personal_steps):
                x, y = gather_batch(clients, batches.draw(), len(trained))
                sgd_step(model, personal, x, y, hyper.personal_lr, weight=1.0 - lam_rows,
                         mu=lam_rows, anchor=anchor)
        uploads = private_upload(local, hyper.clip, sigma, noise, n)
        global_w = average_clients(uploads, n)
    rows = []
    index = {p: k for k, p in enumerate(trained)}
    for g, lam_value in pairs:
        if lam_value == 1.0:
            rows.append(global_w[g].expand(n, -1))
        else:
            k = index[(g, lam_value)]
            rows.append(personal[k * n:(k + 1) * n])
    result = evaluate_personal(model, torch.cat(rows), clients)
    return DittoResult(global_w, result, pairs, sigma.numpy())
