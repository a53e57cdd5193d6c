"""oar-numba's int8 layers against the float path they replace, at one thread, call by call.

For every layer of the digits LeNet and of the suite's W4 ResNet at batch 64 (``LAYERS``):

- layer: ``quantized_conv2d`` / ``quantized_linear`` (packing, GEMM and epilogue: the whole
  kernel call) against the float kernel a float model's Predictor runs there (oar-numba's
  ``fused_conv2d`` through its node binding, ``linear``, or ``fused_linear`` with an
  activation), with the same bias, activation and pooling; "+quant" adds the ``quantize_linear``
  of the layer's float input, which the int8 model runs before each layer;
- GEMM: the int8 GEMM alone (operands packed beforehand) against OpenBLAS's sgemm of the same
  m x n x k (numpy's matmul).

Each pair alternates call by call (which goes first too), and the medians are compared: the
machine's cores are shared, and a slow stretch then slows both sides alike.

    .nox/tests/bin/python bench/int8_kernels_ab.py [--calls 200] [--only resnet]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numba
import numpy as np
from oar_numba import KERNELS, _qgemm
from oar_numba._fused import fused_conv2d
from oar_numba._quant import quantize_linear

import oar
from oar.ops import resolve_kernel
from oar.plugins import registries

BATCH = 64
# name: ("conv", C, H, W, O, k, padding, act, max_pool) or ("linear", in, out, act)
LAYERS = {
    "lenet.conv1": ("conv", 1, 28, 28, 6, 3, 1, "relu", 2),
    "lenet.conv2": ("conv", 6, 14, 14, 16, 5, 0, "relu", 2),
    "lenet.fc1": ("linear", 400, 120, None),
    "lenet.fc2": ("linear", 120, 84, None),
    "lenet.fc3": ("linear", 84, 10, None),
    "resnet.stem": ("conv", 3, 32, 32, 32, 3, 1, "relu", None),
    "resnet.block_conv1": ("conv", 32, 32, 32, 32, 3, 1, "relu", None),
    "resnet.block_conv2": ("conv", 32, 32, 32, 32, 3, 1, None, None),
    "resnet.fc": ("linear", 32, 10, None),
}


def alternate(first, second, calls: int) -> tuple[float, float]:
    """Median seconds of ``first()`` and ``second()``, called in turn (each leading every other round)."""
    first(), second()  # compiled and warm
    samples: tuple[list[float], list[float]] = ([], [])
    for call in range(calls):
        for i in ((0, 1) if call % 2 else (1, 0)):
            fn = (first, second)[i]
            start = time.perf_counter()
            fn()
            samples[i].append(time.perf_counter() - start)
    return statistics.median(samples[0]), statistics.median(samples[1])


def _scalars(rng, channels):
    return (np.array(0.02, np.float32), np.array(3, np.int8), rng.uniform(0.001, 0.01, channels).astype(np.float32),
            np.zeros(channels, np.int8), rng.standard_normal(channels).astype(np.float32))


def conv_case(rng, c, h, w, o, k, pad, act, max_pool):
    """(float layer, int8 layer, the int8 layer of the quantized float input, (m, n, k) of its GEMM)."""
    xf = rng.standard_normal((BATCH, c, h, w)).astype(np.float32)
    wf = (rng.standard_normal((o, c, k, k)) * 0.1).astype(np.float32)
    x_scale, x_zero, w_scale, w_zero, bias = _scalars(rng, o)
    xq = rng.integers(-128, 128, xf.shape).astype(np.int8)
    wq = rng.integers(-128, 128, wf.shape).astype(np.int8)
    attrs = {"stride": [1, 1], "padding": [pad] * 4, "dilation": [1, 1], "groups": 1, "act": act, "act_attrs": {}}
    if max_pool:
        attrs["max_pool"] = max_pool
    node = fused_conv2d.bind(attrs)  # what the float Predictor calls
    float_layer = (lambda: node(xf, wf, bias)) if node is not None else (lambda: fused_conv2d(xf, wf, bias, **attrs))

    def int8_layer():
        return _qgemm.quantized_conv2d(xq, x_scale, x_zero, wq, w_scale, w_zero, bias, **attrs)

    def quantized_input_layer():
        return _qgemm.quantized_conv2d(quantize_linear(xf, x_scale, x_zero, None, 8), x_scale, x_zero, wq, w_scale,
                                       w_zero, bias, **attrs)

    oh = h + 2 * pad - k + 1
    return float_layer, int8_layer, quantized_input_layer, (BATCH * oh * oh, o, c * k * k)


def linear_case(rng, k, n, act):
    xf = rng.standard_normal((BATCH, k)).astype(np.float32)
    wf = (rng.standard_normal((k, n)) * 0.1).astype(np.float32)
    x_scale, x_zero, w_scale, w_zero, bias = _scalars(rng, n)
    xq = rng.integers(-128, 128, xf.shape).astype(np.int8)
    wq = rng.integers(-128, 128, wf.shape).astype(np.int8)
    if act is None:  # what the float Predictor runs for a Linear alone: oar-numba's linear kernel
        def float_layer():
            return KERNELS["linear"](xf, wf, bias)
    else:
        kernel = resolve_kernel(registries().ops.get("fused_linear"), "cpu", np.dtype(np.float32))

        def float_layer():
            return kernel(xf, wf, bias, transpose_x=False, transpose_y=False, act=act, act_attrs={})

    def int8_layer():
        return _qgemm.quantized_linear(xq, x_scale, x_zero, wq, w_scale, w_zero, bias, act=act, act_attrs={})

    def quantized_input_layer():
        return _qgemm.quantized_linear(quantize_linear(xf, x_scale, x_zero, None, 8), x_scale, x_zero, wq, w_scale,
                                       w_zero, bias, act=act, act_attrs={})

    return float_layer, int8_layer, quantized_input_layer, (BATCH, n, k)


@numba.njit(nogil=True)
def _gemm_repeated(words, patches, stride, acc, rows, lanes, times):
    for _ in range(times):
        _qgemm._gemm(words, patches, stride, acc, rows, lanes)


def gemm_pair(rng, kind, m, n, k):
    """sgemm [m, k] @ [k, n], and the int8 GEMM of the same size on operands packed as the kernel
    packs them: for a convolution rows = n (output channels) and lanes = m (positions), in chunks
    of positions that stay in L2 (``CHUNK_BYTES``; one chunk's operands, reused); for a linear rows
    = m and lanes = n."""
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    c = np.empty((m, n), np.float32)
    groups = -(-k // 4)
    if kind == "conv":
        rows = -(-n // 4) * 4
        lanes = min(-(-m // 64) * 64, max(64, _qgemm.CHUNK_BYTES // ((groups + rows) * 4) // 64 * 64))
        times = -(-m // lanes)
    else:
        rows, lanes, times = -(-m // 4) * 4, -(-n // 16) * 16, 1
    words = rng.integers(-2**31, 2**31, rows * groups, dtype=np.int64).astype(np.int32)
    patches = rng.integers(0, 2**32, groups * lanes, dtype=np.uint64).astype(np.uint32)
    acc = np.empty(rows * lanes, np.int32)
    return (lambda: np.matmul(a, b, out=c)), (lambda: _gemm_repeated(words, patches, lanes, acc, rows, lanes, times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="timed calls of each side per pair")
    parser.add_argument("--only", default="", help="run the layers whose name contains this")
    args = parser.parse_args()
    oar.set_num_threads(1)
    if not _qgemm.VNNI:
        raise SystemExit("this CPU has no AVX-512 VNNI: the int8 kernels hand their ops to the references")
    rng = np.random.default_rng(0)
    print(f"batch {BATCH}, 1 thread, medians of {args.calls} alternating calls; ratio = float / int8 (>1: int8 faster)")
    print(f"{'layer':22} {'float ms':>9} {'int8 ms':>8} {'ratio':>6} {'+quant ms':>9} {'ratio':>6}   "
          f"{'gemm m x n x k':>18} {'sgemm ms':>9} {'int8 ms':>8} {'ratio':>6}")
    totals = np.zeros(3)
    for name, (kind, *shape) in LAYERS.items():
        if args.only not in name:
            continue
        float_layer, int8_layer, quantized_input_layer, mnk = (conv_case if kind == "conv" else linear_case)(rng, *shape)
        t_float, t_int8 = alternate(float_layer, int8_layer, args.calls)
        t_float_q, t_both = alternate(float_layer, quantized_input_layer, args.calls)
        t_sgemm, t_gemm = alternate(*gemm_pair(rng, kind, *mnk), args.calls)
        totals += (t_float, t_int8, t_both * t_float / t_float_q)  # "+quant" against the first run's float time
        print(f"{name:22} {t_float * 1e3:9.3f} {t_int8 * 1e3:8.3f} {t_float / t_int8:6.2f} {t_both * 1e3:9.3f} "
              f"{t_float_q / t_both:6.2f}   {' x '.join(map(str, mnk)):>18} {t_sgemm * 1e3:9.3f} {t_gemm * 1e3:8.3f} "
              f"{t_sgemm / t_gemm:6.2f}")
    print(f"{'sum of the layers':22} {totals[0] * 1e3:9.3f} {totals[1] * 1e3:8.3f} {totals[0] / totals[1]:6.2f} "
          f"{totals[2] * 1e3:9.3f} {totals[0] / totals[2]:6.2f}")


if __name__ == "__main__":
    main()
