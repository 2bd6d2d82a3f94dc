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
