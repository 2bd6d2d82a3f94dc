"""Checkpoints inside one long run, so that a run longer than a working session is computed
in pieces: an interrupted run starts again from its last checkpoint, not from round 0.

A runner saves its whole state (parameters, random generators' states, the history so
far) every :data:`CHECKPOINT_SECONDS` of wall time, and removes the file when the run
finishes. The file is named by the digest of the run keys it computes, so a checkpoint
is only ever resumed by the same configs with the same code (the run keys hash both);
a file whose tag, layout or content does not read back is reported, removed and the run
starts over. Saving never changes a result: a resumed run gives, to the last bit, the
tables an uninterrupted run gives (tested for PFA's runs).
"""

from __future__ import annotations

import hashlib
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from fedlib import paths

CHECKPOINT_SECONDS = 600.0
"""Wall time between two checkpoints of a run: at most this much work is lost when a run
is stopped, at the cost of one save of its state (megabytes) per interval."""
LAYOUT = "fedlib-checkpoint/1"
"""Layout tag written into every checkpoint; a file of another layout is not resumed."""


def checkpoint_path(experiment: str, run_keys: Sequence[str]) -> Path:
    """Where the checkpoint of the group computing ``run_keys`` lives: in the run cache,
    under ``checkpoints/<experiment>/``, named by the digest of the sorted keys."""
    digest = hashlib.sha256("\n".join(sorted(run_keys)).encode()).hexdigest()[:20]
    return paths.results_dir() / "checkpoints" / experiment / f"{digest}.pt"


class Checkpointer:
    """Saves and resumes the state of one run (a dict of tensors, numbers, strings and
    lists or dicts of them).

    Parameters
    ----------
    path
        The checkpoint file (:func:`checkpoint_path`).
    tag
        What the state belongs to (e.g. the run keys joined); a file with another tag is
        not resumed.
    every_seconds
        Wall time between saves (:data:`CHECKPOINT_SECONDS`; 0 saves whenever asked).
    """

    def __init__(self, path: str | Path, tag: str,
                 every_seconds: float = CHECKPOINT_SECONDS) -> None:
        if not every_seconds >= 0:
            raise ValueError(f"every_seconds must be >= 0, got {every_seconds!r}")
        self.path = Path(path)
        self.tag = tag
        self.every_seconds = float(every_seconds)
        self._last = time.monotonic()

    def load(self) -> dict[str, Any] | None:
        """The saved state, or None when there is none or it cannot be resumed (a
        damaged file, another layout or tag: reported, removed)."""
        if not self.path.exists():
            return None
        try:
            saved = torch.load(self.path, map_location="cpu", weights_only=True)
            problem = ("it is not a checkpoint" if not isinstance(saved, dict)
                       else f"its layout is {saved.get('layout')!r}, not {LAYOUT!r}"
                       if saved.get("layout") != LAYOUT
                       else "it belongs to other runs" if saved.get("tag") != self.tag
                       else "")
        except Exception as error:  # noqa: BLE001 - any unreadable file is treated alike
            problem = f"it cannot be read ({type(error).__name__}: {error})"
        if problem:
            warnings.warn(f"checkpoint {paths.shown(self.path)} is not resumed: {problem}; "
                          "it is removed and the run starts from the beginning",
                          RuntimeWarning, stacklevel=2)
            self.path.unlink(missing_ok=True)
            return None
        self._last = time.monotonic()
        return saved["state"]

    def due(self) -> bool:
        """Whether :data:`every_seconds` have passed since the last save (or load)."""
        return time.monotonic() - self._last >= self.every_seconds

    def save(self, state: dict[str, Any]) -> None:
        """Write ``state`` atomically (a reader never sees half a file)."""
        with paths.atomic_path(self.path) as tmp:
            torch.save({"layout": LAYOUT, "tag": self.tag, "state": state}, tmp)
        self._last = time.monotonic()

    def finish(self) -> None:
        """The run is done: remove its checkpoint."""
        self.path.unlink(missing_ok=True)
