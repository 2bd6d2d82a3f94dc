"""The conda environment and pyproject.toml ask for the same packages."""

from __future__ import annotations

import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _normalise(requirement: str) -> str:
    return requirement.replace(" ", "").lower()


def test_environment_yml_matches_pyproject() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        wanted += extra
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert sorted(map(_normalise, pip_section)) == sorted(map(_normalise, wanted))
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python"))
    minimum = project["requires-python"].removeprefix(">=")
    assert python.split("=")[-1] >= minimum


def test_makefile_pins_a_torch_the_project_accepts() -> None:
    makefile = (ROOT / "Makefile").read_text()
    pinned = next(line for line in makefile.splitlines() if line.startswith("TORCH_INSTALL ?="))
    version = pinned.split("==")[1].strip()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    torch_req = next(r for r in project["dependencies"] if r.startswith("torch"))
    minimum = torch_req.split(">=")[1]
    as_tuple = lambda v: tuple(int(p) for p in v.split("+")[0].split("."))  # noqa: E731
    assert as_tuple(version) >= as_tuple(minimum)
