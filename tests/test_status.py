"""The book's status page (:mod:`fedlib.render.status`): executed notebooks that are damaged or
did not finish, and values from notebooks and manifests that hold markup."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import nbformat
import pandas as pd
import pytest
from hostile import HOSTILE, MARKUP, rendered, text_of

from fedlib import sweeps
from fedlib.render.execute import UNFINISHED_TAG
from fedlib.render.status import notebook_runs, published_section, status_markdown
from fedlib.runs import cache as run_cache
from fedlib.runs.published import PublishedStore, export


@pytest.fixture(autouse=True)
def _empty_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A published store of the test's own (the checkout's is never read)."""
    root = tmp_path / "published"
    monkeypatch.setenv("FEDLIB_PUBLISHED_DIR", str(root))
    return root


def _executed(folder: Path, name: str, scale: str = "quick", *, exception: bool = False,
              banner: bool = False) -> Path:
    """An executed notebook as papermill leaves it: its parameters, start and duration;
    ``exception`` as papermill marks a failed run, ``banner`` as fedlib.render.execute marks an
    interrupted one."""
    cells = [nbformat.v4.new_code_cell("x = 1")]
    if banner:
        cells.insert(0, nbformat.v4.new_markdown_cell("**This run did not finish**",
                                                      metadata={"tags": [UNFINISHED_TAG]}))
    book = nbformat.v4.new_notebook(cells=cells)
    book.metadata["papermill"] = {"parameters": {"scale": scale}, "exception": exception,
                                  "start_time": "2026-01-02T03:04:05.678", "duration": 42.4}
    path = folder / f"{name}.ipynb"
    nbformat.write(book, str(path))
    return path


def _cells(row: str) -> list[str]:
    return re.findall(r"<td>(.*?)</td>", row, flags=re.S)


def _section(markdown: str, heading: str) -> str:
    """The lines of ``markdown`` under ``## heading``, up to the next heading."""
    return markdown.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_a_finished_notebook_shows_its_tier_start_and_duration(tmp_path: Path) -> None:
    _executed(tmp_path, "pfa")
    assert notebook_runs(tmp_path) == [{"notebook": "pfa", "tier": "quick",
                                        "started": "2026-01-02 03:04:05",
                                        "duration": "42 s"}]


def test_a_damaged_executed_notebook_is_named_with_how_to_run_it_again(
        tmp_path: Path) -> None:
    _executed(tmp_path, "dpditto")
    (tmp_path / "pfa.ipynb").write_text('{\n "cells": [\n  {\n   "cell_type": "co')
    with pytest.raises(ValueError, match=r"pfa\.ipynb is not a readable notebook .*Rerun the "
                                         r"chapter .*notebooks/pfa\.py"):
        notebook_runs(tmp_path)


@pytest.mark.parametrize("mark", [{"exception": True}, {"banner": True}],
                         ids=["failed", "interrupted"])
def test_a_notebook_marked_unfinished_is_not_shown_as_a_completed_run(
        tmp_path: Path, mark: dict[str, bool]) -> None:
    _executed(tmp_path, "pfa", **mark)
    _executed(tmp_path, "ppsgd")
    runs = {row["notebook"]: row for row in notebook_runs(tmp_path)}
    assert runs["pfa"]["duration"] == "did not finish"
    assert runs["ppsgd"]["duration"] == "42 s"
    page = status_markdown(tmp_path)
    assert "did not finish" in _section(page, "Notebook execution")


def _table_rows(markdown: str) -> list[str]:
    page = rendered(markdown)
    assert page.count("<table") == 1, page
    return re.findall(r"<tr>(.*?)</tr>", page, flags=re.S)


def test_a_notebooks_name_and_tier_with_markup_stay_in_their_cells(tmp_path: Path) -> None:
    pytest.importorskip("myst_parser")
    name = "pfa | cell *em* `code` [x](y)"
    _executed(tmp_path, name, scale=HOSTILE)
    section = _section(status_markdown(tmp_path), "Notebook execution")
    rows = _table_rows(section)
    assert len(rows) == 2  # the header and the one notebook
    cells = _cells(rows[1])
    assert len(cells) == 4, rows[1]
    assert text_of(cells[0]) == name
    assert text_of(cells[1]) == " ".join(HOSTILE.split())
    assert not set(re.findall(r"<(\w+)", rendered(section))) & (MARKUP - {"table", "td"})


def _square(configs: list[dict[str, Any]]) -> list[pd.DataFrame]:
    return [pd.DataFrame({"y": [c["x"] ** 2]}) for c in configs]


def test_values_of_a_manifest_with_markup_stay_in_their_cells(
        tmp_path: Path, _empty_store: Path) -> None:
    pytest.importorskip("myst_parser")
    run_cache.set_tier_label("paper")
    try:
        sweeps.sweep("toy", [{"x": x} for x in range(2)], _square, workers=1, progress=False)
    finally:
        run_cache.set_tier_label("")
    export("toy", "paper")
    path = PublishedStore("toy").manifest_path
    manifest = json.loads(path.read_text())
    for entry in manifest["runs"].values():
        entry.update(machine=HOSTILE, finished="<i>|x\n", commit="|a\n*b*`c`<b>",
                     environment="lock |x| <b>\n*y*")
    path.write_text(json.dumps(manifest))
    section = "\n".join(published_section())
    page = rendered(section)
    # counts, then provenance, then environments: each fits the page
    assert page.count("<table") == 3, page
    rows = re.findall(r"<tr>(.*?)</tr>", page, flags=re.S)
    assert len(rows) == 6
    shown = {}
    for head, body in (rows[:2], rows[2:4], rows[4:]):
        header, cells = re.findall(r"<th[^>]*>(.*?)</th>", head), _cells(body)
        assert len(cells) == len(header) <= 8, body
        shown.update(zip(map(text_of, header), map(text_of, cells), strict=True))
    assert len(shown) == 14 and shown["confirmed"] == "0", shown
    assert shown["environments"] == "lock |x| <b> *y*"
    assert shown["machines"] == " ".join(HOSTILE.split())
    assert shown["finished"].startswith("<i>|x")
    assert shown["commits"] == "|a *b*`c`<b>"
    assert not set(re.findall(r"<(\w+)", rendered(section))) & (MARKUP - {"table", "td",
                                                                          "code"})


def test_the_runs_the_pages_could_not_find_are_listed_from_the_renders_records(
        tmp_path: Path) -> None:
    from fedlib.render.status import gaps_section

    claims = tmp_path / "claims"
    assert gaps_section(claims)[-1] == "No page of this build was rendered from stored runs alone."
    (claims / "published").mkdir(parents=True)
    (claims / "pfa.gaps.jsonl").write_text("")
    (claims / "published" / "pfa.gaps.jsonl").write_text("")
    assert gaps_section(claims)[-1] == ("Every page rendered from stored runs (2 renders) "
                                        "found every run it reads.")
    record = {"experiment": "pfa-heterogeneous", "tier": "paper", "runs": 18, "absent": 7,
              "damaged": 1}
    (claims / "published" / "pfa.gaps.jsonl").write_text(
        json.dumps(record) + "\n" + json.dumps({**record, "experiment": "a|b<i>"}) + "\n")
    lines = gaps_section(claims)
    rows = [line for line in lines if line.startswith("| pfa")]
    assert rows[0].replace("\\", "") == "| pfa | paper | pfa-heterogeneous | 18 | 7 | 1 |"
    assert len(rows) == 2 and rows[1].count(" | ") == 5, rows[1]  # the markup stays in its cell
    assert "## Runs the pages could not find" in status_markdown(tmp_path)
    # A page not drawn at all (a dataset not at hand) is named with its marker's reason.
    (claims / "published" / "pfa.gaps.jsonl").write_text("")
    (claims / "hu2020.missing").write_text("a dataset it reads is not available\n")
    lines = gaps_section(claims)
    assert "Every page" not in "\n".join(lines)
    assert lines[-1].replace("\\", "") == (
        "- hu2020: not shown (a dataset it reads is not available)")
