"""The ``logcosh`` op, defined in adjacent lines: meta, reference kernel, op, gradient, function."""

from __future__ import annotations

import numpy as np

import oar
from oar.ops import AMP_FP32, Op, TensorMeta

LOG_2 = float(np.log(2.0))


def _logcosh_meta(x: TensorMeta) -> TensorMeta:
    # Integer inputs compute in the default float dtype (float_only=True below), like exp.
    return TensorMeta(x.shape, x.dtype if x.dtype.is_floating else getattr(oar, oar.get_default_dtype()))


def _logcosh_reference(x: np.ndarray) -> np.ndarray:
    # log(cosh(x)) = logaddexp(x, -x) - log 2, which does not overflow for large |x|.
    return np.logaddexp(x, -x) - np.asarray(LOG_2, dtype=x.dtype)


logcosh_op = Op(
    "logcosh",
    reference=_logcosh_reference,
    meta=_logcosh_meta,
    traits={"elementwise"},
    amp=AMP_FP32,
    float_only=True,
    dtypes=[oar.float32, oar.float64],  # float16 and bfloat16 compute in float32
)


@logcosh_op.defgrad
def _logcosh_grad(ctx, g):
    # Written with oar ops, so it runs on every backend and can be differentiated again.
    (x,) = ctx.inputs
    return g * oar.tanh(x)


@logcosh_op.lowering("onnx")
def _logcosh_onnx(node, ctx):
    # How oar-onnx writes the op (``oar.onnx.LoweringContext``): the same overflow-free form,
    # |x| + softplus(-2|x|) - log 2, as five ONNX nodes.
    (x,) = ctx.inputs(node)
    like = node.inputs[0]
    magnitude = ctx.emit("Abs", [x])
    tail = ctx.emit("Softplus", [ctx.emit("Mul", [magnitude, ctx.constant(-2.0, like=like)])])
    ctx.emit("Sub", [ctx.emit("Add", [magnitude, tail]), ctx.constant(LOG_2, like=like)], ctx.outputs(node))


def logcosh(x, name=None) -> oar.Tensor:
    """``log(cosh(x))`` elementwise: a smooth ``|x|`` used as a robust regression loss.

    >>> import oar
    >>> from oar_plugin_example import logcosh
    >>> [round(v, 4) for v in logcosh(oar.to_tensor([-1.0, 0.0, 2.0])).tolist()]
    [0.4338, 0.0, 1.325]
    """
    if not isinstance(x, oar.Tensor):
        x = oar.to_tensor(x)
    return logcosh_op(x)
