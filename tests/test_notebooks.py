"""Every notebook runs at the smoke tier through papermill and writes its claims."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import jupytext
import papermill
import pytest

from fedlib.papers import PAPERS
from fedlib.verdicts.claims import COMPANION_CHAPTERS

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = [ROOT / p.notebook for p in PAPERS]
CHAPTERS = NOTEBOOKS + [ROOT / "notebooks" / f"{name}.py" for name in COMPANION_CHAPTERS]
"""The papers' notebooks and the companion's own chapters (which state no paper's claims)."""


def _as_ipynb(source: Path, folder: Path) -> Path:
    target = folder / f"{source.stem}.ipynb"
    jupytext.write(jupytext.read(source), target)
    return target


def _parameters_cell(path: Path) -> str:
    notebook = jupytext.read(path)
    cells = [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(cells) == 1, f"{path.name} needs exactly one cell tagged 'parameters'"
    return cells[0].source


@pytest.mark.parametrize("source", CHAPTERS, ids=lambda p: p.stem)
def test_notebook_declares_the_standard_parameters(source: Path) -> None:
    cell = _parameters_cell(source)
    for name in ("scale", "seed", "device", "claims_dir"):
        assert f"\n{name} =" in f"\n{cell}", f"{source.name}: parameter {name} missing"


def test_every_notebook_is_a_listed_paper_or_companion_chapter() -> None:
    assert sorted((ROOT / "notebooks").glob("*.py")) == sorted(CHAPTERS)


@pytest.mark.slow
def test_invalid_parameter_stops_the_notebook_with_a_clear_message(tmp_path: Path) -> None:
    source = ROOT / "notebooks" / "ppsgd.py"
    with pytest.raises(papermill.PapermillExecutionError) as info:
        papermill.execute_notebook(
            str(_as_ipynb(source, tmp_path)), str(tmp_path / "out.ipynb"), cwd=str(ROOT),
            kernel_name="python3", parameters={"scale": "huge"}, progress_bar=False,
        )
    assert "not a run tier" in str(info.value) and "smoke" in str(info.value)



@pytest.mark.parametrize("source", CHAPTERS, ids=lambda p: p.stem)
def test_a_misspelt_parameter_is_refused_before_anything_runs(source: Path, tmp_path) -> None:
    import subprocess
    import sys

    from fedlib.render.notebook import check_parameters, declared_parameters

    declared = declared_parameters(source)
    assert {"scale", "seed", "device", "workers", "ray_address", "claims_dir"} <= set(declared)
    check_parameters(source, {"scale": "smoke", "seed": 3})
    with pytest.raises(ValueError, match="no parameter 'scael' \\(did you mean 'scale'\\?\\)"):
        check_parameters(source, {"scael": "smoke"})
    output = tmp_path / "out.ipynb"
    result = subprocess.run(
        [sys.executable, "-m", "fedlib.render.execute", str(source), str(output), "-p", "sede",
         "3"],
        capture_output=True, text=True)
    assert result.returncode == 2 and "Nothing was run" in result.stderr
    assert not output.exists()


def test_command_line_values_are_typed_as_papermill_types_them() -> None:
    from fedlib.render.notebook import parse_value

    assert [parse_value(v) for v in ("3", "0.5", "True", "None", "quick", "1e-5")] == [
        3, 0.5, True, None, "quick", 1e-5]


DITTO = ROOT / "notebooks" / "dpditto.py"


@pytest.mark.parametrize(("given", "says"), [
    ({"compare_low": "10"}, r"compare_low='10' is text, but the notebook's compare_low is "
                            r"a number \(default 10\.0\): pass a number, e\.g\. -p "
                            r"compare_low 10\.0"),
    ({"compare_high": "inf"}, r"compare_high='inf' is text.*-p reads .* inf as numbers"),
    ({"compare_low": True}, r"compare_low=True is a boolean.*pass a number"),
    ({"seed": Decimal("sNaN")},
     r"seed=Decimal\('sNaN'\) is a signalling NaN \(a decimal\.Decimal\), not a number.*pass "
     r"a plain int or float, e\.g\. -p seed 0"),
    ({"clip_bound": Decimal("1.5")},
     r"clip_bound=Decimal\('1\.5'\) is a decimal\.Decimal, which papermill does not hand "
     r"to a notebook as it is"),
    ({"compare_low": (10.0, 100.0)}, r"compare_low=\(10\.0, 100\.0\) is a tuple"),
], ids=["string epsilon", "string infinity", "boolean epsilon", "signalling NaN", "Decimal",
        "tuple"])
def test_a_value_the_notebook_cannot_take_is_refused_before_anything_runs(
        given: dict, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fedlib.render import execute as ex
    from fedlib.render.notebook import check_parameters

    with pytest.raises(ValueError, match=rf"dpditto\.py: {says}.*Nothing was run"):
        check_parameters(DITTO, given)
    ran = []
    monkeypatch.setattr(papermill, "execute_notebook", lambda *a, **k: ran.append(a))
    with pytest.raises(ValueError, match=says):
        ex.execute(DITTO, tmp_path / "out.ipynb", given)
    assert not ran and not list(tmp_path.iterdir())


def test_a_string_epsilon_on_the_command_line_is_refused_with_the_fix(tmp_path: Path) -> None:
    import subprocess
    import sys

    output = tmp_path / "out.ipynb"
    result = subprocess.run(
        [sys.executable, "-m", "fedlib.render.execute", str(DITTO), str(output), "-p",
         "compare_high", "ten"], capture_output=True, text=True)
    assert result.returncode == 2, result.stderr
    assert "compare_high='ten' is text" in result.stderr
    assert "-p compare_high 100.0" in result.stderr and not output.exists()


def test_values_the_notebook_takes_pass(tmp_path: Path) -> None:
    import math

    import numpy as np

    from fedlib.render.notebook import check_parameters, plain_parameters

    check_parameters(DITTO, {"compare_low": 10, "compare_high": math.inf, "seed": np.int64(3),
                             "claims_dir": tmp_path, "scale": "smoke"})
    assert plain_parameters({"claims_dir": tmp_path}) == {"claims_dir": str(tmp_path)}
