"""Integer quantization ops: the kernels of ``oar.nn.quant`` and the QDQ pair that slim's QAT/PTQ
passes and the ONNX exporter read.

Two families, one convention: an int8 value ``q`` stands for ``(q - zero_point) * scale``.

- Weight-only and LLM.int8 inference (Paddle's ``paddle.nn.quant``): a weight ``[in, out]`` is
  quantized per output channel, symmetric, ``scale = max|w| / 127``, and stored transposed as
  ``int8 [out, in]`` (Paddle's layout: each output channel's row is contiguous, which is what a
  GEMV over int8 rows reads). ``weight_only_linear`` multiplies float activations by it;
  ``llm_int8_linear`` also quantizes the activations per row (each token its own scale) and runs
  an int8 x int8 -> int32 GEMM (``matmul_int8``), except for the outlier feature columns
  (``|x| >= threshold`` anywhere), which stay in floating point (Dettmers et al., LLM.int8()).
- ``quantize_linear`` / ``dequantize_linear``: ONNX's QuantizeLinear / DequantizeLinear, per
  tensor (a scalar scale) or per channel along ``axis``; ``scale`` is the step, not Paddle's
  abs-max (Paddle's static ops compute ``round(x / absmax * 127)``; pass ``absmax / 127``).
  ``fake_quantize_dequantize`` is the two in one float op, with the straight-through gradient QAT
  trains with: the gradient passes where ``x`` quantized inside the integer range and is 0 where
  it clipped.

- ``quantized_linear`` / ``quantized_conv2d``: the integer layers of a converted model, what
  oar-slim's ``quantized_ops`` pass makes of ``dequantize_linear -> linear / conv`` chains: int8
  activations (per tensor) times int8 weights (per tensor or per output channel), accumulated
  exactly in int32, then ``acc * (x_scale * weight_scale) + bias`` in float32 and an optional
  activation (and, for conv, ``max_pool``), as ``fused_conv2d`` ends.

Rounding is half to even (``np.rint``), as ONNX specifies, everywhere.
"""

from __future__ import annotations

import numpy as np

import oar
from oar.errors import ArgumentError, DTypeError, ShapeError
from oar.nn.functional import conv as _conv
from oar.nn.functional.fused import apply_activation, check_act, pool_output, pooled_meta
from oar.ops import Op, Tensor, TensorMeta, as_tensor, dispatch, fmt_shape, get_dtype

FLOATS = (oar.float32, oar.float64)  # float16 and bfloat16 compute in float32
INT8 = (oar.int8,)
NONDIFF = ("nondiff",)
WEIGHT_ALGOS = ("weight_only_int8", "llm.int8")


def qrange(bit_length: int) -> tuple[int, int]:
    """The signed integer range of ``bit_length`` bits: 8 -> (-128, 127)."""
    return -(1 << (bit_length - 1)), (1 << (bit_length - 1)) - 1


def _along(a: np.ndarray, axis: int | None, ndim: int) -> np.ndarray:
    """A per-channel parameter shaped to broadcast along ``axis`` of an ``ndim``-d tensor (a scalar as is)."""
    if axis is None or a.ndim == 0:
        return a
    shape = [1] * ndim
    shape[axis] = a.size
    return a.reshape(shape)


def _check_qparams(op: str, x: TensorMeta, scale: TensorMeta, zero_point: TensorMeta, axis, bit_length) -> None:
    if not 2 <= bit_length <= 8:
        raise ArgumentError(f"{op}: bit_length must be in 2..8 (the result is stored as int8), got {bit_length}")
    if zero_point.dtype is not oar.int8:
        raise DTypeError(f"{op}: zero_point must be int8, got {zero_point.dtype.name}")
    if tuple(scale.shape) != tuple(zero_point.shape):
        raise ShapeError(f"{op}: scale {fmt_shape(scale.shape)} and zero_point {fmt_shape(zero_point.shape)} "
                         "must have the same shape")
    if len(scale.shape) == 0:
        return
    if len(scale.shape) != 1 or axis is None or not -len(x.shape) <= axis < len(x.shape):
        raise ShapeError(f"{op}: a per-channel scale {fmt_shape(scale.shape)} needs a 1-d scale and an axis of x "
                         f"{fmt_shape(x.shape)}, got axis={axis}")
    size = x.shape[axis]
    if size is not None and scale.shape[0] not in (None, size):
        raise ShapeError(f"{op}: scale has {scale.shape[0]} values for the {size} channels of x "
                         f"{fmt_shape(x.shape)} along axis {axis}")


# -- quantize_linear / dequantize_linear / fake_quantize_dequantize --------------------------------
def _quantize_linear_kernel(x, scale, zero_point, axis, bit_length):
    lo, hi = qrange(bit_length)
    s = _along(scale, axis, x.ndim)
    z = _along(zero_point.astype(np.int32), axis, x.ndim)
    return np.clip(np.rint(x / s) + z, lo, hi).astype(np.int8)


def _quantize_linear_meta(x, scale, zero_point, axis, bit_length):
    if not x.dtype.is_floating or not scale.dtype.is_floating:
        raise DTypeError(f"quantize_linear: x and scale must be floating tensors, got {x.dtype.name} and "
                         f"{scale.dtype.name}")
    _check_qparams("quantize_linear", x, scale, zero_point, axis, bit_length)
    return TensorMeta(x.shape, oar.int8)


def _dequantize_linear_kernel(q, scale, zero_point, axis, bit_length):
    s = _along(scale, axis, q.ndim)
    z = _along(zero_point.astype(np.int32), axis, q.ndim)
    return ((q.astype(np.int32) - z) * s).astype(scale.dtype)


def _dequantize_linear_meta(q, scale, zero_point, axis, bit_length):
    if q.dtype is not oar.int8 or not scale.dtype.is_floating:
        raise DTypeError(f"dequantize_linear: x must be int8 and scale floating, got {q.dtype.name} and "
                         f"{scale.dtype.name}")
    _check_qparams("dequantize_linear", q, scale, zero_point, axis, bit_length)
    return TensorMeta(q.shape, scale.dtype)


def _fake_quantize_dequantize_kernel(x, scale, zero_point, axis, bit_length):
    lo, hi = qrange(bit_length)
    s = _along(scale.astype(x.dtype), axis, x.ndim)
    z = _along(zero_point.astype(x.dtype), axis, x.ndim)
    return ((np.clip(np.rint(x / s) + z, lo, hi) - z) * s).astype(x.dtype)


def _fake_quantize_dequantize_meta(x, scale, zero_point, axis, bit_length):
    if not x.dtype.is_floating:
        raise DTypeError(f"fake_quantize_dequantize: x must be a floating tensor, got {x.dtype.name}")
    _check_qparams("fake_quantize_dequantize", x, scale, zero_point, axis, bit_length)
    return x


quantize_linear_op = Op("quantize_linear", reference=_quantize_linear_kernel, meta=_quantize_linear_meta,
                        traits=NONDIFF, dtypes=FLOATS)
dequantize_linear_op = Op("dequantize_linear", reference=_dequantize_linear_kernel, meta=_dequantize_linear_meta,
                          traits=NONDIFF, dtypes=INT8)
fake_quantize_dequantize_op = Op("fake_quantize_dequantize", reference=_fake_quantize_dequantize_kernel,
                                 meta=_fake_quantize_dequantize_meta, dtypes=FLOATS, nondiff_inputs=(1, 2))


@fake_quantize_dequantize_op.defgrad
def _fake_quantize_dequantize_grad(ctx, g):
    # Straight-through: d round(v) / dv taken as 1 inside the integer range, 0 where it clipped.
    a = ctx.attrs
    x, scale, zero_point = ctx.input(0), ctx.input(1), ctx.input(2)
    lo, hi = qrange(a["bit_length"])
    axis = a["axis"]
    if scale.ndim and axis is not None:
        shape = [1] * x.ndim
        shape[axis] = -1
        scale, zero_point = scale.reshape(shape), zero_point.reshape(shape)
    level = x / scale.astype(x.dtype) + zero_point.astype(x.dtype)
    inside = oar.logical_and(level >= lo - 0.5, level <= hi + 0.5)
    return oar.where(inside, g, oar.zeros_like(g)), None, None


def _checked(op: Op, inputs: tuple, attrs: dict):
    """Dispatch ``op`` after its meta checked the inputs: eager dispatch runs no meta, and these
    checks (an int8 weight's layout, a scale per channel) are what the user's mistake looks like."""
    op.meta(*(TensorMeta(tuple(t.shape), t.dtype) for t in inputs), **attrs)
    return dispatch(op, inputs, attrs)


def _qparams(fn: str, x: Tensor, scale, zero_point, axis):
    scale = as_tensor(scale)
    zero_point = oar.zeros(scale.shape, "int8", device=scale.place) if zero_point is None else as_tensor(zero_point)
    if zero_point.dtype is not oar.int8:
        zero_point = zero_point.astype("int8")
    if scale.ndim == 0:
        return scale, zero_point, None
    return scale, zero_point, axis + x.ndim if axis < 0 else axis


def quantize_linear(x, scale, zero_point=None, axis: int = 1, bit_length: int = 8, name=None) -> Tensor:
    """Quantize ``x`` to int8: ``clip(round(x / scale) + zero_point, -2**(b-1), 2**(b-1) - 1)``.

    ONNX's QuantizeLinear: a scalar ``scale`` quantizes per tensor, a 1-d one per channel along
    ``axis``; ``zero_point`` (int8, ``scale``'s shape) defaults to 0 (symmetric).

    >>> import oar
    >>> from oar.nn.quant import quantize_linear
    >>> quantize_linear(oar.to_tensor([0.1, -0.26, 9.0]), oar.to_tensor(0.05)).tolist()
    [2, -5, 127]
    """
    x = as_tensor(x)
    scale, zero_point, axis = _qparams("quantize_linear", x, scale, zero_point, axis)
    return _checked(quantize_linear_op, (x, scale.astype(x.dtype) if scale.dtype is not x.dtype else scale,
                                         zero_point), {"axis": axis, "bit_length": int(bit_length)})


def dequantize_linear(x, scale, zero_point=None, axis: int = 1, bit_length: int = 8, name=None) -> Tensor:
    """The int8 ``x`` as ``(x - zero_point) * scale``, in ``scale``'s dtype (ONNX's DequantizeLinear).

    >>> import oar
    >>> from oar.nn.quant import dequantize_linear
    >>> dequantize_linear(oar.to_tensor([2, -5, 127], dtype="int8"), oar.to_tensor(0.5)).tolist()
    [1.0, -2.5, 63.5]
    """
    x = as_tensor(x)
    scale, zero_point, axis = _qparams("dequantize_linear", x, scale, zero_point, axis)
    return _checked(dequantize_linear_op, (x, scale, zero_point), {"axis": axis, "bit_length": int(bit_length)})


def fake_quantize_dequantize(x, scale, zero_point=None, axis: int = 1, bit_length: int = 8, name=None) -> Tensor:
    """``dequantize_linear(quantize_linear(x))`` in ``x``'s dtype, with the straight-through
    gradient of quantization-aware training (1 where ``x`` is inside the integer range, else 0).

    >>> import oar
    >>> from oar.nn.quant import fake_quantize_dequantize
    >>> [round(v, 4) for v in fake_quantize_dequantize(oar.to_tensor([0.12, 100.0]), oar.to_tensor(0.1)).tolist()]
    [0.1, 12.7]
    """
    x = as_tensor(x)
    scale, zero_point, axis = _qparams("fake_quantize_dequantize", x, scale, zero_point, axis)
    return _checked(fake_quantize_dequantize_op, (x, scale, zero_point),
                    {"axis": axis, "bit_length": int(bit_length)})


# -- weight-only / LLM.int8 ----------------------------------------------------------------------
def _weight_quantize_kernel(x):
    """x [in, out] -> (int8 [out, in], float32 scale [out]) with scale = max|column| / 127."""
    absmax = np.max(np.abs(x), axis=0).astype(np.float32) if x.shape[0] else np.zeros(x.shape[1], np.float32)
    scale = absmax / np.float32(127)
    safe = np.where(scale > 0, scale, np.float32(1))
    q = np.clip(np.rint(x.astype(np.float32) / safe), -127, 127).astype(np.int8)
    return np.ascontiguousarray(q.T), scale


def _weight_quantize_meta(x):
    if not x.dtype.is_floating:
        raise DTypeError(f"weight_quantize: x must be a floating tensor, got {x.dtype.name}")
    if len(x.shape) != 2:
        raise ShapeError(f"weight_quantize: x must be a 2-d weight [in_features, out_features], got "
                         f"{fmt_shape(x.shape)}")
    return TensorMeta((x.shape[1], x.shape[0]), oar.int8), TensorMeta((x.shape[1],), oar.float32)


def _weight_dequantize_kernel(q, scale, out_dtype):
    out = get_dtype(out_dtype).np
    return q.T.astype(out) * scale.astype(out)


def _check_int8_weight(fn: str, q: TensorMeta, scale: TensorMeta, name: str = "x") -> None:
    if q.dtype is not oar.int8 or len(q.shape) != 2:
        raise DTypeError(f"{fn}: {name} must be an int8 weight [out_features, in_features] from weight_quantize, got "
                         f"{q.dtype.name}{fmt_shape(q.shape)}")
    if len(scale.shape) != 1 or scale.shape[0] not in (None, q.shape[0]) or not scale.dtype.is_floating:
        raise ShapeError(f"{fn}: the scale must be a float vector of the {q.shape[0]} output channels of the "
                         f"weight, got {scale.dtype.name}{fmt_shape(scale.shape)}")


def _weight_dequantize_meta(q, scale, out_dtype):
    _check_int8_weight("weight_dequantize", q, scale)
    return TensorMeta((q.shape[1], q.shape[0]), get_dtype(out_dtype))


weight_quantize_op = Op("weight_quantize", reference=_weight_quantize_kernel, meta=_weight_quantize_meta,
                        traits=NONDIFF, dtypes=FLOATS, num_outputs=2)
weight_dequantize_op = Op("weight_dequantize", reference=_weight_dequantize_kernel, meta=_weight_dequantize_meta,
                          traits=NONDIFF, dtypes=INT8)


def _linear_meta(fn: str):
    def meta(x, weight, scale, **_attrs):
        if not x.dtype.is_floating:
            raise DTypeError(f"{fn}: x must be a floating tensor, got {x.dtype.name}")
        _check_int8_weight(fn, weight, scale, "weight")
        if not x.shape or x.shape[-1] not in (None, weight.shape[1]):
            raise ShapeError(f"{fn}: x {fmt_shape(x.shape)} must end in the weight's {weight.shape[1]} in_features")
        return TensorMeta((*x.shape[:-1], weight.shape[0]), x.dtype)

    return meta


def _weight_only_linear_kernel(x, weight, scale):
    w = weight.astype(x.dtype) * scale.astype(x.dtype)[:, None]  # [out, in]
    return np.matmul(x, w.T)


weight_only_linear_op = Op("weight_only_linear", reference=_weight_only_linear_kernel,
                           meta=_linear_meta("weight_only_linear"), dtypes=FLOATS, nondiff_inputs=(1, 2))


@weight_only_linear_op.defgrad
def _weight_only_linear_grad(ctx, g):
    x = ctx.input(0)
    w = dispatch(weight_dequantize_op, (ctx.input(1), ctx.input(2)), {"out_dtype": x.dtype.name})  # [in, out]
    return oar.matmul(g, w, transpose_y=True), None, None


def matmul_int8_reference(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """int32 ``x [m, k] @ y[n, k].T`` of int8 operands (exact while k < 2**17)."""
    return np.matmul(x.astype(np.int32), y.astype(np.int32).T)


def _matmul_int8_meta(x, y):
    if x.dtype is not oar.int8 or y.dtype is not oar.int8:
        raise DTypeError(f"matmul_int8: x and y must be int8, got {x.dtype.name} and {y.dtype.name}")
    if len(x.shape) != 2 or len(y.shape) != 2 or x.shape[1] not in (None, y.shape[1]):
        raise ShapeError(f"matmul_int8: x [m, k] and y [n, k] must share k, got {fmt_shape(x.shape)} and "
                         f"{fmt_shape(y.shape)}")
    return TensorMeta((x.shape[0], y.shape[0]), oar.int32)


matmul_int8_op = Op("matmul_int8", reference=matmul_int8_reference, meta=_matmul_int8_meta, traits=NONDIFF,
                    dtypes=INT8)


def llm_int8_split(x2: np.ndarray, threshold: float):
    """The outlier columns of ``x2 [m, k]`` and the rows' int8 quantization of the rest:
    (outlier column mask, int8 [m, k] with outlier columns 0, row scales [m] in x2's dtype)."""
    outliers = np.any(np.abs(x2) >= threshold, axis=0) if x2.shape[0] else np.zeros(x2.shape[1], bool)
    inliers = np.where(outliers, x2.dtype.type(0), x2)
    row_scale = np.max(np.abs(inliers), axis=1) / x2.dtype.type(127) if x2.shape[1] else np.zeros(x2.shape[0], x2.dtype)
    safe = np.where(row_scale > 0, row_scale, x2.dtype.type(1))[:, None]
    return outliers, np.clip(np.rint(inliers / safe), -127, 127).astype(np.int8), row_scale


def _llm_int8_linear_kernel(x, weight, scale, threshold):
    x2 = x.reshape(-1, x.shape[-1])
    outliers, xq, row_scale = llm_int8_split(x2, threshold)
    acc = matmul_int8_reference(xq, weight)
    y = acc.astype(x.dtype) * row_scale[:, None] * scale.astype(x.dtype)[None, :]
    if outliers.any():
        w_out = weight[:, outliers].astype(x.dtype) * scale.astype(x.dtype)[:, None]
        y += x2[:, outliers] @ w_out.T
    return y.reshape(*x.shape[:-1], weight.shape[0])


llm_int8_linear_op = Op("llm_int8_linear", reference=_llm_int8_linear_kernel, meta=_linear_meta("llm_int8_linear"),
                        traits=NONDIFF, dtypes=FLOATS)


# -- quantized_linear / quantized_conv2d ------------------------------------------------------------
EXACT_FLOAT32_DEPTH = 1 << 10  # k int8 x int8 products (each |p| <= 2**14) sum below 2**24: exact in float32


def integer_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The exact int32 ``a @ b`` of small integers (|a|, |b| <= 255) through a float BLAS: float32
    while every partial sum stays below 2**24, float64 beyond (numpy's integer matmul has no BLAS)."""
    k = a.shape[-1]
    dtype = np.float32 if k <= EXACT_FLOAT32_DEPTH else np.float64
    return np.matmul(a.astype(dtype), b.astype(dtype)).astype(np.int32)


def _centered(q: np.ndarray, zero_point: np.ndarray, axis: int | None) -> np.ndarray:
    """``q - zero_point`` as int16 (the zero point per tensor, or per channel along ``axis``)."""
    return q.astype(np.int16) - _along(zero_point.astype(np.int16), axis, q.ndim)


def requantize_scale(x_scale: np.ndarray, weight_scale: np.ndarray) -> np.ndarray:
    """What one unit of the int32 accumulator is worth per output channel, in float32."""
    return (x_scale.astype(np.float32) * weight_scale.astype(np.float32)).reshape(-1)


def dequantize_accumulator(acc: np.ndarray, x_scale, weight_scale, bias, channel_axis: int) -> np.ndarray:
    """float32 ``acc * (x_scale * weight_scale) + bias``, per output channel along ``channel_axis``."""
    shape = [1] * acc.ndim
    shape[channel_axis] = -1
    y = acc.astype(np.float32)
    y *= requantize_scale(x_scale, weight_scale).reshape(shape)
    if bias is not None:
        y += bias.astype(np.float32).reshape(shape)
    return y


def _check_quantized(fn: str, x, x_scale, x_zero_point, weight, weight_scale, weight_zero_point, bias, channels,
                     act, act_attrs) -> None:
    if x.dtype is not oar.int8 or weight.dtype is not oar.int8:
        raise DTypeError(f"{fn}: x and weight must be int8, got {x.dtype.name} and {weight.dtype.name}")
    if x_scale.dtype is not oar.float32 or weight_scale.dtype is not oar.float32:
        raise DTypeError(f"{fn}: the scales must be float32, got {x_scale.dtype.name} and {weight_scale.dtype.name}")
    if len(x_scale.shape) != 0:
        raise ShapeError(f"{fn}: x is quantized per tensor: x_scale must be a scalar, got {fmt_shape(x_scale.shape)}")
    _check_qparams(fn, x, x_scale, x_zero_point, None, 8)
    if len(weight_scale.shape) not in (0, 1) or (len(weight_scale.shape) == 1
                                                  and weight_scale.shape[0] not in (None, channels)):
        raise ShapeError(f"{fn}: weight_scale must be a scalar or hold one step per output channel ({channels}), "
                         f"got {fmt_shape(weight_scale.shape)}")
    if weight_zero_point.dtype is not oar.int8 or tuple(weight_zero_point.shape) != tuple(weight_scale.shape):
        raise ShapeError(f"{fn}: weight_zero_point must be int8 shaped like weight_scale {fmt_shape(weight_scale.shape)}, "
                         f"got {weight_zero_point.dtype.name}{fmt_shape(weight_zero_point.shape)}")
    if bias is not None and (bias.dtype is not oar.float32 or len(bias.shape) != 1
                             or bias.shape[0] not in (None, channels)):
        raise ShapeError(f"{fn}: bias must be float32 [{channels}], got {bias.dtype.name}{fmt_shape(bias.shape)}")
    check_act(fn, act, act_attrs if act_attrs is not None else {})


def _quantized_linear_meta(x, x_scale, x_zero_point, weight, weight_scale, weight_zero_point, bias=None, act=None,
                           act_attrs=None):
    if len(weight.shape) != 2 or not x.shape or x.shape[-1] not in (None, weight.shape[0]):
        raise ShapeError(f"quantized_linear: x {fmt_shape(x.shape)} must end in the in_features of the weight "
                         f"[in_features, out_features] {fmt_shape(weight.shape)}")
    _check_quantized("quantized_linear", x, x_scale, x_zero_point, weight, weight_scale, weight_zero_point, bias,
                     weight.shape[1], act, act_attrs)
    return TensorMeta((*x.shape[:-1], weight.shape[1]), oar.float32)


def _quantized_linear_kernel(x, x_scale, x_zero_point, weight, weight_scale, weight_zero_point, bias=None, act=None,
                             act_attrs=None):
    k, n = weight.shape
    acc = integer_matmul(_centered(x, x_zero_point, None).reshape(-1, k),
                         _centered(weight, weight_zero_point, 1 if weight_zero_point.ndim else None))
    y = dequantize_accumulator(acc, x_scale, weight_scale, bias, 1)
    return apply_activation(y, act, act_attrs or {}).reshape(*x.shape[:-1], n)


def _quantized_conv2d_meta(x, x_scale, x_zero_point, weight, weight_scale, weight_zero_point, bias=None,
                           stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1, act=None, act_attrs=None,
                           max_pool=None):
    if len(x.shape) != 4 or len(weight.shape) != 4:
        raise ShapeError(f"quantized_conv2d: x [N, C, H, W] and weight [O, C / groups, kh, kw] must be 4-d, got "
                         f"{fmt_shape(x.shape)} and {fmt_shape(weight.shape)}")
    _check_quantized("quantized_conv2d", x, x_scale, x_zero_point, weight, weight_scale, weight_zero_point, bias,
                     weight.shape[0], act, act_attrs)
    out = _conv.conv_op.meta(TensorMeta(x.shape, oar.float32), TensorMeta(weight.shape, oar.float32), stride=stride,
                             padding=padding, dilation=dilation, groups=groups)
    return pooled_meta("quantized_conv2d", out, max_pool)


def _quantized_conv2d_kernel(x, x_scale, x_zero_point, weight, weight_scale, weight_zero_point, bias=None,
                             stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1, act=None, act_attrs=None,
                             max_pool=None):
    # (x - zero point) is 0 where the convolution pads: padding stands for the real value 0.
    xi = _centered(x, x_zero_point, None)
    wi = _centered(weight, weight_zero_point, 0 if weight_zero_point.ndim else None)
    n, o = x.shape[0], weight.shape[0]
    cols, out = _conv._im2col(xi, weight.shape[2:], stride, padding, dilation, groups)
    acc = integer_matmul(cols, wi.reshape(groups, o // groups, -1).transpose(0, 2, 1))  # [groups, N * P, O / groups]
    acc = acc.reshape(groups, n, *out, o // groups).transpose(1, 0, 4, 2, 3).reshape(n, o, *out)
    y = dequantize_accumulator(acc, x_scale, weight_scale, bias, 1)
    return pool_output(apply_activation(y, act, act_attrs or {}), max_pool)


quantized_linear_op = Op("quantized_linear", paddle=(), reference=_quantized_linear_kernel,
                         meta=_quantized_linear_meta, traits=NONDIFF, dtypes=INT8, per_sample=True)
quantized_conv2d_op = Op("quantized_conv2d", paddle=(), reference=_quantized_conv2d_kernel,
                         meta=_quantized_conv2d_meta, traits=NONDIFF, dtypes=INT8, per_sample=True)


def _quantized_inputs(x, x_scale, x_zero_point, weight, weight_scale, weight_zero_point, bias) -> tuple:
    def zeros_for(scale):
        return oar.zeros_like(as_tensor(scale), dtype="int8")  # on the scale's device

    inputs = (as_tensor(x), as_tensor(x_scale),
              zeros_for(x_scale) if x_zero_point is None else as_tensor(x_zero_point), as_tensor(weight),
              as_tensor(weight_scale), zeros_for(weight_scale) if weight_zero_point is None else as_tensor(weight_zero_point))
    return inputs if bias is None else (*inputs, as_tensor(bias))


def quantized_linear(x, x_scale, weight, weight_scale, bias=None, x_zero_point=None, weight_zero_point=None,
                     act: str | None = None, act_attrs: dict | None = None) -> Tensor:
    """``act((x - zx) @ (weight - zw) * (x_scale * weight_scale) + bias)``: an int8 linear layer.

    ``x`` int8 ``[..., in]`` quantized per tensor with the step ``x_scale``; ``weight`` int8
    ``[in, out]`` (Paddle's linear layout) with a step per tensor or per output channel; the
    product accumulates exactly in int32; the result is float32.

    >>> import oar
    >>> from oar.nn.quant import quantized_linear
    >>> x = oar.to_tensor([[2, -4]], dtype="int8")
    >>> w = oar.to_tensor([[10, 1], [5, 1]], dtype="int8")
    >>> quantized_linear(x, oar.to_tensor(0.5), w, oar.to_tensor([0.1, 1.0]), bias=oar.to_tensor([1.0, 0.0])).tolist()
    [[1.0, -1.0]]
    """
    return _checked(quantized_linear_op, _quantized_inputs(x, x_scale, x_zero_point, weight, weight_scale,
                                                           weight_zero_point, bias),
                    {"act": act, "act_attrs": dict(act_attrs or {})})


def quantized_conv2d(x, x_scale, weight, weight_scale, bias=None, stride=(1, 1), padding=(0, 0, 0, 0),
                     dilation=(1, 1), groups: int = 1, x_zero_point=None, weight_zero_point=None,
                     act: str | None = None, act_attrs: dict | None = None, max_pool: int | None = None) -> Tensor:
    """An int8 2-d convolution: int8 ``x`` [N, C, H, W] (a step per tensor) by int8 ``weight``
    [O, C / groups, kh, kw] (a step per tensor or per output channel), exact int32 sums, then
    ``acc * (x_scale * weight_scale) + bias`` in float32, ``act``, and ``max_pool`` as in
    ``fused_conv2d``; ``padding`` is ``[top, bottom, left, right]``.

    >>> import oar
    >>> from oar.nn.quant import quantized_conv2d
    >>> x = oar.ones([1, 1, 3, 3], dtype="int8")
    >>> w = oar.ones([2, 1, 3, 3], dtype="int8")
    >>> quantized_conv2d(x, oar.to_tensor(0.5), w, oar.to_tensor([1.0, 2.0])).reshape([2]).tolist()
    [4.5, 9.0]
    """
    attrs = {"stride": list(stride), "padding": list(padding), "dilation": list(dilation), "groups": int(groups),
             "act": act, "act_attrs": dict(act_attrs or {})}
    if max_pool is not None:
        attrs["max_pool"] = max_pool
    return _checked(quantized_conv2d_op, _quantized_inputs(x, x_scale, x_zero_point, weight, weight_scale,
                                                           weight_zero_point, bias), attrs)


def _algo(fn: str, algo: str, group_size: int) -> None:
    if algo not in WEIGHT_ALGOS:
        raise ArgumentError(f"{fn}: algo {algo!r} is not supported; oar has {list(WEIGHT_ALGOS)} (int4 is not "
                            "implemented)")
    if group_size != -1:
        raise ArgumentError(f"{fn}: group_size={group_size}: only per-channel scales (group_size=-1) are implemented")


def weight_quantize(x, algo: str = "weight_only_int8", arch=None, group_size: int = -1):
    """Quantize a linear weight ``x [in_features, out_features]`` per output channel to int8.

    Returns ``(out, scale)``: ``out`` int8 ``[out_features, in_features]`` (transposed, as in
    Paddle) and ``scale`` float32 ``[out_features]`` with ``x ~= out.T * scale``.
    ``arch`` is accepted for Paddle's signature (a CUDA arch) and ignored.

    >>> import oar
    >>> from oar.nn.quant import weight_quantize
    >>> out, scale = weight_quantize(oar.randn([32, 64]))
    >>> out.shape, out.dtype.name, scale.shape
    ([64, 32], 'int8', [64])
    """
    _algo("weight_quantize", algo, group_size)
    x = as_tensor(x)
    if x.dtype in (oar.float16, oar.bfloat16):  # computed in float32 anyway; the scale stays float32, as in Paddle
        x = x.astype("float32")
    return _checked(weight_quantize_op, (x,), {})


def weight_dequantize(x, scale, algo: str = "weight_only_int8", out_dtype="float16", group_size: int = -1) -> Tensor:
    """The float weight ``[in_features, out_features]`` that ``weight_quantize`` gave ``(x, scale)`` for.

    >>> import oar
    >>> from oar.nn.quant import weight_dequantize, weight_quantize
    >>> w = oar.randn([32, 64])
    >>> out, scale = weight_quantize(w)
    >>> weight_dequantize(out, scale, out_dtype="float32").shape
    [32, 64]
    """
    _algo("weight_dequantize", algo, group_size)
    name = out_dtype if isinstance(out_dtype, str) else get_dtype(out_dtype).name
    return _checked(weight_dequantize_op, (as_tensor(x), as_tensor(scale)), {"out_dtype": name})


def _add_bias(y: Tensor, bias) -> Tensor:
    return y if bias is None else y + as_tensor(bias).astype(y.dtype)


def weight_only_linear(x, weight, bias=None, weight_scale=None, weight_dtype: str = "int8", arch=None,
                       group_size: int = -1) -> Tensor:
    """``x @ dequantize(weight).T + bias`` with an int8 weight from ``weight_quantize``.

    The gradient flows to ``x`` (the weight is frozen), so adapters can train on top of it.

    >>> import oar
    >>> from oar.nn.quant import weight_only_linear, weight_quantize
    >>> w = oar.randn([16, 8])
    >>> q, s = weight_quantize(w)
    >>> x = oar.randn([4, 16])
    >>> y = weight_only_linear(x, q, weight_scale=s)
    >>> bool((y - x @ w).abs().max() < 0.1)
    True
    """
    if weight_dtype != "int8":
        raise ArgumentError(f"weight_only_linear: weight_dtype {weight_dtype!r} is not supported; oar has 'int8'")
    if weight_scale is None:
        raise ArgumentError("weight_only_linear: weight_scale is required (the scale weight_quantize returned)")
    _algo("weight_only_linear", "weight_only_int8", group_size)
    x = as_tensor(x)
    return _add_bias(_checked(weight_only_linear_op, (x, as_tensor(weight), as_tensor(weight_scale)), {}), bias)


def llm_int8_linear(x, weight, bias=None, weight_scale=None, threshold: float = 6.0) -> Tensor:
    """LLM.int8(): ``x @ dequantize(weight).T + bias`` with an int8 x int8 -> int32 GEMM for all but
    the outlier feature columns of ``x`` (``|x| >= threshold`` in any row), which stay in floating point.

    >>> import oar
    >>> from oar.nn.quant import llm_int8_linear, weight_quantize
    >>> w = oar.randn([16, 8])
    >>> q, s = weight_quantize(w, algo="llm.int8")
    >>> llm_int8_linear(oar.randn([4, 16]), q, weight_scale=s).shape
    [4, 8]
    """
    if weight_scale is None:
        raise ArgumentError("llm_int8_linear: weight_scale is required (the scale weight_quantize returned)")
    y = _checked(llm_int8_linear_op, (as_tensor(x), as_tensor(weight), as_tensor(weight_scale)),
                 {"threshold": float(threshold)})
    return _add_bias(y, bias)


def matmul_int8(x, y) -> Tensor:
    """The exact int32 product ``x @ y.T`` of int8 ``x [m, k]`` and ``y [n, k]``.

    >>> import oar
    >>> from oar.nn.quant import matmul_int8
    >>> matmul_int8(oar.to_tensor([[1, 2]], dtype="int8"), oar.to_tensor([[3, 4], [127, 127]], dtype="int8")).tolist()
    [[11, 381]]
    """
    return _checked(matmul_int8_op, (as_tensor(x), as_tensor(y)), {})


OPS = [quantize_linear_op, dequantize_linear_op, fake_quantize_dequantize_op, weight_quantize_op, weight_dequantize_op,
       weight_only_linear_op, matmul_int8_op, llm_int8_linear_op, quantized_linear_op, quantized_conv2d_op]
__all__: list[str] = []  # public under oar.nn.quant, not oar.nn.functional
PUBLIC = ["weight_quantize", "weight_dequantize", "weight_only_linear", "llm_int8_linear", "matmul_int8",
          "quantize_linear", "dequantize_linear", "fake_quantize_dequantize", "quantized_linear", "quantized_conv2d"]
