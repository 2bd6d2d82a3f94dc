"""The models of Liu et al. (PVLDB 2022, PFA) for 28x28 grey-scale images, as plain torch modules.

Both are flat :class:`torch.nn.Sequential` stacks of standard layers, so the
vectorized DP-SGD engine (:mod:`fedlib.dpsgd`) can run them layer by layer with
closed-form per-example gradients; any other module still works there through
its generic ``torch.func`` path.

* :class:`LogisticRegression`: one linear layer 784 -> 10 that returns plain
  logits (7,850 parameters). The authors' code applies a softmax inside the
  model *and* again inside the cross-entropy loss; the reproduction does not.
* :class:`PfaCNN`: the 2-layer CNN, conv16 8x8 stride 2 (padding 3) - ReLU -
  max-pool 2x2 stride 1 - conv32 4x4 stride 2 - ReLU - max-pool 2x2 stride 1 -
  FC 512 -> 32 - ReLU - FC 32 -> 10 (26,010 parameters). On a 1x28x28 input the
  feature maps are 16x14x14, 16x13x13, 32x5x5 and 32x4x4.
"""

from __future__ import annotations

from torch import nn

IMAGE_SHAPE: tuple[int, int, int] = (1, 28, 28)
"""Input shape (channels, height, width) of both models."""

N_CLASSES = 10
"""Number of classes (logits) of both models."""


class LogisticRegression(nn.Sequential):
    """Multinomial logistic regression on flattened images: ``Flatten - Linear(784, 10)``.

    Parameters
    ----------
    in_features
        Number of input features after flattening (784 for 1x28x28 images).
    n_classes
        Number of classes; the output is the vector of logits (no softmax).
    """

    def __init__(self, in_features: int = 784, n_classes: int = N_CLASSES) -> None:
        super().__init__(nn.Flatten(), nn.Linear(in_features, n_classes))


class PfaCNN(nn.Sequential):
    """The PFA 2-layer CNN for 1x28x28 inputs (26,010 parameters).

    Parameters
    ----------
    n_classes
        Number of classes; the output is the vector of logits (no softmax).
    """

    def __init__(self, n_classes: int = N_CLASSES) -> None:
        super().__init__(
            nn.Conv2d(1, 16, kernel_size=8, stride=2, padding=3),  # 16 x 14 x 14
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=1),  # 16 x 13 x 13
            nn.Conv2d(16, 32, kernel_size=4, stride=2),  # 32 x 5 x 5
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=1),  # 32 x 4 x 4
            nn.Flatten(),
            nn.Linear(32 * 4 * 4, 32),
            nn.ReLU(),
            nn.Linear(32, n_classes),
        )


def n_parameters(model: nn.Module) -> int:
    """Number of scalar parameters of ``model``."""
    return sum(p.numel() for p in model.parameters())
