"""Speed benchmarks, each a ratio against a baseline measured in the same run.

``python -m fedlib.bench`` (or ``make bench``) prints a readable report and one
machine-readable line per workload: ``ratio <workload> <what>/<baseline> <x>``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence

import torch

from fedlib.data.synthetic import AdditiveSyntheticTask
from fedlib.experiments import ppsgd_synthetic
from fedlib.ppsgd import PPSGDConfig, run_synthetic


def _best_time(fn: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def bench_ppsgd_grid(iterations: int, repeats: int) -> float:
    """Runs per minute on the quick-tier Figure 1a grid (one noise level): all
    configurations in one vectorized pass vs the same configurations one by one."""
    grid = ppsgd_synthetic.grid("quick")
    task = AdditiveSyntheticTask(n_users=grid.n_users, dim=grid.dim)
    configs = [
        PPSGDConfig(step=step, alpha_q=alpha_q, noise_multiplier=10.0)
        for alpha_q in grid.alpha_q for step in grid.steps
    ]

    def vectorized() -> None:
        run_synthetic(task, configs, iterations, dtype=torch.float32)

    def one_by_one() -> None:
        for config in configs:
            run_synthetic(task, [config], iterations, dtype=torch.float32)

    t_vec = _best_time(vectorized, repeats)
    t_one = _best_time(one_by_one, repeats)
    per_min = lambda seconds: 60.0 * len(configs) / seconds  # noqa: E731
    print(f"ppsgd-grid: {len(configs)} runs of N={grid.n_users}, d={grid.dim}, "
          f"{iterations} iterations, torch threads {torch.get_num_threads()}")
    print(f"  vectorized  {t_vec:8.2f} s  {per_min(t_vec):8.1f} runs/min")
    print(f"  one-by-one  {t_one:8.2f} s  {per_min(t_one):8.1f} runs/min")
    ratio = t_one / t_vec
    print(f"ratio ppsgd-grid vectorized/one-by-one {ratio:.2f}")
    return ratio


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=30,
                        help="iterations per run (the ratio does not depend on it)")
    parser.add_argument("--repeats", type=int, default=2, help="best of this many timings")
    args = parser.parse_args(argv)
    bench_ppsgd_grid(args.iterations, args.repeats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
