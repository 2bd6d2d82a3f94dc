"""Five papers' methods side by side: the same federations, the same softmax model, the
same exactly accounted privacy.

* :mod:`~fedlib.frontier.federations`: HAR subjects, FEMNIST writers, MNIST label shards.
* :mod:`~fedlib.frontier.privacy`: the two privacy units, targets, exact calibration.
* :mod:`~fedlib.frontier.interface`: :class:`Method`, :class:`Outcome`, :func:`tune`.
* :mod:`~fedlib.frontier.methods`: every method by name.
"""

from fedlib.frontier.federations import Federation, femnist_writers, har_subjects, mnist_shards
from fedlib.frontier.interface import (
    GRID_SIZE,
    Method,
    Outcome,
    Schedule,
    TuneResult,
    UnitRefusedError,
    tune,
)
from fedlib.frontier.methods import METHODS, method
from fedlib.frontier.privacy import BudgetExceededError, PrivacyUnit, Target

__all__ = [
    "GRID_SIZE",
    "METHODS",
    "BudgetExceededError",
    "Federation",
    "Method",
    "Outcome",
    "PrivacyUnit",
    "Schedule",
    "Target",
    "TuneResult",
    "UnitRefusedError",
    "femnist_writers",
    "har_subjects",
    "method",
    "mnist_shards",
    "tune",
]
