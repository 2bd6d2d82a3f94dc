"""The methods of the comparison, by name."""

from __future__ import annotations

from fedlib.frontier.baselines import DPFedAvgFineTune, LocalOnly
from fedlib.frontier.ditto import DPDitto
from fedlib.frontier.interface import Method
from fedlib.frontier.multitask import FederatedMultiTask
from fedlib.frontier.padpfl import PADPFL
from fedlib.frontier.pfa import PFA, PFAPlus
from fedlib.frontier.ppsgd import PPSGD

__all__ = ["METHODS", "method"]

METHODS: tuple[Method, ...] = (
    LocalOnly(), DPFedAvgFineTune(), DPDitto(), PPSGD(), PFA(), PFAPlus(), PADPFL(),
    FederatedMultiTask(),
)
"""One instance of every method, in the chapter's order."""


def method(name: str) -> Method:
    """The method called ``name`` (see :data:`METHODS`)."""
    for candidate in METHODS:
        if candidate.name == name:
            return candidate
    names = ", ".join(repr(m.name) for m in METHODS)
    raise ValueError(f"unknown method {name!r}; choose one of {names}.")
