"""Bad input across the public surface: every case is refused with an error that names the
parameter (or file) and says what to do, and nothing already written is lost.

The table of cases is also the book's list of what is validated: ``python
tests/test_bad_inputs.py > book/robustness_cases.md`` writes it, and a test keeps the
committed file equal to what this module generates.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "book" / "robustness_cases.md"


@dataclass(frozen=True)
class Case:
    """One bad input: where, what, the call, and what the error must say."""

    area: str
    given: str
    call: Callable[[Path], object]
    says: str  # a regular expression the message must match


def _mirror_with(tmp: Path, dataset: str, filename: str, content: bytes) -> None:
    import os

    folder = tmp / "mirror" / dataset
    folder.mkdir(parents=True, exist_ok=True)
    (folder / filename).write_bytes(content)
    os.environ["FEDLIB_DATA_MIRROR"] = str(tmp / "mirror")


def _ditto_setup_with(**changes: Any) -> Callable[[Path], object]:
    def call(tmp: Path) -> object:
        import dataclasses

        from fedlib.papers.dpditto.experiment import TIERS

        return dataclasses.replace(TIERS["smoke"], **changes)

    return call


def _checksum_mismatch(tmp: Path) -> object:
    from fedlib.data import fetch

    _mirror_with(tmp, "mnist", "train-labels-idx1-ubyte.gz", b"\x1f\x8b not the labels")
    return fetch("mnist", "train-labels-idx1-ubyte.gz")


def _missing_offline(tmp: Path) -> object:
    import os

    from fedlib.data import fetch

    os.environ.pop("FEDLIB_DATA_MIRROR", None)
    return fetch("mnist", "train-labels-idx1-ubyte.gz")


def _truncated_recordings(tmp: Path) -> object:
    from fedlib.data.hapt import load_hapt_recordings

    path = tmp / "hapt-raw.npz"
    np.savez(path, acc=np.zeros((10, 3)), gyro=np.zeros((10, 3)))
    path.write_bytes(path.read_bytes()[:100])
    return load_hapt_recordings(path)


def _wrong_shape_recordings(tmp: Path) -> object:
    from fedlib.data.hapt import load_hapt_recordings

    path = tmp / "hapt-raw.npz"
    np.savez(path, acc=np.zeros((10, 2)), gyro=np.zeros((10, 3)),
             label=np.zeros(10, np.int8), experiment_user=np.ones(1, np.int8),
             experiment_start=np.array([0, 10]))
    return load_hapt_recordings(path)


def _sweep_duplicates(tmp: Path) -> object:
    from fedlib.sweeps import sweep

    return sweep("dup", [{"x": 1}, {"x": 1}], lambda c: [], workers=1, progress=False)


def _scorecard_of(tmp: Path) -> object:
    from fedlib.verdicts.claims import checked_claims

    (tmp / "claims").mkdir()
    return checked_claims(tmp / "claims")


def _unwritable_claims(tmp: Path) -> object:
    from fedlib.render.chapter import open_chapter

    (tmp / "file").write_text("x")
    return open_chapter("pfa", scale="smoke", seed=0, device="cpu", workers=0, ray_address="",
                        claims_dir=tmp / "file" / "claims")


def _engine(**change) -> Callable[[Path], object]:
    def call(tmp: Path) -> object:
        import torch

        from fedlib.nn.dpsgd import local_dpsgd
        from fedlib.nn.models import LogisticRegression

        args = {"x": torch.zeros(2, 6, 1, 28, 28), "y": torch.zeros(2, 6, dtype=torch.long),
                "batches": torch.zeros(2, 3, 2, dtype=torch.long), "lr": 0.1, "clip": 1.0,
                "noise_multipliers": 1.0}
        args.update(change)
        return local_dpsgd(LogisticRegression(), None, args["x"], args["y"], args["batches"],
                           args["lr"], args["clip"], args["noise_multipliers"])
    return call


def _privacy(name: str, *args, **kwargs) -> Callable[[Path], object]:
    def call(tmp: Path) -> object:
        from fedlib import privacy

        return getattr(privacy, name)(*args, **kwargs)
    return call


def _checks(name: str, *args) -> Callable[[Path], object]:
    def call(tmp: Path) -> object:
        from fedlib import checks

        return getattr(checks, name)(*args)
    return call


def _import_call(module: str, name: str, *args, **kwargs) -> Callable[[Path], object]:
    def call(tmp: Path) -> object:
        import importlib

        return getattr(importlib.import_module(module), name)(*args, **kwargs)
    return call


def _notebook_parameter(chapter: str = "pfa", **given) -> Callable[[Path], object]:
    def call(tmp: Path) -> object:
        from fedlib.render.notebook import check_parameters

        return check_parameters(ROOT / "notebooks" / f"{chapter}.py", given)
    return call


def _said(template: str, **values: Any) -> Callable[[Path], object]:
    """Raise what a page's prose says of ``values`` (a case of what a page writes, not
    refuses)."""
    def call(tmp: Path) -> NoReturn:
        from fedlib.render.prose import prose

        raise RuntimeError(prose(template, **values))
    return call


def _notebook_cut_short(tmp: Path) -> object:
    """A build interrupted while papermill saved its notebook (the disk holding
    ``generated/tmp`` full): the notebook is cut short, and the claims are of a run
    before."""
    from fedlib.verdicts.claims import PAPERS, Claim, checked_claims, write_claims

    claims, runs = tmp / "claims", tmp / "generated"
    for paper in PAPERS:
        write_claims(claims / f"{paper}.json", [Claim(paper, "a", "HOLDS", "t", "e", "",
                                                      "quick")])
    (runs / "tmp").mkdir(parents=True)
    (runs / "tmp" / "pfa.out.partial.ipynb").write_text('{\n "cells": [\n  {\n   "ce')
    return checked_claims(claims, runs)


def _offline_switch(value: str) -> Callable[[Path], object]:
    def call(tmp: Path) -> object:
        import os

        from fedlib import paths

        os.environ["FEDLIB_OFFLINE"] = value
        return paths.offline()
    return call


def _chapter(**change) -> Callable[[Path], object]:
    def call(tmp: Path) -> object:
        from fedlib.render.chapter import open_chapter

        args = {"scale": "smoke", "seed": 0, "device": "cpu", "workers": 0, "ray_address": "",
                "claims_dir": tmp / "claims", **change}
        return open_chapter("pfa", **args)
    return call


def _unwritable_existing_claims(tmp: Path) -> object:
    from hostile import unwritable_folder

    return _chapter(claims_dir=unwritable_folder(tmp))(tmp)


def _damaged_notebook(content: bytes) -> Callable[[Path], object]:
    def call(tmp: Path) -> object:
        from fedlib.render.execute import fold_code

        (tmp / "pfa.ipynb").write_bytes(content)
        return fold_code(tmp / "pfa.ipynb")
    return call


def _tier_page(scale: str) -> Callable[[Path], object]:
    def call(tmp: Path) -> object:
        import nbformat

        from fedlib.render.execute import label_tier_page

        book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A chapter")])
        nbformat.write(book, str(tmp / "pfa.ipynb"))
        return label_tier_page(tmp / "pfa.ipynb", scale)
    return call


# The published store: a toy experiment in a store under the case's folder --------------

TOY_CONFIGS = [{"x": x} for x in range(3)]


def _toy_runner(configs: list[dict[str, Any]]) -> list[pd.DataFrame]:
    return [pd.DataFrame({"x": [c["x"]], "y": [c["x"] ** 2]}) for c in configs]


@contextmanager
def _environment(**values: str | Path) -> Iterator[None]:
    """Set environment variables for the block, then put back what was there."""
    import os

    before = {name: os.environ.get(name) for name in values}
    os.environ.update({name: str(value) for name, value in values.items()})
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _toy_cache(tmp: Path, tier: str) -> None:
    """The toy runs computed into the results cache (``$FEDLIB_RESULTS_DIR``), labelled
    with ``tier`` ("" is what the Python API gives without a chapter)."""
    from fedlib import sweeps
    from fedlib.runs import cache as run_cache

    run_cache.set_tier_label(tier)
    try:
        sweeps.sweep("toy", TOY_CONFIGS, _toy_runner, workers=1, progress=False)
    finally:
        run_cache.set_tier_label("")


@contextmanager
def _toy_store(tmp: Path) -> Iterator[Any]:
    """For the block, a results cache and a published store under ``tmp`` (never the
    checkout's), the store holding the toy runs exported at the paper tier; yields its
    :class:`fedlib.runs.published.PublishedStore`."""
    from fedlib.runs.published import PublishedStore, export

    with _environment(FEDLIB_PUBLISHED_DIR=tmp / "published", FEDLIB_RESULTS_DIR=tmp / "cache"):
        _toy_cache(tmp, "paper")
        export("toy", "paper")
        yield PublishedStore("toy")


def _manifest_edited(store: Any, edit: Callable[[dict[str, Any]], object]) -> None:
    manifest = json.loads(store.manifest_path.read_text())
    edit(manifest)
    store.manifest_path.write_text(json.dumps(manifest))


def _first_run(manifest: dict[str, Any]) -> dict[str, Any]:
    return manifest["runs"][min(manifest["runs"])]


def _printed(argv: list[str]) -> NoReturn:
    """Run ``python -m fedlib.runs`` with ``argv`` here and raise what it printed (a
    case of what the command tells, not refuses)."""
    import io
    from contextlib import redirect_stdout

    from fedlib.runs import __main__ as runs_cli

    out = io.StringIO()
    with redirect_stdout(out):
        runs_cli.main(argv)
    raise RuntimeError(out.getvalue())


def _tier_out_of_folder(tmp: Path) -> object:
    with _toy_store(tmp) as store:
        _manifest_edited(store, lambda m: _first_run(m).update(tier="../other/paper"))
        return store.prune()


def _manifest_without_groups(tmp: Path) -> object:
    from fedlib.runs.published import status_table

    with _toy_store(tmp) as store:
        _manifest_edited(store, lambda m: m.pop("groups"))
        return status_table()


def _negative_cpu_seconds(tmp: Path) -> object:
    with _toy_store(tmp) as store:
        _manifest_edited(store, lambda m: _first_run(m).update(cpu_seconds=-3600.0))
        return store.runs()


def _damaged_without_computing(tmp: Path) -> object:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from fedlib.sweeps import sweep

    with _toy_store(tmp) as store:
        table = pq.read_table(store.table_path("paper")).to_pandas()
        table.loc[0, "y"] = 1234  # one run's rows no longer match their digest
        pq.write_table(pa.Table.from_pandas(table, preserve_index=False),
                       store.table_path("paper"))
        with _environment(FEDLIB_RESULTS_DIR=tmp / "another-cache", FEDLIB_COMPUTE="0"):
            return sweep("toy", TOY_CONFIGS, _toy_runner, workers=1, progress=False)


def _leftover_of_an_export(tmp: Path) -> object:
    with _toy_store(tmp) as store:
        (store.folder / ".paper.parquet.k3j_x9ab.tmp").write_bytes(b"half a table")
        _printed(["status"])


def _export_without_tier(tmp: Path) -> object:
    with _environment(FEDLIB_PUBLISHED_DIR=tmp / "published", FEDLIB_RESULTS_DIR=tmp / "cache"):
        _toy_cache(tmp, "")
        _printed(["export", "--tier", "paper", "toy"])


def _export_unreadable_cache_file(tmp: Path) -> object:
    import warnings

    from fedlib.runs.cache import ResultStore
    from fedlib.runs.keys import run_key
    from fedlib.runs.published import export

    with _environment(FEDLIB_PUBLISHED_DIR=tmp / "published", FEDLIB_RESULTS_DIR=tmp / "cache"):
        _toy_cache(tmp, "paper")
        key = run_key(TOY_CONFIGS[0], _toy_runner.__module__)
        ResultStore("toy").path(key).write_bytes(b"not parquet")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return export("toy", "paper")


@contextmanager
def _code_edited() -> Iterator[None]:
    """For the block, the runs' code as edited since they were published (a comment, say):
    every published run is stale."""
    from fedlib.runs import confirm, keys, published

    before = {module: module.code_fingerprint for module in (keys, published, confirm)}
    for module in before:
        module.code_fingerprint = lambda module=None: "edited library"
    try:
        yield
    finally:
        for module, fingerprint in before.items():
            module.code_fingerprint = fingerprint


def _store_held(tmp: Path) -> object:
    from fedlib.runs.confirm import confirm

    with _toy_store(tmp) as store, store.holding(command="export of toy"):
        return confirm("toy", log=lambda line: None)


def _renamed_runner(tmp: Path) -> object:
    from fedlib.runs.confirm import confirm

    with _toy_store(tmp) as store, _code_edited():
        _manifest_edited(store, lambda m: [record.update(runner="renamed_runner")
                                           for record in m["provenance"].values()])
        return confirm("toy", log=lambda line: None)


def _published_dir_absent(tmp: Path) -> object:
    from fedlib.runs.published import published_root

    with _environment(FEDLIB_PUBLISHED_DIR=tmp / "no-such-folder"):
        return published_root()


def _export_over_invalid_json(tmp: Path) -> object:
    from fedlib.runs.published import export

    with _toy_store(tmp) as store:
        store.manifest_path.write_text("{not json")
        return export("toy", "paper")


def _newer_layout(tmp: Path) -> object:
    with _toy_store(tmp) as store:
        _manifest_edited(store, lambda m: m.update(layout="fedlib-published/4"))
        return store.runs()


def _edited_config_without_computing(tmp: Path) -> object:
    from fedlib.sweeps import sweep

    with _toy_store(tmp) as store:
        manifest = json.loads(store.manifest_path.read_text())
        key = min(manifest["runs"])
        manifest["runs"][key]["config"] = {"x": 9}  # another config under the run's key
        store.manifest_path.write_text(json.dumps(manifest))
        with _environment(FEDLIB_RESULTS_DIR=tmp / "another-cache", FEDLIB_COMPUTE="0"):
            return sweep("toy", TOY_CONFIGS, _toy_runner, workers=1, progress=False)


def _rows_no_entry_names(tmp: Path) -> object:
    import pyarrow as pa
    import pyarrow.parquet as pq

    with _toy_store(tmp) as store:
        table = pq.read_table(store.table_path("paper")).to_pandas()
        extra = table.iloc[:1].assign(run_key="0" * 20)  # as a killed write leaves them
        pq.write_table(pa.Table.from_pandas(pd.concat([table, extra]), preserve_index=False),
                       store.table_path("paper"))
        _printed(["status"])


EDITED_METHOD: dict[str, float] = {}
"""Per method, the factor an edit multiplies its results by (a case sets it)."""


def _method_runner(configs: list[dict[str, Any]]) -> list[pd.DataFrame]:
    return [pd.DataFrame({"x": [c["x"]], "y": [float(c["x"] + 1) * EDITED_METHOD.get(
        c["method"], 1.0)]}) for c in configs]


def _one_method_changed(tmp: Path) -> object:
    from fedlib.runs import cache as run_cache
    from fedlib.runs.confirm import confirm
    from fedlib.runs.published import export
    from fedlib.sweeps import sweep

    configs = [{"x": x, "method": "common"} for x in range(8)] + [{"x": 0, "method": "rare"}]
    with _environment(FEDLIB_PUBLISHED_DIR=tmp / "published", FEDLIB_RESULTS_DIR=tmp / "cache"):
        run_cache.set_tier_label("paper")
        try:
            sweep("toy", configs, _method_runner, workers=1, progress=False)
        finally:
            run_cache.set_tier_label("")
        export("toy", "paper")
        EDITED_METHOD["rare"] = 1.5
        try:
            with _code_edited():
                return confirm("toy", log=lambda line: None)
        finally:
            EDITED_METHOD.clear()


def _another_machine(tmp: Path) -> object:
    from fedlib.runs.keys import content_digest

    with _toy_store(tmp) as store:
        table = pd.read_parquet(store.table_path("paper"))
        manifest = store.manifest()
        for key, entry in manifest["runs"].items():
            entry["machine"] = "Linux x86_64, another processor, 8 logical cores"
            entry["sha256"] = content_digest(
                table[table["run_key"] == key].drop(columns="run_key").reset_index(drop=True))
        store._write_manifest(manifest)
        with _code_edited():
            _printed(["confirm", "toy"])


def _unreachable_ray(tmp: Path) -> object:
    import socket

    from fedlib.sweeps import sweep

    with socket.socket() as probe:  # a local port nobody listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with _environment(FEDLIB_PUBLISHED_DIR=tmp / "published", FEDLIB_RESULTS_DIR=tmp / "cache"):
        return sweep("toy", TOY_CONFIGS, _toy_runner, ray_address=f"127.0.0.1:{port}",
                     progress=False)


CASES: list[Case] = [
    # datasets
    Case("datasets", "an unknown dataset name", _import_call("fedlib.data", "fetch", "mnsit",
         "x"), r"unknown dataset 'mnsit'.*mnist"),
    Case("datasets", "a file the dataset does not have", _import_call(
        "fedlib.data", "fetch", "mnist", "labels.bin"), r"labels.bin"),
    Case("datasets", "a mirror copy whose checksum does not match", _checksum_mismatch,
         r"(?s)SHA-256.*train-labels"),
    Case("datasets", "a dataset missing offline", _missing_offline,
         r"(?s)(?=.*FEDLIB_OFFLINE)(?=.*FEDLIB_DATA_MIRROR)"),
    Case("datasets", "truncated raw recordings", _truncated_recordings, r"hapt-raw.npz"),
    Case("datasets", "raw recordings of the wrong shape", _wrong_shape_recordings,
         r"(?s)hapt-raw.npz.*acc"),
    Case("datasets", "an unknown HAR feature source", _import_call(
        "fedlib.data", "load_har", "inertial-map"), r"'auto', 'uci-561', 'hapt-561'"),
    Case("datasets", "FEDLIB_OFFLINE set to an unreadable value", _offline_switch("of"),
         r"FEDLIB_OFFLINE='of'.*set it to 1"),
    Case("datasets", "a per-client split with no test share", _import_call(
        "fedlib.data.federated", "split_per_user", np.zeros((4, 2)), np.zeros(4), np.zeros(4),
        2, test_fraction=0.0), r"test_fraction must lie in \(0, 1\)"),
    Case("datasets", "a partition into zero clients", _import_call(
        "fedlib.data", "iid_partition", 10, 0, seed=0), r"n_clients"),
    Case("datasets", "a Dirichlet partition with alpha <= 0", _import_call(
        "fedlib.data", "dirichlet_partition", np.zeros(10, int), 2, 0.0, seed=0), r"alpha"),
    # accountants and calibration
    Case("privacy", "a negative noise multiplier", _privacy("epsilon", -1.0, 0.1, 10, 1e-5),
         r"noise_multiplier must be >= 0"),
    Case("privacy", "a NaN noise multiplier", _privacy("epsilon", math.nan, 0.1, 10, 1e-5),
         r"noise_multiplier must be >= 0"),
    Case("privacy", "a sampling rate of 0", _privacy("epsilon", 1.0, 0.0, 10, 1e-5),
         r"sampling_rate must satisfy 0 < sampling_rate <= 1"),
    Case("privacy", "a sampling rate above 1", _privacy("epsilon", 1.0, 1.5, 10, 1e-5),
         r"sampling_rate must satisfy 0 < sampling_rate <= 1"),
    Case("privacy", "delta = 0", _privacy("epsilon", 1.0, 0.1, 10, 0.0),
         r"delta must satisfy 0 < delta < 1.*e\.g\. delta=1e-5"),
    Case("privacy", "delta = 1", _privacy("epsilon", 1.0, 0.1, 10, 1.0), r"0 < delta < 1"),
    Case("privacy", "a fractional step count", _privacy("epsilon", 1.0, 0.1, 2.5, 1e-5),
         r"steps must be a non-negative integer"),
    Case("privacy", "an unknown accountant", _privacy("epsilon", 1.0, 0.1, 10, 1e-5,
                                                     accountant="gdp"),
         r"accountant must be one of 'rdp', 'pld', 'opacus-rdp'"),
    Case("privacy", "noise too small for the PLD accountant",
         _privacy("epsilon", 0.001, 0.01, 100, 1e-5, accountant="pld"),
         r"below what the PLD accountant can compute.*accountant='rdp'"),
    Case("privacy", "a curve evaluated past its last step",
         _privacy("epsilon_curve", 1.0, 0.1, 10, 1e-5, at=[20]),
         r"at must hold step counts between 0 and steps=10"),
    Case("privacy", "a target epsilon of 0",
         _privacy("noise_multiplier_for_epsilon", 0.0, 0.1, 10, 1e-5),
         r"target_epsilon must be a finite number > 0"),
    Case("privacy", "a calibration tolerance of 2",
         _privacy("noise_multiplier_for_epsilon", 1.0, 0.1, 10, 1e-5, tol=2.0),
         r"tol must satisfy 1e-12 <= tol < 1"),
    Case("privacy", "a calibration tolerance finer than floats resolve (1e-17)",
         _privacy("noise_multiplier_for_epsilon", 1.0, 0.1, 10, 1e-5, tol=1e-17),
         r"tol must satisfy 1e-12 <= tol < 1.*floats resolve no finer"),
    Case("privacy", "impact factors that do not sum to 1",
         _checks("check_impact_factors", [0.5, 0.6]), r"p must sum to 1.*normalise it"),
    Case("privacy", "Theorem 5's noise at epsilon = 0",
         _privacy("hu2020_sigma", 0.0, 1e-3, 0.1, 0.9, 100), r"epsilon must be a finite"),
    Case("privacy", "PFA budgets from an unknown distribution", _import_call(
        "fedlib.papers.pfa.budgets", "sample_budgets", "zipf", 10, 0),
         r"unknown budget distribution 'zipf'.*mixgauss1"),
    # the papers' algorithms
    Case("algorithms", "Hu et al.: xi above 1", _import_call(
        "fedlib.papers.hu2020.algorithm", "Hu2020Config", lam=0.1, xi=2.0),
         r"xi must satisfy 0 < xi <= 1"),
    Case("algorithms", "Hu et al.: P_drop = 1", _import_call(
        "fedlib.papers.hu2020.algorithm", "Hu2020Config", lam=0.1, xi=1.0, p_drop=1.0),
         r"p_drop must satisfy 0 <= p_drop < 1"),
    Case("algorithms", "DP-Ditto: lambda above 1", _import_call(
        "fedlib.papers.dpditto.algorithm", "check_lambda", 1.5),
         r"lambda must be a number in \[0, 1\]"),
    Case("algorithms", "PADPFL: a string FedProx weight", _import_call(
        "fedlib.papers.padpfl.experiment", "tier", "smoke", mu="0.01"), r"mu must be"),
    Case("algorithms", "PADPFL: a negative clipping bound", _import_call(
        "fedlib.papers.padpfl.experiment", "tier", "smoke", clip_bound=-1.0),
         r"clip_bound must be a finite number > 0"),
    Case("algorithms", "DP-Ditto: a clipping norm of 0", _import_call(
        "fedlib.papers.dpditto.experiment", "tier", "smoke", clip=0.0), r"clip_bound"),
    Case("algorithms", "DP-Ditto: a Figure 6 epsilon off the grid", _import_call(
        "fedlib.papers.dpditto.experiment", "tier", "smoke", fig6_epsilon=7.0),
         r"fig6_epsilon=7.0 must be one of the epsilons \("),
    Case("algorithms", "a negative seed", _import_call(
        "fedlib.papers.pfa.experiment", "configs",
        __import__("fedlib.papers.pfa.experiment", fromlist=["x"]).tier("smoke"), -1),
         r"seed=-1 must be a non-negative integer"),
    Case("algorithms", "a seed of 2^63 given as a numpy integer", _import_call(
        "fedlib.papers.pfa.experiment", "configs",
        __import__("fedlib.papers.pfa.experiment", fromlist=["x"]).tier("smoke"),
        np.uint64(2**63)),
         r"seed=.*9223372036854775808.* is outside \[0, 2\*\*63\): pass a non-negative"),
    Case("algorithms", "DP-Ditto compared at one budget", _import_call(
        "fedlib.papers.dpditto.experiment", "tier", "smoke", compare_epsilons=(10.0,)),
         r"compare_epsilons must be two different budgets .*got \(10\.0,\)"),
    Case("algorithms", "DP-Ditto with 10^12 rounds", _ditto_setup_with(rounds=(10**12,)),
         r"rounds=1,000,000,000,000 is above 100,000.*LIMITS\['rounds'\]"),
    Case("algorithms", "DP-SGD: a batch index past the client's data",
         _engine(batches=__import__("torch").full((2, 3, 2), 6, dtype=__import__("torch").long)),
         r"batches"),
    Case("algorithms", "DP-SGD: a negative label",
         _engine(y=-__import__("torch").ones(2, 6, dtype=__import__("torch").long)), r"label"),
    Case("algorithms", "DP-SGD: a negative learning rate", _engine(lr=-0.1), r"lr"),
    Case("algorithms", "DP-SGD: an infinite clipping norm with noise",
         _engine(clip=math.inf), r"clip"),
    # sweeps, claims and notebooks
    Case("runs", "two identical configs in one sweep", _sweep_duplicates, r"duplicates"),
    Case("runs", "a results folder name with a path in it", _import_call(
        "fedlib.sweeps", "ResultStore", "../elsewhere"), r"plain folder name"),
    Case("runs", "a group of configs that differ outside the batched fields", _import_call(
        "fedlib.sweeps", "check_group", [{"x": 1, "seed": 0}, {"x": 2, "seed": 1}], ("x",)),
         r"differ only in x; these differ in seed"),
    Case("runs", "a scorecard read from an empty claims folder", _scorecard_of,
         r"no claims from hu2020, dpditto, padpfl, ppsgd, pfa.*make rebuild-all"),
    Case("runs", "a notebook cut short while being saved (a full disk), on the scorecard",
         _notebook_cut_short,
         r"tmp/pfa\.out\.partial\.ipynb cannot be read \(.*\): a run of notebooks/pfa\.py "
         r"was cut short while saving it .*pfa\.json may hold the claims of an earlier run"),
    Case("notebooks", "a misspelt notebook parameter", _notebook_parameter(scael="smoke"),
         r"no parameter 'scael' \(did you mean 'scale'\?\).*Nothing was run"),
    Case("notebooks", "an unknown run tier", _import_call("fedlib.tiers", "check_scale", "huge"),
         r"scale='huge' is not a run tier; use one of smoke, quick, paper"),
    Case("notebooks", "a fractional worker count", _checks("check_workers", 1.5),
         r"workers=1.5 must be an integer >= 0"),
    Case("notebooks", "a device torch does not know", _checks("check_device", "tpu0"),
         r"device='tpu0'"),
    Case("notebooks", "DP-Ditto: an epsilon of Figures 3 and 4 given as text "
         "(`compare_low='10'`)", _notebook_parameter("dpditto", compare_low="10"),
         r"dpditto\.py: compare_low='10' is text, but the notebook's compare_low is a number "
         r"\(default 10\.0\): pass a number, e\.g\. -p compare_low 10\.0.*Nothing was run"),
    Case("notebooks", "a notebook parameter given as `Decimal('sNaN')`",
         _notebook_parameter(seed=Decimal("sNaN")),
         r"seed=Decimal\('sNaN'\) is a signalling NaN \(a decimal\.Decimal\), not a number.*"
         r"pass a plain int or float, e\.g\. -p seed 0\. Nothing was run"),
    Case("notebooks", "an infinite value in a page's prose (DP-Ditto's budget of no noise), "
         "said not refused", _said("eps = {a}, {b}", a=math.inf, b=-math.inf),
         "\\Aeps = \u221e, \u2212\u221e\\Z"),
    Case("notebooks", "pandas' missing values in a page's prose, said not refused",
         _said("{a}; {b}", a=pd.NA, b=pd.NaT), r"\Anot run at this tier; not run at this tier\Z"),
    Case("notebooks", "a claims folder that cannot be created", _unwritable_claims,
         r"claims_dir=.*cannot be created.*pass a folder"),
    Case("notebooks", "claims_dir 0 from the command line (an int)", _chapter(claims_dir=0),
         r"claims_dir=0 is not a folder path.*pass a string.*\./0"),
    Case("notebooks", "claims_dir None from the command line", _chapter(claims_dir=None),
         r"claims_dir=None is not a folder path.*pass a string"),
    Case("notebooks", "claims_dir True from the command line", _chapter(claims_dir=True),
         r"claims_dir=True is not a folder path.*pass a string"),
    Case("notebooks", "an existing claims folder that cannot be written",
         _unwritable_existing_claims, r"claims_dir=.*cannot be written.*pass a folder"),
    Case("notebooks", "a seed of 2^63", _chapter(seed=2**63),
         r"seed=9223372036854775808 is out of range: use 0 <= seed < 2\*\*31"),
    Case("notebooks", "a seed of 2^31, just past the range", _chapter(seed=2**31),
         r"seed=2147483648 is out of range: use 0 <= seed < 2\*\*31 = 2147483648"),
    Case("notebooks", "a seed given as a string (papermill's form of a numpy integer)",
         _chapter(seed="3"), r"seed='3' is a string; pass an integer.*int\(seed\)"),
    Case("notebooks", "a boolean seed", _chapter(seed=True),
         r"seed=True must be an integer with 0 <= seed < 2\*\*31"),
    Case("notebooks", "an executed notebook cut short (truncated JSON)",
         _damaged_notebook(b'{\n "cells": [\n  {\n   "cell_type": "co'),
         r"pfa\.ipynb is not a readable notebook.*Rerun the chapter.*notebooks/pfa\.py"),
    Case("notebooks", "an executed notebook that is JSON but no notebook",
         _damaged_notebook(b"[]"), r"pfa\.ipynb is not a readable notebook.*Rerun"),
    Case("notebooks", "a tier page named by a scale with markup in it", _tier_page("<b>"),
         r"scale='<b>' cannot name a tier page.*use a tier name"),
    # the published store
    Case("store", "a manifest naming a tier that walks out of its folder (`../other/paper`)",
         _tier_out_of_folder,
         r"manifest\.json: runs\.\w+\.tier '\.\./other/paper' is not a run tier.*"
         r"git checkout -- "),
    Case("store", "a manifest lacking a section", _manifest_without_groups,
         r"manifest\.json: section 'groups' is missing.*git checkout -- "),
    Case("store", "negative CPU seconds in a manifest", _negative_cpu_seconds,
         r"manifest\.json: runs\.\w+\.cpu_seconds -3600\.0 is not a number of seconds"),
    Case("store", "a leftover temporary file of an interrupted export (`published status`)",
         _leftover_of_an_export,
         r"toy: 1 file left by an interrupted export \(\.paper\.parquet\.k3j_x9ab\.tmp\): "
         r"the next export or prune of toy removes it"),
    Case("store", "a second command writing an experiment while another holds it "
         "(`published confirm` during an export)", _store_held,
         r"another command holds the published store of toy \(export of toy, process \d+.*"
         r"wait for it to finish, then run this one again"),
    Case("store", "a manifest naming a runner that no longer exists (`published confirm`)",
         _renamed_runner,
         r"manifest\.json: runs\.\w+\.runner 'renamed_runner': module \S+ has no function "
         r"'renamed_runner'.*make publish"),
    Case("store", "FEDLIB_PUBLISHED_DIR naming a folder that does not exist",
         _published_dir_absent,
         r"the published store .*no-such-folder \(FEDLIB_PUBLISHED_DIR\) does not exist: "
         r"unset FEDLIB_PUBLISHED_DIR"),
    Case("store", "a manifest that is not JSON, on export (which will not write over it)",
         _export_over_invalid_json,
         r"manifest\.json is not valid JSON .*git checkout -- .*remove the experiment's "
         r"folder \(rm -r .*toy\) and export its runs again"),
    Case("store", "a manifest written by a newer fedlib (layout `fedlib-published/4`)",
         _newer_layout,
         r"written in layout 'fedlib-published/4', which a newer fedlib writes .*update this "
         r"checkout to the fedlib that wrote it"),
    Case("store", "table rows no manifest entry names, left by a write killed midway "
         "(`published status`)", _rows_no_entry_names,
         r"toy: paper\.parquet holds 1 row of 1 run that no manifest entry names, left by an "
         r"interrupted write: the next export, prune, compact or confirm of toy removes them"),
    Case("store", "an edit that changes the results of one rare method only "
         "(`published confirm`)", _one_method_changed,
         r'of toy \(paper tier, stratum method="rare"\).*alters results.*nothing was '
         r"written"),
    Case("store", "stale runs recorded on another machine, after an edit that changes no "
         "result (`published confirm`)", _another_machine,
         r"toy: 3 of 3 stale runs confirmed .*checked by computing 1 of their 1 strata again.*"
         r"compared within the tolerance for another machine"),
    Case("runs", "a published run whose config was edited in the manifest, computing off",
         _edited_config_without_computing,
         r"1 of 3 runs of toy are published but damaged \(.*manifest\.json records for a run "
         r"a config that does not give its key"),
    Case("runs", "a damaged published run, computing off (`FEDLIB_COMPUTE=0`)",
         _damaged_without_computing,
         r"1 of 3 runs of toy are published but damaged \(.*paper\.parquet does not match "
         r"its digest\).*git checkout -- "),
    Case("runs", "cached runs without a tier, on export (`published export`)",
         _export_without_tier,
         r"toy: 3 cached runs have no tier \(computed through the Python API without a "
         r"tier\): not exported; compute them through their chapter"),
    Case("runs", "an unreadable cached run, on export (a warning)",
         _export_unreadable_cache_file,
         r"cached run .*\.parquet cannot be read .*: not exported; delete it"),
    Case("runs", "a ray_address where nothing answers", _unreachable_ray,
         r"ray_address='127\.0\.0\.1:\d+': nothing answers at 127\.0\.0\.1:\d+ within "
         r"5 s .*ray start --head"),
]


@dataclass(frozen=True)
class Shown:
    """A value fedlib writes into a page, set to :data:`hostile.HOSTILE`: the page (its
    HTML, as the book renders it) must show it as written and make no markup of it."""

    page: str
    value: str
    render: Callable[[Path, pytest.MonkeyPatch], str]
    made: frozenset[str] = frozenset()  # elements the page makes itself


def _claims_list(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    from hostile import HOSTILE, rendered

    from fedlib.render.chapter import claims_markdown
    from fedlib.verdicts.claims import Claim

    return rendered(claims_markdown([Claim("pfa", "fig3-a", "HOLDS", "t", HOSTILE)]))


def _claims_table(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    import myst_nb
    from hostile import HOSTILE

    from fedlib.render.glue import glue_claims_table
    from fedlib.verdicts.claims import Claim

    glued = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display: glued.update(t=value))
    # A tier is a run tier's name (Claim refuses any other), so it holds no markup.
    glue_claims_table("t", [Claim("pfa", "fig3-a", "HOLDS", HOSTILE, HOSTILE,
                                  paper_value=HOSTILE, scale="quick")])
    return glued["t"].to_html()


def _rerun_box(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    from hostile import HOSTILE

    import fedlib.render.notebook
    from fedlib.render.chapter import rerun_box

    monkeypatch.setattr(fedlib.render.notebook, "parameter_notes",
                        lambda source: [("seed", HOSTILE, HOSTILE)])
    return rerun_box(HOSTILE, "quick", None)


def _left_out(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    from hostile import HOSTILE, rendered

    from fedlib.render.glue import left_out_note

    return rendered(left_out_note(["fig4"], {"fig4": HOSTILE}))


def _toy_chapter(tmp: Path) -> Path:
    source = tmp / "toy.py"
    source.write_text('# %% [markdown]\n# # A toy chapter\n\n# %% tags=["parameters"]\n'
                      'scale = "paper"  # tier\nclaims_dir = ""  # claims\n')
    return source


def _tier_note(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    from hostile import HOSTILE, rendered

    from fedlib.render.execute import main

    main([str(_toy_chapter(tmp)), str(tmp / "toy.ipynb"), "--note", HOSTILE])
    return rendered((tmp / "toy.md").read_text())


def _missing_runs(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    import papermill
    from hostile import HOSTILE, rendered
    from papermill.exceptions import PapermillExecutionError

    from fedlib.render.execute import execute_published

    def missing(*args, **kwargs) -> None:
        raise PapermillExecutionError(1, 1, "", "MissingRunsError", HOSTILE, [])

    monkeypatch.setattr(papermill, "execute_notebook", missing)
    execute_published(_toy_chapter(tmp), tmp / "toy.ipynb",
                      {"scale": HOSTILE, "claims_dir": str(tmp / "claims")})
    return rendered((tmp / "toy.md").read_text())


def _scorecard_not_drawn(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    from hostile import HOSTILE, rendered

    from fedlib.render import scorecard
    from fedlib.verdicts.claims import ScorecardError

    def refused(*args: object) -> NoReturn:
        raise ScorecardError(HOSTILE)

    monkeypatch.setattr(scorecard, "checked_claims", refused)
    assert scorecard.main([str(tmp), "--markdown", str(tmp / "scorecard.md"),
                           "--not-drawn-page"]) == 0
    return rendered((tmp / "scorecard.md").read_text())


def _export_leftovers(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    from hostile import HOSTILE, rendered

    import fedlib.runs.published
    from fedlib.render.status import published_section

    monkeypatch.setenv("FEDLIB_PUBLISHED_DIR", str(tmp / "published"))
    monkeypatch.setattr(fedlib.runs.published, "leftover_lines", lambda root=None: [HOSTILE])
    return rendered("\n".join(published_section()))


SHOWN: list[Shown] = [
    Shown("chapter", "a claim's evidence, in the list of claims", _claims_list,
          frozenset({"li", "code"})),
    Shown("chapter", "a claim's statement, evidence and paper value, in the claims table",
          _claims_table, frozenset({"table", "td"})),
    Shown("chapter", "a parameter's default and meaning, and the notebook's name, in the "
          "rerun box", _rerun_box, frozenset({"table", "td", "code"})),
    Shown("chapter", "why a figure's runs were left out, in the note in its place", _left_out,
          frozenset({"code"})),
    Shown("tier page", "the note of a build that does not render the tier (`--note`)",
          _tier_note, frozenset({"h1"})),
    Shown("tier page", "why its runs are missing, and the tier in the command to compute "
          "them", _missing_runs, frozenset({"h1", "code"})),
    Shown("scorecard", "why it cannot be drawn (the names of claims files, keys, notebooks), "
          "on the page in its place", _scorecard_not_drawn, frozenset({"h1", "code"})),
    Shown("status page", "the folder and file names of what an interrupted export left "
          "behind", _export_leftovers, frozenset({"li", "code"})),
]


@pytest.fixture(autouse=True)
def _restore_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cases may set environment variables; the fixture puts them back."""
    for name in ("FEDLIB_DATA_MIRROR", "FEDLIB_OFFLINE"):
        monkeypatch.setenv(name, __import__("os").environ.get(name, ""))
    monkeypatch.setenv("FEDLIB_OFFLINE", "1")


def test_there_are_enough_cases_and_every_area_is_covered() -> None:
    assert len(CASES) >= 40
    assert {c.area for c in CASES} == {"datasets", "privacy", "algorithms", "runs", "notebooks",
                                       "store"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.given)
def test_bad_input_is_refused_naming_the_problem(case: Case, tmp_path: Path) -> None:
    import re

    from fedlib.data.errors import DatasetError

    # A Warning: a case whose call turns the warning it is about into an error.
    with pytest.raises((ValueError, LookupError, OSError, RuntimeError, DatasetError,
                        Warning)) as info:
        case.call(tmp_path)
    assert type(info.value) not in (KeyError, IndexError), "a bare lookup error says nothing"

    assert re.search(case.says, str(info.value), flags=re.S), (
        f"{case.given}: the error says {str(info.value)!r}")


def test_bad_input_loses_nothing_already_written(tmp_path: Path) -> None:
    from fedlib.runs.cache import ResultStore
    from fedlib.runs.keys import run_key
    from fedlib.sweeps import sweep
    from fedlib.verdicts.claims import Claim, write_claims

    def runner(configs):
        return [__import__("pandas").DataFrame({"y": [c["x"]]}) for c in configs]

    finished = sweep("kept", [{"x": 1}, {"x": 2}], runner, workers=1, progress=False)
    store = ResultStore("kept")
    before = {p.name: p.read_bytes() for p in store.folder.glob("*.parquet")}
    with pytest.raises(ValueError, match="duplicates"):
        sweep("kept", [{"x": 1}, {"x": 3}, {"x": 3}], runner, workers=1, progress=False)
    assert {p.name: p.read_bytes() for p in store.folder.glob("*.parquet")} == before
    assert store.load(run_key({"x": 1})).equals(finished.iloc[[0]][["y"]].reset_index(drop=True))

    claims = tmp_path / "ppsgd.json"
    write_claims(claims, [Claim("ppsgd", "a", "HOLDS", "t", "e")])
    written = claims.read_bytes()
    with pytest.raises(ValueError, match="duplicate claim ids"):
        write_claims(claims, [Claim("ppsgd", "a", "HOLDS", "t", "e")] * 2)
    assert claims.read_bytes() == written
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    json.loads(written)


@pytest.mark.parametrize("shown", SHOWN, ids=lambda s: s.value)
def test_a_value_with_markup_is_shown_as_written(shown: Shown, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("myst_parser")
    pytest.importorskip("myst_nb")
    from hostile import HOSTILE, shown_as_written, text_of

    page = shown.render(tmp_path, monkeypatch)
    assert shown_as_written(page, HOSTILE, allowed=set(shown.made)), (
        f"{shown.value}: the page shows {text_of(page)!r} as {page!r}")
    assert "<script" not in page and page.count("<h1") <= 1


def markdown_table() -> str:
    """The cases as the book lists them (the pattern each error message must match), then
    the values written into pages that are shown as written."""
    lines = ["| area | bad input | the error message matches |", "|---|---|---|"]
    for case in CASES:
        says = case.says.replace("|", "\\|")
        lines.append(f"| {case.area} | {case.given} | `{says}` |")
    lines += ["", "Values that fedlib writes into the book's pages are escaped. Set to a "
              "value holding HTML (`<script>`), a table's `|`, backticks, a link, math, "
              "emphasis, a MyST role and line breaks, each of these shows it as written "
              "and makes no markup of it (and every page written from values makes no "
              "more markup of a fence of backticks, tildes or colons, a MyST directive, "
              "target or comment, `$$` math, a table, a heading or indented code than of "
              "plain words):", "", "| page | value |", "|---|---|"]
    lines += [f"| {shown.page} | {shown.value} |" for shown in SHOWN]
    return "\n".join(lines) + "\n"


def test_the_books_table_of_cases_is_generated_from_this_module() -> None:
    assert TABLE.read_text() == markdown_table(), (
        f"regenerate it: python tests/test_bad_inputs.py > {TABLE.relative_to(ROOT)}")


if __name__ == "__main__":
    sys.stdout.write(markdown_table())
