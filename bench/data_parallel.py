"""W12: the data-parallel MLP -- W2's model trained by 2 ranks through oar.distributed.launch (oar only).

    python bench/data_parallel.py W12 --threads 1            # W12's table, then the JSON bench/run.py reads
    python bench/data_parallel.py W12 --threads 1 --quick    # a few steps: the code paths, not the numbers

W2's MLP (784-512-512-10, the suite's initial weights and inputs) takes Adam steps on a global
batch of 128: one process at one thread, and 2 ranks of ``oar.DataParallel`` started by
``python -m oar.distributed.launch --nproc_per_node 2`` at one thread each, each on its half (64)
of the same batch. Reported, per round (a round runs the single process, then the 2-rank job, so a
slow moment of the machine hits both): samples per second of each and their ratio (target:
``TARGET_SPEEDUP``); where the ranks' time goes -- a rank's step, and the same step at batch 64
without DataParallel while the other rank does the same (compute alone, under the same load); and
the bandwidth (bytes reduced per second) of ``oar.distributed.all_reduce`` next to mpi4py's
``Allreduce`` on the same buffer, at the MLP's gradient size and at 4 MiB.
"""

from __future__ import annotations

import pin_threads

if __name__ == "__main__":
    pin_threads.from_argv()  # before numpy loads: it reads the thread variables once

import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import suite  # noqa: E402
from paddle_api import PaddleAPIWorkloads  # noqa: E402
from suite import Case  # noqa: E402
from worker_oar import details, set_threads  # noqa: E402

import oar  # noqa: E402

RANKS = 2
TARGET_SPEEDUP = 1.6  # 2 ranks on 2 cores against 1 process on 1 core
STEPS, WARMUP, ROUNDS = 30, 5, 3
QUICK = {"steps": 3, "warmup": 1, "rounds": 1}
ALL_REDUCE_REPEATS = 20
MIB = 1 << 20
CASES = {
    "one": f"MLP Adam step, global batch {suite.MLP_BATCH}: 1 process",
    "ranks": f"MLP Adam step, global batch {suite.MLP_BATCH}: {RANKS} ranks x {suite.MLP_BATCH // RANKS}",
    "speedup": f"{RANKS} ranks / 1 process (target {TARGET_SPEEDUP}x)",
    "rank_step": f"a rank's DataParallel step (batch {suite.MLP_BATCH // RANKS})",
    "rank_compute": f"the same step without DataParallel, both ranks computing (batch {suite.MLP_BATCH // RANKS})",
}


def _all_reduce_cases(size: str) -> tuple[str, str]:
    return f"all_reduce {size}: oar.distributed.all_reduce", f"all_reduce {size}: mpi4py Allreduce"


def training(model, batch: slice):
    """W2's Adam step on rows ``batch`` of W2's inputs."""
    data = suite.inputs("W2")
    optimizer = oar.optimizer.Adam(parameters=model.parameters(), **suite.ADAM)
    x, label = oar.to_tensor(data["x"][batch]), oar.to_tensor(data["label"][batch])

    def step():
        loss = oar.nn.functional.cross_entropy(model(x), label)
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
        return loss

    return step


def steps_per_second(step, steps: int, warmup: int, before=lambda: None) -> float:
    for _ in range(warmup):
        step()
    before()
    started = time.perf_counter()
    for _ in range(steps):
        step()
    before()
    return steps / (time.perf_counter() - started)


def gradient_bytes() -> int:
    model = PaddleAPIWorkloads(oar).model("mlp")
    return sum(int(np.prod(p.shape)) * 4 for p in model.parameters())


# -- inside a rank ------------------------------------------------------------------------------
def rank_job(quick: bool) -> dict:
    """One rank's part: timings of its DataParallel steps, of the same steps without it, and of the
    all-reduces. Rank 0 returns what the ranks measured (the slowest rank's figures)."""
    # In the ranks only: mpi4py needs the MPI job the launcher started.
    from mpi4py import MPI

    import oar.distributed as dist

    dist.init_parallel_env()
    rank, nranks = dist.get_rank(), dist.get_world_size()
    steps, warmup = (QUICK["steps"], QUICK["warmup"]) if quick else (STEPS, WARMUP)
    share = suite.MLP_BATCH // nranks
    rows = slice(rank * share, (rank + 1) * share)
    workloads = PaddleAPIWorkloads(oar)
    result: dict = {}
    parallel = training(oar.DataParallel(workloads.model("mlp")), rows)
    result["rank_step"] = 1e3 / steps_per_second(parallel, steps, warmup, dist.barrier)
    alone = training(workloads.model("mlp"), rows)
    result["rank_compute"] = 1e3 / steps_per_second(alone, steps, warmup, dist.barrier)
    comm = MPI.COMM_WORLD
    for label, nbytes in (("gradients", gradient_bytes()), ("4 MiB", 4 * MIB)):
        array = np.ones(nbytes // 4, np.float32)
        tensor = oar.to_tensor(array)
        repeats = 2 if quick else ALL_REDUCE_REPEATS
        oar_rate = nbytes * steps_per_second(lambda t=tensor: dist.all_reduce(t), repeats, 2, dist.barrier) / 1e9
        mpi_rate = nbytes * steps_per_second(lambda a=array: comm.Allreduce(MPI.IN_PLACE, a), repeats, 2,
                                             comm.Barrier) / 1e9
        result[label] = [oar_rate, mpi_rate, nbytes]
    gathered: list = []
    dist.all_gather_object(gathered, result)
    slowest = {key: max(r[key] for r in gathered) for key in ("rank_step", "rank_compute")}
    return {**gathered[0], **slowest, "samples_per_s": suite.MLP_BATCH * 1e3 / slowest["rank_step"]}


# -- the driver ---------------------------------------------------------------------------------
def launch_ranks(quick: bool) -> dict:
    """Run ``rank_job`` as 2 ranks of 1 thread each through oar's launcher; rank 0's result."""
    env = {**os.environ, **pin_threads.thread_environment(1), "OAR_DISTRIBUTED_TIMEOUT": "120"}
    here = Path(__file__).resolve()
    command = [sys.executable, "-m", "oar.distributed.launch", "--nproc_per_node", str(RANKS), "--log_dir",
               str(Path(os.environ.get("TMPDIR", "/tmp")) / "oar-bench-w12-log"), str(here), "W12", "--threads", "1",
               "--rank-job", *(["--quick"] if quick else [])]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=here.parent, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"the {RANKS}-rank job failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    line = next(line for line in reversed(done.stdout.splitlines()) if line.startswith("W12 "))
    return json.loads(line[len("W12 "):])


def measure(quick: bool) -> list[Case]:
    rounds = QUICK["rounds"] if quick else ROUNDS
    steps, warmup = (QUICK["steps"], QUICK["warmup"]) if quick else (STEPS, WARMUP)
    one_step = training(PaddleAPIWorkloads(oar).model("mlp"), slice(None))
    samples: dict[str, list[float]] = {}
    for _ in range(rounds):
        one = suite.MLP_BATCH * steps_per_second(one_step, steps, warmup)
        ranks = launch_ranks(quick)
        for key, value in (("one", one), ("ranks", ranks["samples_per_s"]), ("speedup", ranks["samples_per_s"] / one),
                           ("rank_step", ranks["rank_step"]), ("rank_compute", ranks["rank_compute"])):
            samples.setdefault(key, []).append(value)
        for label in ("gradients", "4 MiB"):
            oar_rate, mpi_rate, nbytes = ranks[label]
            size = f"{nbytes / MIB:.2f} MiB ({label})" if label == "gradients" else label
            for case, rate in zip(_all_reduce_cases(size), (oar_rate, mpi_rate)):
                samples.setdefault(case, []).append(rate)
    units = {"one": "samples/s", "ranks": "samples/s", "speedup": "x", "rank_step": "ms", "rank_compute": "ms"}
    cases = [Case("W12", CASES[key], units[key], samples[key], higher_is_better=key in ("one", "ranks", "speedup"))
             for key in units]
    cases += [Case("W12", case, "GB/s", values, higher_is_better=True) for case, values in samples.items()
              if case not in units]
    return cases


def unavailable(reason: str) -> list[Case]:
    return [Case("W12", case, "samples/s", unavailable=reason) for case in (CASES["one"], CASES["ranks"])]


def main(argv: list[str] | None = None) -> int:
    args = suite.parse_worker_args(__doc__.splitlines()[0], argv=argv,
                                   extend=lambda p: p.add_argument("--rank-job", action="store_true",
                                                                   help="run one rank's part (the launcher passes it)"))
    thread_control = set_threads(args.threads)
    if args.extra.rank_job:
        result = rank_job(args.quick)
        if int(os.environ.get("PADDLE_TRAINER_ID", "0")) == 0:
            print("W12 " + json.dumps(result), flush=True)
        return 0
    try:
        import mpi4py  # noqa: F401 - the ranks need it

        import oar.distributed  # noqa: F401
    except ImportError as error:
        cases = unavailable(f"oar-distributed or mpi4py is not installed: {error}")
    else:
        cases = measure(args.quick)
    for case in cases:
        value = f"{suite.median(case.samples):.3g}" if case.samples else case.unavailable
        print(f"| W12 | {case.case} | {case.unit} | {value} |")
    suite.emit("oar", oar.__version__, details(thread_control), args.threads, cases)
    return 0


if __name__ == "__main__":
    sys.exit(main())
