"""Local DP-SGD for many federated clients at once (the client update of PFA, Liu et al. 2022).

Each of M clients runs tau steps of DP-SGD from its starting parameters on its
own data. At every step a client takes the B examples its row of ``batches``
names, computes the per-example gradients of the cross-entropy loss, clips each
to L2 norm C over *all* parameters jointly (flat clipping, the Opacus rule
``g * min(1, C / (||g|| + 1e-6))``), sums them, adds Gaussian noise
N(0, (nm_m C)^2) per coordinate with its own noise multiplier nm_m, divides by B
and takes an SGD step with learning rate lr. :func:`local_dpsgd` returns the
model deltas x_start - x_end of all clients, stacked.

All clients are simulated as one batch; there is no Python loop over clients
(example index m*B + b, client-major). Parameters live in one flat (M, P)
buffer, so the update is one fused operation. Each client draws its noise from
a generator of its own (seeded from the caller's), so that on the CPU, where
torch's normal sampler runs on one core, large noise vectors are drawn on as
many threads as torch uses, with the same result as on one. Two
ways to get the clipped per-example gradient sums:

``"layers"`` (models that are a flat :class:`torch.nn.Sequential` of
    :class:`~torch.nn.Linear`, :class:`~torch.nn.Conv2d` and parameter-free
    per-example modules such as ReLU, max-pooling and Flatten, e.g. the models
    of :mod:`fedlib.nn.models`). It runs only where it provably computes what
    the model's own forward does: every leaf module of exactly one of those
    types (not a subclass, which may override ``forward``), every container a
    Sequential whose ``forward`` is nn.Sequential's, no module object or
    parameter used twice, no hooks and no buffers. The forward pass runs every
    layer of all M clients as one batched matrix product: linear layers
    directly, convolutions on channels-last input patches (im2col) against
    each client's filters, which the engine stores as (kh, kw, C, O) so that no
    per-step copy is needed. Feature maps stay channels last, where max-pooling
    is several times faster than in torch's default layout. The backward pass
    is written out layer by layer (autograd only for unusual parameter-free
    modules) into buffers reused from step to step, and gives the gradient of
    the loss with respect to every layer's output; the parameter gradients then
    come from closed forms:

    * linear layers never materialise per-example gradients: the gradient of
      example i is the outer product g_i a_i^T, so its squared norm is
      ||g_i||^2 ||a_i||^2 (+ ||g_i||^2 for the bias), and the clipped sum is one
      batched product (w * G)^T A per client (logistic regression is this
      alone);
    * convolutions get their per-example filter gradients as one batched
      product of input patches and output gradients per example, and the
      clipped sum as a batched weighted sum; the input gradient goes back
      through the adjoint of im2col, in dense blocks when the stride divides the
      kernel. A convolution with many filters over few output positions
      (T^2 (K + O) < K O, see :func:`_conv_ghost_norm`) takes its norms from the
      Gram matrices of its patches and output gradients instead (ghost norm)
      and its clipped sum from one weighted product per client.

    The IMDb model, :class:`~fedlib.nn.models.ImdbLSTM` (exactly that class), runs
    on this path too, written out in :mod:`fedlib.nn.dpsgd_lstm`: the embedding's
    per-example norms as segment sums over each example's words, its clipped sum
    an index-add into the table (nothing of the vocabulary's size per example),
    the input projection hoisted out of the time loop and the recurrent weights'
    per-example gradients as time-summed products.

``"func"`` (any module) ``torch.func``: ``vmap`` over clients of ``vmap`` over
    examples of ``grad`` of the functional model, then clipping and a weighted
    sum. This is the general (and slower) path; ``"auto"`` picks ``"layers"``
    whenever the model allows it, and ``method="layers"`` on a model it does
    not allow raises an error that says why.

Parameters with ``requires_grad=False`` are treated as Opacus treats them: they
keep their starting values (delta 0), count nowhere in the clipping norm and
get no noise. Arguments are checked before any step: batch indices must lie in
[0, n) (an index n of client m would otherwise be example 0 of client m+1) and
labels in [0, number of outputs of the model). Modules whose training-mode
output mixes or randomises examples (BatchNorm, dropout) are refused on both
paths, and so is, on the ``"func"`` path, a model whose logits for an example
change with the other examples of its batch. Torch's recurrent layers run on the
``"func"`` path where ``vmap`` takes them example by example (given an initial
state computed from their input); where it does not, the error says what to do.

On the CPU, when a core is left over beyond torch's intra-op threads, the work
of a step that depends on the data only (gathering the batch, the first
convolution's patches, the noise) runs on a helper thread one step ahead. With
no spare core the helper is left out: its own OpenMP team would compete with
the main one, and once it exists every parallel operation of the process
waits longer at its barriers, which slows the engine and any later per-client
loop of the same process (``make bench`` times the engine with and without the
helper, each in a process of its own). The noise comes from a private
generator seeded from the caller's, so results are the same with and
without that thread.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call, grad, vmap
from torch.nn.modules.batchnorm import _BatchNorm
from torch.nn.modules.dropout import _DropoutNd
from torch.nn.modules.instancenorm import _InstanceNorm
from torch.nn.utils import parametrize

from fedlib.nn.dpsgd_lstm import (
    LstmPlan,
    LstmRefused,
    lstm_clipped_sum,
    lstm_plan,
    lstm_prepare,
)
from fedlib.nn.models import ImdbLSTM

CLIP_EPSILON = 1e-6
"""Added to the per-example norm before dividing, as Opacus does: factor = min(1, C/(norm+eps))."""

_PARAMETER_FREE = (
    nn.Identity, nn.Flatten, nn.ReLU, nn.LeakyReLU, nn.ELU, nn.GELU, nn.SiLU, nn.Tanh,
    nn.Sigmoid, nn.Softplus, nn.MaxPool1d, nn.MaxPool2d, nn.AvgPool1d, nn.AvgPool2d,
)
"""Modules the ``"layers"`` path may apply to a batch of examples as they are:
they hold no parameters and treat every example on its own."""

_RECURRENT = (nn.RNNBase, nn.RNNCellBase)
"""Torch's recurrent layers and cells: under ``vmap`` some of their forms fail
(a hidden state they create themselves is not per example)."""


def draw_batches(
    n_clients: int,
    n_examples: int,
    steps: int,
    batch_size: int,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Batch indices for local DP-SGD: uniformly without replacement within each step.

    Parameters
    ----------
    n_clients
        M, the number of clients.
    n_examples
        n, examples held by each client.
    steps
        tau, local steps per client.
    batch_size
        B <= n, examples per step.
    generator
        Source of randomness (the default generator when None).

    Returns
    -------
    Tensor
        int64 tensor (M, tau, B) of indices into each client's examples; the B
        indices of one step are distinct, steps and clients are independent.
    """
    if min(n_clients, steps, batch_size) < 1:
        raise ValueError("n_clients, steps and batch_size must be >= 1, got "
                         f"{n_clients}, {steps}, {batch_size}")
    if batch_size > n_examples:
        raise ValueError(f"batch_size {batch_size} exceeds the {n_examples} examples per client")
    keys = torch.rand((n_clients, steps, n_examples), generator=generator, dtype=torch.float64)
    # The B largest of n i.i.d. uniform keys are a uniform B-subset.
    return keys.topk(batch_size, dim=-1, sorted=False).indices


@dataclass(frozen=True)
class _Layer:
    """One step of the ``"layers"`` plan."""

    kind: str  # "linear", "conv" or "apply"
    module: nn.Module
    weight: str | None = None
    bias: str | None = None
    geometry: _ConvGeometry | None = None


@dataclass(frozen=True, eq=False)
class _ConvGeometry:
    """Shapes of one Conv2d layer on one example, and the order of a patch's entries.

    Patches are read channels last, in the plain order (kh, kw, C), which is also
    how the engine stores the filters, (kh, kw, C, O) per client. The input
    gradient is assembled from patch gradients in the phased order when
    ``phased`` (stride dividing the kernel, no dilation): kernel row i = sh*q + r
    and a patch is (kh/sh, kw/sw, sh, sw, C), so that :func:`_col2im` adds
    (kh/sh)*(kw/sw) dense blocks instead of kh*kw strided ones.
    """

    in_shape: tuple[int, int, int]  # (C, H, W)
    out_shape: tuple[int, int, int]  # (O, Ho, Wo)
    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]
    dilation: tuple[int, int]
    phased: bool = False

    @property
    def n_positions(self) -> int:
        """T = Ho * Wo, the output positions."""
        return self.out_shape[1] * self.out_shape[2]

    @property
    def patch_size(self) -> int:
        """K = kh * kw * C, the length of one input patch."""
        return self.kernel[0] * self.kernel[1] * self.in_shape[0]

    @property
    def patch_strides(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Shape (Ho, Wo, kh, kw, C) and strides (per example first) of the patches of
        one padded channels-last image."""
        (c, h, w), (_, ho, wo), (sh, sw), (ph, pw), (dh, dw) = (
            self.in_shape, self.out_shape, self.stride, self.padding, self.dilation)
        hp, wp = h + 2 * ph, w + 2 * pw
        row, col = wp * c, c
        return ((ho, wo, *self.patch_shape()),
                (hp * row, sh * row, sw * col, dh * row, dw * col, 1))

    @functools.cached_property
    def gather_index(self) -> Tensor | None:
        """Flat positions of all patch entries in a padded image, when a patch row is
        short (< 32 contiguous numbers); else None (a strided copy is faster)."""
        c, kw, dw = self.in_shape[0], self.kernel[1], self.dilation[1]
        if (kw * c if dw == 1 else c) >= 32:
            return None
        shape, strides = self.patch_strides
        size = strides[0]
        return torch.arange(size).as_strided(shape, strides[1:]).reshape(-1)

    def patch_shape(self, phased: bool = False) -> tuple[int, ...]:
        """One patch: (kh, kw, C), or phased (kh/sh, kw/sw, sh, sw, C)."""
        (kh, kw), (sh, sw), c = self.kernel, self.stride, self.in_shape[0]
        return (kh // sh, kw // sw, sh, sw, c) if phased else (kh, kw, c)

    def weight_matrix(self, weight: Tensor, phased: bool = False) -> Tensor:
        """Filters stored as (M, kh, kw, C, O) (see :func:`local_dpsgd`) as (M, K, O),
        patch entries in plain order (a view) or phased order (a copy)."""
        m, o = weight.shape[0], weight.shape[-1]
        if phased:
            (kh, kw), (sh, sw), c = self.kernel, self.stride, self.in_shape[0]
            weight = weight.view(m, kh // sh, sh, kw // sw, sw, c, o).permute(0, 1, 3, 2, 4, 5, 6)
        return weight.reshape(m, self.patch_size, o)


class _Refused(Exception):
    """Why the ``"layers"`` path cannot run a model (the message names the module)."""


_LEAVES = (nn.Linear, nn.Conv2d, *_PARAMETER_FREE)
"""The leaf module types of a ``"layers"`` plan, matched exactly (``type(m) is``)."""

_SEQUENTIAL_CODE = ("forward", "__call__", "_call_impl", "__iter__")
"""What a Sequential subclass must not override to run its children as nn.Sequential does."""

_HOOKS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
_GLOBAL_HOOKS = ("_global_forward_hooks", "_global_forward_pre_hooks",
                 "_global_backward_hooks", "_global_backward_pre_hooks")


def _where(path: str) -> str:
    """A module's place in the model, for messages."""
    return f"module {path!r}" if path else "the model"


def _class_name(module: nn.Module) -> str:
    """``nn.Linear`` for torch's own classes, the qualified name for others."""
    cls = type(module)
    if cls.__module__.startswith("torch.nn.modules."):
        return f"nn.{cls.__qualname__}"
    return cls.__qualname__


def _check_model(model: nn.Module) -> None:
    """Refuse modules that neither method runs correctly, whatever the method.

    Raises
    ------
    ValueError
        For BatchNorm in training mode (its output mixes the examples of a
        batch), instance norm updating running statistics in training mode, and
        dropout in training mode (random per example).
    """
    for path, module in model.named_modules():
        where, name = _where(path), _class_name(module)
        if isinstance(module, _BatchNorm) and module.training:
            raise ValueError(
                f"{where} ({name}) is in training mode: it normalises with statistics of "
                "the whole batch, so no example has a gradient of its own to clip. Use "
                "nn.GroupNorm or nn.LayerNorm, or call model.eval() to normalise with the "
                "running statistics")
        if isinstance(module, _InstanceNorm) and module.training and module.track_running_stats:
            raise ValueError(
                f"{where} ({name}) updates running statistics in training mode, "
                "which per-example gradients (torch.func) cannot do; use "
                "track_running_stats=False or call model.eval()")
        if isinstance(module, _DropoutNd) and module.training and module.p > 0:
            raise ValueError(
                f"{where} ({name}) is in training mode with p={module.p}: it draws random "
                "masks, which the per-example gradients (torch.func) do not support; call "
                "model.eval() (no dropout) or use p=0")


def _sequence(model: nn.Module, prefix: str = "") -> list[tuple[str, nn.Module]]:
    """The leaf modules of nested Sequentials with their name prefixes.

    Raises :class:`_Refused` unless every container is a Sequential that runs
    its children with nn.Sequential's own code and every leaf is exactly one of
    :data:`_LEAVES` (a subclass may compute something else).
    """
    where, cls = _where(prefix[:-1]), type(model)
    if "forward" in vars(model):
        raise _Refused(f"{where} has a forward of its own, set on the instance")
    if isinstance(model, nn.Sequential):
        changed = [name for name in _SEQUENTIAL_CODE
                   if getattr(cls, name) is not getattr(nn.Sequential, name)]
        if changed:
            raise _Refused(f"{where} ({cls.__qualname__}) is a subclass of nn.Sequential "
                           f"with its own {', '.join(changed)}, which the 'layers' method "
                           "would not run")
        out: list[tuple[str, nn.Module]] = []
        for name, child in model.named_children():
            out += _sequence(child, f"{prefix}{name}.")
        return out
    if cls in _LEAVES:
        if any(True for _ in model.children()):
            raise _Refused(f"{where} ({_class_name(model)}) has submodules")
        return [(prefix, model)]
    if parametrize.is_parametrized(model):
        raise _Refused(f"{where} is parametrised (e.g. by torch.nn.utils.parametrizations."
                       "weight_norm): its weight is computed from other parameters")
    base = next((leaf for leaf in _LEAVES if isinstance(model, leaf)), None)
    if base is not None:
        raise _Refused(f"{where} ({cls.__qualname__}) is a subclass of nn.{base.__name__}; "
                       "the 'layers' method knows only the exact class (a subclass may "
                       "change forward)")
    raise _Refused(f"{where} ({_class_name(model)}) is not one of the layers the 'layers' "
                   "method computes (nn.Linear, nn.Conv2d and the parameter-free "
                   f"{', '.join(leaf.__name__ for leaf in _PARAMETER_FREE)}, in nested "
                   "nn.Sequential containers)")


def _layer_leaves(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """The leaves of :func:`_sequence` once the whole model is checked to compute
    nothing the ``"layers"`` path would skip; raises :class:`_Refused` otherwise."""
    seen: dict[int, str] = {}
    for path, module in model.named_modules(remove_duplicate=False):
        if id(module) in seen:
            raise _Refused(f"{_where(path)} is the same module object as "
                           f"{_where(seen[id(module)])} (one module used twice)")
        seen[id(module)] = path
    seen = {}
    for name, param in model.named_parameters(remove_duplicate=False):
        if id(param) in seen:
            raise _Refused(f"parameter {name!r} is the same tensor as {seen[id(param)]!r} "
                           "(tied weights)")
        seen[id(param)] = name
    if any(getattr(nn.modules.module, hooks, None) for hooks in _GLOBAL_HOOKS):
        raise _Refused("module hooks are registered globally (e.g. by "
                       "register_module_forward_hook); the 'layers' method would not run them")
    for path, module in model.named_modules():
        if any(getattr(module, hooks, None) for hooks in _HOOKS):
            raise _Refused(f"{_where(path)} has hooks (as torch.nn.utils.weight_norm and "
                           "spectral_norm install); the 'layers' method would not run them")
    buffer = next(iter(model.named_buffers()), None)
    if buffer is not None:
        raise _Refused(f"the model has buffers ({buffer[0]!r})")
    leaves = _sequence(model)
    for prefix, module in leaves:
        names = {name for name, _ in module.named_parameters()}
        if isinstance(module, (nn.Linear, nn.Conv2d)):
            own = {"weight"} | ({"bias"} if module.bias is not None else set())
            if names != own or not isinstance(module.weight, nn.Parameter):
                raise _Refused(f"{_where(prefix[:-1])} has parameters {sorted(names)}, not "
                               "just its own weight and bias")
        elif names:
            raise _Refused(f"{_where(prefix[:-1])} ({_class_name(module)}) holds parameters "
                           f"{sorted(names)}; the 'layers' method takes it as parameter-free")
    return leaves


def _input_error(model: nn.Module, example_shape: tuple[int, ...], err: Exception
                 ) -> ValueError:
    """The error for examples the model cannot take, naming their shape and, where the
    first registered layer tells, what the model expects."""
    expected = ""
    for path, module in model.named_modules():
        if isinstance(module, nn.Linear):
            takes = f"{module.in_features} features per example (after any flattening)"
        elif isinstance(module, nn.modules.conv._ConvNd):
            takes = f"examples with {module.in_channels} input channels"
        elif isinstance(module, nn.Embedding):
            takes = (f"integer ids in [0, {module.num_embeddings}); x is cast to the "
                     "parameters' dtype, so a model that embeds ids must turn them back into "
                     "integers itself with .long(), as fedlib.nn.models.ImdbLSTM does")
        else:
            continue
        layer = f"its first registered layer {path!r}" if path else "the model"
        expected = f"; {layer} ({_class_name(module)}) takes {takes}"
        break
    return ValueError(
        f"x holds examples of shape {example_shape} (x is (M, n, *example_shape)), which the "
        f"model cannot take{expected}. Give x examples of the shape and kind the model "
        f"expects ({type(err).__name__}: {err})")


def _plan(model: nn.Module, example_shape: tuple[int, ...]) -> tuple[list[_Layer], int]:
    """The ``"layers"`` plan of ``model`` and the number of logits it returns.

    Raises :class:`_Refused` when that path cannot run the model, and ValueError
    when the model cannot take examples of this shape at all.
    """
    leaves = _layer_leaves(model)
    plan: list[_Layer] = []
    h = torch.zeros((2, *example_shape))
    for prefix, module in leaves:
        where = f"{_where(prefix[:-1])} ({_class_name(module)})"
        with torch.no_grad():
            params = {k: torch.zeros(v.shape) for k, v in module.named_parameters()}
            try:
                out = functional_call(module, params, (h,))
            except (RuntimeError, ValueError, IndexError) as err:
                raise _input_error(model, example_shape, err) from err
        if not isinstance(out, Tensor):
            raise _Refused(f"{where} returns a {type(out).__name__}, not a tensor")
        if isinstance(module, nn.Linear):
            if h.dim() != 2:
                raise _Refused(f"{where} gets inputs of shape {tuple(h.shape[1:])} per "
                               "example, not one flat vector")
            plan.append(_Layer("linear", module, f"{prefix}weight",
                               f"{prefix}bias" if module.bias is not None else None))
        elif isinstance(module, nn.Conv2d):
            if h.dim() != 4:
                raise _Refused(f"{where} gets inputs of shape {tuple(h.shape[1:])} per "
                               "example, not (C, H, W)")
            if module.groups != 1:
                raise _Refused(f"{where} has groups={module.groups}; only groups=1 is computed")
            if module.padding_mode != "zeros":
                raise _Refused(f"{where} has padding_mode={module.padding_mode!r}; only "
                               "'zeros' is computed")
            if isinstance(module.padding, str) and module.padding != "valid":
                raise _Refused(f"{where} has padding={module.padding!r}; only numbers and "
                               "'valid' are computed")
            padding = (0, 0) if isinstance(module.padding, str) else tuple(module.padding)
            (kh, kw), (sh, sw) = module.kernel_size, module.stride
            phased = (any(layer.kind != "apply" for layer in plan)  # needs an input gradient
                      and tuple(module.dilation) == (1, 1) and (sh, sw) != (1, 1)
                      and kh % sh == 0 and kw % sw == 0)
            geometry = _ConvGeometry(
                tuple(h.shape[1:]), tuple(out.shape[1:]), tuple(module.kernel_size),
                tuple(module.stride), padding, tuple(module.dilation),  # type: ignore[arg-type]
                phased)
            plan.append(_Layer("conv", module, f"{prefix}weight",
                               f"{prefix}bias" if module.bias is not None else None, geometry))
        else:
            if isinstance(module, nn.Flatten) and module.start_dim not in (1, -h.dim() + 1):
                raise _Refused(f"{where} flattens from dimension {module.start_dim}; only "
                               "start_dim=1 (examples kept apart) is computed")
            plan.append(_Layer("apply", module))
        h = out
    if not any(layer.kind != "apply" for layer in plan):
        raise _Refused("the model has no nn.Linear or nn.Conv2d layer")
    computed = {name for layer in plan for name in (layer.weight, layer.bias) if name}
    missing = [name for name, _ in model.named_parameters() if name not in computed]
    if missing:
        raise _Refused(f"parameters {missing} belong to no layer the 'layers' method computes")
    if h.dim() != 2:
        raise _Refused(f"the model returns shape {tuple(h.shape[1:])} per example, not a "
                       "vector of logits")
    return plan, h.shape[1]


def _any_plan(model: nn.Module, example_shape: tuple[int, ...]
              ) -> tuple[list[_Layer] | LstmPlan, int]:
    """The ``"layers"`` plan of ``model`` (a written-out :class:`LstmPlan` for an
    :class:`~fedlib.nn.models.ImdbLSTM`) and the number of logits it returns; raises
    :class:`_Refused` when that path cannot run the model."""
    if isinstance(model, ImdbLSTM):
        try:
            plan = lstm_plan(model, example_shape)
        except LstmRefused as refusal:
            raise _Refused(f"the model ({_class_name(model)}) is not run by the written-out "
                           f"LSTM: {refusal}") from None
        return plan, plan.classes
    return _plan(model, example_shape)


def _layer_plan(model: nn.Module, example_shape: tuple[int, ...]
                ) -> list[_Layer] | LstmPlan | None:
    """The ``"layers"`` plan of ``model``, or None when that path cannot run it."""
    try:
        return _any_plan(model, example_shape)[0]
    except _Refused:
        return None


class _Workspace:
    """Large per-step tensors, allocated once per call and reused at every step.

    Freshly allocated large tensors cost page faults every step (the allocator
    hands them back to the system when freed); reusing them avoids that, and
    keeps the helper thread from growing its own heap.
    """

    def __init__(self) -> None:
        self._buffers: dict[object, Tensor] = {}

    def get(self, key: object, shape: tuple[int, ...], like: Tensor, zero: bool = False,
            channels_last: bool = False, dtype: torch.dtype | None = None) -> Tensor:
        """The buffer ``key`` of this shape (device and, unless given, dtype of ``like``),
        optionally stored channels last; a new one is zero-filled when ``zero``."""
        dtype = like.dtype if dtype is None else dtype
        buf = self._buffers.get(key)
        if buf is None or buf.shape != shape or buf.dtype != dtype:
            fmt = torch.channels_last if channels_last else torch.contiguous_format
            buf = torch.empty(shape, dtype=dtype, device=like.device, memory_format=fmt)
            if zero:
                buf.zero_()
            self._buffers[key] = buf
        return buf


def _im2col(h: Tensor, geo: _ConvGeometry, ws: _Workspace, key: object) -> Tensor:
    """Patches of a batch of images, channels last: (n, C, H, W) -> (n, T, K).

    Plain patch order. ``h`` is best stored channels last (as the engine keeps
    its feature maps): a patch row is then a run of kw*C contiguous numbers,
    which a strided copy moves fast; short runs (e.g. a one-channel input
    image) are gathered with ``index_select`` instead, about twice as fast.
    The result lives in the workspace under ``key``.
    """
    n = h.shape[0]
    (c, height, width), (ph, pw) = geo.in_shape, geo.padding
    hw = h.permute(0, 2, 3, 1)  # (n, H, W, C)
    if ph or pw:  # the border of the padded buffer stays zero
        padded = ws.get(("pad", key), (n, height + 2 * ph, width + 2 * pw, c), h, zero=True)
        padded[:, ph:ph + height, pw:pw + width].copy_(hw)
        hw = padded
    else:
        hw = hw.contiguous()
    out = ws.get(("cols", key), (n, geo.n_positions, geo.patch_size), h)
    if geo.gather_index is not None:
        torch.index_select(hw.view(n, -1), 1, geo.gather_index.to(hw.device),
                           out=out.view(n, -1))
    else:
        out.view(n, *geo.patch_strides[0]).copy_(
            hw.as_strided((n, *geo.patch_strides[0]), geo.patch_strides[1]))
    return out


def _col2im(cols: Tensor, geo: _ConvGeometry, out: Tensor | None = None) -> Tensor:
    """Adjoint of :func:`_im2col`: (n, T, K) -> (n, C, H, W) stored channels last.

    The patch entries of ``cols`` are in phased order when ``geo.phased``. ``out``,
    if given, is the (n, H + 2ph, W + 2pw, C) buffer to add into (zeroed here).
    """
    n = cols.shape[0]
    (c, h, w), (_, ho, wo), (kh, kw), (sh, sw), (ph, pw), (dh, dw) = (
        geo.in_shape, geo.out_shape, geo.kernel, geo.stride, geo.padding, geo.dilation)
    taps = cols.view(n, ho, wo, *geo.patch_shape(geo.phased))
    if out is None:
        out = cols.new_zeros((n, h + 2 * ph, w + 2 * pw, c))
    else:
        out.zero_()
    if geo.phased:
        # Taps (q, r) with the same q cover one dense block of sh*Ho x sw*Wo pixels.
        for qh in range(kh // sh):
            for qw in range(kw // sw):
                block = out[:, sh * qh:sh * (qh + ho), sw * qw:sw * (qw + wo)]
                block.view(n, ho, sh, wo, sw, c).add_(
                    taps[:, :, :, qh, qw].permute(0, 1, 3, 2, 4, 5))
    else:
        for i in range(kh):
            for j in range(kw):
                out[:, i * dh:i * dh + sh * (ho - 1) + 1:sh,
                    j * dw:j * dw + sw * (wo - 1) + 1:sw].add_(taps[:, :, :, i, j])
    return out[:, ph:ph + h, pw:pw + w].permute(0, 3, 1, 2)


def _conv_forward(cols: Tensor, weight: Tensor, bias: Tensor | None, geo: _ConvGeometry,
                  out: Tensor) -> Tensor:
    """Patches (M, B*T, K) times each client's filters (stored (M, kh, kw, C, O))
    -> (M, B*T, O), written into ``out``."""
    w_mat = geo.weight_matrix(weight)
    if bias is None:
        return torch.bmm(cols, w_mat, out=out)
    return torch.baddbmm(bias, cols, w_mat, out=out)


def _conv_input_grad(grad_z: Tensor, weight: Tensor, geo: _ConvGeometry, ws: _Workspace,
                     key: object) -> Tensor:
    """Gradient with respect to a convolution's input, (n, C, H, W) channels last, from
    the gradient (M, B*T, O) with respect to its output."""
    w_mat = geo.weight_matrix(weight, geo.phased)  # patch gradients in _col2im's fast order
    grad_cols = ws.get(("grad-patches", key), (*grad_z.shape[:2], w_mat.shape[1]), grad_z)
    torch.bmm(grad_z, w_mat.transpose(1, 2), out=grad_cols)
    n = grad_z.shape[0] * grad_z.shape[1] // geo.n_positions
    (c, h, w), (ph, pw) = geo.in_shape, geo.padding
    padded = ws.get(("grad-input", key), (n, h + 2 * ph, w + 2 * pw, c), grad_z)
    return _col2im(grad_cols.view(n, geo.n_positions, -1), geo, padded)


def _apply_forward(module: nn.Module, h: Tensor, ws: _Workspace, key: object,
                   overwrite: bool = False) -> tuple[Tensor, tuple[Tensor, ...]]:
    """A parameter-free module on a batch; returns its output and what its backward
    needs. ReLU and MaxPool2d write into reused buffers (feature maps channels last),
    ReLU into ``h`` itself when ``overwrite``; other modules run under autograd."""
    cl = h.dim() == 4 and h.is_contiguous(memory_format=torch.channels_last)
    if isinstance(module, nn.ReLU):
        out = h if overwrite else ws.get(("out", key), tuple(h.shape), h, channels_last=cl)
        torch.clamp_min(h, 0, out=out)
        return out, (out,)
    if isinstance(module, nn.MaxPool2d) and h.dim() == 4 and not module.return_indices:
        kernel, stride, padding, dilation = (
            _pair(module.kernel_size), _pair(module.stride or module.kernel_size),
            _pair(module.padding), _pair(module.dilation))
        shape = (*h.shape[:2], *_pool_out(h.shape[2:], kernel, stride, padding, dilation,
                                          module.ceil_mode))
        out = ws.get(("out", key), shape, h, channels_last=cl)
        idx = ws.get(("indices", key), shape, h, channels_last=cl, dtype=torch.int64)
        torch.ops.aten.max_pool2d_with_indices.out(
            h, kernel, stride, padding, dilation, module.ceil_mode, out=out, indices=idx)
        return out, (h, idx)
    if isinstance(module, nn.Flatten):
        return module(h), (h,)
    with torch.enable_grad():
        leaf = h.detach().requires_grad_(True)
        # A module with inplace=True may not overwrite a leaf that requires grad.
        given = leaf.clone() if getattr(module, "inplace", False) else leaf
        if cl and h.is_cuda:
            # torch's CUDA average pooling gives wrong input gradients for channels-last
            # maps (autograd's gradcheck fails on them, torch 2.11): on a GPU, modules
            # run under autograd see the standard layout.
            given = given.contiguous()
        out = module(given)
    return out.detach(), (leaf, out)


def _apply_backward(module: nn.Module, saved: tuple[Tensor, ...], grad: Tensor,
                    ws: _Workspace, key: object) -> Tensor:
    """Gradient with respect to the input of a module run by :func:`_apply_forward`."""
    if isinstance(module, nn.ReLU):
        (out,) = saved
        grad_in = ws.get(("grad", key), tuple(out.shape), out,
                         channels_last=out.dim() == 4 and out.is_contiguous(
                             memory_format=torch.channels_last))
        return torch.ops.aten.threshold_backward.grad_input(grad, out, 0, grad_input=grad_in)
    if isinstance(module, nn.MaxPool2d) and len(saved) == 2 and saved[1].dtype == torch.int64:
        h, idx = saved
        grad_in = ws.get(("grad", key), tuple(h.shape), h, channels_last=h.dim() == 4 and
                         h.is_contiguous(memory_format=torch.channels_last))
        return torch.ops.aten.max_pool2d_with_indices_backward.grad_input(
            grad, h, _pair(module.kernel_size), _pair(module.stride or module.kernel_size),
            _pair(module.padding), _pair(module.dilation), module.ceil_mode, idx,
            grad_input=grad_in)
    if isinstance(module, nn.Flatten):
        (h,) = saved
        return grad.reshape(h.shape)
    leaf, out = saved
    if out.is_cuda:  # the layout of the module's own output (see _apply_forward)
        grad = grad.contiguous(memory_format=torch.channels_last if out.dim() == 4 and
                               out.is_contiguous(memory_format=torch.channels_last)
                               else torch.contiguous_format)
    (grad_in,) = torch.autograd.grad(out, leaf, grad)
    return grad_in


def _pair(value: int | tuple[int, ...]) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else tuple(value)  # type: ignore[return-value]


def _pool_out(size: tuple[int, ...], kernel: tuple[int, int], stride: tuple[int, int],
              padding: tuple[int, int], dilation: tuple[int, int], ceil_mode: bool
              ) -> tuple[int, int]:
    """Output height and width of a 2-d pooling, as torch computes them."""
    out = []
    for i in range(2):
        span = size[i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1
        o = (-(-span // stride[i]) if ceil_mode else span // stride[i]) + 1
        if ceil_mode and (o - 1) * stride[i] >= size[i] + padding[i]:
            o -= 1
        out.append(o)
    return out[0], out[1]


@dataclass
class _Prepared:
    """What the first parameterised layer needs, which depends on the data only."""

    h: Tensor  # its input (n, ...)
    patches: Tensor | None  # convolution: the input's patches (n, T, K)
    sq_norms: Tensor | None  # linear: the squared norms of the input rows (n,)


def _layers_prepare(plan: list[_Layer], xb: Tensor, ws: _Workspace, key: object
                    ) -> _Prepared:
    """Run the parameter-free modules before the first parameterised layer on
    ``xb`` (M, B, *example) and compute what that layer needs from its input."""
    h = xb.reshape(-1, *xb.shape[2:])
    for layer in plan:
        if layer.kind == "conv":
            return _Prepared(h, _im2col(h, layer.geometry, ws, key), None)  # type: ignore[arg-type]
        if layer.kind == "linear":
            return _Prepared(h, None, h.square().sum(1))
        h = layer.module(h)
    raise AssertionError("a plan has a parameterised layer")


_Tape = list[tuple[int, _Layer, tuple[Tensor, ...]]]
"""What the forward pass keeps for the backward: (plan index, layer, saved tensors)."""

_Records = list[tuple[_Layer, Tensor, Tensor]]
"""Per parameterised layer, in plan order: (layer, its input or input patches, the
gradient with respect to its output)."""


def _layers_forward(plan: list[_Layer], params: Mapping[str, Tensor], prepared: _Prepared,
                    n_clients: int, n_batch: int, ws: _Workspace) -> tuple[Tensor, _Tape]:
    """The logits (n, classes) of all examples, and what the backward pass needs.

    Parameterised layers record (input or input patches, output); parameter-free
    ones what their backward needs.
    """
    n = n_clients * n_batch
    h = prepared.h
    first = _first_parameterised(plan)
    tape: _Tape = []
    for i in range(first, len(plan)):
        layer = plan[i]
        if layer.kind == "apply":
            # A layer output is needed by nothing but the next module, which may
            # then work in place (the backward needs no pre-activation values).
            h, saved = _apply_forward(layer.module, h, ws, i,
                                      overwrite=plan[i - 1].kind != "apply")
            tape.append((i, layer, saved))
            continue
        weight = params[layer.weight]  # type: ignore[index]
        bias = params[layer.bias].unsqueeze(1) if layer.bias is not None else None
        if layer.kind == "linear":
            a = h.reshape(n_clients, n_batch, -1)
            z = (torch.bmm(a, weight.transpose(1, 2)) if bias is None
                 else torch.baddbmm(bias, a, weight.transpose(1, 2)))  # (M, B, O)
            h = z.view(n, -1)
        else:
            geo = layer.geometry
            assert geo is not None
            a = prepared.patches if i == first else _im2col(h, geo, ws, i)  # (n, T, K)
            z = ws.get(("z", i), (n_clients, n_batch * geo.n_positions, geo.out_shape[0]), a)
            _conv_forward(a.view(n_clients, -1, geo.patch_size), weight, bias, geo, z)
            _, ho, wo = geo.out_shape
            h = z.view(n, ho, wo, -1).permute(0, 3, 1, 2)  # (n, O, Ho, Wo) channels last
        tape.append((i, layer, (a, z)))
    return h, tape


def _loss_grad(logits: Tensor, yb: Tensor) -> Tensor:
    """d(sum of per-example cross-entropies)/d logits = softmax - onehot, per example."""
    n = logits.shape[0]
    grad = torch.softmax(logits, dim=1)
    grad[torch.arange(n), yb.reshape(n)] -= 1.0
    return grad


def _layers_backward(plan: list[_Layer], params: Mapping[str, Tensor], tape: _Tape,
                     grad: Tensor, ws: _Workspace) -> _Records:
    """The backward pass, by hand: the gradient with respect to every layer's output,
    from ``grad``, the gradient with respect to the logits."""
    first = _first_parameterised(plan)
    n = grad.shape[0]
    records: _Records = []
    for i, layer, saved in reversed(tape):
        if layer.kind == "apply":
            grad = _apply_backward(layer.module, saved, grad, ws, i)
            continue
        a, z = saved
        weight = params[layer.weight]  # type: ignore[index]
        if layer.kind == "linear":
            grad_z = grad.reshape(z.shape)  # (M, B, O)
            if i != first:
                grad = torch.bmm(grad_z, weight).view(n, -1)
        else:
            geo = layer.geometry
            assert geo is not None
            grad_z = grad.permute(0, 2, 3, 1).reshape(z.shape)  # (M, B*T, O)
            if i != first:
                grad = _conv_input_grad(grad_z, weight, geo, ws, i)
        records.append((layer, a if layer.kind == "conv" else a.reshape(n, -1), grad_z))
    records.reverse()
    return records


def _trained(layer: _Layer, grads: Mapping[str, Tensor]) -> tuple[bool, bool]:
    """Whether the weight and the bias of ``layer`` are trained (frozen ones are not)."""
    return layer.weight in grads, layer.bias is not None and layer.bias in grads


def _per_example_sq_norms(records: _Records, prepared: _Prepared, grads: Mapping[str, Tensor],
                          like: Tensor, ws: _Workspace
                          ) -> tuple[Tensor, list[tuple[Tensor | None, Tensor | None] | None]]:
    """Squared norms (n,) of the per-example gradients over all trained parameters, layer
    by layer, without materialising linear gradients; and the per-example convolution
    gradients (filters (n, K, O), bias (n, O)) that the clipped sums reuse."""
    n = like.shape[0]
    sq_norm = torch.zeros(n, dtype=like.dtype, device=like.device)
    per_example: list[tuple[Tensor | None, Tensor | None] | None] = []
    for j, (layer, a, g) in enumerate(records):
        train_weight, train_bias = _trained(layer, grads)
        if layer.kind == "linear":
            if train_weight or train_bias:
                g_sq = g.reshape(n, -1).square().sum(1)
                if not train_weight:
                    sq_norm += g_sq
                else:
                    a_sq = prepared.sq_norms if j == 0 else a.square().sum(1)
                    sq_norm += g_sq * (a_sq + 1.0) if train_bias else g_sq * a_sq
            per_example.append(None)
        else:
            geo = layer.geometry
            assert geo is not None
            g_ex = g.reshape(n, geo.n_positions, -1)  # (n, T, O)
            pw = None
            if train_weight and _conv_ghost_norm(geo.n_positions, geo.patch_size,
                                                 g_ex.shape[2]):
                # ||sum_t a_t g_t^T||^2 = sum_{t,s} (a_t . a_s)(g_t . g_s); the clipped sum
                # then weights the output gradients (no per-example gradient is formed).
                gram = torch.bmm(a, a.transpose(1, 2))
                gram.mul_(torch.bmm(g_ex, g_ex.transpose(1, 2)))
                sq_norm += gram.view(n, -1).sum(1)
            elif train_weight:
                pw = ws.get(("per-example", j), (n, geo.patch_size, g_ex.shape[2]), g_ex)
                torch.bmm(a.transpose(1, 2), g_ex, out=pw)  # (n, K, O), the stored layout
                sq_norm += torch.linalg.vector_norm(pw.view(n, -1), dim=1).square_()
            pb = None
            if train_bias:
                pb = g_ex.sum(1)
                sq_norm += pb.square().sum(1)
            per_example.append((pw, pb))
    return sq_norm, per_example


def _clipped_sums(records: _Records,
                  per_example: list[tuple[Tensor | None, Tensor | None] | None],
                  factor: Tensor, grads: Mapping[str, Tensor], n_clients: int, n_batch: int,
                  ws: _Workspace) -> None:
    """Sums over each client's examples of the gradients weighted by their clipping
    factors (n,), written into ``grads`` (trained parameters only)."""
    w_mb = factor.view(n_clients, n_batch)
    for (layer, a, g), pe in zip(records, per_example, strict=True):
        train_weight, train_bias = _trained(layer, grads)
        if layer.kind == "linear":
            if not (train_weight or train_bias):
                continue
            gw = g.view(n_clients, n_batch, -1) * w_mb.unsqueeze(2)  # (M, B, O)
            if train_weight:
                # Into a contiguous buffer, then copied: a batched product writing
                # straight into the strided (M, O, I) view of the flat gradient is
                # several times slower.
                out = grads[layer.weight]  # type: ignore[index]
                gw_sum = ws.get(("clipped-sum", layer.weight), tuple(out.shape), gw)
                torch.bmm(gw.transpose(1, 2), a.reshape(n_clients, n_batch, -1), out=gw_sum)
                out.copy_(gw_sum)
            if train_bias:
                torch.sum(gw, 1, out=grads[layer.bias])  # type: ignore[index]
        else:
            pw, pb = pe  # type: ignore[misc]
            w_row = w_mb.unsqueeze(1)  # (M, 1, B)
            if pw is None and train_weight:  # ghost norm: the weighted sum from the factors
                geo = layer.geometry
                assert geo is not None
                n_pos, o = geo.n_positions, g.shape[-1]
                gw = (g.view(n_clients, n_batch, n_pos, o) * w_mb.view(n_clients, n_batch, 1, 1))
                pw_sum = ws.get(("clipped-sum", layer.weight), (n_clients, geo.patch_size, o), g)
                torch.bmm(a.view(n_clients, n_batch * n_pos, -1).transpose(1, 2),
                          gw.view(n_clients, n_batch * n_pos, o), out=pw_sum)
                grads[layer.weight].view(n_clients, geo.patch_size, o).copy_(  # type: ignore[index]
                    pw_sum)
            elif pw is not None:
                pw_sum = ws.get(("clipped-sum", layer.weight), (n_clients, 1, pw[0].numel()),
                                pw)
                torch.bmm(w_row, pw.view(n_clients, n_batch, -1), out=pw_sum)
                grads[layer.weight].view(n_clients, 1, -1).copy_(pw_sum)  # type: ignore[index]
            if pb is not None:
                torch.bmm(w_row, pb.view(n_clients, n_batch, -1),
                          out=grads[layer.bias].unsqueeze(1))  # type: ignore[index]


def _conv_ghost_norm(positions: int, patch: int, outputs: int) -> bool:
    """Whether a convolution's per-example gradient norms come from Gram matrices of its
    T input patches and output gradients (ghost norm, T^2 (K + O) multiply-adds per
    example, then a weighted product for the clipped sum) rather than from its formed
    (K, O) per-example gradients (T K O, then a weighted sum): the ghost norm only
    where its Gram matrices cost less than writing the formed gradient, T^2 (K + O)
    < K O; that is, for many filters over few positions. Linear layers are the case
    T = 1, always on the ghost norm."""
    return positions * positions * (patch + outputs) < patch * outputs


def _first_parameterised(plan: list[_Layer]) -> int:
    """Index of the first Linear or Conv2d layer of a plan."""
    return next(i for i, layer in enumerate(plan) if layer.kind != "apply")


def _layers_clipped_sum(
    plan: list[_Layer],
    params: Mapping[str, Tensor],
    grads: Mapping[str, Tensor],
    prepared: _Prepared,
    yb: Tensor,
    clip: float,
    ws: _Workspace,
) -> None:
    """Sum of clipped per-example gradients of all M clients, written into ``grads``.

    ``params`` holds every parameter (the forward and backward passes need frozen
    ones too), ``grads`` the trained ones only. ``prepared`` comes from
    :func:`_layers_prepare` and ``yb`` is (M, B); the flat example index is
    m*B + b. Feature maps are kept channels last (convolutions are matrix
    products over channels-last patches; max-pooling is fastest so). The backward
    pass is written out layer by layer, into reused buffers.
    """
    n_clients, n_batch = yb.shape
    logits, tape = _layers_forward(plan, params, prepared, n_clients, n_batch, ws)
    records = _layers_backward(plan, params, tape, _loss_grad(logits, yb), ws)
    sq_norm, per_example = _per_example_sq_norms(records, prepared, grads, logits, ws)
    factor = (clip / (sq_norm.sqrt_() + CLIP_EPSILON)).clamp_(max=1.0)
    _clipped_sums(records, per_example, factor, grads, n_clients, n_batch, ws)


def _func_clipped_sum(
    model: nn.Module,
    params: Mapping[str, Tensor],
    frozen: Mapping[str, Tensor],
    grads: Mapping[str, Tensor],
    xb: Tensor,
    yb: Tensor,
    clip: float,
) -> None:
    """``torch.func`` version of :func:`_layers_clipped_sum`; ``xb`` is (M, B, ...).

    Gradients are taken with respect to ``params`` (the trained parameters) only;
    ``frozen`` holds the others, (M, *shape) like ``params``.
    """

    def loss(p: dict[str, Tensor], q: dict[str, Tensor], xi: Tensor, yi: Tensor) -> Tensor:
        out = functional_call(model, {**p, **q}, (xi.unsqueeze(0),))
        return F.cross_entropy(out, yi.unsqueeze(0))

    with _entries_kept(model):
        try:
            per_example = vmap(vmap(grad(loss), in_dims=(None, None, 0, 0)))(
                dict(params), dict(frozen), xb, yb)
        except RuntimeError as err:
            recurrent = [(path, module) for path, module in model.named_modules()
                         if isinstance(module, _RECURRENT)]
            if not recurrent:
                raise
            path, module = recurrent[0]
            if xb.is_cuda:
                raise ValueError(
                    f"{_where(path)} ({_class_name(module)}): torch's recurrent layers do "
                    "not run under the per-example vmap of torch.func on a CUDA device "
                    "(with cuDNN or without), whatever their initial state. Run this model "
                    "on the CPU, or write the recurrence with plain tensor operations, as "
                    f"fedlib.nn.models.ImdbLSTM does ({err})") from err
            raise ValueError(
                f"{_where(path)} ({_class_name(module)}) does not run under the per-example "
                "vmap of torch.func as the model calls it: a hidden state that torch's "
                "recurrent layers create themselves is not per example there. Pass them an "
                "initial state computed from their input (e.g. torch.zeros_like of a slice "
                "of it), or write the recurrence with plain tensor operations, as "
                f"fedlib.nn.models.ImdbLSTM does ({err})") from err
    sq_norm = sum(g.flatten(2).square().sum(2) for g in per_example.values())
    factor = (clip / (sq_norm.sqrt() + CLIP_EPSILON)).clamp(max=1.0)  # (M, B)
    for name, g in per_example.items():
        out = grads[name]
        out.view(out.shape[0], 1, -1).copy_(torch.bmm(factor.unsqueeze(1), g.flatten(2)))


def spare_core() -> bool:
    """Whether this process may use more CPU cores than torch's intra-op threads."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return cores > torch.get_num_threads()


_HELPER: dict[int, ThreadPoolExecutor] = {}


def _helper_thread() -> ThreadPoolExecutor:
    """The one helper thread that prepares steps ahead, per process (a forked child
    does not inherit the thread). It lives as long as the process: a new thread
    per call would also get a new malloc arena each time."""
    pid = os.getpid()
    if pid not in _HELPER:
        _HELPER.clear()
        _HELPER[pid] = ThreadPoolExecutor(1, thread_name_prefix="local-dpsgd-prefetch")
    return _HELPER[pid]


def _stack_start(
    model: nn.Module,
    start: Mapping[str, Tensor] | None,
    n_clients: int,
    filters: set[str],
) -> tuple[list[str], list[torch.Size], Tensor, dict[str, Tensor]]:
    """Names, stored shapes and the flat (M, P) copy of the starting values of the
    trained parameters, and the frozen ones (``requires_grad=False``), each as its own
    (M, *stored shape) copy in the flat copy's dtype.

    Convolution filters named in ``filters`` are stored as (kh, kw, C, O).
    """
    named = dict(model.named_parameters())
    if start is None:
        start = {k: v.detach() for k, v in named.items()}
    if set(start) != set(named):
        raise ValueError(f"start has parameters {sorted(start)}, the model {sorted(named)}")
    names = []
    shapes = []
    columns = []
    frozen = {}
    for name, param in named.items():
        shape, value = param.shape, start[name].detach()
        if value.shape == shape:
            value = value.unsqueeze(0).expand(n_clients, *shape)
        elif value.shape != (n_clients, *shape):
            raise ValueError(f"start[{name!r}] has shape {tuple(value.shape)}; expected "
                             f"{tuple(shape)} (shared) or {(n_clients, *shape)} (per client)")
        if name in filters:
            value = value.permute(0, 3, 4, 2, 1)
        if not param.requires_grad:
            frozen[name] = value
            continue
        names.append(name)
        shapes.append(value.shape[1:])
        columns.append(value.reshape(n_clients, -1))
    if not columns:
        raise ValueError("every parameter of the model has requires_grad=False, so DP-SGD "
                         "has nothing to train; set requires_grad=True on the parameters it "
                         "should update")
    theta = torch.cat(columns, dim=1).contiguous()
    frozen = {k: v.to(dtype=theta.dtype, device=theta.device).clone(
        memory_format=torch.contiguous_format) for k, v in frozen.items()}
    return names, shapes, theta, frozen


def _views(flat: Tensor, names: list[str], shapes: list[torch.Size]) -> dict[str, Tensor]:
    out, offset = {}, 0
    for name, shape in zip(names, shapes, strict=True):
        size = shape.numel()
        out[name] = flat[:, offset:offset + size].view(flat.shape[0], *shape)
        offset += size
    return out


def _module_layout(tensors: dict[str, Tensor], filters: set[str]) -> dict[str, Tensor]:
    """Stored (M, kh, kw, C, O) filters back to torch's (M, O, C, kh, kw)."""
    return {k: v.permute(0, 4, 3, 1, 2).contiguous() if k in filters else v
            for k, v in tensors.items()}


def _is_integer(dtype: torch.dtype) -> bool:
    return not (dtype.is_floating_point or dtype.is_complex or dtype == torch.bool)


def _check_data(x: Tensor, y: Tensor, batches: Tensor) -> tuple[int, int, int]:
    """M, tau and B, once ``x``, ``y`` and ``batches`` are checked to fit together."""
    if not isinstance(batches, Tensor) or batches.dim() != 3:
        shape = tuple(batches.shape) if isinstance(batches, Tensor) else type(batches).__name__
        raise ValueError(f"batches must be an integer tensor (M, tau, B) of example indices "
                         f"(see draw_batches), got shape {shape}")
    if not _is_integer(batches.dtype):
        raise ValueError(f"batches must hold integer example indices (int64, as draw_batches "
                         f"returns), got dtype {batches.dtype}")
    n_clients, steps, batch_size = batches.shape
    if n_clients < 1:
        raise ValueError(f"batches has shape {tuple(batches.shape)}, no clients: give at "
                         "least one client (M >= 1)")
    if batch_size < 1:
        raise ValueError(f"batches has shape {tuple(batches.shape)}, a batch size B of 0: "
                         "every step needs at least one example (B >= 1)")
    if not isinstance(x, Tensor) or not isinstance(y, Tensor):
        raise ValueError("x and y must be tensors")
    if x.dim() < 2 or x.shape[0] != n_clients or y.dim() != 2 or y.shape != x.shape[:2]:
        raise ValueError(f"x {tuple(x.shape)} and y {tuple(y.shape)} must be (M, n, ...) and "
                         f"(M, n) with M = {n_clients} clients as in batches")
    if x.dtype.is_complex:
        raise ValueError(f"x must hold real numbers (floating, or integers such as word ids, "
                         f"cast to the parameters' dtype), got dtype {x.dtype}")
    if not _is_integer(y.dtype):
        raise ValueError(f"y must hold integer class labels (int64), got dtype {y.dtype}; "
                         "convert whole-number labels with y.long()")
    return n_clients, steps, batch_size


def _number(value: object) -> float:
    """``value`` as a float; NaN when it is not a single number (no check passes NaN)."""
    if isinstance(value, (str, bytes, bool)):
        return math.nan
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, RuntimeError):
        return math.nan


def _check_step(lr: float, clip: float) -> None:
    """``lr`` finite and > 0, ``clip`` > 0 (infinite: no clipping, checked with the noise)."""
    if not (math.isfinite(_number(lr)) and _number(lr) > 0):
        raise ValueError(f"lr must be a finite number > 0 (the SGD step size), got {lr!r}")
    if not _number(clip) > 0:
        raise ValueError(f"clip must be a number > 0 (the L2 bound C on each example's "
                         f"gradient), got {clip!r}")


def _check_range(values: Tensor, stop: int, message: str) -> None:
    """Every entry of the integer tensor ``values`` in [0, stop), with one min/max
    reduction; else a ValueError of ``message`` (formatted with low, high, stop and
    last = stop - 1)."""
    if values.numel() == 0:
        return
    low, high = (int(v) for v in torch.aminmax(values))
    if low < 0 or high >= stop:
        raise ValueError(message.format(low=low, high=high, stop=stop, last=stop - 1))


def _check_words(x: Tensor, vocabulary: int) -> None:
    """Every entry of ``x`` a finite number whose integer part (``.long()``, as the model
    takes it) is a word id in [0, vocabulary)."""
    if x.numel() == 0:
        return
    low, high = (float(v) for v in torch.aminmax(x))
    if not (math.isfinite(low) and math.isfinite(high)) or int(low) < 0 \
            or int(high) >= vocabulary:
        raise ValueError(f"x holds word ids from {low:g} to {high:g}, but the model's "
                         f"embedding has {vocabulary} words: every id must be in "
                         f"[0, {vocabulary})")


def _noise_multipliers(values: Tensor | float, n_clients: int, clip: float,
                       dtype: torch.dtype, device: torch.device) -> Tensor:
    """The (M,) noise multipliers, checked (finite, >= 0, and a finite clip with noise)."""
    nm = torch.as_tensor(values, dtype=dtype, device=device)
    if nm.dim() > 1 or nm.numel() not in (1, n_clients):
        raise ValueError(f"noise_multipliers must be one number or one per client "
                         f"({n_clients},), got shape {tuple(nm.shape)}")
    nm = nm.expand(n_clients)
    if bool((nm < 0).any()) or not bool(torch.isfinite(nm).all()):
        raise ValueError(f"noise_multipliers must be finite and >= 0 (0: no noise), got "
                         f"{nm.tolist()}")
    if not math.isfinite(_number(clip)) and bool((nm > 0).any()):
        raise ValueError(f"clip must be finite when a noise multiplier is > 0 (the noise "
                         f"std is nm * clip), got clip={clip!r}; give a finite clip, or zero "
                         "noise multipliers for noise-free steps without clipping")
    return nm


@contextlib.contextmanager
def _entries_kept(model: nn.Module) -> Iterator[None]:
    """Put every module's parameter and buffer entries back on exit.

    ``functional_call`` swaps tensors into a model and back; a module that occurs
    twice in the model is swapped twice and restored once, and would be left
    holding the tensors it was called with (from inside ``vmap``, tensors that
    fail any later use).
    """
    saved = [(module, dict(module._parameters), dict(module._buffers))
             for module in model.modules()]
    try:
        yield
    finally:
        for module, parameters, buffers in saved:
            module._parameters.update(parameters)
            module._buffers.update(buffers)


def _output_width(model: nn.Module, values: dict[str, Tensor], x: Tensor) -> int:
    """The number of logits the model returns, from examples of ``x`` with the
    parameter ``values``; also checks that the logits of an example do not depend
    on the other examples of its batch (buffers are copied: the model is not
    modified)."""
    rows = x.reshape(-1, *x.shape[2:])[:2]
    batches = [rows[:1], rows[1:], rows] if len(rows) > 1 else [rows]
    buffers = {k: v.clone() for k, v in model.named_buffers()}
    try:
        with torch.no_grad(), _entries_kept(model):
            outs = [functional_call(model, (values, buffers), (batch,)) for batch in batches]
    except (RuntimeError, ValueError, IndexError, TypeError) as err:
        raise _input_error(model, tuple(x.shape[2:]), err) from err
    for batch, out in zip(batches, outs, strict=True):
        if not isinstance(out, Tensor) or out.dim() != 2 or out.shape[0] != len(batch):
            shape = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
            raise ValueError(f"the model must return logits (batch, classes); for a batch of "
                             f"{len(batch)} example(s) it returned {shape}")
    if len(outs) == 3:
        alone, both = torch.cat(outs[:2]), outs[2]
        # Far above rounding (batched and single products may round differently),
        # far below what mixing examples does.
        rtol = max(1e-4, 50 * torch.finfo(alone.dtype).eps)
        scale = float(alone.abs().max())
        if not torch.allclose(both, alone, rtol=rtol, atol=1e-2 * rtol * (1.0 + scale)):
            raise ValueError(
                "the model's logits for an example depend on the other examples of its "
                "batch (a batch of two gives other logits than each example alone), so "
                "there is no per-example gradient to clip (e.g. an nn.LSTM with "
                "batch_first=False given batch-first examples, or a module mixing the "
                "batch). Make the model treat every example on its own")
    return outs[0].shape[1]


def _client_generators(generator: torch.Generator | Sequence[torch.Generator] | None,
                       nm: Tensor, device: torch.device) -> list[torch.Generator | None]:
    """Each client's private noise generator (None for the clients of a block without
    noise, which draws nothing from its caller's generator).

    The clients form as many equal consecutive blocks as there are generators. A
    block with noise takes one seed from its caller's generator, and from that seed
    one seed per client: a client's noise is its own stream, so that the clients'
    noise can be drawn on several threads at once with the same result.
    """
    n_clients = len(nm)
    sources = list(generator) if isinstance(generator, Sequence) else [generator]
    if not sources:
        raise ValueError("generator is an empty sequence; give one generator per block "
                         "of clients, or a single generator (or None) for all of them")
    if n_clients % len(sources):
        raise ValueError(f"{len(sources)} generators cannot split {n_clients} clients into "
                         "equal blocks: give a number of generators that divides the number "
                         "of clients")
    size = n_clients // len(sources)
    clients: list[torch.Generator | None] = []
    for g, source in enumerate(sources):
        if source is not None and not isinstance(source, torch.Generator):
            raise ValueError(f"generator {g} is a {type(source).__name__}, not a "
                             "torch.Generator")
        if not bool((nm[g * size:(g + 1) * size] > 0).any()):
            clients.extend([None] * size)
            continue
        block = torch.Generator().manual_seed(int(torch.randint(
            2**62, (), generator=source,
            device=source.device if source is not None else "cpu")))
        for seed in torch.randint(2**62, (size,), generator=block).tolist():
            private = torch.Generator(device=device)
            private.manual_seed(seed)
            clients.append(private)
    return clients


_NOISE_POOL: dict[int, tuple[int, ThreadPoolExecutor]] = {}
"""Per process: the noise threads and how many there are."""
_THREADED_NOISE = 1 << 22
"""Noise values per step from which they are drawn on several threads: below, handing
the work to other threads costs about what it saves (measured on 2 cores)."""


def _noise_pool(workers: int) -> ThreadPoolExecutor:
    """Threads that draw the clients' noise beside the calling one (per process, as
    for :func:`_helper_thread`). Torch's normal sampler runs on one core, so a
    noise vector as large as a model per client per step would otherwise leave
    the other cores idle for that long."""
    pid = os.getpid()
    size, pool = _NOISE_POOL.get(pid, (0, None))
    if pool is None or size < workers:
        _NOISE_POOL.clear()
        pool = ThreadPoolExecutor(workers, thread_name_prefix="local-dpsgd-noise")
        _NOISE_POOL[pid] = (workers, pool)
    return pool


def _draw_noise(noise: Tensor, generators: list[torch.Generator | None]) -> None:
    """Fill row m of ``noise`` (M, P) with standard normal draws from client m's
    generator, or zeros where it has none; on the CPU, rows are drawn on as many
    threads as torch uses for its own operations."""
    drawn = [m for m, gen in enumerate(generators) if gen is not None]
    for m, gen in enumerate(generators):
        if gen is None:
            noise[m].zero_()

    def draw(rows: list[int]) -> None:
        for m in rows:
            torch.randn(noise.shape[1:], generator=generators[m], out=noise[m])

    parts = 1
    if noise.device.type == "cpu" and len(drawn) * noise.shape[1] >= _THREADED_NOISE:
        parts = min(torch.get_num_threads(), len(drawn))
    if parts <= 1:
        draw(drawn)
        return
    futures = [_noise_pool(parts - 1).submit(draw, drawn[k::parts]) for k in range(1, parts)]
    draw(drawn[0::parts])
    for future in futures:
        future.result()


def local_dpsgd(
    model: nn.Module,
    start: Mapping[str, Tensor] | None,
    x: Tensor,
    y: Tensor,
    batches: Tensor,
    lr: float,
    clip: float,
    noise_multipliers: Tensor | float,
    generator: torch.Generator | Sequence[torch.Generator] | None = None,
    *,
    return_params: bool = False,
    method: str = "auto",
    prefetch: bool | None = None,
) -> dict[str, Tensor] | tuple[dict[str, Tensor], dict[str, Tensor]]:
    """Run tau local DP-SGD steps on each of M clients, all clients in one batch.

    Parameters
    ----------
    model
        The architecture; its own parameters are only used when ``start`` is None
        and are never modified. Parameters with ``requires_grad=False`` stay at
        their starting values, outside the clipping norm and the noise (as in
        Opacus).
    start
        Starting parameters by name: each either of the parameter's shape (all
        clients start there) or stacked (M, *shape) (one start per client).
        None: the model's current parameters.
    x
        Client data (M, n, *example_shape), cast to the parameters' dtype.
    y
        Integer class labels (M, n), each in [0, number of logits of the model).
    batches
        Integer (M, tau, B), B >= 1, M >= 1: the examples of each step, indices in
        [0, n) (see :func:`draw_batches`). tau = 0 returns zero deltas.
    lr
        Learning rate, finite and > 0.
    clip
        C > 0, the L2 bound on each example's gradient over all parameters jointly;
        infinite (no clipping) only without noise.
    noise_multipliers
        nm_m >= 0 per client (M,) or one for all; 0 means no noise.
    generator
        Source of the Gaussian noise (the default generator when None). A sequence of
        G generators splits the M clients into G equal consecutive blocks, and block g
        draws its noise from generator g alone: its noise is then what a call with
        that block on its own would draw, whatever the other blocks hold (several
        independent runs batched into one call).
    return_params
        Also return the final parameters.
    method
        ``"layers"``, ``"func"`` or ``"auto"`` (``"layers"`` when the model allows).
    prefetch
        On the CPU, prepare the next step's batch (gather, input patches) and noise
        on a helper thread while the current step runs. None: only when a core is
        spare (see :func:`spare_core`). The result does not depend on it.

    Returns
    -------
    dict[str, Tensor] or tuple of two
        The deltas x_start - x_end by parameter name, each (M, *shape); with
        ``return_params`` also the final parameters in the same form.

    Raises
    ------
    ValueError
        For arguments that do not fit together or are out of range, for
        ``method="layers"`` on a model that path does not compute exactly (the
        message says why), and for modules that neither method runs correctly
        (see :func:`_check_model`).
    """
    n_clients, steps, batch_size = _check_data(x, y, batches)
    n_examples = x.shape[1]
    _check_step(lr, clip)
    if method not in ("auto", "layers", "func"):
        raise ValueError(f"method must be 'auto', 'layers' or 'func', got {method!r}")
    _check_model(model)
    batches = batches.to(dtype=torch.long)
    _check_range(batches, n_examples,
                 "batches holds example indices from {low} to {high}, but each client has "
                 "n = {stop} examples (x.shape[1]): every index must be in [0, {stop}) "
                 "(draw_batches(M, n, tau, B) draws such batches); an index outside "
                 "would read another client's example")
    plan, n_classes = None, None
    if method != "func":
        try:
            plan, n_classes = _any_plan(model, tuple(x.shape[2:]))
        except _Refused as refusal:
            if method == "layers":
                raise ValueError(f"method='layers' cannot run this model exactly: {refusal}. "
                                 "Use method='func' (any module), or method='auto', which "
                                 "picks 'func' here") from None
    # The layers path keeps filters as (kh, kw, C, O): its matrix products use them
    # without a copy, and noise and updates do not care about the order.
    layers = plan if isinstance(plan, list) else []
    filters = {layer.weight for layer in layers if layer.kind == "conv"}
    names, shapes, theta, frozen = _stack_start(
        model, start, n_clients, filters)  # type: ignore[arg-type]
    dtype, device = theta.dtype, theta.device
    nm = _noise_multipliers(noise_multipliers, n_clients, clip, dtype, device)
    x = x.to(dtype=dtype, device=device).contiguous()
    y = y.to(device=device, dtype=torch.long)
    batches = batches.to(device=device)

    start_flat = theta.clone()
    params = _views(theta, names, shapes)
    if n_classes is None and n_examples > 0:
        n_classes = _output_width(
            model, {k: v[0] for k, v in {**params, **frozen}.items()}, x)
    if n_classes is not None:
        _check_range(y, n_classes,
                     "y holds labels from {low} to {high}, but the model returns {stop} "
                     "logits: every label must be a class index in [0, {stop}); map the "
                     "labels to 0..{last}, or give the model one output per class")
    if isinstance(plan, LstmPlan):
        _check_words(x, plan.vocabulary)
    all_params = {**params, **frozen}  # the forward pass needs frozen parameters too
    grad_flat = torch.empty_like(theta)
    grads = _views(grad_flat, names, shapes)
    noise_std = (nm * clip).unsqueeze(1)
    noisy = bool((nm > 0).any())
    # Each client's noise comes from a private generator seeded once from the caller's,
    # so that it can be drawn on other threads, and ahead of the step that uses it.
    noise_generators = _client_generators(generator, nm, device)

    ws = _Workspace()
    x_rows = x.view(n_clients * n_examples, math.prod(x.shape[2:]))
    offsets = (torch.arange(n_clients, device=device) * n_examples)[:, None]

    def produce(t: int) -> tuple[object, Tensor, Tensor | None]:
        """Everything of step t that does not depend on the parameters (buffers
        alternate between even and odd steps: one is in use while the next fills)."""
        idx = (batches[:, t] + offsets).view(-1)
        rows = ws.get(("x", t % 2), (idx.numel(), x_rows.shape[1]), x_rows)
        torch.index_select(x_rows, 0, idx, out=rows)
        xb = rows.view(n_clients, batch_size, *x.shape[2:])
        yb = y.reshape(-1)[idx].view(n_clients, batch_size)
        if plan is None:
            inputs: object = xb
        elif isinstance(plan, LstmPlan):
            inputs = lstm_prepare(plan, xb)
        else:
            inputs = _layers_prepare(plan, xb, ws, t % 2)
        noise = None
        if noisy:
            noise = ws.get(("noise", t % 2), tuple(theta.shape), theta)
            _draw_noise(noise, noise_generators)
        return inputs, yb, noise

    if prefetch is None:
        prefetch = spare_core()
    pool = _helper_thread() if prefetch and device.type == "cpu" else None
    pending = pool.submit(produce, 0) if pool is not None and steps > 0 else None
    try:
        for t in range(steps):
            if pending is not None:
                inputs, yb, noise = pending.result()
                pending = pool.submit(produce, t + 1) if t + 1 < steps else None  # type: ignore[union-attr]
            else:
                inputs, yb, noise = produce(t)
            if isinstance(plan, LstmPlan):
                lstm_clipped_sum(plan, all_params, grads, inputs,  # type: ignore[arg-type]
                                 yb, clip, CLIP_EPSILON, ws)
            elif plan is not None:
                _layers_clipped_sum(plan, all_params, grads, inputs,  # type: ignore[arg-type]
                                    yb, clip, ws)
            else:
                _func_clipped_sum(model, params, frozen, grads, inputs,  # type: ignore[arg-type]
                                  yb, clip)
            if noise is not None:
                grad_flat.addcmul_(noise, noise_std)
            theta.add_(grad_flat, alpha=-lr / batch_size)
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(Exception):
                pending.result()

    trained = _views(start_flat.sub_(theta), names, shapes)
    order = [name for name, _ in model.named_parameters()]
    delta = _module_layout({k: trained[k] if k in trained else torch.zeros_like(frozen[k])
                            for k in order}, filters)
    if return_params:
        return delta, _module_layout({k: all_params[k] for k in order}, filters)
    return delta
