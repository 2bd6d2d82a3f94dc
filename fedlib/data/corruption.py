"""Data-quality corruptions used to make clients heterogeneous."""

from __future__ import annotations

import numpy as np


def salt_and_pepper(
    images: np.ndarray, density: float, rng: np.random.Generator
) -> np.ndarray:
    """Replace a fraction ``density`` of the pixels by black or white, half each.

    Every pixel is hit independently with probability ``density``; a hit pixel
    becomes the minimum (pepper, 0) or the maximum (salt, 1) of the [0, 1] range
    with equal probability. ``density=0`` returns an unchanged copy.

    Parameters
    ----------
    images
        Float array with values in [0, 1], any shape.
    density
        Probability in [0, 1] that a pixel is replaced.
    rng
        Source of randomness.

    Returns
    -------
    numpy.ndarray
        A corrupted copy of ``images`` (same shape and dtype).
    """
    if not (isinstance(density, int | float) and 0.0 <= float(density) <= 1.0):
        raise ValueError(f"density must be a probability in [0, 1], got {density!r}")
    images = np.asarray(images)
    if images.dtype.kind != "f":
        raise ValueError(
            f"salt_and_pepper expects float images in [0, 1], got dtype {images.dtype}; "
            "scale uint8 images by 1/255 first"
        )
    noisy = images.copy()
    if density == 0:
        return noisy
    hit = rng.random(images.shape) < density
    salt = rng.random(images.shape) < 0.5
    noisy[hit & salt] = 1.0
    noisy[hit & ~salt] = 0.0
    return noisy
