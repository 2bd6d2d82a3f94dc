"""The machine a run is computed on, and what "the same result" means across machines.

A run recorded on one processor and computed again on the same model of processor (the same
vendor, model, vector extensions and kernels torch dispatches to) gives the same numbers to
rounding. On another processor the float32 kernels add in another order; over hundreds of
DP-SGD steps that rounding grows, and a trajectory ends as far from the published one as a
few thousandths of accuracy. Such a run is compared, column by column, within a tolerance
derived from the run's own seed-to-seed spread: the published runs of the same
configuration at other seeds. A change of the algorithm moves results by more than that
spread; a change of rounding does not.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

VECTOR_EXTENSIONS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl",
                     "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16", "asimd", "sve")
"""The processor flags that choose float kernels (as /proc/cpuinfo spells them): two
processors that differ in one of these may round a float32 reduction differently."""


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (empty where there is none)."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if not line.strip():
                    break
                name, _, value = line.partition(":")
                fields[name.strip()] = value.strip()
    except OSError:
        pass
    return fields


def processor_model() -> str:
    """The processor's model: its name, and on x86 its family, model and stepping (a
    virtual machine often names only the vendor, "AMD EPYC", for several generations)."""
    info = _cpuinfo()
    name = info.get("model name") or platform.processor() or platform.machine()
    numbers = [f"{field} {info[field]}" for field in ("cpu family", "model", "stepping")
               if field in info]
    return f"{name} ({', '.join(numbers)})" if numbers else name


def vector_extensions() -> list[str]:
    """The float-kernel extensions of :data:`VECTOR_EXTENSIONS` this processor has."""
    info = _cpuinfo()
    flags = set((info.get("flags") or info.get("Features") or "").split())
    return [flag for flag in VECTOR_EXTENSIONS if flag in flags]


def machine_description() -> str:
    """The computing machine in one line: OS, architecture, processor model, its vector
    extensions and the kernels torch dispatches to, logical cores, and the GPU when torch
    sees one. Two runs whose descriptions are equal were computed on the same kind of
    machine (:func:`same_machine`)."""
    import torch

    gpu = f", GPU {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""
    extensions = " ".join(vector_extensions()) or "none known"
    kernels = torch.backends.cpu.get_cpu_capability()
    return (f"{platform.system()} {platform.machine()}, {processor_model()}, "
            f"extensions {extensions}, torch kernels {kernels}, "
            f"{os.cpu_count()} logical cores{gpu}")


def same_machine(recorded: str | None) -> bool:
    """Whether a run recorded on ``recorded`` was computed on this kind of machine. A
    description written before processors were told apart by model and extensions never
    matches: the machine it names is not known well enough."""
    return bool(recorded) and recorded == machine_description()


ROUNDING = {"rtol": 1e-4, "atol": 5e-4}
"""Tolerance on the same kind of machine: float32 training may round differently in the
last bits; accuracies over 2,000 or more test examples move in steps of 5e-4 at most."""

SPREAD_FACTOR = 2.0
"""On another machine a value may differ from the published one by this many seed-to-seed
standard deviations of its column (the median over the column's values)."""


@dataclass(frozen=True)
class Comparison:
    """How a run computed again compares with the published one."""

    rule: str
    """Which comparison was made, in words."""
    differences: list[str]
    """One line per column whose values differ by more than the rule allows."""

    @property
    def same(self) -> bool:
        return not self.differences


def _numbers(column: pd.Series) -> np.ndarray | None:
    """The column's values as one array of floats: a float column as it is, a text column
    of comma-separated numbers (PFA's spectra) flattened; None for anything else."""
    if pd.api.types.is_float_dtype(column):
        return column.to_numpy(dtype=float)
    if pd.api.types.is_integer_dtype(column) or pd.api.types.is_bool_dtype(column):
        return None
    try:
        lists = [[float(x) for x in str(v).split(",")] if v != "" else [] for v in column]
    except ValueError:
        return None
    return np.asarray([x for values in lists for x in values], dtype=float)


def _shape(column: pd.Series) -> list[int]:
    """How many numbers each value of a number column holds (1 for a float column)."""
    if pd.api.types.is_float_dtype(column):
        return [1] * len(column)
    return [len(str(v).split(",")) if v != "" else 0 for v in column]


def seed_spread(siblings: Sequence[pd.DataFrame]) -> dict[str, float]:
    """The seed-to-seed spread of each number column of runs that differ only in their
    seed: the median, over the column's values, of their standard deviation across the
    runs (columns whose values do not line up across the runs are left out). Empty with
    fewer than two runs."""
    if len(siblings) < 2:
        return {}
    spread: dict[str, float] = {}
    for column in siblings[0].columns:
        if not all(column in run and len(run) == len(siblings[0]) for run in siblings):
            continue
        arrays = [_numbers(run[column]) for run in siblings]
        if any(a is None for a in arrays) or any(
                _shape(run[column]) != _shape(siblings[0][column]) for run in siblings):
            continue
        stack = np.vstack(arrays)
        finite = np.isfinite(stack).all(axis=0)
        if finite.any():
            spread[column] = float(np.median(np.std(stack[:, finite], axis=0, ddof=1)))
    return spread


def compare_runs(computed: pd.DataFrame, published: pd.DataFrame, *, same_kind: bool,
                 spread: dict[str, float]) -> Comparison:
    """Compare a run computed again with the published one, as a reader would.

    On the same kind of machine (``same_kind``) every number agrees to rounding
    (:data:`ROUNDING`). On another machine a number column agrees within
    :data:`SPREAD_FACTOR` times its seed-to-seed ``spread`` (and never more tightly than
    rounding); a number column with no spread to go by is held to rounding. Other
    columns (integers, text) agree exactly everywhere.
    """
    if same_kind:
        rule = (f"same kind of machine: numbers to rounding (rtol {ROUNDING['rtol']:g}, "
                f"atol {ROUNDING['atol']:g})")
    else:
        rule = (f"another machine: numbers within {SPREAD_FACTOR:g} seed-to-seed standard "
                "deviations of their column (published runs of the same configuration at "
                "other seeds)")
    if list(computed.columns) != list(published.columns):
        return Comparison(rule, [f"columns {list(computed.columns)} against the published "
                                 f"{list(published.columns)}"])
    if len(computed) != len(published):
        return Comparison(rule, [f"{len(computed)} rows against the published "
                                 f"{len(published)}"])
    differences = []
    for column in computed.columns:
        mine, theirs = _numbers(computed[column]), _numbers(published[column])
        if mine is None or theirs is None:
            if computed[column].tolist() != published[column].tolist():
                differences.append(f"{column}: values differ")
            continue
        if _shape(computed[column]) != _shape(published[column]):
            differences.append(f"{column}: the values hold other counts of numbers")
            continue
        atol = ROUNDING["atol"]
        if not same_kind and column in spread:
            atol = max(atol, SPREAD_FACTOR * spread[column])
        equal = (mine == theirs) | (np.isnan(mine) & np.isnan(theirs))  # inf, nan too
        with np.errstate(invalid="ignore"):
            gap = np.nan_to_num(np.abs(mine - theirs), nan=np.inf)
        off = ~equal & ~(gap <= atol + ROUNDING["rtol"] * np.abs(theirs))
        if off.any():
            worst = int(np.argmax(np.where(off, gap, -1.0)))
            differences.append(
                f"{column}: {int(off.sum())} of {off.size} values differ by more than "
                f"{atol:.3g} (largest {gap[worst]:.3g}: "
                f"{mine[worst]:.6g} against the published {theirs[worst]:.6g})")
    return Comparison(rule, differences)
