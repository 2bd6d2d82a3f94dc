"""The models of Liu et al. (PVLDB 2022, PFA) for 28x28 grey-scale images, as plain torch modules.

Both are flat :class:`torch.nn.Sequential` stacks of standard layers, so the
vectorized DP-SGD engine (:mod:`fedlib.nn.dpsgd`) can run them layer by layer with
closed-form per-example gradients; any other module still works there through
its generic ``torch.func`` path.

* :class:`LogisticRegression`: one linear layer 784 -> 10 that returns plain
  logits (7,850 parameters). The authors' code applies a softmax inside the
  model *and* again inside the cross-entropy loss; the reproduction does not.
* :class:`PfaCNN`: the 2-layer CNN, conv16 8x8 stride 2 (padding 3) - ReLU -
  max-pool 2x2 stride 1 - conv32 4x4 stride 2 - ReLU - max-pool 2x2 stride 1 -
  FC 512 -> 32 - ReLU - FC 32 -> 10 (26,010 parameters). On a 1x28x28 input the
  feature maps are 16x14x14, 16x13x13, 32x5x5 and 32x4x4.
* :class:`Cifar10CNN`: the "4-layer CNN" for 3x32x32 images. The paper's appendix
  table with its layers did not survive; inferred: the conv32 5x5 - pool - conv64
  5x5 - pool - FC512 - FC10 network of the DP-Ditto paper (two convolutional and
  two dense layers, 878,538 parameters).
* :class:`ImdbLSTM`: the IMDb "LSTM", also inferred: word embedding (32) - one LSTM
  layer (32 units) - FC 2 on the last time step. The LSTM is written out step by
  step with plain tensor operations so that ``torch.func`` can take per-example
  gradients through it (``nn.LSTM``'s fused kernel has no batching rule).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

IMAGE_SHAPE: tuple[int, int, int] = (1, 28, 28)
"""Input shape (channels, height, width) of the MNIST models (LogR and the 2-layer CNN)."""

N_CLASSES = 10
"""Number of classes (logits) of the image models."""


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


class Cifar10CNN(nn.Sequential):
    """The inferred CIFAR-10 4-layer CNN for 3x32x32 inputs (878,538 parameters).

    Feature maps: 32x28x28, 32x14x14, 64x10x10, 64x5x5.
    """

    def __init__(self, n_classes: int = N_CLASSES) -> None:
        super().__init__(
            nn.Conv2d(3, 32, kernel_size=5),  # 32 x 28 x 28
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2),  # 32 x 14 x 14
            nn.Conv2d(32, 64, kernel_size=5),  # 64 x 10 x 10
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2),  # 64 x 5 x 5
            nn.Flatten(),
            nn.Linear(64 * 5 * 5, 512),
            nn.ReLU(),
            nn.Linear(512, n_classes),
        )


class ImdbLSTM(nn.Module):
    """Embedding - LSTM - linear classifier on rows of word ids.

    Parameters
    ----------
    vocabulary_size
        Number of word ids (id 0 is padding and is embedded like any other id).
    embedding_dim, hidden_size
        Widths of the word vectors and of the LSTM state.
    n_classes
        Number of logits (2: negative, positive).

    The input is ``(batch, length)`` word ids, as integers or as floats holding
    integers (the DP-SGD engine casts its inputs to the parameters' dtype). Gates
    follow ``nn.LSTM``: input, forget, cell, output, in that order, in the rows of
    ``input_weight`` (4H x E) and ``hidden_weight`` (4H x H).
    """

    def __init__(self, vocabulary_size: int, embedding_dim: int = 32, hidden_size: int = 32,
                 n_classes: int = 2) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding(vocabulary_size, embedding_dim)
        bound = hidden_size ** -0.5
        self.input_weight = nn.Parameter(torch.empty(4 * hidden_size, embedding_dim))
        self.hidden_weight = nn.Parameter(torch.empty(4 * hidden_size, hidden_size))
        self.bias = nn.Parameter(torch.empty(4 * hidden_size))
        for weight in (self.input_weight, self.hidden_weight, self.bias):
            nn.init.uniform_(weight, -bound, bound)
        self.classifier = nn.Linear(hidden_size, n_classes)

    def forward(self, tokens: Tensor) -> Tensor:
        words = self.embedding(tokens.long())  # (batch, length, E)
        gates_in = words @ self.input_weight.T + self.bias  # all time steps at once
        h = words.new_zeros(words.shape[0], self.hidden_size)
        c = torch.zeros_like(h)
        for t in range(words.shape[1]):
            gates = gates_in[:, t] + h @ self.hidden_weight.T
            i, f, g, o = gates.chunk(4, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
        return self.classifier(h)


def n_parameters(model: nn.Module) -> int:
    """Number of scalar parameters of ``model``."""
    return sum(p.numel() for p in model.parameters())
