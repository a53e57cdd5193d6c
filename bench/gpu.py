"""The gpu backend's benchmarks (issue #22), for a machine with an NVIDIA GPU (scripts/gpu_check.sh).

    python bench/gpu.py            # prints a markdown table
    python bench/gpu.py --write    # and appends it to docs/benchmarks.md

What is measured, with oar's public API on ``oar.set_device("gpu")`` and the plugin's own timer
(``oar_triton.timing.do_bench``: CUDA events, L2 flushed before each run, median):

- matmul at 4096^3 in float16 and bfloat16: TFLOP/s and the share of the card's dense peak
  (``--peak-tflops``, 790 measured on the workplace's H200);
- elementwise add, softmax and layer_norm on 2^26 float32 elements: GB/s moved (inputs read once,
  output written once) and the share of the device-to-device bandwidth (``--peak-gbs``, 4300);
- a LeNet and a ResNet18 training step (SGD, batch 64 at 28x28 and batch 32 at 224x224) in float32
  and under ``oar.amp.auto_cast`` bfloat16 O1: ms per step and the speed-up of bfloat16.

A row whose kernels are missing or fail says so and the others still run. Needs a GPU: in
Triton's interpreter the numbers would measure the interpreter.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import sys
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _matmul(dtype: str, n: int = 4096):
    import oar

    a = oar.to_tensor(np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)).astype(dtype)
    b = oar.to_tensor(np.random.default_rng(1).standard_normal((n, n)).astype(np.float32)).astype(dtype)
    return (lambda: oar.matmul(a, b)), 2 * n**3


def _bandwidth(kind: str, n: int = 1 << 26):
    import oar

    x = oar.to_tensor(np.random.default_rng(0).standard_normal(n).astype(np.float32))
    if kind == "add":
        y = oar.to_tensor(np.random.default_rng(1).standard_normal(n).astype(np.float32))
        return (lambda: x + y), 3 * 4 * n
    rows = x.reshape([n // 4096, 4096])
    if kind == "softmax":
        return (lambda: oar.nn.functional.softmax(rows, axis=-1)), 2 * 4 * n
    weight, bias = oar.ones([4096]), oar.zeros([4096])
    return (lambda: oar.nn.functional.layer_norm(rows, [4096], weight, bias)), 2 * 4 * n


def _training_step(model_name: str, amp: bool):
    import oar

    if model_name == "lenet":
        model, batch = oar.vision.models.LeNet(), (64, 1, 28, 28)
    else:
        model, batch = oar.vision.models.resnet18(num_classes=10), (32, 3, 224, 224)
    optimizer = oar.optimizer.SGD(learning_rate=0.01, parameters=model.parameters())
    x = oar.to_tensor(np.random.default_rng(0).standard_normal(batch).astype(np.float32))
    y = oar.to_tensor(np.random.default_rng(1).integers(0, 10, batch[0]))

    def step():
        with oar.amp.auto_cast(enable=amp, dtype="bfloat16", level="O1"):
            loss = oar.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()

    return step


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/gpu.py", description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="append the table to docs/benchmarks.md")
    parser.add_argument("--peak-tflops", type=float, default=790.0, help="the card's dense fp16/bf16 peak")
    parser.add_argument("--peak-gbs", type=float, default=4300.0, help="the card's device-to-device bandwidth")
    args = parser.parse_args(argv)

    from oar_triton.driver import CudaDriver, get_driver
    from oar_triton.timing import do_bench

    import oar

    if not isinstance(get_driver(), CudaDriver):
        print("bench/gpu.py: needs a CUDA GPU (unset TRITON_INTERPRET; libcuda must see a device)", file=sys.stderr)
        return 2
    oar.set_device("gpu")
    rows = []

    def measure(label: str, make, unit: str, to_value, target: str):
        try:
            fn, work = make()
            ms = do_bench(fn)
            value, share = to_value(work, ms)
            rows.append(f"| {label} | {ms:.3f} | {value:.1f} {unit} | {share} | {target} |")
        except Exception as exc:  # one failing row is reported, the others still run
            traceback.print_exc()
            rows.append(f"| {label} | — | {type(exc).__name__}: {str(exc).splitlines()[0][:120]} | — | {target} |")

    def tflops(work, ms):
        value = work / ms / 1e9
        return value, f"{100 * value / args.peak_tflops:.0f}% of {args.peak_tflops:.0f}"

    def gbs(work, ms):
        value = work / ms / 1e6
        return value, f"{100 * value / args.peak_gbs:.0f}% of {args.peak_gbs:.0f}"

    for dtype in ("float16", "bfloat16"):
        measure(f"matmul {dtype} 4096^3", lambda d=dtype: _matmul(d), "TFLOP/s", tflops, ">= 70%")
    for kind in ("add", "softmax", "layer_norm"):
        measure(f"{kind} float32, 2^26 elements", lambda k=kind: _bandwidth(k), "GB/s", gbs, ">= 70%")
    for model_name in ("lenet", "resnet18"):
        times = {}
        for amp in (False, True):
            try:
                times[amp] = do_bench(_training_step(model_name, amp), warmup=3, rep=10)
            except Exception as exc:
                traceback.print_exc()
                times[amp] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
        if all(isinstance(t, float) for t in times.values()):
            rows.append(f"| {model_name} step, float32 / bf16 O1 | {times[False]:.2f} / {times[True]:.2f} | "
                        f"{times[False] / times[True]:.2f}x | — | >= 1.5x |")
        else:
            rows.append(f"| {model_name} step, float32 / bf16 O1 | — | {times} | — | >= 1.5x |")

    name = oar.device.cuda.get_device_name()
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    table = "\n".join([f"### GPU ({name}), {when}", "", f"`python bench/gpu.py` on {platform.node()}", "",
                       "| case | ms | result | share of peak | target |", "| --- | ---: | ---: | ---: | --- |", *rows, ""])
    print(table)
    if args.write:
        with open(ROOT / "docs" / "benchmarks.md", "a", encoding="utf-8") as file:
            file.write("\n" + table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
