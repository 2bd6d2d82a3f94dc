"""Five papers' methods side by side: the same federations, the same softmax model, the
same exactly accounted privacy, grids that are fair to every method.

* :mod:`~fedlib.frontier.federations`: HAR subjects, FEMNIST writers, MNIST label shards,
  a thousand MNIST users, every FEMNIST writer with a handful of digits.
* :mod:`~fedlib.frontier.privacy`: the three privacy units, targets, exact calibration.
* :mod:`~fedlib.frontier.interface`: :class:`Method`, :class:`Outcome`, :func:`tune`,
  the fairness rules (:func:`check_fair_grid`).
* :mod:`~fedlib.frontier.methods`: every method by name.
"""

from fedlib.frontier.federations import Federation, femnist_writers, har_subjects, mnist_shards
from fedlib.frontier.interface import (
    Axis,
    Method,
    Outcome,
    Schedule,
    TuneResult,
    UnfairGridError,
    UnitRefusedError,
    check_fair_grid,
    tune,
)
from fedlib.frontier.methods import METHODS, method
from fedlib.frontier.privacy import BudgetExceededError, PrivacyUnit, Target

__all__ = [
    "METHODS",
    "Axis",
    "BudgetExceededError",
    "Federation",
    "Method",
    "Outcome",
    "PrivacyUnit",
    "Schedule",
    "Target",
    "TuneResult",
    "UnfairGridError",
    "UnitRefusedError",
    "check_fair_grid",
    "femnist_writers",
    "har_subjects",
    "method",
    "mnist_shards",
    "tune",
]
