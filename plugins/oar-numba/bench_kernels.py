"""oar-numba's kernels against oar-nn's numpy reference kernels, on the benchmark models' shapes.

    python plugins/oar-numba/bench_kernels.py                 # the speed-up table, 1 and 2 threads
    python plugins/oar-numba/bench_kernels.py --first-call    # JIT latency, cold and warm disk cache

Shapes: LeNet-5 at batch 64 (W3), the small CIFAR ResNet at batch 32 (W4) and the transformer
encoder layer, d_model 256, 4 heads, ffn 1024, sequence 128, batch 8 (W5), all float32. Every
kernel is called with the same arrays and attributes as its reference; the two alternate batch by
batch, and each figure is the fastest batch. ``oar.set_num_threads`` sets numba's and
BLAS's threads together (the references' GEMMs use BLAS threads too).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import numpy as np

import oar
from oar.plugins import registries


@dataclass
class Case:
    op: str
    label: str
    inputs: tuple
    attrs: dict
    baseline: object = None  # what the kernel is timed against, when not the op's reference


def _conv_cases(rng, model, x_shape, w_shape, padding, grads=True, groups=1):
    x = rng.standard_normal(x_shape, dtype=np.float32)
    w = rng.standard_normal(w_shape, dtype=np.float32)
    attrs = {"stride": [1, 1], "padding": [padding] * 4, "dilation": [1, 1], "groups": groups}
    out = [x_shape[2] + 2 * padding - w_shape[2] + 1, x_shape[3] + 2 * padding - w_shape[3] + 1]
    g = rng.standard_normal((x_shape[0], w_shape[0], *out), dtype=np.float32)
    shapes = f"x{list(x_shape)} w{list(w_shape)}"
    cases = [Case("conv", f"{model} {shapes}", (x, w), attrs),
             Case("conv_weight_grad", f"{model} {shapes}", (x, g), {**attrs, "kernel_size": list(w_shape[2:])})]
    if grads:  # the first layer's input needs no gradient
        cases.append(Case("conv_transpose", f"{model} {shapes}", (g, w), {**attrs, "output_padding": [0, 0]}))
    return cases


def cases() -> list[Case]:
    rng = np.random.default_rng(0)

    def rand(*shape):
        return rng.standard_normal(shape, dtype=np.float32)

    pool = {"kernel_size": [2, 2], "stride": [2, 2], "padding": [0, 0, 0, 0], "ceil_mode": False}
    lenet_act, lenet_pooled = rand(64, 6, 28, 28), rand(64, 6, 14, 14)
    _, lenet_mask = registries().ops.get("max_pool").reference(lenet_act, **pool)
    res_act = rand(32, 32, 32, 32)
    res_w, res_b = rng.uniform(0.5, 1.5, 32).astype(np.float32), rand(32)
    res_mean, res_var = res_act.mean(axis=(0, 2, 3)), res_act.var(axis=(0, 2, 3))
    tokens = rand(8, 128, 256)
    ln_w, ln_b = rng.uniform(0.5, 1.5, 256).astype(np.float32), rand(256)
    ln_mean, ln_var = tokens.mean(axis=2).reshape(-1), tokens.var(axis=2).reshape(-1)
    scores, ffn = rand(8, 4, 128, 128), rand(8, 128, 1024)
    attn = registries().ops.get("softmax").reference(scores, axis=-1)
    out = []
    out += _conv_cases(rng, "LeNet conv1", (64, 1, 28, 28), (6, 1, 3, 3), 1, grads=False)
    out += _conv_cases(rng, "LeNet conv2", (64, 6, 14, 14), (16, 6, 5, 5), 0)
    out += _conv_cases(rng, "ResNet stem", (32, 3, 32, 32), (32, 3, 3, 3), 1, grads=False)
    out += _conv_cases(rng, "ResNet block", (32, 32, 32, 32), (32, 32, 3, 3), 1)
    # MobileNetV2's depthwise convolutions at CIFAR size: a 16x16 map and the last 2x2 one
    out += _conv_cases(rng, "MobileNetV2 depthwise", (32, 32, 16, 16), (32, 1, 3, 3), 1, groups=32)
    out += _conv_cases(rng, "MobileNetV2 depthwise", (32, 384, 2, 2), (384, 1, 3, 3), 1, groups=384)
    out += [
        Case("max_pool", "LeNet [64, 6, 28, 28] 2x2", (lenet_act,), pool),
        Case("max_pool_grad", "LeNet [64, 6, 14, 14] -> 28x28", (lenet_pooled, lenet_mask), {"input_size": [28, 28]}),
        Case("adaptive_avg_pool_grad", "ResNet [32, 32, 1, 1] -> 32x32", (rand(32, 32, 1, 1),),
             {"input_size": [32, 32]}),
        Case("adaptive_max_pool", "ResNet-size [32, 32, 32, 32] -> 1x1", (res_act,), {"output_size": [1, 1]}),
        Case("batch_norm", "ResNet [32, 32, 32, 32]", (res_act, res_w, res_b), {"channel_axis": 1, "epsilon": 1e-5}),
        Case("batch_norm_infer", "ResNet [32, 32, 32, 32], eval", (res_act, res_w, res_b, res_mean, res_var),
             {"channel_axis": 1, "epsilon": 1e-5}),
        Case("batch_norm_grad", "ResNet [32, 32, 32, 32]", (res_act, res_w, res_mean, res_var, rand(32, 32, 32, 32)),
             {"channel_axis": 1, "epsilon": 1e-5}),
        Case("layer_norm", "encoder [8, 128, 256]", (tokens, ln_w, ln_b), {"begin_norm_axis": 2, "epsilon": 1e-5}),
        Case("layer_norm_grad", "encoder [8, 128, 256]", (tokens, ln_w, ln_mean, ln_var, rand(8, 128, 256)),
             {"begin_norm_axis": 2, "epsilon": 1e-5}),
        Case("softmax_grad", "attention [8, 4, 128, 128]", (attn, rand(8, 4, 128, 128)), {"axis": -1}),
        Case("softmax_with_cross_entropy", "LeNet logits [64, 10]", (rand(64, 10), rng.integers(0, 10, (64, 1))),
             {"soft_label": False, "use_softmax": True, "ignore_index": -100, "axis": -1}),
        Case("embedding_grad", "ids [8, 128] -> table [10000, 256]", (tokens, rng.integers(0, 10000, (8, 128))),
             {"num_embeddings": 10000, "padding_idx": -1}),
        Case("relu", "ResNet [32, 32, 32, 32]", (res_act,), {}),
        Case("relu_grad", "ResNet [32, 32, 32, 32]", (res_act, rand(32, 32, 32, 32)), {}),
        Case("relu", "encoder ffn [8, 128, 1024]", (ffn,), {}),
        Case("relu_grad", "encoder ffn [8, 128, 1024]", (ffn, rand(8, 128, 1024)), {}),
        Case("gelu", "encoder ffn [8, 128, 1024]", (ffn,), {"approximate": False}),
        Case("where", "ReLU6's gradient [32, 96, 16, 16]", (rand(32, 96, 16, 16), np.zeros((), np.float32),
             rand(32, 96, 16, 16) > 0), {}),
        # a row of x: batch-1 inference (LeNet's classifier) and W1's Linear(4, 4)
        Case("linear", "LeNet fc1 x[1, 400] w[400, 120]", (rand(1, 400), rand(400, 120), rand(120)), {}),
        Case("linear", "LeNet fc3 x[1, 84] w[84, 10]", (rand(1, 84), rand(84, 10), rand(10)), {}),
        Case("linear", "W1 x[1, 4] w[4, 4]", (rand(1, 4), rand(4, 4), rand(4)), {}),
        # the fused ops of inference programs (oar's fusion passes)
        Case("max_pool_infer", "LeNet [64, 6, 28, 28] 2x2", (lenet_act,), pool),
        Case("fused_conv2d", "LeNet conv1 + bias + relu x[64, 1, 28, 28]", (rand(64, 1, 28, 28), rand(6, 1, 3, 3),
             rand(6)), {"stride": [1, 1], "padding": [1, 1, 1, 1], "dilation": [1, 1], "groups": 1, "act": "relu",
                        "act_attrs": {}}),
        # LeNet's two convolutions as its to_static program holds them (W6): with the 2x2 max pool
        Case("fused_conv2d", "LeNet conv1 + bias + relu + pool x[64, 1, 28, 28]", (rand(64, 1, 28, 28),
             rand(6, 1, 3, 3), rand(6)), {"stride": [1, 1], "padding": [1, 1, 1, 1], "dilation": [1, 1], "groups": 1,
                                          "act": "relu", "act_attrs": {}, "max_pool": 2}),
        Case("fused_conv2d", "LeNet conv2 + bias + relu + pool x[64, 6, 14, 14]", (rand(64, 6, 14, 14),
             rand(16, 6, 5, 5), rand(16)), {"stride": [1, 1], "padding": [0, 0, 0, 0], "dilation": [1, 1], "groups": 1,
                                            "act": "relu", "act_attrs": {}, "max_pool": 2}),
        Case("fused_elementwise", "encoder ffn [8, 128, 1024] (x * s + b) relu * x", (ffn, rand(1024)),
             {"chain": [["scale", [0], {"scale": 0.5, "bias": 0.0, "bias_after_scale": True}], ["add", [2, 1], {}],
                        ["relu", [3], {}], ["multiply", [4, 0], {}]]}),
    ]
    return out + quant_cases(rng) + candidate_cases(rng)


def _ce_attrs():
    return {"ignore_index": -100, "axis": -1}


def candidate_cases(rng) -> list[Case]:
    """Kernels of issue 7's list added later: the cross-entropy backward, log_softmax, group
    normalisation, average pooling, a stride-2 transposed convolution (a decoder's upsampling)."""
    def rand(*shape):
        return rng.standard_normal(shape, dtype=np.float32)

    def probs(rows, n):
        e = np.exp(rand(rows, n))
        return e / e.sum(axis=1, keepdims=True)

    avg = {"kernel_size": [2, 2], "stride": [2, 2], "padding": [0, 0, 0, 0], "ceil_mode": False, "exclusive": True}
    avg3 = {"kernel_size": [3, 3], "stride": [1, 1], "padding": [1, 1, 1, 1], "ceil_mode": False, "exclusive": True}
    ls = registries().ops.get("log_softmax").reference
    out = []
    for rows, n, label in ((64, 10, "LeNet logits"), (128, 128, "logits"), (1024, 1000, "ImageNet logits")):
        labels = rng.integers(0, n, (rows, 1))
        out.append(Case("softmax_with_cross_entropy_grad", f"{label} [{rows}, {n}]", (probs(rows, n), labels,
                        rand(rows, 1)), _ce_attrs()))
    for rows, n, label in ((64, 10, "LeNet logits"), (32, 64, "logits"), (128, 128, "logits"),
                           (1024, 1000, "ImageNet logits")):
        x = rand(rows, n)
        out.append(Case("log_softmax", f"{label} [{rows}, {n}]", (x,), {"axis": -1}))
        out.append(Case("log_softmax_grad", f"{label} [{rows}, {n}]", (ls(x, axis=-1), rand(rows, n)), {"axis": -1}))
    gn_x = rand(32, 32, 32, 32)
    gn_w, gn_b = rng.uniform(0.5, 1.5, 32).astype(np.float32), rand(32)
    gn_view = gn_x.reshape(32, 8, -1)
    gn = {"num_groups": 8, "epsilon": 1e-5}
    out += [
        Case("group_norm", "ResNet-size [32, 32, 32, 32] 8 groups", (gn_x, gn_w, gn_b), gn),
        Case("group_norm_grad", "ResNet-size [32, 32, 32, 32] 8 groups",
             (gn_x, gn_w, gn_view.mean(axis=2), gn_view.var(axis=2), rand(32, 32, 32, 32)), gn),
        Case("avg_pool", "LeNet [64, 6, 28, 28] 2x2", (rand(64, 6, 28, 28),), avg),
        Case("avg_pool_grad", "LeNet [64, 6, 14, 14] -> 28x28", (rand(64, 6, 14, 14),), {"input_size": [28, 28], **avg}),
        Case("avg_pool", "[32, 32, 32, 32] 3x3 s1 p1", (rand(32, 32, 32, 32),), avg3),
        Case("avg_pool_grad", "[32, 32, 32, 32] 3x3 s1 p1", (rand(32, 32, 32, 32),), {"input_size": [32, 32], **avg3}),
        Case("conv_transpose", "decoder x[32, 64, 8, 8] w[64, 32, 4, 4] s2 p1", (rand(32, 64, 8, 8), rand(64, 32, 4, 4)),
             {"stride": [2, 2], "padding": [1, 1, 1, 1], "output_padding": [0, 0], "dilation": [1, 1], "groups": 1}),
    ]
    return out


def quant_cases(rng) -> list[Case]:
    """oar.nn.quant's int8 kernels. ``matmul_int8`` is also timed against numpy's float32 GEMM
    (BLAS) of the same shapes, the honest bar for an int8 GEMM on a CPU."""
    from oar.nn.functional.quant import _weight_quantize_kernel

    def rand(*shape):
        return rng.standard_normal(shape, dtype=np.float32)

    def int8(*shape):
        return rng.integers(-127, 128, shape).astype(np.int8)

    a, b = int8(64, 1024), int8(1024, 1024)
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    wq, ws = _weight_quantize_kernel(rand(1024, 4096))
    lq, lsc = _weight_quantize_kernel(rand(1024, 1024))
    act = rand(8, 128, 1024)
    w = rand(256, 1024)
    scale, wscale = np.float32(0.02), (np.abs(w).max(axis=1) / 127).astype(np.float32)
    zero, wzero = np.int8(0), np.zeros(256, np.int8)
    qd = {"axis": None, "bit_length": 8}
    qc = {"axis": 0, "bit_length": 8}
    return [
        Case("matmul_int8", "[64, 1024] x [1024, 1024]", (a, b), {}),
        Case("matmul_int8", "[64, 1024] x [1024, 1024] vs float32 BLAS", (a, b), {},
             baseline=lambda x, y: fa @ fb.T),
        Case("weight_only_linear", "decode x[1, 1024] w[4096, 1024]", (rand(1, 1024), wq, ws), {}),
        Case("weight_only_linear", "x[8, 1024] w[4096, 1024]", (rand(8, 1024), wq, ws), {}),
        Case("weight_only_linear", "x[64, 1024] w[4096, 1024]", (rand(64, 1024), wq, ws), {}),
        Case("weight_only_linear", "decode x[1, 1024] w[4096, 1024] vs float32 GEMV", (rand(1, 1024), wq, ws), {},
             baseline=lambda x, q, s, wf=(wq.astype(np.float32) * ws[:, None]): x @ wf.T),
        Case("llm_int8_linear", "x[64, 1024] w[1024, 1024]", (rand(64, 1024) * 2, lq, lsc), {"threshold": 6.0}),
        Case("quantize_linear", "per tensor [8, 128, 1024]", (act, np.asarray(scale), np.asarray(zero)), qd),
        Case("quantize_linear", "per channel w[256, 1024] axis 0", (w, wscale, wzero), qc),
        Case("dequantize_linear", "per tensor [8, 128, 1024]", (int8(8, 128, 1024), np.asarray(scale),
                                                                 np.asarray(zero)), qd),
        Case("dequantize_linear", "per channel w[256, 1024] axis 0", (int8(256, 1024), wscale, wzero), qc),
        Case("fake_quantize_dequantize", "per tensor [8, 128, 1024]", (act, np.asarray(scale), np.asarray(zero)), qd),
        Case("fake_quantize_dequantize", "per channel w[256, 1024] axis 0", (w, wscale, wzero), qc),
    ]


# Kernels written to be measured before they are registered (docs/numba.md says which lost and
# why): op -> (module of oar_numba, function). Their cases run and are tested like the rest.
CANDIDATES: dict[str, tuple[str, str]] = {}


def numba_kernel(op: str):
    import importlib

    from oar_numba import KERNELS

    if op in KERNELS:
        return KERNELS[op]
    module, name = CANDIDATES[op]
    return getattr(importlib.import_module(f"oar_numba.{module}"), name)


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def time_pair(reference, kernel, case: Case, repeats: int, clock=time.perf_counter) -> tuple[float, float]:
    """Seconds per call of the reference and the kernel: batches of calls alternate between the
    two, and each figure is the fastest batch (the one least disturbed by other processes)."""
    budget = 0.05  # seconds per batch: enough calls to rise above the clock's resolution
    reference(*case.inputs, **case.attrs)
    kernel(*case.inputs, **case.attrs)
    calls = []
    for fn in (reference, kernel):
        start = time.perf_counter()
        fn(*case.inputs, **case.attrs)
        calls.append(max(1, int(budget / max(time.perf_counter() - start, 1e-7))))
    best = [float("inf"), float("inf")]
    for _ in range(repeats):
        for i, fn in enumerate((reference, kernel)):
            start = clock()
            for _ in range(calls[i]):
                fn(*case.inputs, **case.attrs)
            best[i] = min(best[i], (clock() - start) / calls[i])
    return best[0], best[1]


def speedup_table(repeats: int, threads: list[int], clock: str = "wall", ops=None) -> str:
    rows = []
    all_cases = [c for c in cases() if not ops or c.op in ops]
    results = {}
    for n in threads:
        oar.set_num_threads(n)
        for i, case in enumerate(all_cases):
            reference = case.baseline or registries().ops.get(case.op).reference
            results[i, n] = time_pair(reference, numba_kernel(case.op), case, repeats, CLOCKS[clock])
    header = "| op | shape (float32) |" + "".join(f" numpy {n}T | numba {n}T | speed-up {n}T |" for n in threads)
    rows.append(header)
    rows.append("|" + " --- |" * (2 + 3 * len(threads)))
    for i, case in enumerate(all_cases):
        cells = ""
        for n in threads:
            reference, kernel = results[i, n]
            cells += f" {reference * 1e3:.3f} ms | {kernel * 1e3:.3f} ms | {reference / kernel:.1f}x |"
        rows.append(f"| `{case.op}` | {case.label} |{cells}")
    return "\n".join(rows)


FIRST_CALL = """
import json, time
t0 = time.perf_counter()
import oar
import oar_numba
from oar.plugins import registries
registries()
loaded = time.perf_counter() - t0
import bench_kernels
report = {"import_and_plugin_load_s": loaded, "kernels": {}}
start = time.perf_counter()
for case in bench_kernels.cases():
    if case.op in report["kernels"] or case.op not in oar_numba.KERNELS:
        continue
    t = time.perf_counter()
    oar_numba.KERNELS[case.op](*case.inputs, **case.attrs)
    report["kernels"][case.op] = time.perf_counter() - t
report["all_first_calls_s"] = time.perf_counter() - start
report["threading_layer"] = __import__("numba").threading_layer()
print(json.dumps(report))
"""


def first_call_latency() -> str:
    """The first call of every kernel in a fresh process: with an empty cache, then with the cache
    that run left (a numba cache directory of its own, so the installed cache is not touched)."""
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": here}
        runs = []
        for _ in ("cold", "warm"):
            result = subprocess.run([sys.executable, "-c", FIRST_CALL], env=env, capture_output=True, text=True,
                                    check=True)
            runs.append(json.loads(result.stdout))
    cold, warm = runs
    lines = [f"numba's threading layer in those processes: {cold['threading_layer']}", "",
             "| first call in a fresh process | cold cache | warm cache |", "| --- | --- | --- |",
             f"| import oar + load plugins (imports numba) | {cold['import_and_plugin_load_s']:.2f} s | "
             f"{warm['import_and_plugin_load_s']:.2f} s |",
             f"| every kernel once (float32, {len(cold['kernels'])} ops) | {cold['all_first_calls_s']:.1f} s | "
             f"{warm['all_first_calls_s']:.2f} s |"]
    slowest = max(cold["kernels"], key=cold["kernels"].get)
    lines.append(f"| slowest single kernel (`{slowest}`) | {cold['kernels'][slowest]:.2f} s | "
                 f"{warm['kernels'][slowest]:.3f} s |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first-call", action="store_true", help="measure the JIT latency, cold and warm cache")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--ops", nargs="+", help="time only these ops' cases (default: all)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="wall: elapsed time; cpu: this process's CPU time, robust to other processes "
                             "when running on one thread (with more it adds the threads' times up)")
    args = parser.parse_args(argv)
    import numba

    table = first_call_latency() if args.first_call else speedup_table(args.repeats, args.threads, args.clock, args.ops)
    try:
        layer = f" ({numba.threading_layer()} threading layer)"  # known once a kernel ran here
    except ValueError:
        layer = ""
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    clock = "" if args.first_call else f", clock: {args.clock}"
    print(f"numpy {np.__version__}, numba {numba.__version__}{layer}, {os.cpu_count()} CPUs, "
          f"load average {load}, {time.strftime('%Y-%m-%d')}{clock}\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
