"""The frontier chapter's notebook: its parameters, and a run at the smoke tier."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedlib.render.notebook import declared_parameters
from fedlib.verdicts.claims import read_claims

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "frontier.py"


def test_the_chapter_declares_the_standard_parameters():
    declared = declared_parameters(NOTEBOOK)
    for name in ("scale", "seed", "device", "workers", "ray_address", "claims_dir"):
        assert name in declared, name
    assert declared["scale"] == "quick" and declared["seed"] == 0


def test_the_book_lists_the_chapter_after_the_papers():
    import yaml

    toc = yaml.safe_load((ROOT / "book" / "_toc.yml").read_text())
    files = [entry["file"] for part in toc["parts"] for entry in part["chapters"]]
    assert files.index("generated/published/frontier") > files.index("generated/published/pfa")
    side = next(entry for part in toc["parts"] for entry in part["chapters"]
                if entry["file"] == "generated/published/frontier")
    assert side["sections"][0]["file"] == "generated/frontier"


@pytest.mark.slow
def test_the_chapter_runs_at_the_smoke_tier(built_book: Path) -> None:
    """The chapter as the smoke build executed it (make rebuild-all SCALE=smoke)."""
    generated = built_book / "generated"
    findings = [c for c in read_claims(generated / "claims") if c.paper == "frontier"]
    assert findings and {c.origin for c in findings} == {"companion"}
    assert {c.scale for c in findings} == {"smoke"}
    outputs = [o for cell in json.loads((generated / "frontier.ipynb").read_text())["cells"]
               for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    for name in ("frontier_accuracy", "frontier_fairness", "frontier_costs"):
        assert (generated / "extra" / "data" / f"{name}.csv").is_file()
