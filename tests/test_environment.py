"""The locked environment: every package pinned with its hashes, the pins satisfy
pyproject.toml's ranges, and every way to install (make, conda) installs the lock."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PLATFORMS = {"linux-x86_64": {"sys_platform": "linux", "platform_machine": "x86_64"},
             "macos-arm64": {"sys_platform": "darwin", "platform_machine": "arm64"}}
"""The platforms the lock covers, with the marker values pip sees there."""

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^ \\;]+)")


def _pins(path: Path) -> dict[str, tuple[Version, int]]:
    """The pins of a lock file: name -> (version, number of hashes)."""
    pins: dict[str, tuple[Version, int]] = {}
    name = None
    for line in path.read_text().splitlines():
        if match := _PIN.match(line):
            name = canonicalize_name(match.group(1))
            assert name not in pins, f"{path.name} pins {name} twice"
            pins[name] = (Version(match.group(2)), 0)
        elif line.strip().startswith("--hash=sha256:") and name is not None:
            version, hashes = pins[name]
            pins[name] = (version, hashes + 1)
    return pins


def _locked(platform: str) -> dict[str, tuple[Version, int]]:
    folder = ROOT / "requirements" / platform
    return {**_pins(folder / "lock.txt"), **_pins(folder / "torch.txt")}


def _project_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in ("book", "dev"):
        wanted += project["optional-dependencies"][extra]
    return [Requirement(r) for r in wanted]


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_the_lock_pins_every_package_with_its_hashes(platform: str) -> None:
    pins = _locked(platform)
    assert "torch" in pins and "numpy" in pins
    unhashed = sorted(name for name, (_, hashes) in pins.items() if hashes == 0)
    assert not unhashed, f"{platform}: pinned without a hash: {unhashed}"


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_the_lock_satisfies_the_projects_ranges(platform: str) -> None:
    pins = _locked(platform)
    environment = {"python_version": "3.11", "python_full_version": "3.11.0",
                   "implementation_name": "cpython", "platform_python_implementation": "CPython",
                   "os_name": "posix", **PLATFORMS[platform]}
    for requirement in _project_requirements():
        if requirement.marker and not requirement.marker.evaluate(environment):
            continue
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{platform}: {requirement} is not locked"
        version = pins[name][0]
        assert requirement.specifier.contains(version, prereleases=True), (
            f"{platform}: {name}=={version} does not satisfy {requirement}")


def test_the_locks_torch_is_the_cpu_build_the_makefile_names() -> None:
    makefile = (ROOT / "Makefile").read_text()
    version = Version(re.search(r"^TORCH_VERSION := (\S+)", makefile, re.M).group(1))
    assert _locked("linux-x86_64")["torch"][0] == Version(f"{version}+cpu")
    assert _locked("macos-arm64")["torch"][0] == version


def test_this_environment_is_the_locked_one() -> None:
    """The interpreter running the suite has every locked package at its locked version
    (make test installs from the lock)."""
    from importlib.metadata import PackageNotFoundError, version

    platform = next((p for p, markers in PLATFORMS.items()
                     if Marker(f"sys_platform == '{markers['sys_platform']}' and "
                               f"platform_machine == '{markers['platform_machine']}'")
                     .evaluate()), None)
    if platform is None:
        pytest.skip("this platform has no lock")
    wrong = []
    for name, (locked, _) in _pins(ROOT / "requirements" / platform / "lock.txt").items():
        try:
            installed = Version(version(name))
        except PackageNotFoundError:
            wrong.append(f"{name} missing")
            continue
        if installed != locked:
            wrong.append(f"{name} {installed} (locked {locked})")
    assert not wrong, f"not the locked environment: {wrong}"


def test_environment_yml_installs_the_lock() -> None:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert pip_section == ["-r requirements/linux-x86_64/torch.txt",
                           "-r requirements/linux-x86_64/lock.txt"]
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python"))
    assert python == "python=3.11"  # the version the lock is resolved for


def test_make_install_installs_from_the_lock() -> None:
    """The install recipe, as make would run it: torch from torch.txt, then lock.txt with
    hashes required, then the project without its dependencies, then pip check."""
    result = subprocess.run(["make", "-n", "-B", "install", "VENV=/nonexistent-venv"],
                            cwd=ROOT, capture_output=True, text=True, check=True)
    lines = [line for line in result.stdout.splitlines()
             if line.startswith("/nonexistent-venv/bin/python -m pip install")]
    assert "--require-hashes -r requirements/" in lines[0] and "torch.txt" in lines[0]
    assert "--require-hashes -r requirements/" in lines[1] and "lock.txt" in lines[1]
    assert "--no-deps" in lines[2] and "-e ." in lines[2]
    assert "pip check" in result.stdout
