"""A chapter opened by hand in JupyterLab, as a researcher does: the server serves
``notebooks/<id>.py`` as a notebook (jupytext), its parameters cell runs on a kernel the
server started, and saving writes the ``.py`` back, with no ``.ipynb`` beside it."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "fedlib-test-token"

pytest.importorskip("jupyterlab", reason="JupyterLab is installed with the book's extras")
pytest.importorskip("jupytext")
jupyter_client = pytest.importorskip("jupyter_client")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _api(base: str, path: str, method: str = "GET", body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{base}{path}", data=data, method=method, headers={
        "Authorization": f"token {TOKEN}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read()
    return json.loads(text) if text else {}


@pytest.fixture
def lab(tmp_path: Path):
    """JupyterLab on a free local port, serving a copy of the notebooks folder."""
    root = tmp_path / "project"
    shutil.copytree(ROOT / "notebooks", root / "notebooks")
    runtime = tmp_path / "runtime"
    port = _free_port()
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(runtime), "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}",
         "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={TOKEN}",
         f"--ServerApp.root_dir={root}", "--ServerApp.open_browser=False",
         "--ServerApp.allow_root=True"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                _api(base, "/api/status")
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    server.kill()
                    pytest.fail("JupyterLab did not start: " + (server.stderr.read() or "")[-2000:])
                time.sleep(0.5)
        yield base, root, runtime
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


@pytest.mark.slow
def test_a_chapter_opens_as_a_notebook_runs_its_parameters_and_saves_as_py(lab) -> None:
    base, root, runtime = lab
    model = _api(base, "/api/contents/notebooks/hu2020.py?type=notebook&content=1")
    assert model["type"] == "notebook"
    cells = model["content"]["cells"]
    parameters = [c for c in cells if "parameters" in c["metadata"].get("tags", [])]
    assert len(parameters) == 1, "a chapter has one cell tagged parameters"

    kernel = _api(base, "/api/kernels", "POST", {"name": "python3"})
    connection = runtime / f"kernel-{kernel['id']}.json"
    deadline = time.monotonic() + 30
    while not connection.is_file() and time.monotonic() < deadline:
        time.sleep(0.2)
    client = jupyter_client.BlockingKernelClient()
    client.load_connection_file(str(connection))
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        reply = client.execute_interactive(
            parameters[0]["source"], user_expressions={"tier": "scale", "seed": "seed"},
            timeout=60)
        content = reply["content"]
        assert content["status"] == "ok", content
        assert content["user_expressions"]["tier"]["data"]["text/plain"] == "'quick'"
    finally:
        client.stop_channels()
        _api(base, f"/api/kernels/{kernel['id']}", "DELETE")

    # Saving from the notebook view writes the .py (the source of truth) and nothing else.
    parameters[0]["source"] = parameters[0]["source"].replace("seed = 0", "seed = 7")
    _api(base, "/api/contents/notebooks/hu2020.py", "PUT",
         {"type": "notebook", "format": "json", "content": model["content"]})
    saved = (root / "notebooks" / "hu2020.py").read_text()
    assert "seed = 7" in saved and saved.startswith("# ---\n# jupyter:")
    assert "# %% [markdown]" in saved
    assert not list((root / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("uid", [0, 1000], ids=["root", "a user"])
def test_make_lab_passes_allow_root_as_root_only_and_stays_on_localhost(
        tmp_path: Path, uid: int) -> None:
    """JupyterLab refuses to start as root (the only user of many containers) unless
    given --allow-root: ``make lab`` gives it then, and says why. Either way it listens on
    localhost behind its token. ``id`` and ``jupyter`` are stand-ins that say what they
    were asked."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    venv, bin_ = tmp_path / "venv", tmp_path / "bin"
    (venv / "bin").mkdir(parents=True)
    bin_.mkdir()
    for path, script in ((venv / "bin" / "jupyter", 'echo "ran: jupyter $*"'),
                         (bin_ / "id", f"echo {uid}")):
        path.write_text(f"#!/bin/sh\n{script}\n")
        path.chmod(0o755)
    (venv / ".installed").touch()  # the environment counts as installed
    result = subprocess.run(
        ["make", "--no-print-directory", "-C", str(ROOT), "lab", f"VENV={venv}"],
        env={**os.environ, "PATH": f"{bin_}{os.pathsep}{os.environ['PATH']}"},
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    ran = [line.removeprefix("ran: ") for line in result.stdout.splitlines()
           if line.startswith("ran: ")]
    command = "jupyter lab notebooks --ServerApp.ip=localhost"
    assert ran == [f"{command} --allow-root" if uid == 0 else command]
    why = [line for line in result.stdout.splitlines() if line.startswith("make lab: ")]
    if uid == 0:
        assert len(why) == 1 and "root" in why[0] and "--allow-root" in why[0], result.stdout
    else:
        assert not why, result.stdout
    assert "token" not in ran[0]  # the server's own token is kept
