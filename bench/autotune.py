"""W14, oar.incubate.autotune on the training steps W3 (LeNet, Adam) and W4 (small ResNet,
momentum): step time with kernel tuning off and on (after tuning), and what tuning cost.

    python bench/autotune.py W14 --threads 1                 # W3 and W4: the table, then the JSON bench/run.py reads
    python bench/autotune.py W4 --threads 2 --rounds 9       # one of them
    python bench/autotune.py W14 --threads 1 --quick         # one short round: the code paths

Runs the oar worker's own steps (bench/paddle_api.py) in one process. After warm-up, the tuning
range (``--tuning-steps`` steps) runs with a fresh cache file in a temporary folder, so every
shape is timed as on a first run: its overhead is those steps' time less as many median
untuned steps. Then rounds alternate a step with tuning off and one with it on (the choices
made), so that a slow moment of the machine hits both alike; prints the medians, their ratio and
the kernel chosen per shape.
"""

from __future__ import annotations

import pin_threads

pin_threads.from_argv()  # before numpy and oar load: they read the thread variables once

import os  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import suite  # noqa: E402
from suite import Case  # noqa: E402
from worker_oar import API, set_threads  # noqa: E402

import oar  # noqa: E402
from oar.incubate import autotune  # noqa: E402


def timed(step) -> float:
    start = time.perf_counter()
    step()
    return (time.perf_counter() - start) * 1e3


def measure(workload: str, rounds: int, tuning_steps: int, warmup: int) -> dict:
    step, _ = API.step(workload)
    known = set(autotune.choices())  # an earlier workload's shapes
    autotune.set_config({"kernel": {"enable": False}})
    for _ in range(warmup):
        step()
    autotune.set_config({"kernel": {"enable": True, "tuning_range": [1, 1 + tuning_steps]}})
    tuning = []
    for _ in range(tuning_steps):
        autotune.step()
        tuning.append(timed(step))
    off, on = [], []
    for _ in range(rounds):  # interleaved; set_config restarts the step count, before the range
        autotune.set_config({"kernel": {"enable": False}})
        off.append(timed(step))
        autotune.set_config({"kernel": {"enable": True, "tuning_range": [1, 1 + tuning_steps]}})
        on.append(timed(step))
    autotune.set_config({"kernel": {"enable": False}})
    return {"off": off, "on": on, "tuning": sum(tuning),
            "overhead": sum(tuning) - tuning_steps * statistics.median(off),
            "choices": {k: v for k, v in autotune.choices().items() if k not in known}}


def main(argv: list[str] | None = None) -> int:
    def extend(parser):
        parser.add_argument("--rounds", type=int, default=None, help="interleaved off/on steps (default 15)")
        parser.add_argument("--tuning-steps", type=int, default=3, help="steps in the tuning range")
        parser.add_argument("--warmup", type=int, default=3)

    args = suite.parse_worker_args(__doc__.splitlines()[0], extend, argv)
    workloads = [w for w in ("W3", "W4") if w in args.workloads or "W14" in args.workloads]
    if not workloads:
        sys.exit("bench/autotune.py: name W14 (W3 and W4), W3 or W4")
    rounds = args.extra.rounds or (1 if args.quick else 15)
    tuning_steps = 1 if args.quick else args.extra.tuning_steps
    thread_control = set_threads(args.threads)
    with tempfile.TemporaryDirectory() as folder:
        os.environ[autotune.CACHE_ENV] = os.path.join(folder, "autotune.json")
        results = {w: measure(w, rounds, tuning_steps, 1 if args.quick else args.extra.warmup) for w in workloads}
    print(f"threads {args.threads}, rounds {rounds}, tuning range {tuning_steps} steps, "
          f"load average {', '.join(f'{v:.1f}' for v in os.getloadavg())}")
    print("| workload | step, tuning off | step, tuning on | on/off | tuning steps (total) | tuning overhead |")
    print("| --- | --- | --- | --- | --- | --- |")
    cases = []
    for workload, r in results.items():
        off, on = statistics.median(r["off"]), statistics.median(r["on"])
        print(f"| {workload} | {off:.2f} ms | {on:.2f} ms | {on / off:.2f} | {r['tuning']:.0f} ms | "
              f"{r['overhead']:.0f} ms |")
        name = suite.STEP_CASES[workload]
        cases += [Case("W14", f"{workload} {name}: autotune off", "ms", r["off"]),
                  Case("W14", f"{workload} {name}: autotune on, tuned", "ms", r["on"]),
                  Case("W14", f"{workload} tuning overhead ({tuning_steps} steps)", "ms", [r["overhead"]])]
    for workload, r in results.items():
        print(f"\n{workload}: kernel chosen per shape key (fastest run of each alternative, ms)")
        for key, value in r["choices"].items():
            op, _, _, shapes, _ = key.split("|", 4)
            times = ", ".join(f"{name} {ms:.2f}" for name, ms in value["ms"].items())
            print(f"  {op} {shapes}: {value['chosen']} ({times})")
    suite.emit("oar", oar.__version__, f"oar.incubate.autotune, {thread_control}", args.threads, cases)
    return 0


if __name__ == "__main__":
    sys.exit(main())
