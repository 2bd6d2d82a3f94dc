"""Shared fixtures.

The offline dataset mirror is taken from ``$FEDLIB_DATA_MIRROR`` (``.ci/run``
points it at the mirror beside the checkout). Tests that need real data ask
for the ``mirror`` fixture and skip, saying why, when it is absent.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


SHARED_BUILDS = {"built_book": "test_book.py", "site_book": "test_site.py"}
"""Session fixtures that build the whole book (minutes each), and the one test file that
reads each. ``make test`` runs the files in parallel (pytest-xdist, ``--dist loadfile``:
a file's tests on one worker), these two first: each build is made once, on a worker of
its own, while the other files share the rest of the time."""


ONE_THREAD = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
"""What a worker of a parallel run sets to 1 before numpy and torch load (and what the
processes a test starts inherit): ``make test`` starts a worker a core, and a thread pool
a core in each worker would put twice as many threads as cores to wait on each other. A
test that needs a number of threads sets it (a published run is computed again with the
threads it recorded)."""
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.update(dict.fromkeys(ONE_THREAD, "1"))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the files of the whole-book builds first; refuse a test elsewhere that reads
    one of them (it would build that book a second time on another worker)."""
    astray = sorted(item.nodeid for item in items for build, home in SHARED_BUILDS.items()
                    if build in getattr(item, "fixturenames", ())
                    and item.path.name != home)
    if astray:
        raise pytest.UsageError(
            f"{', '.join(astray)} read a whole-book build outside its file "
            f"({', '.join(f'{b}: {h}' for b, h in SHARED_BUILDS.items())}): move them there")
    homes = list(SHARED_BUILDS.values())
    items.sort(key=lambda item: homes.index(item.path.name) if item.path.name in homes
               else len(homes))


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """Under ``--dist loadfile``, the files of the whole-book builds go to the workers
    first, one each: pytest-xdist hands out the largest files first, which left both
    builds to one worker, one after the other, near the end of the run."""
    if config.getoption("dist", None) != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class BuildsFirst(LoadFileScheduling):
        def _assign_work_unit(self, node) -> None:
            builds = [scope for scope in self.workqueue
                      if Path(scope).name in SHARED_BUILDS.values()]
            for scope in sorted(builds, key=lambda s: list(SHARED_BUILDS.values()).index(
                    Path(s).name), reverse=True):
                self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return BuildsFirst(config, log)


@pytest.fixture(autouse=True)
def _isolated_caches(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Every test gets its own download and results caches, and never the network."""
    base = tmp_path_factory.mktemp("fedlib-cache")
    monkeypatch.setenv("FEDLIB_DATA_DIR", str(base / "data"))
    monkeypatch.setenv("FEDLIB_RESULTS_DIR", str(base / "results"))
    monkeypatch.setenv("FEDLIB_OFFLINE", "1")


@pytest.fixture(autouse=True)
def _closes_its_figures() -> Iterator[None]:
    """A test closes every figure it draws: one left open stays in memory and is still
    open in the next test its worker runs, which then sees figures it never drew."""
    yield
    pyplot = sys.modules.get("matplotlib.pyplot")
    left = pyplot.get_fignums() if pyplot is not None else []
    if left:
        pyplot.close("all")
        pytest.fail(f"the test left {len(left)} figure(s) open: close each figure it draws "
                    "(plt.close), or let glue_figure close it")


@pytest.fixture
def mirror() -> Path:
    """The offline mirror folder; skips the test when it is not configured."""
    value = os.environ.get("FEDLIB_DATA_MIRROR", "").strip()
    if not value:
        pytest.skip("FEDLIB_DATA_MIRROR is not set: no offline dataset mirror to test against")
    path = Path(value)
    if not path.is_dir():
        pytest.skip(f"FEDLIB_DATA_MIRROR={value} is not a folder")
    return path


def require_datasets(*specs: str) -> None:
    """Skip the calling test, saying why, unless the data can be had without the network
    (from the mirror or the cache).

    A spec is a dataset name (every file needed) or ``dataset/file1|file2`` (any one of
    the listed files suffices).
    """
    from fedlib.data import DatasetUnavailableError, dataset_files, fetch

    for spec in specs:
        dataset, _, listed = spec.partition("/")
        files = listed.split("|") if listed else list(dataset_files(dataset))
        needed = 1 if listed else len(files)
        found, reasons = 0, []
        for filename in files:
            try:
                fetch(dataset, filename)
                found += 1
            except DatasetUnavailableError as error:
                reasons.append(str(error))
        if found < needed:
            pytest.skip(f"dataset {spec!r} is not available offline ({'; '.join(reasons)}); "
                        "set FEDLIB_DATA_MIRROR to a mirror folder")


def fresh_clone(destination: Path) -> Path:
    """A clone of this checkout at ``destination``, as a new user gets it: the committed
    tree, with this working tree's uncommitted edits laid over it (so a change is tested
    before it is committed), and nothing git ignores (no cache, no build, no venv).

    Its ``.venv`` is seeded with this interpreter's packages (a ``.pth`` line, so pip
    sees them as installed outside the venv and never touches them): the README's
    commands then run as written, installing from the lock in seconds, since every
    locked package is already there."""
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(destination)],
                   check=True)
    listed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "-z"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for entry in filter(None, listed.split("\0")):
        status, name = entry[:2], entry[3:]
        source, target = ROOT / name, destination / name
        if "D" in status or not source.exists():
            target.unlink(missing_ok=True)
        elif source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    venv = destination / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    ours = Path(sys.executable).parent.parent
    site = next((venv / "lib").glob("python3*/site-packages"))
    theirs = next((ours / "lib").glob("python3*/site-packages"))
    (site / "seeded-from-the-test-venv.pth").write_text(f"{theirs}\n")
    # The seeded packages' commands (jupyter-book, ruff, ...), as pip would have written
    # them for this venv: run by its own interpreter.
    shebang = f"#!{ours / 'bin' / 'python'}".encode()
    for script in (ours / "bin").iterdir():
        target = venv / "bin" / script.name
        if target.exists() or not script.is_file() or script.name.startswith("activate"):
            continue
        head, _, body = script.read_bytes().partition(b"\n")
        if head.startswith(shebang) and body:
            target.write_bytes(f"#!{venv / 'bin' / 'python'}".encode() + b"\n" + body)
            target.chmod(0o755)
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "--version"],
                         capture_output=True, text=True)
    assert pip.returncode == 0, f"the seeded venv has no pip: {pip.stderr}"
    return destination


def readme_environment() -> dict[str, str]:
    """The environment a reader's command runs in: this one without the folders the tests
    point elsewhere (the clone's defaults apply), the dataset mirror kept."""
    moved = ("FEDLIB_DATA_DIR", "FEDLIB_RESULTS_DIR", "FEDLIB_PUBLISHED_DIR", "VIRTUAL_ENV",
             "PYTHONPATH")
    return {name: value for name, value in os.environ.items() if name not in moved}


def run_in_clone(clone: Path, *command: str) -> subprocess.CompletedProcess:
    """``command`` (a README command, as written) run at the clone's root; fails the test
    with the end of its output when it fails."""
    result = subprocess.run(list(command), cwd=clone, env=readme_environment(),
                            capture_output=True, text=True)
    assert result.returncode == 0, (
        f"{' '.join(command)} failed in a fresh clone:\n{result.stdout[-4000:]}\n"
        f"{result.stderr[-4000:]}")
    return result


@pytest.fixture(scope="session")
def built_book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The book as ``make rebuild-all SCALE=smoke`` builds it in a fresh clone (the
    README's command as written: default book folder and venv): every notebook executed
    at the smoke tier (papermill) into ``generated/``, the site rendered into ``_build``.
    Built once per session, for the notebook and the book tests."""
    from fedlib.papers import PAPERS

    require_datasets(*{d for p in PAPERS for d in p.datasets})
    clone = fresh_clone(tmp_path_factory.mktemp("smoke-clone") / "clone")
    run_in_clone(clone, "make", "rebuild-all", "SCALE=smoke")
    return clone / "book"


@pytest.fixture(scope="session")
def site_book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as ``make site`` builds it in a fresh clone (the README's command as
    written): every chapter rendered from the runs stored with the project
    (``data/published``; a fresh clone has no local cache), nothing computed, both tiers,
    then the book. Built once per session."""
    from fedlib.papers import PAPERS

    require_datasets(*{d for p in PAPERS for d in p.datasets})
    clone = fresh_clone(tmp_path_factory.mktemp("site-clone") / "clone")
    run_in_clone(clone, "make", "site")
    return clone / "book"


WIDTH, HEIGHT = 1280, 900
"""The browser window the site's pages are checked in."""
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking"]


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """One headless Chromium (Debian's, through Playwright) for a module's tests."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium is not installed: install Debian's chromium package "
                    "(.ci/run does)")
    playwright = pytest.importorskip("playwright.sync_api",
                                     reason="playwright is not installed (make install)")
    with playwright.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser):
    """A fresh tab of :data:`WIDTH` x :data:`HEIGHT` pixels."""
    tab = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    yield tab
    tab.close()
