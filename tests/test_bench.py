"""The benchmark's report: one machine-readable ratio line per workload and baseline."""

from __future__ import annotations

import re

import pytest
import torch

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


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal where torch sees "
                    "no GPU; tests/nn/test_dpsgd_cuda.py checks the engine on one")
def test_dpsgd_bench_on_cuda_without_a_gpu_says_what_to_do() -> None:
    with pytest.raises(SystemExit, match="torch sees no CUDA device here"):
        bench.main(["--only", "dpsgd-logr", "--device", "cuda"])


def test_dpsgd_gpu_report_has_the_ratio_line(monkeypatch, capsys) -> None:
    """The GPU report's arithmetic, with the device's clock and allocator counters
    replaced by fixed timings (the engine twice as slow as non-private training)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 2**20)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: 3 * 2**20)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "a test GPU")
    monkeypatch.setattr(bench, "_dpsgd_problem", lambda *a: tuple(_Stays() for _ in range(5)))
    monkeypatch.setattr(bench, "_dpsgd_runner", lambda variant, problem, n: lambda: None)
    monkeypatch.setattr(bench, "_interleaved_best_times",
                        lambda runs, repeats: {"engine": 0.2, "non-private": 0.1})
    ratio = bench.bench_dpsgd_gpu("cnn", clients=4, steps=5, batch=2, examples=10, repeats=1)
    out = capsys.readouterr().out
    assert ratio == pytest.approx(0.5)
    assert re.search(r"^ratio dpsgd-cnn engine/non-private \(cuda\) 0\.50$", out, re.M)
    assert re.search(r"^  engine +0\.2000 +200 +3 MB +2 MB$", out, re.M)


class _Stays:
    """A stand-in for a workload's tensors that stays where it is when asked to move."""

    def to(self, device: object) -> _Stays:
        return self
