"""Copies: ``assign`` and ``clone`` (``x.clone()``), one differentiable op.

The copy is an op, not a numpy call in ``Tensor``, so that it runs on every backend, is traced
by to_static and carries the gradient (the identity) back to its input.
"""

from __future__ import annotations

from oar._engine.dispatch import modes_above_eager
from oar._engine.inplace import apply_inplace
from oar._engine.op import COMPLEX, Op
from oar._ops._common import Tensor, as_tensor, dispatch, same_meta
from oar.errors import ArgumentError


def _assign_kernel(x):
    return x.copy()


assign_op = Op("assign", reference=_assign_kernel, meta=same_meta, traits=("elementwise",) + COMPLEX)


@assign_op.defgrad
def _assign_grad(ctx, g):
    return g


def clone(x, name=None) -> Tensor:
    """A copy of ``x`` that does not share its memory and keeps its gradient path.

    >>> import oar
    >>> x = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    >>> y = x.clone()
    >>> import numpy as np
    >>> y.stop_gradient, np.shares_memory(y.numpy(copy=False), x.numpy(copy=False))
    (False, False)
    """
    return dispatch(assign_op, (as_tensor(x, "x", "clone"),), {})


def assign(x, output=None) -> Tensor:
    """Copy ``x`` (a tensor, numpy array, list or scalar) into a new tensor, or into ``output``.

    With ``output``, its value, shape and dtype are replaced by those of ``x`` (as in Paddle);
    any backward that still needs the old value of ``output`` then raises a clear error. An
    ``output`` that is a view of another tensor (``base[0]``) and keeps its shape and dtype is
    written in place, so the base sees the values, as with ``output[...] = x``. Unlike Paddle, a
    float64 numpy array stays float64.

    >>> import oar, numpy as np
    >>> oar.assign(np.array([[1, 2]])).tolist()
    [[1, 2]]
    >>> out = oar.zeros([3])
    >>> _ = oar.assign(oar.to_tensor([1.0, 2.0]), out)
    >>> out.tolist()
    [1.0, 2.0]
    """
    if isinstance(x, Tensor):
        result = dispatch(assign_op, (x,), {})
    else:
        result = as_tensor(x, "x", "assign")  # a fresh copy already
    if output is None:
        return result
    if not isinstance(output, Tensor):
        raise ArgumentError(f"assign: output must be a Tensor, got {type(output).__name__}")
    view = output._view
    if view is not None and view.chain and result._data.shape == output._data.shape and result.dtype is output.dtype:
        return apply_inplace(output, result, "assign")
    for mode in modes_above_eager():  # a capture follows output to its new value (a state update),
        mode.rebind(output, result)   # told before the buffer changes: output's old value is its input
    output._set_buffer(result._data)  # tensors that shared output's old buffer keep it
    output._bump_version()  # nodes that saved output's old value must not read the new one
    if result._node is not None:
        output._node, output._out_index, output.stop_gradient = result._node, result._out_index, False
    elif output._node is not None:  # a non-leaf whose value is now a constant
        output._node, output._out_index, output.stop_gradient = None, 0, True
    return output


OPS = [assign_op]
__all__ = ["assign", "clone"]

METHODS = {"clone": clone}
