"""Where a claim is shown in its chapter: the labels a chapter page defines, and the
anchor a scorecard row links to."""

from __future__ import annotations

import json
from pathlib import Path

from fedlib.verdicts.claims import Claim


def chapter_labels(notebook: Path) -> set[str]:
    """The ``:name:`` labels of an executed chapter notebook (its figure and table anchors)."""
    try:
        cells = json.loads(Path(notebook).read_text()).get("cells", [])
    except (OSError, ValueError):
        return set()
    labels = set()
    for cell in cells:
        if cell.get("cell_type") != "markdown":
            continue
        source = "".join(cell.get("source", []))
        labels |= {line.split(":name:", 1)[1].strip() for line in source.splitlines()
                   if line.strip().startswith(":name:")}
    return labels


def claim_anchor(claim: Claim, labels: set[str]) -> str:
    """The chapter anchor a claim is about: the figure its id names (``fig1a-...`` ->
    ``fig-<paper>-1a``, or the figure that shows it together with others, e.g.
    ``fig-hu2020-34`` for a Figure 3 claim), else the chapter's claims table."""
    figure = claim.claim_id.split("-", 1)[0]
    if figure.startswith("fig"):
        number = figure[3:]
        exact = f"fig-{claim.paper}-{number}"
        if exact in labels:
            return exact
        digits = "".join(ch for ch in number if ch.isdigit())
        shared = sorted(label for label in labels if label.startswith(f"fig-{claim.paper}-")
                        and digits and digits in label.rsplit("-", 1)[-1])
        if shared:
            return shared[0]
    return f"tab-{claim.paper}-claims"
