"""Every paper folder follows one layout and one experiment protocol.

``fedlib/papers/<id>/`` holds ``experiment.py`` (``TIERS``, ``tier``,
``configs``, ``BATCHED``, ``run_group``, ``run``), ``claims.py`` (``evaluate``)
and ``figures.py``; papers never import each other, and a run's cache key
covers what the runner computes with and nothing that only judges or draws.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import shutil
from pathlib import Path

import pytest

import fedlib
from fedlib.papers import PAPER_IDS, PAPERS
from fedlib.runs import keys as run_keys
from fedlib.tiers import SCALES
from fedlib.verdicts.claims import COMPANION_CHAPTERS

PACKAGE = Path(fedlib.__file__).resolve().parent
ROOT = PACKAGE.parent

ALGORITHMS = {
    "ppsgd": ("papers/ppsgd/algorithm.py", "papers/ppsgd/emnist.py"),
    "hu2020": ("papers/hu2020/algorithm.py", "papers/hu2020/svm.py"),
    "dpditto": ("papers/dpditto/algorithm.py", "papers/dpditto/baselines.py"),
    "padpfl": ("papers/padpfl/algorithm.py",),
    "pfa": ("papers/pfa/aggregation.py", "papers/pfa/training.py", "papers/pfa/budgets.py",
            "nn/dpsgd.py"),
}
"""The modules that define each paper's algorithm: its run keys must cover them."""

UNRELATED_LOADERS = {
    "ppsgd": ("data/har.py", "data/imdb.py", "data/cifar10.py"),
    "hu2020": ("data/imdb.py", "data/cifar10.py", "data/femnist_tff.py"),
    "dpditto": ("data/har.py", "data/imdb.py", "data/femnist_tff.py"),
    "padpfl": ("data/har.py", "data/imdb.py", "data/cifar10.py", "data/femnist_tff.py"),
    "pfa": ("data/har.py", "data/femnist_tff.py", "data/stackoverflow.py"),
}
"""Loaders a paper never reads: editing them must not rerun its sweeps."""


def _module(paper_id: str, role: str):
    return importlib.import_module(f"fedlib.papers.{paper_id}.{role}")


def test_the_paper_list_matches_the_folders_and_notebooks() -> None:
    folders = sorted(p.name for p in (PACKAGE / "papers").iterdir()
                     if p.is_dir() and not p.name.startswith("_"))
    assert folders == sorted(PAPER_IDS)
    assert sorted(p.stem for p in (ROOT / "notebooks").glob("*.py")) == sorted(
        (*PAPER_IDS, *COMPANION_CHAPTERS))
    assert all((ROOT / p.notebook).is_file() for p in PAPERS)


def test_the_readme_table_is_the_paper_list() -> None:
    from fedlib.papers import readme_table

    assert readme_table() in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("paper_id", PAPER_IDS)
def test_every_paper_folder_has_the_same_roles(paper_id: str) -> None:
    folder = PACKAGE / "papers" / paper_id
    for role in ("__init__.py", "experiment.py", "claims.py", "figures.py"):
        assert (folder / role).is_file(), f"{paper_id} lacks {role}"
    assert (folder / "__init__.py").read_text().strip() == "", (
        "a paper's __init__ stays empty: a re-exporting face would widen run keys")


@pytest.mark.parametrize("paper_id", PAPER_IDS)
def test_experiment_protocol(paper_id: str) -> None:
    experiment = _module(paper_id, "experiment")
    assert set(experiment.TIERS) == set(SCALES)
    for scale in SCALES:
        assert experiment.tier(scale) == experiment.TIERS[scale]
    with pytest.raises(ValueError, match="not a run tier"):
        experiment.tier("huge")
    assert isinstance(experiment.BATCHED, tuple) and experiment.BATCHED
    assert all(isinstance(name, str) for name in experiment.BATCHED)
    for name, first in (("configs", ("setup", "seed")), ("run", ("setup", "seed")),
                        ("run_group", ("configs",))):
        function = getattr(experiment, name)
        assert callable(function), f"{paper_id}.experiment.{name}"
        assert tuple(inspect.signature(function).parameters)[: len(first)] == first
    run_parameters = inspect.signature(experiment.run).parameters
    for name in ("workers", "ray_address", "progress"):
        assert name in run_parameters, f"{paper_id}.experiment.run lacks {name}"
    configs = experiment.configs(experiment.tier("smoke"), 0)
    assert configs and all(isinstance(c, dict) for c in configs)
    json.dumps(configs)  # a run's config is plain data
    # A batched field is in every config of the tier or in none: one no tier run sets is
    # optional (a study beyond the tier's runs sets it; absent, the runner's default).
    present = [name for name in experiment.BATCHED if any(name in c for c in configs)]
    assert present, f"{paper_id}: no config has any of the BATCHED fields"
    for config in configs:
        assert set(present) <= set(config), sorted(set(present) - set(config))


@pytest.mark.parametrize("paper_id", PAPER_IDS)
def test_claims_and_figures_modules(paper_id: str) -> None:
    claims = _module(paper_id, "claims")
    assert callable(claims.evaluate)
    figures = _module(paper_id, "figures")
    drawn = [name for name, f in vars(figures).items()
             if inspect.isfunction(f) and f.__module__ == figures.__name__
             and not name.startswith("_")]
    assert drawn, f"{paper_id}.figures defines no figure function"


def _imported(path: Path, package: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            names |= {base} | {f"{base}.{a.name}" for a in node.names}
    return names


@pytest.mark.parametrize("paper_id", PAPER_IDS)
def test_papers_never_import_each_other(paper_id: str) -> None:
    others = [p for p in PAPER_IDS if p != paper_id]
    for path in (PACKAGE / "papers" / paper_id).glob("*.py"):
        for name in _imported(path, f"fedlib.papers.{paper_id}"):
            assert not any(name.startswith(f"fedlib.papers.{o}") for o in others), (
                f"{path.relative_to(PACKAGE)} imports {name}")
            assert name not in {"fedlib.papers", "fedlib.papers.PAPERS"} or path.name in (
                "claims.py", "figures.py"), f"{path.name} imports the paper list"


@pytest.mark.parametrize("paper_id", PAPER_IDS)
def test_runners_never_import_claims_or_figures(paper_id: str) -> None:
    for path in (PACKAGE / "papers" / paper_id).glob("*.py"):
        if path.name in run_keys.PRESENTATION_MODULES:
            continue
        for name in _imported(path, f"fedlib.papers.{paper_id}"):
            last = name.rsplit(".", 1)[-1]
            assert last not in {"claims", "figures", "plots", "chapter"}, (
                f"{path.relative_to(PACKAGE)} imports {name}")


@pytest.mark.parametrize("paper_id", PAPER_IDS)
def test_run_key_covers_the_algorithm_and_nothing_presentational(paper_id: str) -> None:
    files = set(run_keys.code_files(f"fedlib.papers.{paper_id}.experiment"))
    assert f"papers/{paper_id}/experiment.py" in files
    assert set(ALGORITHMS[paper_id]) <= files, sorted(set(ALGORITHMS[paper_id]) - files)
    assert not {f for f in files if f.rsplit("/", 1)[-1] in run_keys.PRESENTATION_MODULES}
    assert not files & set(UNRELATED_LOADERS[paper_id])
    assert not {f for f in files if f.endswith("__init__.py") and f != "__init__.py"}, (
        "package faces are not part of a run key")
    others = [p for p in PAPER_IDS if p != paper_id]
    assert not {f for f in files if any(f.startswith(f"papers/{o}/") for o in others)}


@pytest.fixture
def package_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the fedlib source that fingerprints are computed on."""
    copy = tmp_path / "fedlib"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(run_keys.fedlib, "__file__", str(copy / "__init__.py"))
    run_keys.code_fingerprint.cache_clear()
    yield copy
    run_keys.code_fingerprint.cache_clear()


def _key_after(edit: Path, module: str) -> str:
    edit.write_text(edit.read_text() + "\n# an edit\n")
    run_keys.code_fingerprint.cache_clear()
    return run_keys.run_key({"x": 1}, module)


@pytest.mark.parametrize("paper_id", PAPER_IDS)
def test_editing_claims_figures_or_a_loader_keeps_run_keys(paper_id: str, package_copy: Path
                                                          ) -> None:
    module = f"fedlib.papers.{paper_id}.experiment"
    original = run_keys.run_key({"x": 1}, module)
    for relative in (f"papers/{paper_id}/claims.py", f"papers/{paper_id}/figures.py",
                     "render/plots.py", "verdicts/claims.py", "render/chapter.py",
                     "runs/published.py", "papers/__init__.py",
                     *UNRELATED_LOADERS[paper_id]):
        assert _key_after(package_copy / relative, module) == original, relative
    for relative in ALGORITHMS[paper_id]:
        edited = _key_after(package_copy / relative, module)
        assert edited != original, relative
        original = edited


def test_fingerprint_follows_a_reexported_name_to_its_module(tmp_path, monkeypatch) -> None:
    package = tmp_path / "fedlib"
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "data" / "__init__.py").write_text(
        "from fedlib.data.one import load_one\nfrom fedlib.data.two import load_two\n"
        "LOCAL = 1\n")
    (package / "data" / "one.py").write_text("def load_one():\n    return 1\n")
    (package / "data" / "two.py").write_text("def load_two():\n    return 2\n")
    (package / "run.py").write_text("from fedlib.data import load_one\n")
    (package / "run_local.py").write_text("from fedlib.data import LOCAL\n")
    monkeypatch.setattr(run_keys.fedlib, "__file__", str(package / "__init__.py"))
    run_keys.code_fingerprint.cache_clear()
    try:
        assert run_keys.code_files("fedlib.run") == ["__init__.py", "data/one.py", "run.py"]
        # A name the face defines itself brings the face, and with it what the face uses.
        assert run_keys.code_files("fedlib.run_local") == [
            "__init__.py", "data/__init__.py", "data/one.py", "data/two.py", "run_local.py"]
    finally:
        run_keys.code_fingerprint.cache_clear()
