"""Run tiers shared by every notebook."""

from __future__ import annotations

SCALES = ("smoke", "quick", "paper")
"""smoke: seconds, every code path; quick: minutes on 2 cores, the published
book; paper: the paper's own scale (hours on CPU)."""


def check_scale(scale: str) -> str:
    """Return ``scale`` if it names a tier, else raise a ValueError listing the tiers."""
    if scale not in SCALES:
        raise ValueError(
            f"scale={scale!r} is not a run tier; use one of {', '.join(SCALES)} "
            "(smoke: seconds, quick: minutes on a laptop, paper: the paper's own scale)"
        )
    return scale


def check_device(device: str) -> str:
    """Return ``device`` if torch can use it here, else raise a ValueError saying what to use."""
    import torch

    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError) as error:
        raise ValueError(f"device={device!r} is not a torch device; use 'cpu' or 'cuda'") from error
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} asked for CUDA but torch sees no GPU; use 'cpu'")
    if parsed.type not in {"cpu", "cuda"}:
        raise ValueError(f"device={device!r} is not supported; use 'cpu' or 'cuda'")
    return device


def check_seed(seed: int) -> int:
    """Return ``seed`` if it is a non-negative integer, else raise a ValueError."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed={seed!r} must be a non-negative integer")
    return seed


def check_workers(workers: int) -> int:
    """Return ``workers`` (local sweep processes, 0 = all cores) if valid, else raise."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise ValueError(f"workers={workers!r} must be an integer >= 0 (0 = all cores)")
    return workers
