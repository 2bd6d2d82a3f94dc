"""Speed benchmarks, each a ratio against a baseline measured in the same run.

``python -m fedlib.bench`` (or ``make bench``) prints a readable report and one
machine-readable line per workload: ``ratio <workload> <what>/<baseline> <x>``.

Workloads (``--only`` picks some):

* ``ppsgd-grid``: the vectorized PPSGD grid against its configurations one by one;
* ``dpsgd-logr``, ``dpsgd-cnn``, ``dpsgd-cifar-cnn``, ``dpsgd-lstm``: local DP-SGD of
  40 federated clients (PFA's client update on random data shaped as the paper's:
  MNIST for LogR and the 2-layer CNN, CIFAR-10 for the 4-layer CNN, IMDb reviews of
  word ids for the LSTM with a 10,000-word vocabulary and 32-wide embedding) with
  :func:`fedlib.nn.dpsgd.local_dpsgd` against non-private training of the same model
  on the same examples (one batched torch SGD step on all clients' examples of a
  local step: the cost DP-SGD is measured against), the per-client Opacus loop and
  the per-client plain-torch loop of :mod:`fedlib.nn.dpsgd_reference` (the LSTM has
  no Opacus loop: Opacus has no per-example rule for its parameters): examples per
  second (timed in turns in one process) and peak resident memory (one run per
  variant in a fresh process). A ``ceiling`` line gives the ratio the engine would
  reach were everything but its Gaussian noise (M*P values per step, drawn in any
  case) as cheap as the non-private step: non-private time / (non-private time +
  the time of the noise alone). Where non-private training already runs the
  CPU's matrix units near their peak, the engine cannot pass it by much.
  The engine is also timed, in a fresh process of its own, with the opposite
  of its default choice about the helper thread that prepares the next step
  (see :func:`fedlib.nn.dpsgd.spare_core`): once that thread has run, every
  parallel operation of its process is slower on a fully used CPU, so it must
  not share a process with the other timings.
  With ``--device cuda`` these workloads run on the GPU instead: the engine
  against non-private training only (the per-client loops launch tiny kernels
  one client at a time and say nothing of the engine there), timed with the device
  synchronised, peak memory as torch's allocator on the device saw it.
* ``dpditto-step``: DP-Ditto's batched local SGD step (:func:`fedlib.papers.dpditto.
  algorithm.sgd_step`, the update accumulated inside the matrix products, the
  proximal pull in one pass) on many runs' clients at once (MNIST DNN rows) against
  the same step with the gradient formed first and added to the parameters, and
  against a per-row loop of a torch module with autograd: steps per second of one
  row, plain and proximal steps alternating.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence

import torch

from fedlib.runs.errors import DEBUG_FLAG, DEBUG_HELP, run_command


def _best_time(fn: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _interleaved_best_times(runs: dict[str, Callable[[], object]], repeats: int
                            ) -> dict[str, float]:
    """Best time of each run over ``repeats`` rounds that run each of them once in turn
    (the load of a shared machine then hits them alike)."""
    times = dict.fromkeys(runs, float("inf"))
    for _ in range(repeats):
        for name, run in runs.items():
            times[name] = min(times[name], _best_time(run, 1))
    return times


def bench_ppsgd_grid(iterations: int, repeats: int) -> float:
    """Runs per minute on the quick-tier Figure 1a grid (one noise level): all
    configurations in one vectorized pass vs the same configurations one by one."""
    # Imported here: the DP-SGD worker processes start faster without them.
    from fedlib.data.synthetic import AdditiveSyntheticTask
    from fedlib.papers.ppsgd import experiment as ppsgd
    from fedlib.papers.ppsgd.algorithm import PPSGDConfig, run_synthetic

    grid = ppsgd.tier("quick").synthetic
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


DPSGD_MODELS = ("logr", "cnn", "cifar-cnn", "lstm")
DPSGD_VARIANTS = ("engine", "non-private", "opacus-loop", "plain-loop")
DPSGD_LOOPS = {"lstm": ("plain-loop",)}
"""The per-client loops each model is timed against (both by default)."""
LSTM_VOCABULARY, LSTM_WIDTH = 10_000, 32
"""The IMDb LSTM of PFA's Figure 5: vocabulary and embedding width."""
ENGINE_PREFETCH = {"engine": None, "engine, helper thread": True,
                   "engine, no helper thread": False}
"""The engine's variants: its default, and either choice of the prefetching helper thread."""
_DPSGD_LR, _DPSGD_CLIP = 0.05, 1.0


def _dpsgd_variants(model_name: str) -> tuple[str, ...]:
    """The variants timed for a model: the engine, non-private training, its loops."""
    loops = DPSGD_LOOPS.get(model_name, ("opacus-loop", "plain-loop"))
    return ("engine", "non-private", *loops)


def _dpsgd_data_name(model_name: str, length: int) -> str:
    """What the examples of a model's workload look like, for the report."""
    if model_name == "lstm":
        return f"{length} word ids of {LSTM_VOCABULARY:,}, 2 classes"
    if model_name == "cifar-cnn":
        return "3x32x32, 10 classes"
    return "1x28x28, 10 classes"


def _dpsgd_problem(model_name: str, clients: int, steps: int, batch: int, examples: int,
                   length: int = 100):
    """Model, data, batches and noise multipliers of a DP-SGD workload (seeded);
    ``length``: words per review of the LSTM."""
    from fedlib.nn.dpsgd import draw_batches
    from fedlib.nn.models import Cifar10CNN, ImdbLSTM, LogisticRegression, PfaCNN

    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    if model_name == "lstm":
        model: torch.nn.Module = ImdbLSTM(LSTM_VOCABULARY, LSTM_WIDTH)
        x = torch.randint(0, LSTM_VOCABULARY, (clients, examples, length),
                          generator=gen).float()
        classes = 2
    else:
        model = {"logr": LogisticRegression, "cnn": PfaCNN,
                 "cifar-cnn": Cifar10CNN}[model_name]()
        shape = (3, 32, 32) if model_name == "cifar-cnn" else (1, 28, 28)
        x = torch.randn((clients, examples, *shape), generator=gen)
        classes = 10
    y = torch.randint(0, classes, (clients, examples), generator=gen)
    batches = draw_batches(clients, examples, steps, batch, gen)
    noise_multipliers = torch.linspace(0.5, 5.0, clients)  # heterogeneous budgets
    return model, x, y, batches, noise_multipliers


def _dpsgd_runner(variant: str, problem, n_clients: int) -> Callable[[], object]:
    """One run of a variant on the first ``n_clients`` clients of ``problem``."""
    from fedlib.nn.dpsgd import local_dpsgd
    from fedlib.nn.dpsgd_reference import opacus_local_dpsgd, plain_local_dpsgd

    model, x, y, batches, nm = problem
    data = (x[:n_clients], y[:n_clients], batches[:n_clients])
    gen = torch.Generator().manual_seed(2)
    if variant == "non-private":
        return lambda: non_private_training(model, *data, _DPSGD_LR)
    if variant in ENGINE_PREFETCH:
        return lambda: local_dpsgd(model, None, *data, _DPSGD_LR, _DPSGD_CLIP, nm[:n_clients],
                                   gen, prefetch=ENGINE_PREFETCH[variant])
    loop = {"opacus-loop": opacus_local_dpsgd, "plain-loop": plain_local_dpsgd}[variant]
    return lambda: loop(model, None, *data, _DPSGD_LR, _DPSGD_CLIP, nm[:n_clients], gen)


def _noise_runner(problem, n_clients: int, steps: int) -> Callable[[], object]:
    """The Gaussian noise of a workload alone, drawn as the engine draws it: one
    (M, P) buffer per local step, each client from its own generator."""
    from fedlib.nn.dpsgd import _client_generators, _draw_noise

    model, _, _, _, nm = problem
    size = sum(p.numel() for p in model.parameters())
    noise = torch.empty(n_clients, size)

    def draw() -> None:
        generators = _client_generators(torch.Generator().manual_seed(2), nm[:n_clients],
                                        noise.device)
        for _ in range(steps):
            _draw_noise(noise, generators)

    return draw


def non_private_training(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor,
                         batches: torch.Tensor, lr: float) -> torch.nn.Module:
    """The non-private cost of a DP-SGD workload: one copy of ``model`` trained with one
    torch SGD step (autograd, mean cross-entropy) per local step on the examples of
    that step of all clients together (M*B of them, gathered as the engine gathers
    them). Returns the trained copy."""
    net = copy.deepcopy(model)
    optimizer = torch.optim.SGD(net.parameters(), lr=lr)
    n_clients, n_examples = y.shape
    rows, labels = x.reshape(n_clients * n_examples, *x.shape[2:]), y.reshape(-1)
    offsets = (torch.arange(n_clients, device=batches.device) * n_examples)[:, None]
    for t in range(batches.shape[1]):
        idx = (batches[:, t] + offsets).view(-1)
        optimizer.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(net(rows[idx]), labels[idx]).backward()
        optimizer.step()
    return net


def _status_mb(field: str) -> float | None:
    """A memory line of /proc/self/status (Linux) in MiB, or None."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024.0  # kB
    except OSError:
        pass
    return None


def _peak_rss_mb() -> float:
    """Peak resident memory of this process in MiB."""
    peak = _status_mb("VmHWM")
    if peak is not None:
        return peak
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def dpsgd_memory_worker(spec: dict) -> dict:
    """Peak memory of one run of one DP-SGD variant, measured in this (fresh) process.

    ``spec``: model, variant, clients, steps, batch, examples, run_clients,
    threads and, optionally, repeats. Returns the resident memory before the
    run and the peak (MiB); with ``repeats``, also the best time of that many
    further runs (``seconds``).
    """
    if spec["threads"] > 0:
        torch.set_num_threads(spec["threads"])
    problem = _dpsgd_problem(spec["model"], spec["clients"], spec["steps"], spec["batch"],
                             spec["examples"], spec.get("length", 100))
    run = _dpsgd_runner(spec["variant"], problem, spec["run_clients"])
    if spec["variant"] == "opacus-loop":
        import opacus  # noqa: F401  (importing it is not part of the run)
    before = _status_mb("VmRSS")
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # restart the peak (VmHWM) from the current resident size
    if before is None:
        before = _peak_rss_mb()
    run()
    out = {"before_mb": before, "peak_mb": _peak_rss_mb()}
    if spec.get("repeats"):
        out["seconds"] = _best_time(run, spec["repeats"])
    return out


def _memory_in_fresh_process(spec: dict) -> dict:
    """Run :func:`dpsgd_memory_worker` in a new Python process."""
    done = subprocess.run(
        [sys.executable, "-m", "fedlib.bench", "--dpsgd-memory-worker", json.dumps(spec)],
        capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"DP-SGD memory worker {spec['variant']} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def bench_dpsgd(model_name: str, clients: int, steps: int, batch: int, examples: int,
                repeats: int, loop_clients: int, threads: int, length: int = 100
                ) -> dict[str, float]:
    """Examples per second and peak memory of local DP-SGD: the engine against
    non-private training and the per-client loops.

    Timings: all variants in this process, one run of each in turn per round
    (the load of a shared machine then hits them alike), best of ``repeats``
    rounds after a warm-up. Memory: one run of each variant in a fresh process.
    The per-client loops run on ``loop_clients`` clients only (their cost is
    linear in the number of clients); the engine on all of them at once.
    """
    from fedlib.nn.dpsgd import spare_core

    loop_clients = min(loop_clients, clients)
    saved_threads = torch.get_num_threads()
    if threads > 0:
        torch.set_num_threads(threads)
    try:
        other = "engine, no helper thread" if spare_core() else "engine, helper thread"
        variants = _dpsgd_variants(model_name)
        counts = {"engine": clients, "non-private": clients, "opacus-loop": loop_clients,
                  "plain-loop": loop_clients, other: clients}
        spec = {"model": model_name, "clients": clients, "steps": steps, "batch": batch,
                "examples": examples, "threads": threads, "length": length}
        memory = {v: _memory_in_fresh_process({**spec, "variant": v, "run_clients": counts[v]})
                  for v in variants}
        memory[other] = _memory_in_fresh_process(
            {**spec, "variant": other, "run_clients": clients, "repeats": repeats})
        problem = _dpsgd_problem(model_name, clients, steps, batch, examples, length)
        runs = {v: _dpsgd_runner(v, problem, counts[v]) for v in variants}
        for loop in variants[2:]:  # first-use costs of each path
            _dpsgd_runner(loop, problem, 1)()
        runs["engine"]()
        runs["non-private"]()
        runs["noise only"] = _noise_runner(problem, clients, steps)
        times = _interleaved_best_times(runs, repeats)
        noise_seconds = times.pop("noise only")
        used_threads = torch.get_num_threads()
    finally:
        torch.set_num_threads(saved_threads)
    times[other] = memory[other]["seconds"]

    name = f"dpsgd-{model_name}"
    print(f"{name}: M={clients} clients, tau={steps} local steps, batch {batch}, "
          f"{examples} examples/client ({_dpsgd_data_name(model_name, length)}), float32, "
          f"torch threads {used_threads}")
    print(f"  best of {repeats} interleaved rounds; loops timed on {loop_clients} of the "
          f"{clients} clients (their cost is linear in clients)")
    print(f"  {'variant':<25}{'clients':>8}{'s/run':>8}{'examples/s':>12}"
          f"{'peak RSS':>11}{'before':>10}{'run adds':>11}")
    rates = {}
    for variant, seconds in times.items():
        rates[variant] = counts[variant] * steps * batch / seconds
        line = f"  {variant:<25}{counts[variant]:>8}{seconds:>8.3f}{rates[variant]:>12.0f}"
        if variant in memory:
            mem = memory[variant]
            line += (f"{mem['peak_mb']:>8.0f} MB{mem['before_mb']:>7.0f} MB"
                     f"{mem['peak_mb'] - mem['before_mb']:>8.0f} MB")
        print(line)
    data_mb = problem[1].numel() * problem[1].element_size() / 2**20
    print("  (memory: resident set of a fresh process doing one run, Python, torch and the "
          f"{data_mb:.0f} MB of data included, 'before' and 'peak' during the run; "
          "non-private: one batched torch SGD step per local step on all clients' examples)")
    print(f"  (engine: {'with' if other.endswith('no helper thread') else 'without'} the "
          f"helper thread that prepares the next step, its default with {used_threads} "
          f"intra-op thread{'s' if used_threads != 1 else ''} on this CPU; '{other}' was "
          "timed in a fresh process of its own)")
    ratios = {}
    for baseline in variants[1:]:
        ratios[baseline] = rates["engine"] / rates[baseline]
        print(f"ratio {name} engine/{baseline} {ratios[baseline]:.2f}")
    # DP-SGD draws M*P Gaussian values per step whatever else it does: were the rest
    # as cheap as the non-private step, the ratio would be this.
    ceiling = times["non-private"] / (times["non-private"] + noise_seconds)
    values = counts["engine"] * steps * sum(p.numel() for p in problem[0].parameters())
    print(f"  (noise alone, as the engine draws it: {noise_seconds:.3f} s/run, "
          f"{values / noise_seconds / 1e6:.0f} million values/s)")
    print(f"ceiling {name} engine/non-private {ceiling:.2f}")
    print(f"memory {name} engine {memory['engine']['peak_mb']:.0f} MB non-private "
          f"{memory['non-private']['peak_mb']:.0f} MB")
    return ratios


def bench_dpsgd_gpu(model_name: str, clients: int, steps: int, batch: int, examples: int,
                    repeats: int, length: int = 100) -> float:
    """Examples per second and peak device memory of local DP-SGD on a CUDA device: the
    engine against non-private training of the same model on the same examples (the
    workload of :func:`bench_dpsgd`, moved to the GPU). Returns the engine's rate over
    non-private training's."""
    if not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA device here; run on a machine "
                         "with a GPU and a CUDA build of torch, or leave --device at cpu")
    gpu = torch.device("cuda")
    model, x, y, batches, nm = _dpsgd_problem(model_name, clients, steps, batch, examples,
                                              length)
    problem = (model.to(gpu), x.to(gpu), y.to(gpu), batches.to(gpu), nm.to(gpu))
    runs = {v: _dpsgd_runner(v, problem, clients) for v in ("engine", "non-private")}

    def synchronised(run: Callable[[], object]) -> Callable[[], None]:
        def timed() -> None:
            run()
            torch.cuda.synchronize(gpu)
        return timed

    peaks = {}
    for variant, run in runs.items():
        run()  # first-use costs: kernels, allocator
        torch.cuda.synchronize(gpu)
        torch.cuda.reset_peak_memory_stats(gpu)
        before = torch.cuda.memory_allocated(gpu)
        run()
        torch.cuda.synchronize(gpu)
        peaks[variant] = (before, torch.cuda.max_memory_allocated(gpu))
    times = _interleaved_best_times({v: synchronised(r) for v, r in runs.items()}, repeats)

    name = f"dpsgd-{model_name}"
    print(f"{name} on {torch.cuda.get_device_name(gpu)}: M={clients} clients, tau={steps} "
          f"local steps, batch {batch}, {examples} examples/client "
          f"({_dpsgd_data_name(model_name, length)}), float32")
    print(f"  best of {repeats} interleaved rounds, device synchronised after each run")
    print(f"  {'variant':<25}{'s/run':>8}{'examples/s':>12}{'peak on GPU':>14}{'run adds':>11}")
    rates = {}
    for variant, seconds in times.items():
        rates[variant] = clients * steps * batch / seconds
        before, peak = peaks[variant]
        print(f"  {variant:<25}{seconds:>8.4f}{rates[variant]:>12.0f}{peak / 2**20:>11.0f} MB"
              f"{(peak - before) / 2**20:>8.0f} MB")
    ratio = rates["engine"] / rates["non-private"]
    print(f"ratio {name} engine/non-private (cuda) {ratio:.2f}")
    return ratio


def bench_dpditto_step(rows: int, batch: int, loop_rows: int, repeats: int) -> dict[str, float]:
    """Row-steps per second of DP-Ditto's local step: the engine, the step through a formed
    (rows, P) gradient, and a per-row loop of a torch module (timed on ``loop_rows`` rows,
    its cost being linear in rows); each timing is one plain and one proximal step."""
    from fedlib.papers.dpditto.algorithm import make_model, sgd_step

    model = make_model("dnn", (28, 28))
    gen = torch.Generator().manual_seed(0)
    theta = torch.stack([model.init(gen) for _ in range(rows)])
    anchor = theta.mean(dim=0, keepdim=True).expand_as(theta).contiguous()
    x = torch.randn((rows, batch, 784), generator=gen)
    y = torch.randint(0, 10, (rows, batch), generator=gen)
    lr, weight, mu = 0.01, 0.5, 0.5
    loop_rows = min(loop_rows, rows)

    work = {"engine": theta.clone(), "formed-gradient": theta.clone()}  # stepped in place

    def engine() -> None:
        sgd_step(model, work["engine"], x, y, lr)
        sgd_step(model, work["engine"], x, y, lr, weight=weight, mu=mu, anchor=anchor)

    def formed_gradient() -> None:
        stepped = work["formed-gradient"]
        stepped.sub_(model.loss_grad(stepped, x, y)[1], alpha=lr)
        grad = model.loss_grad(stepped, x, y)[1]
        stepped.lerp_(anchor, lr * mu).sub_(grad, alpha=lr * weight)

    def torch_loop() -> None:
        net = torch.nn.Sequential(torch.nn.Linear(784, 100), torch.nn.ReLU(),
                                  torch.nn.Linear(100, 10))
        anchors = [q.detach().clone() for q in net.parameters()]
        for r in range(loop_rows):
            for proximal in (False, True):
                loss = torch.nn.functional.cross_entropy(net(x[r]), y[r])
                if proximal:
                    loss = weight * loss + 0.5 * mu * sum(
                        (q - a).pow(2).sum() for q, a in zip(net.parameters(), anchors,
                                                             strict=True))
                net.zero_grad()
                loss.backward()
                with torch.no_grad():
                    for q in net.parameters():
                        q.sub_(q.grad, alpha=lr)

    counts = {"engine": rows, "formed-gradient": rows, "torch-loop": loop_rows}
    runs = {"engine": engine, "formed-gradient": formed_gradient, "torch-loop": torch_loop}
    for run in runs.values():
        run()  # first-use costs
    times = _interleaved_best_times(runs, repeats)
    print(f"dpditto-step: MNIST DNN 784-100-10 ({model.n_params} parameters), {rows} rows "
          f"(runs x clients), batch {batch}, float32, torch threads {torch.get_num_threads()}")
    print(f"  best of {repeats} interleaved rounds of one plain and one proximal step; the "
          f"loop timed on {loop_rows} rows (its cost is linear in rows)")
    rates = {}
    for name, seconds in times.items():
        rates[name] = 2 * counts[name] / seconds
        print(f"  {name:<18}{counts[name]:>6} rows{seconds:>9.3f} s"
              f"{rates[name]:>11.0f} row-steps/s")
    ratios = {}
    for baseline in ("formed-gradient", "torch-loop"):
        ratios[baseline] = rates["engine"] / rates[baseline]
        print(f"ratio dpditto-step engine/{baseline} {ratios[baseline]:.2f}")
    return ratios


WORKLOADS = ("ppsgd-grid", *(f"dpsgd-{m}" for m in DPSGD_MODELS), "dpditto-step")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=WORKLOADS, default=list(WORKLOADS),
                        help="run only these workloads")
    parser.add_argument("--iterations", type=int, default=30,
                        help="ppsgd-grid: iterations per run (the ratio does not depend on it)")
    parser.add_argument("--repeats", type=int, default=2,
                        help="ppsgd-grid: best of this many timings")
    parser.add_argument("--clients", type=int, default=40, help="dpsgd: M clients")
    parser.add_argument("--steps", type=int, default=20, help="dpsgd: tau local steps")
    parser.add_argument("--batch", type=int, default=8, help="dpsgd: batch size B")
    parser.add_argument("--examples", type=int, default=1200, help="dpsgd: examples per client")
    parser.add_argument("--length", type=int, default=100,
                        help="dpsgd-lstm: words per review")
    parser.add_argument("--loop-clients", type=int, default=5,
                        help="dpsgd: clients the per-client loops are timed on")
    parser.add_argument("--threads", type=int, default=0,
                        help="dpsgd: torch intra-op threads of every variant "
                        "(0: torch's default, as the process starts)")
    parser.add_argument("--dpsgd-repeats", type=int, default=3,
                        help="dpsgd: best of this many interleaved rounds")
    parser.add_argument("--ditto-rows", type=int, default=540,
                        help="dpditto-step: rows (runs x clients) stepped at once")
    parser.add_argument("--ditto-batch", type=int, default=10,
                        help="dpditto-step: minibatch size")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="dpsgd: where the DP-SGD workloads run (cuda: the engine "
                        "against non-private training on the GPU)")
    parser.add_argument("--dpsgd-memory-worker", metavar="JSON", help=argparse.SUPPRESS)
    parser.add_argument(DEBUG_FLAG, action="store_true", help=DEBUG_HELP)
    args = parser.parse_args(argv)
    if args.dpsgd_memory_worker:
        print(json.dumps(dpsgd_memory_worker(json.loads(args.dpsgd_memory_worker))))
        return 0
    for workload in WORKLOADS:
        if workload not in args.only:
            continue
        if workload == "ppsgd-grid":
            bench_ppsgd_grid(args.iterations, args.repeats)
        elif workload == "dpditto-step":
            bench_dpditto_step(args.ditto_rows, args.ditto_batch, args.loop_clients,
                               args.dpsgd_repeats)
        elif args.device == "cuda":
            bench_dpsgd_gpu(workload.removeprefix("dpsgd-"), args.clients, args.steps,
                            args.batch, args.examples, args.dpsgd_repeats, args.length)
        else:
            bench_dpsgd(workload.removeprefix("dpsgd-"), args.clients, args.steps, args.batch,
                        args.examples, args.dpsgd_repeats, args.loop_clients, args.threads,
                        args.length)
    return 0


if __name__ == "__main__":
    raise SystemExit(run_command(main))
