"""The dependency drift check's logic: which pins moved, and the halving that finds the
upgrade breaking a build (the builds themselves are make check-updates's, not CI's)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("check_updates",
                                               ROOT / "requirements" / "check_updates.py")
check_updates = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_updates)


def test_pins_and_upgrades_are_read_from_requirements_text() -> None:
    locked = check_updates.pins("Sphinx_External.TOC==1.0.1 \\\n    --hash=sha256:aa\n"
                                "numpy==2.0.0 \\\n    # via x\nclick==8.1.0\n")
    newest = check_updates.pins("sphinx-external-toc==1.1.0\nnumpy==2.0.0\nnew-dep==1.0\n")
    assert locked == {"sphinx-external-toc": "1.0.1", "numpy": "2.0.0", "click": "8.1.0"}
    assert check_updates.upgrades(locked, newest) == [
        ("click", "8.1.0", "-"), ("new-dep", "-", "1.0"),
        ("sphinx-external-toc", "1.0.1", "1.1.0")]


def _builds(bad: set[str], together: bool = False):
    tried: list[list[str]] = []

    def breaks(subset) -> bool:
        tried.append(list(subset))
        return bad <= set(subset) if together else bool(bad & set(subset))
    return breaks, tried


def test_halving_finds_the_one_upgrade_that_breaks_the_build() -> None:
    names = [f"p{i}" for i in range(13)]
    for bad in names:
        breaks, tried = _builds({bad})
        assert check_updates.culprit(names, breaks) == [bad]
        assert len(tried) <= 2 * 4  # at most two builds a halving, four halvings


def test_halving_stops_at_two_halves_that_break_only_together() -> None:
    names = ["a", "b", "c", "d"]
    breaks, _ = _builds({"b", "c"}, together=True)
    assert check_updates.culprit(names, breaks) == names
    breaks, _ = _builds({"a", "b"}, together=True)
    assert check_updates.culprit(names, breaks) == ["a", "b"]
