"""Which upgrades would break the build: the newest versions pyproject.toml's ranges allow,
tried against the site in a throw-away environment (``make check-updates``).

1. Resolve the newest versions allowed today for this platform (uv), torch kept at the
   lock's build, and list every package whose newest version differs from the lock.
2. Build the site (``make site``, as a reader would) in a fresh clone whose environment
   has all of those upgrades.
3. If that build fails, find the upgrade that breaks it by halving: build with half of
   the upgrades (the rest as locked, uv keeping every other pin), keep the half that
   fails, until one package is left (or two halves that only fail together).

Nothing of the checkout is changed: the clones, environments and logs live in a temporary
folder (``--keep`` keeps it). The report names each upgrade, and for a failure the
package, its locked and newest versions, and the end of the failing build's log.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fedlib.runs.environment import lock_folder, pins, platform_name  # noqa: E402

UV_PLATFORMS = {"linux-x86_64": "x86_64-manylinux_2_28", "macos-arm64": "aarch64-apple-darwin"}
def upgrades(locked: dict[str, str], newest: dict[str, str]) -> list[tuple[str, str, str]]:
    """(name, locked, newest) for each package whose newest version is not the locked one
    (``"-"`` for a package only one side has)."""
    names = sorted(set(locked) | set(newest))
    return [(n, locked.get(n, "-"), newest.get(n, "-")) for n in names
            if locked.get(n) != newest.get(n)]


def culprit(candidates: Sequence[str], breaks: Callable[[Sequence[str]], bool]
            ) -> list[str]:
    """The smallest part of ``candidates`` found by halving whose upgrade alone still
    breaks the build (``breaks(subset)`` builds with that subset upgraded): one package,
    or two halves that break only together."""
    current = list(candidates)
    while len(current) > 1:
        half = len(current) // 2
        first, second = current[:half], current[half:]
        if breaks(first):
            current = first
        elif breaks(second):
            current = second
        else:
            return current  # neither half alone: an interaction between them
    return current


class Checker:
    """Compiles candidate environments and builds the site with them, in ``work``."""

    def __init__(self, work: Path, uv: str, torch_wheels: str | None) -> None:
        self.work, self.uv, self.torch_wheels = work, uv, torch_wheels
        self.lock = lock_folder(ROOT / "requirements")
        self.builds = 0
        self.last_log = ""

    def compile(self, output: Path, upgrade: Sequence[str] | None) -> dict[str, str]:
        """Resolve into ``output``: every package newest (``upgrade`` None), or the lock
        with only ``upgrade`` raised to its newest (uv keeps the other pins it can)."""
        torch = self.work / "torch.in"
        torch.write_text(f"torch=={pins((self.lock / 'torch.txt').read_text())['torch']}\n")
        if upgrade is not None:
            shutil.copy(self.lock / "lock.txt", output)
        command = [*self.uv.split(), "pip", "compile", "--quiet", "--python-version", "3.11",
                   "--python-platform", UV_PLATFORMS[platform_name()], "--generate-hashes",
                   "--overrides", str(torch), "--no-emit-package", "torch",
                   str(ROOT / "pyproject.toml"), str(ROOT / "requirements" / "build.in"),
                   "--extra", "book", "--extra", "dev", "-o", str(output)]
        if self.torch_wheels:
            command += ["--find-links", self.torch_wheels]
        for name in upgrade or ():
            command += ["--upgrade-package", name]
        if upgrade is None:
            command += ["--upgrade"]
        subprocess.run(command, check=True)
        return pins(output.read_text())

    def site_breaks(self, lock: Path, label: str) -> bool:
        """Build the site in a fresh clone whose environment is ``lock`` (and the locked
        torch); True when the install or the build fails."""
        self.builds += 1
        clone = self.work / f"clone-{self.builds}"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        venv = clone / ".venv"
        python = venv / "bin" / "python"
        log = self.work / f"build-{self.builds}.log"
        steps = [
            [sys.executable, "-m", "venv", str(venv)],
            [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--require-hashes",
             "-r", str(self.lock / "torch.txt")],
            [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--require-hashes",
             "-r", str(lock)],
            [str(python), "-m", "pip", "install", "--quiet", "--no-deps",
             "--no-build-isolation", "-e", str(clone)],
            [str(python), "-m", "pip", "check"],
            ["touch", str(venv / ".installed")],
            ["make", "site"],
        ]
        print(f"build {self.builds}: {label}", flush=True)
        with log.open("w") as handle:
            for step in steps:
                handle.write(f"$ {' '.join(step)}\n")
                handle.flush()
                done = subprocess.run(step, cwd=clone, stdout=handle, stderr=subprocess.STDOUT)
                if done.returncode != 0:
                    self.last_log = "\n".join(log.read_text().splitlines()[-30:])
                    print(f"  fails at: {' '.join(step[-2:])} (log {log})", flush=True)
                    shutil.rmtree(clone, ignore_errors=True)
                    return True
        print("  builds", flush=True)
        shutil.rmtree(clone, ignore_errors=True)
        return False


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uv", default=f"{sys.executable} -m uv",
                        help="the uv command (default: this interpreter's uv module)")
    parser.add_argument("--torch-wheels", default=None,
                        help="where the lock's torch build is listed, when PyPI lacks it")
    parser.add_argument("--keep", action="store_true", help="keep the working folder")
    args = parser.parse_args(argv)
    lock = lock_folder(ROOT / "requirements")
    if not (lock / "lock.txt").is_file() or platform_name() not in UV_PLATFORMS:
        print(f"no lock for {platform_name()}: nothing to check against (make lock)",
              file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="fedlib-check-updates-"))
    try:
        checker = Checker(work, args.uv, args.torch_wheels)
        newest_file = work / "newest.txt"
        newest = checker.compile(newest_file, None)
        found = upgrades(pins((lock / "lock.txt").read_text()), newest)
        if not found:
            print(f"No upgrade: the lock of {platform_name()} holds the newest versions "
                  "pyproject.toml allows today (torch kept at the lock's build).")
            return 0
        print(f"{len(found)} packages have newer versions than the lock:")
        for name, old, new in found:
            print(f"  {name} {old} -> {new}")
        if not checker.site_breaks(newest_file, "every upgrade"):
            print("The site builds with every upgrade: `make lock` can take them.")
            return 0
        everything_log = checker.last_log

        def breaks(subset: Sequence[str]) -> bool:
            partial = work / f"partial-{checker.builds + 1}.txt"
            checker.compile(partial, subset)
            return checker.site_breaks(partial, f"upgraded: {', '.join(subset)}")

        names = [name for name, _, new in found if new != "-"]
        blamed = culprit(names, breaks)
        versions = {name: (old, new) for name, old, new in found}
        print("\nThe site does not build with every upgrade. Found by halving "
              f"({checker.builds} builds):")
        if len(blamed) == 1:
            old, new = versions[blamed[0]]
            print(f"  {blamed[0]} {old} -> {new} breaks it on its own.")
        else:
            print("  no single upgrade breaks it alone; these break it together: "
                  + ", ".join(f"{n} {versions[n][0]} -> {versions[n][1]}" for n in blamed))
        print("\nThe end of the failing build's log (every upgrade):\n" + everything_log)
        return 1
    finally:
        if args.keep:
            print(f"working folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
