"""Op cases of the quantization family (``oar.nn.quant``): the QDQ ops, weight-only and LLM.int8 linears,
the int8 GEMM.

The references write each formula out per element or per row in numpy. Inputs are built as
``(integer + offset) * scale`` with offsets away from 0.5, so that no value sits near a rounding
tie, where float32 and float64 could round apart; each row or channel holds its exact abs-max.
"""

from __future__ import annotations

import numpy as np

import oar
from oar.nn import quant
from oar.testing import OpCase

RNG = np.random.default_rng(17)


def _levels(shape, scale, lo=-120, hi=120):
    """float values (k + u) * scale, |u| <= 0.3, k integer in [lo, hi]."""
    k = RNG.integers(lo, hi + 1, shape)
    return (k + RNG.uniform(-0.3, 0.3, shape)) * scale


def _int8(*shape):
    return RNG.integers(-128, 128, shape).astype(np.int8)


def ref_quantize(x, scale, zero_point, axis, bit_length=8):
    lo, hi = -(2 ** (bit_length - 1)), 2 ** (bit_length - 1) - 1
    out = np.empty(x.shape, np.int8)
    for idx in np.ndindex(x.shape):
        c = idx[axis] if np.ndim(scale) else ()
        v = np.round(x[idx] / scale[c]) + int(zero_point[c])  # np.round: half to even, as ONNX
        out[idx] = min(max(v, lo), hi)
    return out


def ref_dequantize(q, scale, zero_point, axis):
    out = np.empty(q.shape, np.float64)
    for idx in np.ndindex(q.shape):
        c = idx[axis] if np.ndim(scale) else ()
        out[idx] = (int(q[idx]) - int(zero_point[c])) * scale[c]
    return out


def ref_weight_quantize(w):
    scale = np.abs(w).max(axis=0) / 127
    return np.round(w / scale).T.astype(np.int8), scale


def ref_linear(x, q, scale):
    w = q.astype(np.float64) * scale[:, None]  # [out, in]
    return x @ w.T


def ref_llm_int8(x, q, scale, threshold):
    x2 = x.reshape(-1, x.shape[-1])
    y = np.zeros((x2.shape[0], q.shape[0]))
    outlier = [j for j in range(x2.shape[1]) if np.any(np.abs(x2[:, j]) >= threshold)]
    for r in range(x2.shape[0]):
        inl = np.array([0.0 if j in outlier else x2[r, j] for j in range(x2.shape[1])])
        rs = np.abs(inl).max() / 127
        xq = np.round(inl / rs)
        for o in range(q.shape[0]):
            acc = sum(int(xq[j]) * int(q[o, j]) for j in range(x2.shape[1]))
            y[r, o] = acc * rs * scale[o] + sum(x2[r, j] * q[o, j] * scale[o] for j in outlier)
    return y.reshape(*x.shape[:-1], q.shape[0])


def _weight(k, n):
    """A float weight [k, n] whose columns quantize away from ties, each with its abs-max 127 * s."""
    s = RNG.uniform(0.005, 0.02, n)
    w = _levels((k, n), s)
    w[RNG.integers(0, k, n), np.arange(n)] = 127 * s * RNG.choice([-1, 1], n)
    return w


def _activations(m, k, threshold, outlier_cols):
    r = RNG.uniform(0.01, 0.04, (m, 1))
    x = _levels((m, k), r)
    x[np.arange(m), RNG.integers(0, k, m)] = 127 * r[:, 0]
    for j in outlier_cols:
        x[:, j] = RNG.uniform(-1, 1, m)
        x[0, j] = threshold + 1.5
    return x


def _ste_input():
    inside = _levels((3, 4), 0.05, -120, 120)
    inside[0, :2] = [8.0, -9.0]  # clipped: 160 and -180 steps
    return inside


STE_SCALE = 0.05


def _ste_probe(fq, x):
    clipped = oar.clip(x, -128 * STE_SCALE, 127 * STE_SCALE)  # a constant: traceable by to_static
    return fq - fq.detach() + clipped.detach()


W_Q, W_S = ref_weight_quantize(_weight(24, 10))
CH_SCALE = RNG.uniform(0.02, 0.1, 3)
CH_ZP = np.array([0, 5, -7], np.int8)
X_LLM = _activations(5, 24, 6.0, [3, 17])


def _x_channels(shape, axis, scale):
    view = [1] * len(shape)
    view[axis] = -1
    return _levels(shape, scale.reshape(view), -100, 100)


CASES = [
    OpCase("quantize_linear", lambda x, s: quant.quantize_linear(x, s),
           lambda x, s: ref_quantize(x, s, np.int8(0), None), [_levels((4, 5), 0.05, -140, 140), np.array(0.05)],
           grad=False, id="quantize_linear_per_tensor_saturating"),
    OpCase("quantize_linear", lambda x, s, z: quant.quantize_linear(x, s, z, axis=1),
           lambda x, s, z: ref_quantize(x, s, z, 1), [_x_channels((2, 3, 4), 1, CH_SCALE), CH_SCALE, CH_ZP],
           grad=False, id="quantize_linear_per_channel_zero_point"),
    OpCase("quantize_linear", lambda x, s: quant.quantize_linear(x, s, axis=-1, bit_length=4),
           lambda x, s: ref_quantize(x, s, np.zeros(3, np.int8), 1, 4), [_levels((5, 3), 0.3, -12, 12), CH_SCALE * 3],
           grad=False, id="quantize_linear_4bit_last_axis"),
    OpCase("dequantize_linear", lambda q, s: quant.dequantize_linear(q, s),
           lambda q, s: ref_dequantize(q, s, np.int8(0), None), [_int8(3, 7), np.array(0.037)],
           grad=False, id="dequantize_linear_per_tensor"),
    OpCase("dequantize_linear", lambda q, s, z: quant.dequantize_linear(q, s, z, axis=0),
           lambda q, s, z: ref_dequantize(q, s, z, 0), [_int8(3, 2, 5), CH_SCALE, CH_ZP],
           grad=False, id="dequantize_linear_per_channel"),
    OpCase("fake_quantize_dequantize", lambda x, s, z: quant.fake_quantize_dequantize(x, s, z, axis=1),
           lambda x, s, z: ref_dequantize(ref_quantize(x, s, z, 1), s, z, 1),
           [_x_channels((2, 3, 4), 1, CH_SCALE * 0.5) * 3, CH_SCALE, CH_ZP], grad=False,
           id="fake_quantize_dequantize_per_channel_clipping"),
    # The straight-through gradient is not the derivative of the rounded value, so it is checked
    # through fq(x) - detach(fq(x)) + detach(clip(x)): the value is clip(x), whose derivative (1 inside
    # the range, 0 where clipped) is what the op's gradient must be. No value sits within one step
    # of the range's ends, where the two rules' boundaries differ by half a step.
    OpCase("fake_quantize_dequantize",
           lambda x, s: _ste_probe(quant.fake_quantize_dequantize(x, s), x),
           lambda x, s: np.clip(x, -128 * s, 127 * s), [_ste_input(), np.array(STE_SCALE)], grad_inputs=[0],
           id="fake_quantize_dequantize_straight_through"),
    OpCase("weight_quantize", quant.weight_quantize, ref_weight_quantize, [_weight(16, 6)], grad=False),
    OpCase("weight_dequantize", lambda q, s: quant.weight_dequantize(q, s, out_dtype="float64"),
           lambda q, s: (q.astype(np.float64) * s[:, None]).T, [W_Q, W_S], grad=False),
    OpCase("weight_only_linear", lambda x, q, s: quant.weight_only_linear(x, q, weight_scale=s),
           ref_linear, [RNG.standard_normal((2, 3, 24)), W_Q, W_S], grad_inputs=[0]),
    OpCase("weight_only_linear", lambda x, q, s, b: quant.weight_only_linear(x, q, b, weight_scale=s),
           lambda x, q, s, b: ref_linear(x, q, s) + b, [RNG.standard_normal((1, 24)), W_Q, W_S,
                                                      RNG.standard_normal(10)], grad_inputs=[0],
           id="weight_only_linear_gemv_bias"),
    OpCase("weight_only_linear", lambda x, q, s: quant.weight_only_linear(x, q, weight_scale=s),
           ref_linear, [RNG.standard_normal((40, 24)), W_Q, W_S], grad_inputs=[0], id="weight_only_linear_gemm"),
    OpCase("llm_int8_linear", lambda x, q, s: quant.llm_int8_linear(x, q, weight_scale=s),
           lambda x, q, s: ref_llm_int8(x, q, s, 6.0), [X_LLM, W_Q, W_S], grad=False, id="llm_int8_linear_outliers"),
    OpCase("llm_int8_linear", lambda x, q, s: quant.llm_int8_linear(x, q, weight_scale=s, threshold=100.0),
           lambda x, q, s: ref_llm_int8(x, q, s, 100.0), [X_LLM[:3], W_Q, W_S], grad=False,
           id="llm_int8_linear_no_outliers"),
    OpCase("matmul_int8", quant.matmul_int8, lambda a, b: a.astype(np.int64) @ b.astype(np.int64).T,
           [_int8(7, 300), _int8(5, 300)], grad=False, dtypes=("float32",)),
    OpCase("matmul_int8", quant.matmul_int8, lambda a, b: a.astype(np.int64) @ b.astype(np.int64).T,
           [np.full((3, 1000), -128, np.int8), np.concatenate([np.full((40, 1000), -128, np.int8), _int8(30, 1000)])],
           grad=False, dtypes=("float32",), id="matmul_int8_extremes_many_tiles"),
]


# -- quantized_linear / quantized_conv2d ----------------------------------------------------------
# The steps are powers of two and the biases multiples of 1/16, so that acc * step + bias is exact
# in float32 too: the cases compare the integer sums, not rounding. The references widen to int64.
def _pow2_steps(n):
    return 2.0 ** -RNG.integers(7, 10, n)


def ref_quantized_linear(x, xs, w, ws, b, xz, wz, act=None):
    acc = (x.astype(np.int64) - int(xz)) @ (w.astype(np.int64) - wz.astype(np.int64))
    y = acc * (xs * ws) + (0 if b is None else b)
    return np.maximum(y, 0) if act == "relu" else y


def ref_quantized_conv2d(x, xs, w, ws, b, xz, wz, stride, padding, act=None, max_pool=None):
    (sh, sw), (top, bottom, left, right), kh, kw = stride, padding, w.shape[2], w.shape[3]
    xc = np.pad(x.astype(np.int64) - int(xz), ((0, 0), (0, 0), (top, bottom), (left, right)))  # padding is a real 0
    windows = np.lib.stride_tricks.sliding_window_view(xc, (kh, kw), axis=(2, 3))[:, :, ::sh, ::sw]
    acc = np.einsum("nchwij,ocij->nohw", windows, w.astype(np.int64) - wz.astype(np.int64).reshape(-1, 1, 1, 1))
    y = acc * (xs * ws).reshape(-1, 1, 1) + (0 if b is None else b.reshape(-1, 1, 1))
    y = {"relu": lambda v: np.maximum(v, 0), "sigmoid": lambda v: 1 / (1 + np.exp(-v)), None: lambda v: v}[act](y)
    if max_pool:
        n, o, h, wd = y.shape
        h, wd = h // max_pool * max_pool, wd // max_pool * max_pool
        y = y[:, :, :h, :wd].reshape(n, o, h // max_pool, max_pool, wd // max_pool, max_pool).max(axis=(3, 5))
    return y


QL_W, QC_W = _int8(30, 7), _int8(5, 3, 3, 3)
QL_ZW, QC_ZW = RNG.integers(-4, 5, 7).astype(np.int8), RNG.integers(-4, 5, 5).astype(np.int8)
CASES += [
    OpCase("quantized_linear",
           lambda x, xs, w, ws, b, xz, wz: quant.quantized_linear(x, xs, w, ws, b, xz, wz, act="relu"),
           lambda x, xs, w, ws, b, xz, wz: ref_quantized_linear(x, xs, w, ws, b, xz, wz, "relu"),
           [_int8(2, 3, 30), np.array(2.0 ** -6, np.float32), QL_W, _pow2_steps(7).astype(np.float32),
            (RNG.integers(-40, 40, 7) / 16).astype(np.float32), np.array(-3, np.int8), QL_ZW],
           grad=False, dtypes=("float32",), id="quantized_linear_per_channel_zero_points_relu"),
    OpCase("quantized_linear", lambda x, xs, w, ws: quant.quantized_linear(x, xs, w, ws),
           lambda x, xs, w, ws: ref_quantized_linear(x, xs, w, ws, None, np.int8(0), np.int8(0)),
           [_int8(1, 30), np.array(2.0 ** -6, np.float32), QL_W, np.array(2.0 ** -8, np.float32)],
           grad=False, dtypes=("float32",), id="quantized_linear_one_row_per_tensor"),
    OpCase("quantized_conv2d",
           lambda x, xs, w, ws, b, xz, wz: quant.quantized_conv2d(x, xs, w, ws, b, padding=(1, 1, 1, 1), x_zero_point=xz,
                                                                  weight_zero_point=wz, act="relu", max_pool=2),
           lambda x, xs, w, ws, b, xz, wz: ref_quantized_conv2d(x, xs, w, ws, b, xz, wz, (1, 1), (1, 1, 1, 1), "relu", 2),
           [_int8(2, 3, 7, 6), np.array(2.0 ** -6, np.float32), QC_W, _pow2_steps(5).astype(np.float32),
            (RNG.integers(-40, 40, 5) / 16).astype(np.float32), np.array(5, np.int8), QC_ZW],
           grad=False, dtypes=("float32",), id="quantized_conv2d_padded_relu_max_pool"),
    OpCase("quantized_conv2d",
           lambda x, xs, w, ws, xz: quant.quantized_conv2d(x, xs, w, ws, stride=(2, 1), padding=(0, 1, 2, 0),
                                                           x_zero_point=xz, act="sigmoid"),
           lambda x, xs, w, ws, xz: ref_quantized_conv2d(x, xs, w, ws, None, xz, np.int8(0), (2, 1), (0, 1, 2, 0),
                                                         "sigmoid"),
           [_int8(1, 3, 8, 5), np.array(2.0 ** -6, np.float32), QC_W, np.array(2.0 ** -9, np.float32),
            np.array(-7, np.int8)], grad=False, dtypes=("float32",), id="quantized_conv2d_strided_sigmoid"),
]
