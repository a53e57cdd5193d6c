"""Quantization ops in QDQ form (QuantizeLinear / DequantizeLinear), and the int8 linears.

oar's convention is ONNX's already: an int8 ``q`` stands for ``(q - zero_point) * scale``, the
scale a step (``absmax / 127`` for Paddle's abs-max scales), zero points int8, rounding half to
even; a 0-d scale quantizes per tensor, a 1-d one along ``axis``. So:

- ``quantize_linear`` -> QuantizeLinear (a Clip to the narrower range below 8 bits);
  ``dequantize_linear`` -> DequantizeLinear; ``fake_quantize_dequantize`` -> the pair.
- ``weight_dequantize`` and ``weight_only_linear``: the int8 weight ``[out, in]`` transposed,
  DequantizeLinear along its output channels, then MatMul.
- ``matmul_int8`` -> MatMulInteger (int8 x int8 -> int32) of the transposed ``y``.
- ``llm_int8_linear``: LLM.int8() as the kernel computes it: outlier columns found at run time
  (``|x| >= threshold`` in any row), per-row int8 quantization of the rest and MatMulInteger,
  the outlier columns in floating point through the dequantized weight.
- ``weight_quantize``: the kernel's per-column abs-max quantization of a float weight.

QuantizeLinear and DequantizeLinear take float32 at opset 13 (oar's float64 would be rounded):
other dtypes get the same formula from Div, Round, Clip and Cast, computed in their own dtype.

>>> from oar.onnx.lowerings import all_lowerings
>>> {"quantize_linear", "dequantize_linear", "fake_quantize_dequantize"} <= set(all_lowerings())
True
"""

from __future__ import annotations

import numpy as np

from oar.onnx.lowerings import lowers, not_lowered
from oar.onnx.lowerings.nn import reduce_over, scalar


def qrange(bit_length: int) -> tuple[int, int]:
    """The signed range of ``bit_length`` bits (oar's): 8 -> (-128, 127)."""
    return -(1 << (bit_length - 1)), (1 << (bit_length - 1)) - 1


def _int8(ctx, value) -> str:
    return ctx.constant(np.asarray(value, np.int8))


def _cast(ctx, name: str, have: str, want: str) -> str:
    return name if have == want else ctx.emit("Cast", [name], to=ctx.onnx_dtype(want))


def _along(ctx, name: str, axis, rank: int) -> str:
    """A 1-d per-channel parameter shaped to broadcast along ``axis`` of a rank-``rank`` tensor
    (a 0-d one, or one along the last axis, as it is)."""
    if axis is None or axis == rank - 1:
        return name
    return ctx.emit("Reshape", [name, ctx.int64s([-1] + [1] * (rank - 1 - axis))])


def _qdq_axis(ctx, node) -> int | None:
    """The ``axis`` attribute of QuantizeLinear/DequantizeLinear: the node's axis for a 1-d scale."""
    return int(node.attrs["axis"]) if len(ctx.shape(node.inputs[1])) == 1 else None


def _narrow(ctx, q: str, bit_length: int, out) -> str:
    """``q`` (int8) clipped to ``bit_length`` bits, or ``q`` itself at 8 bits."""
    if bit_length == 8:
        return q
    lo, hi = qrange(bit_length)
    return ctx.emit("Clip", [q, _int8(ctx, lo), _int8(ctx, hi)], out)


def _quantize_formula(ctx, x, scale, zero_point, dtype, axis, rank, bit_length) -> str:
    """clip(round(x / scale) + zero_point, lo, hi), in ``dtype`` (the kernel's own formula)."""
    lo, hi = qrange(bit_length)
    s, z = _along(ctx, scale, axis, rank), _along(ctx, zero_point, axis, rank)
    level = ctx.emit("Add", [ctx.emit("Round", [ctx.emit("Div", [x, s])]), _cast(ctx, z, "int8", dtype)])
    return ctx.emit("Clip", [level, scalar(ctx, lo, dtype), scalar(ctx, hi, dtype)])


@lowers("quantize_linear")
def lower_quantize_linear(node, ctx):
    x, scale, zero_point = ctx.inputs(node)
    bit_length = int(node.attrs["bit_length"])
    axis = _qdq_axis(ctx, node)
    dtype = ctx.dtype(node.inputs[0])
    out = ctx.name(node.outputs[0])
    if dtype == "float32" and ctx.dtype(node.inputs[1]) == "float32":
        q = ctx.emit("QuantizeLinear", [x, scale, zero_point], out if bit_length == 8 else None, axis=axis)
        _narrow(ctx, q, bit_length, out)
        return
    scale = _cast(ctx, scale, ctx.dtype(node.inputs[1]), dtype)
    level = _quantize_formula(ctx, x, scale, zero_point, dtype, axis, len(ctx.shape(node.inputs[0])), bit_length)
    ctx.emit("Cast", [level], out, to=ctx.onnx_dtype("int8"))


def dequantize(ctx, q: str, scale: str, zero_point: str | None, dtype: str, axis, rank: int, out=None) -> str:
    """``(q - zero_point) * scale`` in ``dtype`` (the scale's): DequantizeLinear for float32,
    the formula for another dtype."""
    if dtype == "float32":
        return ctx.emit("DequantizeLinear", [q, scale] + ([zero_point] if zero_point else []), out, axis=axis)
    level = _cast(ctx, q, "int8", dtype)
    if zero_point:
        level = ctx.emit("Sub", [level, _cast(ctx, _along(ctx, zero_point, axis, rank), "int8", dtype)])
    return ctx.emit("Mul", [level, _along(ctx, scale, axis, rank)], out)


@lowers("dequantize_linear")
def lower_dequantize_linear(node, ctx):
    q, scale, zero_point = ctx.inputs(node)
    dequantize(ctx, q, scale, zero_point, ctx.dtype(node.inputs[1]), _qdq_axis(ctx, node),
               len(ctx.shape(node.inputs[0])), ctx.name(node.outputs[0]))


@lowers("fake_quantize_dequantize")
def lower_fake_quantize_dequantize(node, ctx):
    # the QDQ pair, with the kernel's scale in x's dtype
    x, scale, zero_point = ctx.inputs(node)
    bit_length = int(node.attrs["bit_length"])
    axis = _qdq_axis(ctx, node)
    dtype = ctx.dtype(node.inputs[0])
    rank = len(ctx.shape(node.inputs[0]))
    scale = _cast(ctx, scale, ctx.dtype(node.inputs[1]), dtype)
    out = ctx.name(node.outputs[0])
    if dtype == "float32":
        q = _narrow(ctx, ctx.emit("QuantizeLinear", [x, scale, zero_point], axis=axis), bit_length, None)
        ctx.emit("DequantizeLinear", [q, scale, zero_point], out, axis=axis)
        return
    level = _quantize_formula(ctx, x, scale, zero_point, dtype, axis, rank, bit_length)
    level = ctx.emit("Sub", [level, _cast(ctx, _along(ctx, zero_point, axis, rank), "int8", dtype)])
    ctx.emit("Mul", [level, _along(ctx, scale, axis, rank)], out)


def dequantized_weight(ctx, q: str, scale: str, scale_dtype: str, dtype: str, out=None) -> str:
    """The float weight ``[in, out]`` in ``dtype`` of an int8 weight ``[out, in]`` and its scale
    per output channel: ``q.T * scale`` (the weight-only kernels', each factor in ``dtype``)."""
    return dequantize(ctx, ctx.emit("Transpose", [q], perm=[1, 0]), _cast(ctx, scale, scale_dtype, dtype), None,
                      dtype, 1, 2, out)


@lowers("weight_dequantize")
def lower_weight_dequantize(node, ctx):
    q, scale = ctx.inputs(node)
    dequantized_weight(ctx, q, scale, ctx.dtype(node.inputs[1]), str(node.attrs["out_dtype"]),
                       ctx.name(node.outputs[0]))


@lowers("weight_only_linear")
def lower_weight_only_linear(node, ctx):
    x, q, scale = ctx.inputs(node)
    w = dequantized_weight(ctx, q, scale, ctx.dtype(node.inputs[2]), ctx.dtype(node.inputs[0]))
    ctx.emit("MatMul", [x, w], ctx.outputs(node))


@lowers("matmul_int8")
def lower_matmul_int8(node, ctx):
    x, y = ctx.inputs(node)
    ctx.emit("MatMulInteger", [x, ctx.emit("Transpose", [y], perm=[1, 0])], ctx.outputs(node))


@lowers("llm_int8_linear")
def lower_llm_int8_linear(node, ctx):
    x, q, scale = ctx.inputs(node)
    shape = list(ctx.shape(node.inputs[0]))
    dtype = ctx.dtype(node.inputs[0])
    k, n = shape[-1], ctx.shape(node.inputs[1])[0]
    c = lambda v: scalar(ctx, v, dtype)  # noqa: E731
    rows = x if len(shape) == 2 else ctx.emit("Reshape", [x, ctx.int64s([-1, k])])
    # the outlier columns: |x| >= threshold in any row
    outlier = ctx.emit("GreaterOrEqual", [reduce_over(ctx, "ReduceMax", ctx.emit("Abs", [rows]), [0]),
                                          c(node.attrs["threshold"])])  # [1, k]
    inliers = ctx.emit("Where", [outlier, c(0.0), rows])
    row_scale = ctx.emit("Div", [reduce_over(ctx, "ReduceMax", ctx.emit("Abs", [inliers]), [1]), c(127.0)])  # [m, 1]
    safe = ctx.emit("Where", [ctx.emit("Greater", [row_scale, c(0.0)]), row_scale, c(1.0)])
    level = ctx.emit("Clip", [ctx.emit("Round", [ctx.emit("Div", [inliers, safe])]), c(-127.0), c(127.0)])
    xq = ctx.emit("Cast", [level], to=ctx.onnx_dtype("int8"))
    acc = ctx.emit("MatMulInteger", [xq, ctx.emit("Transpose", [q], perm=[1, 0])])  # int32 [m, n]
    s = _cast(ctx, scale, ctx.dtype(node.inputs[2]), dtype)
    y = ctx.emit("Mul", [ctx.emit("Mul", [_cast(ctx, acc, "int32", dtype), row_scale]), s])
    # the outlier columns in floating point (the others are zeros there: they add nothing)
    outliers = ctx.emit("Where", [outlier, rows, c(0.0)])
    w = dequantized_weight(ctx, q, scale, ctx.dtype(node.inputs[2]), dtype)
    out = ctx.name(node.outputs[0])
    y = ctx.emit("Add", [y, ctx.emit("MatMul", [outliers, w])], out if len(shape) == 2 else None)
    if len(shape) == 2:
        return
    lead = shape[:-1]
    if None in lead:
        target = ctx.emit("Concat", [ctx.emit("Slice", [ctx.emit("Shape", [x]), ctx.int64s([0]), ctx.int64s([-1])]),
                                     ctx.int64s([n])], axis=0)
    else:
        target = ctx.int64s(lead + [n])
    ctx.emit("Reshape", [y, target], out)


@lowers("weight_quantize")
def lower_weight_quantize(node, ctx):
    # x [in, out] -> int8 x.T / scale and scale = max|column| / 127 (float32), as the kernel
    x, = ctx.inputs(node)
    dtype = ctx.dtype(node.inputs[0])
    absmax = _cast(ctx, reduce_over(ctx, "ReduceMax", ctx.emit("Abs", [x]), [0], keepdims=0), dtype, "float32")
    scale = ctx.emit("Div", [absmax, scalar(ctx, 127.0, "float32")], ctx.name(node.outputs[1]))
    safe = ctx.emit("Where", [ctx.emit("Greater", [scale, scalar(ctx, 0.0, "float32")]), scale,
                              scalar(ctx, 1.0, "float32")])
    level = ctx.emit("Round", [ctx.emit("Div", [_cast(ctx, x, dtype, "float32"), safe])])
    level = ctx.emit("Clip", [level, scalar(ctx, -127.0, "float32"), scalar(ctx, 127.0, "float32")])
    q = ctx.emit("Cast", [level], to=ctx.onnx_dtype("int8"))
    ctx.emit("Transpose", [q], ctx.name(node.outputs[0]), perm=[1, 0])


not_lowered("oar's int8 layer kernels, made by oar-slim's quantize phase, which export does not run: the exported "
            "model keeps the quantize/dequantize pairs they are made from, which ONNX Runtime fuses into its own "
            "int8 kernels", "quantized_linear", "quantized_conv2d")
