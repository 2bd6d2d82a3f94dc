"""How the DP-Ditto chapter names its panels (kept apart from the runs, so that
renaming a panel does not invalidate cached runs)."""

from __future__ import annotations

from functools import lru_cache

PANEL_NAMES = {"mnist-dnn": "MNIST, DNN", "mnist-mlr": "MNIST, MLR",
               "fmnist-cnn": "Fashion-MNIST, CNN", "cifar10-cnn": "CIFAR-10, CNN"}


def panel_label(panel: str) -> str:
    """The name of a panel in figures; CIFAR-10 says when it is the JPEG proxy."""
    if panel == "cifar10-cnn":
        return f"{_cifar10_name()}, CNN"
    try:
        return PANEL_NAMES[panel]
    except KeyError:
        raise ValueError(f"unknown panel {panel!r}; valid: {', '.join(PANEL_NAMES)}") from None


@lru_cache(maxsize=1)
def _cifar10_name() -> str:
    """"CIFAR-10", or its proxy's name when only the JPEG re-encoding is available."""
    from fedlib.data.cifar10 import load_cifar10  # the paper tier's data only

    return load_cifar10("test").name
