"""Fused ops of inference programs: what oar-nn's fusion passes (``oar.nn._passes``) emit.

- ``fused_linear(x, w[, b])``: ``x @ w`` (with matmul's transpose flags), plus the bias, then an
  optional activation ``act`` (with ``act_attrs``), in one output buffer.
- ``fused_conv2d(x, w[, b])``: a 2-d ``conv`` (same attributes), plus the per-channel bias
  (any shape of ``C`` elements: ``[C]``, ``[C, 1, 1]``, ``[1, C, 1, 1]``), then ``act``, written
  into the convolution's own output; with ``max_pool=k``, then a ``k x k`` max pooling of stride
  ``k`` without padding (floor mode), so a kernel can write the pooled output alone.
- ``max_pool_infer(x)``: ``max_pool``'s values without its argmax mask, which only the gradient
  reads.

The references call the registered kernel of the op they extend (a plugin's conv or matmul when
one is installed), then add the bias and apply the activation in place: one buffer, no
temporaries. Each op has a gradient rule that re-runs its unfused ops and differentiates them,
though the passes only emit these ops in inference programs.
"""

from __future__ import annotations

import numpy as np

import oar
from oar import reshape
from oar.errors import ArgumentError, ShapeError
from oar.nn.functional import pooling as _pool
from oar.nn.functional.conv import conv_op
from oar.nn.functional.pooling import max_pool_op
from oar.ops import AMP_LOW_PRECISION, Op, TensorMeta, dispatch, fmt_shape, matmul_op, resolve_kernel
from oar.plugins import registries

NATIVE_FLOATS = (oar.float32, oar.float64)  # float16 and bfloat16 compute in float32

# Activations an epilogue may apply: ops of one float input, elementwise, output like the input.
ACTIVATIONS = frozenset({"relu", "relu6", "leaky_relu", "gelu", "silu", "sigmoid", "tanh", "elu", "hardswish",
                         "hardsigmoid", "softplus", "mish"})


def _op(name: str) -> Op:
    return registries().ops.get(name)


def _kernel(op: Op, dtype: np.dtype):
    kernel = op._kernels.get(("cpu", dtype))
    return kernel if kernel is not None else resolve_kernel(op, "cpu", dtype)


def apply_activation(y: np.ndarray, act: str | None, act_attrs: dict) -> np.ndarray:
    """``act`` on ``y``, in ``y``'s buffer where numpy allows it."""
    if act is None:
        return y
    if act == "relu" and y.flags.writeable:
        return np.maximum(y, 0, out=y)
    return np.asarray(_op(act).reference(y, **act_attrs)).astype(y.dtype, copy=False)


def check_act(fn: str, act, act_attrs) -> None:
    if act is not None and act not in ACTIVATIONS:
        raise ArgumentError(f"{fn}: act must be None or one of {sorted(ACTIVATIONS)}, got {act!r}")
    if not isinstance(act_attrs, dict):
        raise ArgumentError(f"{fn}: act_attrs must be a dict, got {type(act_attrs).__name__}")


def _check_bias(fn: str, out: TensorMeta, b: TensorMeta, channels, axis: int) -> None:
    size = int(np.prod(b.shape)) if None not in b.shape else None
    if b.dtype is not out.dtype or (size is not None and channels is not None and size != channels):
        raise ShapeError(f"{fn}: bias {b!r} must hold {channels} elements of {out.dtype.name} (one per output "
                         f"feature, axis {axis} of the output {fmt_shape(out.shape)})")


def _with_bias_and_act(grad_forward):
    """A gradient rule from a function that re-runs the unfused ops on the op's input tensors."""

    def rule(ctx, g):
        from oar import enable_grad, grad

        wanted = [i for i, need in enumerate(ctx.needs_input_grad) if need]
        with enable_grad():
            y = grad_forward(*ctx.inputs, **ctx.attrs)
            grads = grad(y, [ctx.inputs[i] for i in wanted], grad_outputs=g, create_graph=True, allow_unused=True)
        result = [None] * len(ctx.inputs)
        for i, gi in zip(wanted, grads):
            result[i] = gi
        return tuple(result)

    return rule


def _epilogue(y, b, bias_shape, act, act_attrs):
    if b is not None:
        y = y + reshape(b, bias_shape)
    if act is not None:
        y = dispatch(_op(act), (y,), dict(act_attrs))
    return y


# -- fused_linear ---------------------------------------------------------------------------------
def _fused_linear_meta(x: TensorMeta, w: TensorMeta, b: TensorMeta | None = None, transpose_x=False,
                       transpose_y=False, act=None, act_attrs=None) -> TensorMeta:
    check_act("fused_linear", act, act_attrs if act_attrs is not None else {})
    out = matmul_op.meta(x, w, transpose_x=transpose_x, transpose_y=transpose_y)
    if b is not None:
        _check_bias("fused_linear", out, b, out.shape[-1] if out.shape else None, -1)
    return out


def _fused_linear_kernel(x, w, b=None, transpose_x=False, transpose_y=False, act=None, act_attrs=None):
    y = _kernel(matmul_op, x.dtype)(x, w, transpose_x=transpose_x, transpose_y=transpose_y)
    if b is not None:
        y = np.add(y, b.reshape(-1), out=y) if y.flags.writeable else y + b.reshape(-1)
    return apply_activation(y, act, act_attrs or {})


def _linear_forward(x, w, b=None, transpose_x=False, transpose_y=False, act=None, act_attrs=None):
    y = dispatch(matmul_op, (x, w), {"transpose_x": transpose_x, "transpose_y": transpose_y})
    return _epilogue(y, b, [-1], act, act_attrs or {})


fused_linear_op = Op("fused_linear", paddle=(), reference=_fused_linear_kernel, meta=_fused_linear_meta,
                     amp=AMP_LOW_PRECISION, dtypes=NATIVE_FLOATS, per_sample=True)
fused_linear_op.defgrad(_with_bias_and_act(_linear_forward))


def fused_linear(x, weight, bias=None, act: str | None = None, act_attrs: dict | None = None):
    """``act(x @ weight + bias)`` as one op (what ``fuse_linear`` makes of a Linear and its activation).

    >>> import oar
    >>> from oar.nn.functional.fused import fused_linear
    >>> y = fused_linear(oar.ones([2, 3]), oar.ones([3, 4]), oar.ones([4]) * -5.0, act="relu")
    >>> y.tolist()[0]
    [0.0, 0.0, 0.0, 0.0]
    """
    inputs = (x, weight) if bias is None else (x, weight, bias)
    return dispatch(fused_linear_op, inputs, {"transpose_x": False, "transpose_y": False, "act": act,
                                              "act_attrs": dict(act_attrs or {})})


# -- fused_conv2d ---------------------------------------------------------------------------------
def _fused_conv2d_meta(x: TensorMeta, w: TensorMeta, b: TensorMeta | None = None, stride=(1, 1),
                       padding=(0, 0, 0, 0), dilation=(1, 1), groups=1, act=None, act_attrs=None,
                       max_pool=None) -> TensorMeta:
    if len(x.shape) != 4:
        raise ShapeError(f"fused_conv2d: x must be 4-d [N, C, H, W], got {fmt_shape(x.shape)}")
    check_act("fused_conv2d", act, act_attrs if act_attrs is not None else {})
    out = conv_op.meta(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups)
    if b is not None:
        _check_bias("fused_conv2d", out, b, out.shape[1], 1)
    return pooled_meta("fused_conv2d", out, max_pool)


def pooled_meta(fn: str, out: TensorMeta, max_pool) -> TensorMeta:
    """``out`` after the ``max_pool x max_pool`` pooling a fused convolution ends with (None: as is)."""
    if max_pool is None:
        return out
    if not isinstance(max_pool, int) or isinstance(max_pool, bool) or max_pool < 1:
        raise ArgumentError(f"{fn}: max_pool must be None or a window size >= 1, got {max_pool!r}")
    return _max_pool_infer_meta(out, [max_pool] * 2, [max_pool] * 2, [0, 0, 0, 0], False)


def pool_output(y: np.ndarray, max_pool) -> np.ndarray:
    """``y`` max-pooled by ``max_pool x max_pool`` windows of that stride (as ``fused_conv2d``
    ends), or ``y`` itself for None."""
    if max_pool is None:
        return y
    return _kernel(_op("max_pool_infer"), y.dtype)(y, [max_pool] * 2, [max_pool] * 2, [0, 0, 0, 0], False)


def _fused_conv2d_kernel(x, w, b=None, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1, act=None,
                         act_attrs=None, max_pool=None):
    y = _kernel(conv_op, x.dtype)(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups)
    if b is not None:
        bias = b.reshape(-1, 1, 1)
        y = np.add(y, bias, out=y) if y.flags.writeable else y + bias
    return pool_output(apply_activation(y, act, act_attrs or {}), max_pool)


def _conv2d_forward(x, w, b=None, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1, act=None,
                    act_attrs=None, max_pool=None):
    y = dispatch(conv_op, (x, w), {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups})
    y = _epilogue(y, b, [-1, 1, 1], act, act_attrs or {})
    if max_pool is not None:
        y = dispatch(max_pool_op, (y,), {"kernel_size": [max_pool] * 2, "stride": [max_pool] * 2,
                                         "padding": [0, 0, 0, 0], "ceil_mode": False})[0]
    return y


fused_conv2d_op = Op("fused_conv2d", paddle=(), reference=_fused_conv2d_kernel, meta=_fused_conv2d_meta,
                     amp=AMP_LOW_PRECISION, dtypes=NATIVE_FLOATS, per_sample=True)
fused_conv2d_op.defgrad(_with_bias_and_act(_conv2d_forward))


def fused_conv2d(x, weight, bias=None, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups: int = 1,
                 act: str | None = None, act_attrs: dict | None = None, max_pool: int | None = None):
    """``act(conv2d(x, weight) + bias)`` as one op; ``padding`` is ``[top, bottom, left, right]``;
    ``max_pool=k`` max-pools the result by ``k x k`` windows of stride ``k``.

    >>> import oar
    >>> from oar.nn.functional.fused import fused_conv2d
    >>> fused_conv2d(oar.ones([1, 1, 4, 4]), oar.ones([2, 1, 3, 3]), oar.ones([2]), act="relu").shape
    [1, 2, 2, 2]
    """
    inputs = (x, weight) if bias is None else (x, weight, bias)
    attrs = {"stride": list(stride), "padding": list(padding), "dilation": list(dilation), "groups": int(groups),
             "act": act, "act_attrs": dict(act_attrs or {})}
    if max_pool is not None:  # absent, not None, when unused: programs saved before it read the same
        attrs["max_pool"] = max_pool
    return dispatch(fused_conv2d_op, inputs, attrs)


# -- max_pool_infer -------------------------------------------------------------------------------
def _max_pool_infer_meta(x: TensorMeta, kernel_size, stride, padding, ceil_mode) -> TensorMeta:
    return max_pool_op.meta(x, kernel_size=kernel_size, stride=stride, padding=padding, ceil_mode=ceil_mode)[0]


def _max_pool_infer_kernel(x, kernel_size, stride, padding, ceil_mode):
    # max_pool's rules without its argmax: padding (-inf) never wins, a NaN wins (np.maximum
    # propagates it); one strided view per kernel offset, folded into one output buffer.
    out = _pool.pool_sizes("max_pool", x.shape[2:], kernel_size, stride, padding, ceil_mode)
    xp = _pool._padded(x, kernel_size, stride, padding, out, -np.inf)
    best = None
    for offset in np.ndindex(*kernel_size):
        values = xp[_pool._window(offset, stride, out)]
        best = values.copy() if best is None else np.maximum(best, values, out=best)
    return best


max_pool_infer_op = Op("max_pool_infer", paddle=(), reference=_max_pool_infer_kernel, meta=_max_pool_infer_meta,
                       dtypes=NATIVE_FLOATS, per_sample=True)


@max_pool_infer_op.defgrad
def _max_pool_infer_grad(ctx, g):
    return _with_bias_and_act(lambda x, **attrs: dispatch(max_pool_op, (x,), attrs)[0])(ctx, g)


def max_pool_infer(x, kernel_size, stride, padding=(0, 0, 0, 0), ceil_mode: bool = False):
    """``max_pool``'s values alone (no argmax mask), as inference programs compute them.

    >>> import oar
    >>> from oar.nn.functional.fused import max_pool_infer
    >>> max_pool_infer(oar.arange(16, dtype="float32").reshape([1, 1, 4, 4]), [2, 2], [2, 2]).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    return dispatch(max_pool_infer_op, (x,), {"kernel_size": list(kernel_size), "stride": list(stride),
                                              "padding": list(padding), "ceil_mode": bool(ceil_mode)})


OPS = [fused_linear_op, fused_conv2d_op, max_pool_infer_op]
__all__: list[str] = []  # internal ops of inference programs; call them from oar.nn.functional.fused
