"""Per-example clipped gradient sums of :class:`fedlib.nn.models.ImdbLSTM`, written out.

The ``"layers"`` path of :func:`fedlib.nn.dpsgd.local_dpsgd` runs the IMDb model
(word embedding, one LSTM layer, a linear classifier on the last state) with
this module: the forward pass and back-propagation through time are written
out for all M clients at once (one batched matrix product per time step and
client block), and every parameter's per-example gradient norm comes from a
closed form that never forms a vocabulary-sized tensor per example:

* embedding (V x E): example i's gradient has a nonzero row only for the words
  it contains, row u being the sum of the gradients with respect to the word
  vectors at the positions holding u. Its squared norm is a segment sum: the
  positions of each example are sorted by word id once per step, the rows of
  one word are added into one slot, and the slots' squares summed. The clipped
  sum is one accumulating index-put of the weighted word-vector gradients into
  the (M, V, E) gradient;
* LSTM weights and bias: the input projection is one matrix product over all
  time steps (hoisted out of the loop). Input weights, recurrent weights and
  bias act on the concatenation [word vector, previous state, 1], so their
  per-example gradients are one time-summed product dZ_i^T [X_i, H_i, 1] per
  example ((4H, E + H + 1), formed: for T time steps the ghost norm
  sum_{t,s} (dz_t . dz_s)(x_t . x_s) costs T^2 (4H + E + H + 1) against
  T 4H (E + H + 1) for the product, more at any T > 4H); the clipped sum is one
  batched product of the clipping weights with them;
* classifier: ||g_i||^2 (||h_i||^2 + 1), its clipped sum one batched product
  (the linear rule of the ``"layers"`` path).

Every intermediate stays in the parameters' dtype (float32 or float64): norms,
clipping factors and sums included.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor, nn

from fedlib.nn.models import ImdbLSTM


class Buffers(Protocol):
    """The engine's reusable buffers (its ``_Workspace``)."""

    def get(self, key: object, shape: tuple[int, ...], like: Tensor, zero: bool = False,
            channels_last: bool = False, dtype: torch.dtype | None = None) -> Tensor: ...


class LstmRefused(Exception):
    """Why the written-out path does not run a model (the message names the part)."""


_PARTS = ("embedding.weight", "input_weight", "hidden_weight", "bias", "classifier.weight",
          "classifier.bias")


@dataclass(frozen=True)
class LstmPlan:
    """Sizes of an :class:`ImdbLSTM` and the names of its parameters."""

    vocabulary: int
    width: int  # E
    hidden: int  # H
    classes: int  # C
    length: int  # L, words per example

    @property
    def names(self) -> tuple[str, ...]:
        return _PARTS


def lstm_plan(model: nn.Module, example_shape: tuple[int, ...]) -> LstmPlan:
    """The plan of an :class:`ImdbLSTM` on examples of ``example_shape`` (L,).

    Raises :class:`LstmRefused` unless the model computes exactly what its class's
    forward computes with plain parts: the class itself (not a subclass), no
    forward set on the instance, an exact nn.Embedding without padding index,
    norm limit or frequency scaling, an exact nn.Linear classifier, no hooks, no
    buffers, no parametrisation and no parameter shared.
    """
    if type(model) is not ImdbLSTM:
        raise LstmRefused(f"{type(model).__qualname__} is not ImdbLSTM")
    for path, module in model.named_modules():
        where = f"module {path!r}" if path else "the model"
        if "forward" in vars(module):
            raise LstmRefused(f"{where} has a forward of its own, set on the instance")
        if any(getattr(module, hooks, None) for hooks in (
                "_forward_hooks", "_forward_pre_hooks", "_backward_hooks",
                "_backward_pre_hooks")):
            raise LstmRefused(f"{where} has hooks; the 'layers' method would not run them")
        if torch.nn.utils.parametrize.is_parametrized(module):
            raise LstmRefused(f"{where} is parametrised")
    if any(getattr(nn.modules.module, hooks, None) for hooks in (
            "_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
            "_global_backward_pre_hooks")):
        raise LstmRefused("module hooks are registered globally; the 'layers' method would "
                          "not run them")
    children = dict(model.named_children())
    embedding, classifier = children.get("embedding"), children.get("classifier")
    if set(children) != {"embedding", "classifier"} or type(embedding) is not nn.Embedding \
            or type(classifier) is not nn.Linear:
        raise LstmRefused("its submodules are not exactly an nn.Embedding 'embedding' and an "
                          "nn.Linear 'classifier'")
    if any(True for _ in embedding.children()) or any(True for _ in classifier.children()):
        raise LstmRefused("its embedding or classifier has submodules")
    if embedding.padding_idx is not None or embedding.max_norm is not None \
            or embedding.scale_grad_by_freq:
        raise LstmRefused("its embedding has a padding index, a norm limit or frequency "
                          "scaling, which the 'layers' method does not compute")
    if next(iter(model.named_buffers()), None) is not None:
        raise LstmRefused("the model has buffers")
    params = dict(model.named_parameters(remove_duplicate=False))
    if tuple(sorted(params)) != tuple(sorted(_PARTS)) or classifier.bias is None:
        raise LstmRefused(f"it has parameters {sorted(params)}, not {sorted(_PARTS)}")
    if len({id(p) for p in params.values()}) != len(params):
        raise LstmRefused("a parameter is used twice (tied weights)")
    vocabulary, width = embedding.weight.shape
    hidden = model.hidden_size
    shapes = {"input_weight": (4 * hidden, width), "hidden_weight": (4 * hidden, hidden),
              "bias": (4 * hidden,), "classifier.weight": (classifier.out_features, hidden)}
    for name, shape in shapes.items():
        if tuple(params[name].shape) != shape:
            raise LstmRefused(f"parameter {name!r} has shape {tuple(params[name].shape)}, "
                              f"not {shape}")
    if len(example_shape) != 1 or example_shape[0] < 1:
        raise LstmRefused(f"its examples have shape {example_shape}, not (length,) with "
                          "length >= 1")
    return LstmPlan(vocabulary, width, hidden, classifier.out_features, example_shape[0])


@dataclass
class LstmPrepared:
    """What a step needs from its examples only."""

    tokens: Tensor  # (M, L, B) word ids, time-major within each client
    slots: Tensor  # (M, L, B) flat segment slot of each position: example * L + rank of its word


def lstm_prepare(plan: LstmPlan, xb: Tensor) -> LstmPrepared:
    """Word ids of a batch ``xb`` (M, B, L) and each position's segment slot: positions
    of one example holding the same word share a slot."""
    m, b, length = xb.shape
    tokens = xb.long()
    ordered, order = tokens.sort(dim=2)
    ranks = torch.zeros_like(ordered)
    torch.cumsum(ordered[..., 1:] != ordered[..., :-1], dim=2, out=ranks[..., 1:])
    slots = torch.empty_like(ranks).scatter_(2, order, ranks)
    slots += (torch.arange(m * b, device=xb.device) * length).view(m, b, 1)
    return LstmPrepared(tokens.transpose(1, 2).contiguous(), slots.transpose(1, 2).contiguous())


def lstm_clipped_sum(plan: LstmPlan, params: dict[str, Tensor], grads: dict[str, Tensor],
                     prepared: LstmPrepared, yb: Tensor, clip: float, epsilon: float,
                     ws: Buffers) -> None:
    """Sums over each client's examples of the clipped per-example gradients, written
    into ``grads`` (the trained parameters, (M, *shape) each); ``params`` holds all
    parameters (M, *shape); ``yb`` is (M, B); flat example index m*B + b."""
    emb, w_in, w_hid, bias = (params[k] for k in _PARTS[:4])
    w_out, b_out = params["classifier.weight"], params["classifier.bias"]
    tokens = prepared.tokens
    m, length, b = tokens.shape
    n = m * b
    e, h, c = plan.width, plan.hidden, plan.classes
    g4 = 4 * h
    like = w_in
    clients = torch.arange(m, device=like.device).view(m, 1, 1)

    # ------------------------------------------------------------ forward
    words = emb[clients, tokens]  # (M, L, B, E)
    acts = ws.get("lstm-acts", (m, length, b, g4), like)  # gates, then activations
    torch.baddbmm(bias.unsqueeze(1), words.view(m, length * b, e), w_in.transpose(1, 2),
                  out=acts.view(m, length * b, g4))
    states = ws.get("lstm-h", (m, length + 1, b, h), like)  # h_0 .. h_L
    cells = ws.get("lstm-c", (m, length + 1, b, h), like)  # c_0 .. c_L
    tanh_cells = ws.get("lstm-tanh-c", (m, length, b, h), like)  # tanh(c_1) .. tanh(c_L)
    states[:, 0].zero_()
    cells[:, 0].zero_()
    w_hid_t = w_hid.transpose(1, 2)
    recurrent_in = ws.get("lstm-recurrent", (m, b, g4), like)
    for t in range(length):
        a = acts[:, t]
        if t:
            # Into a contiguous buffer, then added: an in-place batched product on the
            # strided time slice would run client by client.
            torch.bmm(states[:, t], w_hid_t, out=recurrent_in)
            a.add_(recurrent_in)
        a[..., :2 * h].sigmoid_()
        a[..., 2 * h:3 * h].tanh_()
        a[..., 3 * h:].sigmoid_()
        gate_i, gate_f, gate_g, gate_o = a.split(h, dim=2)
        cell = cells[:, t + 1]
        torch.mul(gate_f, cells[:, t], out=cell)
        cell.addcmul_(gate_i, gate_g)
        torch.tanh(cell, out=tanh_cells[:, t])
        torch.mul(gate_o, tanh_cells[:, t], out=states[:, t + 1])
    last = states[:, length]  # (M, B, H)
    logits = torch.baddbmm(b_out.unsqueeze(1), last, w_out.transpose(1, 2))  # (M, B, C)

    # ------------------------------------------------------------ backward through time
    grad_logits = torch.softmax(logits, dim=2)
    grad_logits.view(n, c)[torch.arange(n, device=like.device), yb.reshape(n)] -= 1.0
    # Factors of the gate gradients, for all time steps at once.
    gate_i, gate_f, gate_g, gate_o = acts.split(h, dim=3)
    from_h_o = tanh_cells * gate_o * (1.0 - gate_o)  # d z_o / d h
    from_h_c = gate_o * (1.0 - tanh_cells.square())  # d c / d h
    from_c = ws.get("lstm-from-c", (m, length, b, 3, h), like)  # d z_{i,f,g} / d c
    torch.mul(gate_g, gate_i * (1.0 - gate_i), out=from_c[:, :, :, 0])
    torch.mul(cells[:, :length], gate_f * (1.0 - gate_f), out=from_c[:, :, :, 1])
    torch.mul(gate_i, 1.0 - gate_g.square(), out=from_c[:, :, :, 2])
    grad_z = ws.get("lstm-dz", (m, length, b, g4), like)
    grad_h = torch.bmm(grad_logits, w_out)  # (M, B, H)
    grad_c = torch.zeros_like(grad_h)
    for t in range(length - 1, -1, -1):
        dz = grad_z[:, t]
        torch.mul(grad_h, from_h_o[:, t], out=dz[..., 3 * h:])
        grad_c.addcmul_(grad_h, from_h_c[:, t])
        torch.mul(grad_c.unsqueeze(2), from_c[:, t], out=dz[..., :3 * h].view(m, b, 3, h))
        if t:
            grad_c.mul_(gate_f[:, t])
            torch.bmm(dz, w_hid, out=grad_h)

    # ------------------------------------------------------------ per-example norms
    sq_norm = torch.zeros(n, dtype=like.dtype, device=like.device)
    train = {k: k in grads for k in _PARTS}
    recurrent = train["input_weight"] or train["hidden_weight"] or train["bias"]
    per_example = None
    if recurrent:
        # [x_t, h_{t-1}, 1] per example and time step, and dZ per example: (N, L, .)
        inputs = ws.get("lstm-inputs", (m, b, length, e + h + 1), like)
        inputs[..., :e].copy_(words.permute(0, 2, 1, 3))
        inputs[..., e:e + h].copy_(states[:, :length].permute(0, 2, 1, 3))
        inputs[..., e + h].fill_(1.0)
        dz_ex = ws.get("lstm-dz-examples", (m, b, length, g4), like)
        dz_ex.copy_(grad_z.permute(0, 2, 1, 3))
        per_example = ws.get("lstm-per-example", (n, g4, e + h + 1), like)
        torch.bmm(dz_ex.view(n, length, g4).transpose(1, 2), inputs.view(n, length, -1),
                  out=per_example)
        if train["input_weight"] and train["hidden_weight"] and train["bias"]:
            sq_norm += per_example.view(n, -1).square().sum(1)
        else:
            for name, part in (("input_weight", slice(0, e)), ("hidden_weight",
                               slice(e, e + h)), ("bias", slice(e + h, e + h + 1))):
                if train[name]:
                    sq_norm += per_example[..., part].square().sum((1, 2))
    if train["classifier.weight"] or train["classifier.bias"]:
        g_sq = grad_logits.view(n, c).square().sum(1)
        a_sq = last.reshape(n, h).square().sum(1) if train["classifier.weight"] else 0.0
        sq_norm += g_sq * (a_sq + (1.0 if train["classifier.bias"] else 0.0))
    grad_words = None
    if train["embedding.weight"]:
        grad_words = torch.bmm(grad_z.view(m, length * b, g4), w_in)  # (M, L*B, E)
        rows = ws.get("lstm-rows", (n * length, e), like)
        rows.zero_()
        rows.index_add_(0, prepared.slots.view(-1), grad_words.view(-1, e))
        sq_norm += rows.view(n, length * e).square().sum(1)

    # ------------------------------------------------------------ clipped sums
    factor = (clip / (sq_norm.sqrt_() + epsilon)).clamp_(max=1.0)
    weights = factor.view(m, b)
    if per_example is not None:
        summed = torch.bmm(weights.unsqueeze(1), per_example.view(m, b, -1)).view(m, g4, -1)
        for name, part in (("input_weight", slice(0, e)), ("hidden_weight", slice(e, e + h))):
            if train[name]:
                grads[name].copy_(summed[..., part])
        if train["bias"]:
            grads["bias"].copy_(summed[..., e + h])
    if train["classifier.weight"] or train["classifier.bias"]:
        weighted = grad_logits * weights.unsqueeze(2)  # (M, B, C)
        if train["classifier.weight"]:
            torch.bmm(weighted.transpose(1, 2), last, out=grads["classifier.weight"])
        if train["classifier.bias"]:
            torch.sum(weighted, 1, out=grads["classifier.bias"])
    if grad_words is not None:
        out = grads["embedding.weight"]
        out.zero_()
        values = grad_words.view(m, length, b, e) * weights.view(m, 1, b, 1)
        out.index_put_((clients, tokens), values, accumulate=True)
