"""AMP on the W4 small CIFAR ResNet (bench/paddle_api.py): the memory the forward leaves held for
backward, and the training-step time, float32 against O1 and O2 bfloat16, on the CPU.

The held memory is what tracemalloc sees allocated after the forward (the loss alive, so the tape
keeps its saved tensors) minus before it: numpy reports its buffers to tracemalloc.

    .nox/tests/bin/python bench/amp_memory.py [--batch 32] [--steps 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from paddle_api import make_models  # noqa: E402

import oar  # noqa: E402

CASES = [("float32", None, None), ("O1 bfloat16", "O1", "bfloat16"), ("O2 bfloat16", "O2", "bfloat16")]


def measure(level, dtype, batch: int, steps: int) -> tuple[float, float]:
    oar.seed(0)
    model = make_models(oar)["resnet"]()
    optimizer = oar.optimizer.Momentum(learning_rate=0.01, momentum=0.9, parameters=model.parameters())
    if level == "O2":
        model, optimizer = oar.amp.decorate(model, optimizer, level="O2", dtype=dtype)
    x = oar.to_tensor(np.random.default_rng(0).standard_normal((batch, 3, 32, 32)).astype(np.float32))
    y = oar.to_tensor(np.random.default_rng(1).integers(0, 10, (batch, 1)))
    loss_fn = oar.nn.CrossEntropyLoss()
    amp = dict(enable=level is not None, level=level or "O1", dtype=dtype or "float16")
    held, times = [], []
    for step in range(2 * steps + 1):
        traced = step > steps  # the first step warms up; then timed steps, then traced ones (tracing is slow)
        if traced:
            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
        start = time.perf_counter()
        with oar.amp.auto_cast(**amp):
            loss = loss_fn(model(x), y)
        if traced:
            held.append(tracemalloc.get_traced_memory()[0] - before)
            tracemalloc.stop()
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
        if 0 < step <= steps:
            times.append(time.perf_counter() - start)
    return statistics.median(held) / 2**20, statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    print(f"W4 small ResNet, batch {args.batch}, 3x32x32, SGD-momentum step (median of {args.steps})")
    print("| training | held for backward | vs float32 | step time |")
    print("| --- | --- | --- | --- |")
    base = None
    for name, level, dtype in CASES:
        mib, ms = measure(level, dtype, args.batch, args.steps)
        base = base or mib
        print(f"| {name} | {mib:.1f} MiB | {mib / base:.2f}x | {ms:.0f} ms |")


if __name__ == "__main__":
    main()
