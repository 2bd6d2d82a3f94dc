"""The benchmark's report: one machine-readable ratio line per workload and baseline."""

from __future__ import annotations

import re

import pytest

from fedlib import bench


@pytest.mark.parametrize("threads", ["1", "2"])
def test_dpsgd_bench_prints_every_variant_and_the_ratio_lines(threads, capsys) -> None:
    bench.main(["--only", "dpsgd-logr", "--clients", "3", "--steps", "2", "--batch", "2",
                "--examples", "6", "--loop-clients", "2", "--dpsgd-repeats", "1",
                "--threads", threads])
    out = capsys.readouterr().out
    variant = r"engine(?:, [a-z]+(?: [a-z]+)*)?|opacus-loop|plain-loop"
    rows = re.findall(rf"^  ({variant}) +(\d+) ", out, re.M)
    variants = {name: int(clients) for name, clients in rows}
    assert variants["engine"] == 3 and variants["opacus-loop"] == 2
    assert variants["plain-loop"] == 2
    # The engine's other choice about the helper thread is timed too, in its own process.
    assert {"engine, helper thread", "engine, no helper thread"} & set(variants)
    for baseline in ("non-private", "opacus-loop", "plain-loop"):
        match = re.search(rf"^ratio dpsgd-logr engine/{baseline} (\S+)$", out, re.M)
        assert match is not None and float(match.group(1)) > 0


@pytest.mark.parametrize(("model", "loops"), [("cnn", ("opacus-loop", "plain-loop")),
                                              ("cifar-cnn", ("opacus-loop", "plain-loop")),
                                              ("lstm", ("plain-loop",))])
def test_dpsgd_bench_prints_the_ratio_to_non_private_training_and_both_peaks(
        model: str, loops: tuple[str, ...], capsys) -> None:
    bench.main(["--only", f"dpsgd-{model}", "--clients", "2", "--steps", "2", "--batch", "2",
                "--examples", "4", "--loop-clients", "1", "--dpsgd-repeats", "1",
                "--threads", "1", "--length", "6"])
    out = capsys.readouterr().out
    rows = dict(re.findall(r"^  (non-private|engine) +(\d+) ", out, re.M))
    assert rows == {"engine": "2", "non-private": "2"}
    for baseline in ("non-private", *loops):
        match = re.search(rf"^ratio dpsgd-{model} engine/{baseline} (\S+)$", out, re.M)
        assert match is not None and float(match.group(1)) > 0
    assert "ratio dpsgd-lstm engine/opacus-loop" not in out
    match = re.search(rf"^memory dpsgd-{model} engine (\d+) MB non-private (\d+) MB$", out,
                      re.M)
    assert match is not None and min(int(match.group(1)), int(match.group(2))) > 0


def test_dpditto_step_bench_prints_its_variants_and_ratio_lines(capsys) -> None:
    bench.main(["--only", "dpditto-step", "--ditto-rows", "4", "--ditto-batch", "3",
                "--loop-clients", "2", "--dpsgd-repeats", "1"])
    out = capsys.readouterr().out
    rows = dict(re.findall(r"^  (engine|formed-gradient|torch-loop) +(\d+) rows", out, re.M))
    assert rows == {"engine": "4", "formed-gradient": "4", "torch-loop": "2"}
    for baseline in ("formed-gradient", "torch-loop"):
        match = re.search(rf"^ratio dpditto-step engine/{baseline} (\S+)$", out, re.M)
        assert match is not None and float(match.group(1)) > 0
