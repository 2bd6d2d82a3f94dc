"""Executing a chapter: a run that does not finish never leaves a notebook that looks
complete, a damaged executed notebook is named with what to do, and the pages written
in place of a chapter show their values as written."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest
from hostile import HOSTILE, rendered, shown_as_written

from fedlib.render import execute as ex

TOY = '''# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # A toy chapter

# %% tags=["parameters"]
scale = "smoke"  # tier
seed = 0  # seed
claims_dir = ""  # where the claims go

# %%
x = 1

# %%
y = 2
'''


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    source = tmp_path / "toy.py"
    source.write_text(TOY)
    return source


def fake_papermill(monkeypatch: pytest.MonkeyPatch, *, ran: int,
                   then: BaseException | None = None) -> list[dict[str, Any]]:
    """Papermill as it behaves when a run stops after ``ran`` cells with ``then`` raised
    (None: the run finishes): it saves the notebook after every cell, records a cell's
    error in the notebook's metadata, and on an interrupt marks the cells it did not
    reach as completed. Returns its calls."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    calls: list[dict[str, Any]] = []

    def run(input_path: str, output_path: str, *, parameters: dict[str, Any],
            **_: Any) -> None:
        book = nbformat.read(input_path, as_version=4)
        calls.append({"output": Path(output_path), "parameters": parameters})
        failed = isinstance(then, PapermillExecutionError)
        book.metadata["papermill"] = {"start_time": "2027-01-15T09:00:00",
                                      "exception": True if failed else None,
                                      "parameters": parameters}
        for index, cell in enumerate(book.cells):
            if cell.cell_type == "code" and index < ran:
                cell.outputs = [nbformat.v4.new_output("stream", text="ok\n")]
        nbformat.write(book, output_path)
        if then is not None:
            raise then

    monkeypatch.setattr(papermill, "execute_notebook", run)
    return calls


def test_the_notebook_runs_beside_the_output_and_is_renamed_when_done(
        toy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    output = tmp_path / "out" / "toy.ipynb"
    calls = fake_papermill(monkeypatch, ran=99)
    ex.execute(toy, output, {"seed": np.int64(3), "scale": "smoke"})
    assert calls[0]["output"] != output and calls[0]["output"].parent == output.parent
    assert calls[0]["parameters"] == {"seed": 3, "scale": "smoke"}
    assert type(calls[0]["parameters"]["seed"]) is int  # papermill would write '3'
    book = ex.read_executed(output)
    assert not ex.unfinished(book)
    assert all("hide-input" in c.metadata["tags"] for c in book.cells if c.cell_type == "code")
    assert sorted(p.name for p in output.parent.iterdir()) == ["toy.ipynb"]


def test_an_interrupted_run_leaves_no_notebook_that_looks_complete(
        toy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    output = tmp_path / "toy.ipynb"
    fake_papermill(monkeypatch, ran=2, then=KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        ex.execute(toy, output, {"scale": "smoke"})
    book = ex.read_executed(output)
    assert ex.unfinished(book)
    assert book.metadata["papermill"]["exception"] is True
    assert book.cells[0].source.startswith("**This run did not finish** (`KeyboardInterrupt`)")
    assert book.metadata["papermill"]["start_time"] == "2027-01-15T09:00:00"  # the scorecard
    assert not ex.partial_path(output).exists()


def test_a_failed_run_keeps_papermills_error_marks(
        toy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from papermill.exceptions import PapermillExecutionError

    error = PapermillExecutionError(2, 1, "x = 1", "ValueError", "bad", [])
    fake_papermill(monkeypatch, ran=2, then=error)
    output = tmp_path / "toy.ipynb"
    with pytest.raises(PapermillExecutionError):
        ex.execute(toy, output, {})
    book = ex.read_executed(output)
    assert ex.unfinished(book) and "did not finish" not in book.cells[0].source
    assert not ex.partial_path(output).exists()


def test_a_run_killed_while_running_leaves_the_output_as_it_was(
        toy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kill leaves no time to mark anything: the output keeps the last finished run,
    and the partial notebook stays beside it."""
    output = tmp_path / "toy.ipynb"
    fake_papermill(monkeypatch, ran=99)
    ex.execute(toy, output, {})
    finished = output.read_bytes()

    import papermill

    def killed(input_path: str, output_path: str, **_: Any) -> None:
        Path(output_path).write_text('{"cells": [')  # cut short mid-write
        raise KeyboardInterrupt

    monkeypatch.setattr(papermill, "execute_notebook", killed)
    with pytest.raises(KeyboardInterrupt):
        ex.execute(toy, output, {})
    assert output.read_bytes() == finished
    assert ex.partial_path(output).read_text() == '{"cells": ['


def test_a_save_cut_short_by_a_full_disk_leaves_the_partial_notebook_for_the_scorecard(
        toy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Papermill's save of the partial notebook fails part-way: the notebook cannot be
    read to mark it unfinished, so it stays where the scorecard looks for it, and stderr
    says so."""
    import errno

    import papermill

    from fedlib.verdicts.claims import run_attempts

    runs = tmp_path / "generated"
    output = runs / "tmp" / "toy.out.ipynb"

    def full_disk(input_path: str, output_path: str, **_: Any) -> None:
        Path(output_path).write_text('{\n "cells": [\n  {\n   "cell_type": "mark')
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(papermill, "execute_notebook", full_disk)
    with pytest.raises(OSError, match="No space left on device"):
        ex.execute(toy, output, {"scale": "smoke"})
    partial = ex.partial_path(output)
    assert partial.is_file() and not output.exists()
    assert partial in run_attempts(runs, "toy")
    said = capsys.readouterr().err
    assert f"{partial} is not a readable notebook" in said
    assert "cannot be marked as unfinished, and is left as it is" in said


@pytest.mark.parametrize("damage", ["truncated", "not a notebook", "not text"])
@pytest.mark.parametrize("reader", [ex.fold_code, lambda p: ex.label_tier_page(p, "paper")],
                         ids=["fold_code", "label_tier_page"])
def test_a_damaged_executed_notebook_is_named_with_what_to_do(
        tmp_path: Path, damage: str, reader: Callable[[Path], None]) -> None:
    notebook = tmp_path / "pfa.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]),
                   str(notebook))
    if damage == "truncated":
        notebook.write_text(notebook.read_text()[:30])
    elif damage == "not a notebook":
        notebook.write_text("[]")
    else:
        notebook.write_bytes(b"\xff\xfe garbage")
    before = notebook.read_bytes()
    with pytest.raises(ValueError, match=r"pfa\.ipynb is not a readable notebook.*Rerun "
                                         r"the chapter.*notebooks/pfa\.py"):
        reader(notebook)
    assert notebook.read_bytes() == before


def test_a_tier_page_is_named_by_a_tier(tmp_path: Path) -> None:
    notebook = tmp_path / "toy.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# T")]),
                   str(notebook))
    with pytest.raises(ValueError, match=r"scale='<b>x</b>' cannot name a tier page"):
        ex.label_tier_page(notebook, "<b>x</b>")


def test_the_note_of_a_build_that_does_not_render_a_tier_shows_it_as_written(
        toy: Path, tmp_path: Path) -> None:
    pytest.importorskip("myst_parser")
    assert ex.main([str(toy), str(tmp_path / "toy.ipynb"), "--note", HOSTILE]) == 0
    page = rendered((tmp_path / "toy.md").read_text())
    assert shown_as_written(page, allowed={"h1"}) and page.count("<h1>") == 1


def test_the_page_of_a_tier_whose_runs_are_missing_shows_the_reason_as_written(
        toy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("myst_parser")
    from papermill.exceptions import PapermillExecutionError

    reason = HOSTILE.replace(".", ",")
    error = PapermillExecutionError(2, 1, "x = 1", "MissingRunsError", reason, [])
    fake_papermill(monkeypatch, ran=2, then=error)
    claims = tmp_path / "claims"
    assert ex.execute_published(toy, tmp_path / "toy.ipynb",
                                {"scale": "paper`<b>", "claims_dir": str(claims)}) == 0
    page = rendered((tmp_path / "toy.md").read_text())
    assert shown_as_written(page, reason, allowed={"h1", "code"}) and page.count("<h1>") == 1
    assert "<code>.venv/bin/python -m fedlib.render.execute notebooks/toy.py out.ipynb -p scale " \
           "paper`&lt;b&gt;</code>" in page
    assert not (tmp_path / "toy.ipynb").exists()


@pytest.mark.slow
def test_a_real_run_that_fails_leaves_its_notebook_marked(toy: Path, tmp_path: Path) -> None:
    from papermill.exceptions import PapermillExecutionError

    toy.write_text(TOY.replace("y = 2", "raise RuntimeError('stopped here')"))
    output = tmp_path / "toy.ipynb"
    with pytest.raises(PapermillExecutionError, match="stopped here"):
        ex.execute(toy, output, {"seed": 3})
    assert ex.unfinished(ex.read_executed(output))
    assert not ex.partial_path(output).exists()


def test_a_render_from_stored_runs_refuses_a_claims_dir_that_is_not_a_path(
        toy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = fake_papermill(monkeypatch, ran=99)
    with pytest.raises(ValueError, match=r"claims_dir=0 is not a folder path.*\./0"):
        ex.execute_published(toy, tmp_path / "toy.ipynb", {"claims_dir": 0})
    assert not calls  # nothing ran


CHAPTER = """# A chapter

(sec-setup)=
## Setup

See {ref}`the figure <fig-a>`.

```{glue:figure} a
:name: fig-a

Figure 1 (the paper), reproduced: accuracy.
```

```{glue:figure} b
:name: tab-b
```
"""


def _chapter(tmp_path: Path, name: str = "pfa.ipynb") -> Path:
    notebook = tmp_path / name
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(CHAPTER)]),
                   str(notebook))
    return notebook


def test_the_page_leading_a_chapter_says_it_is_the_paper_tier_and_prefixes_its_labels(
        tmp_path: Path) -> None:
    notebook = _chapter(tmp_path)
    ex.label_tier_page(notebook, "paper")
    text = ex.read_executed(notebook).cells[0].source
    assert text.startswith("# A chapter: the paper tier\n\n```{note}\n**This page is the "
                           "paper tier**: the papers' own scale, rendered from stored runs")
    assert "{doc}`the quick-tier page <../pfa>`" in text  # its other page, one folder up
    assert ":name: paper-fig-a" in text and "(paper-sec-setup)=" in text
    assert "<paper-fig-a>" in text and ":name: fig-a" not in text
    badge = '<span class="tier-badge tier-paper">paper tier</span>'
    assert f"{badge} Figure 1 (the paper), reproduced: accuracy." in text
    assert f":name: paper-tab-b\n\n{badge}\n```" in text  # no caption: the badge is one


def test_the_leading_page_says_its_prose_quotes_its_own_tier() -> None:
    note = ex.tier_opening("paper", "padpfl", lead=True)
    assert "written beside the quick tier" not in note
    assert "The numbers its prose quotes are of the paper tier too" in note
    assert "{doc}`the quick-tier page <../padpfl>`" in note
    tier_page = ex.tier_opening("quick", "padpfl", lead=False)
    assert "every number its prose quotes" in tier_page and "of the quick tier" in tier_page


def test_the_companion_chapter_says_its_larger_tier_is_its_own_not_a_papers() -> None:
    lead = ex.tier_opening("paper", "frontier", lead=True)
    assert "the comparison's larger scale" in lead and "papers' own scale" not in lead
    quick = ex.tier_opening("quick", "frontier", lead=False)
    assert "the comparison at reduced scale" in quick
    assert "The chapter's larger scale is on the chapter's first page" in quick
    assert "papers' own scale" in ex.tier_opening("quick", "pfa", lead=False)


def test_the_page_at_the_builds_tier_names_it_and_keeps_its_labels(tmp_path: Path) -> None:
    notebook = _chapter(tmp_path, "pfa.out.ipynb")
    ex.label_tier_page(notebook, "quick", lead=False)
    text = ex.read_executed(notebook).cells[0].source
    assert text.startswith("# A chapter: the quick tier\n\n```{note}\n**This page is the "
                           "quick tier**: the papers' experiments at reduced scale")
    assert "rerun in minutes" in text
    assert "{doc}`the paper tier <published/pfa>`" in text  # named by the chapter, not file
    assert ":name: fig-a" in text and "(sec-setup)=" in text and "paper-" not in text
    assert '<span class="tier-badge tier-quick">quick tier</span> Figure 1' in text


def test_a_build_labels_its_own_tier_page_when_asked(
        toy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_papermill(monkeypatch, ran=99)
    output = tmp_path / "toy.ipynb"
    assert ex.main([str(toy), str(output), "-p", "scale", "quick", "--page", "tier"]) == 0
    title = ex.read_executed(output).cells[0].source
    assert title.startswith("# A toy chapter: the quick tier\n\n```{note}\n**This page is "
                            "the quick tier**")
    assert ex.main([str(toy), str(output), "-p", "scale", "quick"]) == 0
    assert ex.read_executed(output).cells[0].source == "# A toy chapter"  # not asked


def test_a_tier_whose_runs_are_missing_is_named_by_its_page(
        toy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from papermill.exceptions import PapermillExecutionError

    error = PapermillExecutionError(2, 1, "x = 1", "MissingRunsError",
                                    "3 of 9 runs of toy are neither cached nor published. "
                                    "Compute them", [])
    fake_papermill(monkeypatch, ran=2, then=error)
    claims = tmp_path / "claims"
    assert ex.main([str(toy), str(tmp_path / "toy.ipynb"), "--published-only", "--page",
                    "tier", "-p", "scale", "quick", "-p", "claims_dir", str(claims)]) == 0
    page = (tmp_path / "toy.md").read_text()
    assert page.startswith("# A toy chapter: the quick tier\n\nThe quick tier of this "
                           "chapter is not shown: its runs are not all stored (3 of 9 runs")
    assert "`make publish SCALE=quick`" in page
    assert (claims / "toy.missing").is_file() and not (tmp_path / "toy.ipynb").exists()


def test_a_dataset_a_render_cannot_read_is_named_on_its_page(
        toy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from papermill.exceptions import PapermillExecutionError

    error = PapermillExecutionError(2, 1, "x = 1", "DatasetUnavailableError",
                                    "femnist/sample.npz is not in the cache. Set it up", [])
    fake_papermill(monkeypatch, ran=2, then=error)
    claims = tmp_path / "claims"
    assert ex.execute_published(toy, tmp_path / "toy.ipynb",
                                {"scale": "paper", "claims_dir": str(claims)}) == 0
    page = (tmp_path / "toy.md").read_text()
    assert "not shown: a dataset it reads is not available where the site was built " \
           "(femnist\\/sample\\.npz is not in the cache)" in page
    assert (claims / "toy.missing").read_text() == "femnist/sample.npz is not in the cache\n"
    other = PapermillExecutionError(2, 1, "x = 1", "ValueError", "bad", [])
    fake_papermill(monkeypatch, ran=2, then=other)
    with pytest.raises(PapermillExecutionError):  # any other failure fails the build
        ex.execute_published(toy, tmp_path / "toy.ipynb",
                             {"scale": "paper", "claims_dir": str(claims)})


def test_a_render_from_stored_runs_records_its_gaps_anew_and_restores_the_environment(
        toy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import papermill
    from papermill.exceptions import PapermillExecutionError

    from fedlib.runs.gaps import GAPS_LOG, GAPS_SUFFIX, read_gaps, record_gap

    claims = tmp_path / "claims"
    claims.mkdir()
    log = claims / f"toy{GAPS_SUFFIX}"
    log.write_text('{"left": "by an older render"}\n')
    seen: list[str | None] = []

    def kernel(then: BaseException | None):
        def run(input_path: str, output_path: str, **_: Any) -> None:
            # What the kernel sees: the variable, naming the file, which starts empty.
            seen.append(os.environ.get(GAPS_LOG))
            assert Path(seen[-1]).is_absolute() and log.read_text() == ""
            record_gap("toy", 9, 3, 0)
            nbformat.write(nbformat.read(input_path, as_version=4), output_path)
            if then is not None:
                raise then
        return run

    monkeypatch.delenv(GAPS_LOG, raising=False)
    monkeypatch.setattr(papermill, "execute_notebook", kernel(None))
    assert ex.execute_published(toy, tmp_path / "toy.ipynb",
                                {"scale": "quick", "claims_dir": str(claims)}) == 0
    assert seen == [str(log.resolve())] and GAPS_LOG not in os.environ
    assert [r["absent"] for r in read_gaps(log)] == [3]
    missing = PapermillExecutionError(2, 1, "x = 1", "MissingRunsError",
                                      "3 of 9 runs of toy are neither cached nor published. "
                                      "Compute them", [])
    monkeypatch.setenv(GAPS_LOG, "set before")
    monkeypatch.setattr(papermill, "execute_notebook", kernel(missing))
    assert ex.execute_published(toy, tmp_path / "toy.ipynb",
                                {"scale": "quick", "claims_dir": str(claims)}) == 0
    assert os.environ[GAPS_LOG] == "set before"
    assert len(read_gaps(log)) == 1  # written anew: the first render's record is gone
