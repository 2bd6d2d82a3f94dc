"""The frontier chapter's notebook: its parameters, and a run at the smoke tier."""

from __future__ import annotations

from pathlib import Path

from fedlib.render.notebook import declared_parameters

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
