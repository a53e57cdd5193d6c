"""How long a fresh process takes to its first training step: oar with a cold and a warm numba
cache, next to PyTorch and PaddlePaddle (the first use of a new installation, issue #19).

    python bench/first_step.py              # 3 rounds, processes alternating
    python bench/first_step.py --rounds 5

Each process imports its framework, builds LeNet (Paddle's, as oar.vision.models.LeNet is) and an
Adam optimizer, and runs two training steps on a random batch of 64 [1, 28, 28] images; it prints
the seconds from its start to the model built, of the first step and of the second. oar runs
twice per round: with an empty ``NUMBA_CACHE_DIR`` (a fresh installation: every kernel the step
uses is compiled) and with the cache a ``python -m oar_numba warm`` filled once before the rounds
(an installation set up by ``python3 dev.py demo``). A framework that is not installed is left
out. Prints a markdown table of medians and the ratios to Paddle's time from the process start to the
end of its first step (what a user waits for).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

STEP = """
import json, sys, time
start = time.perf_counter()
framework = sys.argv[1]
if framework in ("oar", "paddle"):  # one API: oar's is Paddle's
    import importlib
    fw = importlib.import_module(framework)
    F = importlib.import_module(framework + ".nn.functional")
    if framework == "paddle":
        fw.set_device("cpu")
    model = fw.vision.models.LeNet()
    optimizer = fw.optimizer.Adam(parameters=model.parameters(), learning_rate=1e-3)
    x, y = fw.randn([64, 1, 28, 28]), fw.randint(0, 10, [64])
    def step():
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
else:
    import torch as fw
    import torch.nn as nn
    model = nn.Sequential(nn.Conv2d(1, 6, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, 2), nn.Conv2d(6, 16, 5),
                          nn.ReLU(), nn.MaxPool2d(2, 2), nn.Flatten(), nn.Linear(400, 120), nn.Linear(120, 84),
                          nn.Linear(84, 10))
    optimizer = fw.optim.Adam(model.parameters(), lr=1e-3)
    x, y = fw.randn(64, 1, 28, 28), fw.randint(0, 10, (64,))
    def step():
        loss = fw.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
built = time.perf_counter()
step()
first = time.perf_counter()
step()
second = time.perf_counter()
print(json.dumps({"built": built - start, "first": first - built, "second": second - first}))
"""

COLUMNS = ("built", "first", "second")


def _installed(module: str) -> bool:
    probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
    return subprocess.run([sys.executable, "-c", probe]).returncode == 0


def run(framework: str, cache: str | None) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = cache
    started = subprocess.run([sys.executable, "-c", STEP, framework], capture_output=True, text=True, env=env,
                             check=True)
    return json.loads(started.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="oar-first-step-") as scratch:
        warm_cache = os.path.join(scratch, "warm")
        env = dict(os.environ, NUMBA_CACHE_DIR=warm_cache)
        subprocess.run([sys.executable, "-m", "oar_numba", "warm"], env=env, check=True, capture_output=True)
        cases = {"oar, cold cache": "cold", "oar, warm cache": warm_cache}
        peers = [name for name, module in (("PyTorch", "torch"), ("Paddle", "paddle")) if _installed(module)]
        results: dict[str, list[dict]] = {name: [] for name in [*cases, *peers]}
        for i in range(args.rounds):
            for name, cache in cases.items():
                if cache == "cold":
                    cache = os.path.join(scratch, f"cold-{i}")  # empty: every kernel compiles
                results[name].append(run("oar", cache))
            for name in peers:
                results[name].append(run("torch" if name == "PyTorch" else "paddle", None))
    medians = {name: {c: statistics.median(r[c] for r in rows) for c in COLUMNS} for name, rows in results.items()}
    paddle = medians.get("Paddle")
    print(f"median of {args.rounds} fresh processes each, 1 thread; seconds\n")
    print("| | import + LeNet + Adam | first step | from start to the first step's end | second step | "
          "to the first step's end / Paddle's |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, m in medians.items():
        total = m["built"] + m["first"]
        ratio = f"{total / (paddle['built'] + paddle['first']):.2f}x" if paddle else "-"
        print(f"| {name} | {m['built']:.2f} | {m['first']:.2f} | {total:.2f} | {m['second']:.3f} | {ratio} |")

if __name__ == "__main__":
    main()
