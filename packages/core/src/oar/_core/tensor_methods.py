"""Binds Tensor methods and operators to the public op functions: ``x.exp()`` is ``oar.exp(x)``.

One table, so a reader sees every method a Tensor has and which function it calls.
"""

from __future__ import annotations

from oar._core.tensor import Tensor
from oar._ops import elementwise, reduction, shape
from oar._ops._common import binary_operands, dispatch

E, R, S = elementwise, reduction, shape


def _reflected(fn):
    def method(self, other):
        return fn(other, self)

    return method


def _bin(op):
    # The operator path is the hottest one (x + y): skip the public function's wrapping.
    def method(self, other):
        if type(other) is Tensor:
            return dispatch(op, (self, other), {})
        return dispatch(op, binary_operands(self, other, op.name), {})

    return method


METHODS = {
    # operators
    "__add__": _bin(E.add_op),
    "__radd__": _reflected(E.add),
    "__sub__": _bin(E.subtract_op),
    "__rsub__": _reflected(E.subtract),
    "__mul__": _bin(E.multiply_op),
    "__rmul__": _reflected(E.multiply),
    "__truediv__": _bin(E.divide_op),
    "__rtruediv__": _reflected(E.divide),
    "__neg__": E.neg,
    "__eq__": E.equal,
    "__ne__": E.not_equal,
    "__lt__": E.less_than,
    "__le__": E.less_equal,
    "__gt__": E.greater_than,
    "__ge__": E.greater_equal,
    # methods
    "astype": E.cast,
    "cast": E.cast,
    "add": E.add,
    "subtract": E.subtract,
    "multiply": E.multiply,
    "divide": E.divide,
    "neg": E.neg,
    "exp": E.exp,
    "log": E.log,
    "tanh": E.tanh,
    "equal": E.equal,
    "not_equal": E.not_equal,
    "less_than": E.less_than,
    "less_equal": E.less_equal,
    "greater_than": E.greater_than,
    "greater_equal": E.greater_equal,
    "sum": R.sum,
    "mean": R.mean,
    "reshape": S.reshape,
    "broadcast_to": S.broadcast_to,
}


def bind_methods() -> None:
    for name, fn in METHODS.items():
        setattr(Tensor, name, fn)


bind_methods()
