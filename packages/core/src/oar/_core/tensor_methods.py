"""Binds Tensor methods and operators to the public op functions: ``x.exp()`` is ``oar.exp(x)``.

Operators are listed here; each op family lists its named methods in its ``METHODS`` table.
"""

from __future__ import annotations

from oar._core.dispatch import bind_tensor_class
from oar._core.tensor import Tensor
from oar._ops import FAMILIES, elementwise
from oar._ops._common import binary_operands, dispatch

E = elementwise


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


OPERATORS = {
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
}


def bind_methods() -> None:
    bind_tensor_class(Tensor)
    for family in FAMILIES:
        for name, fn in family.METHODS.items():
            setattr(Tensor, name, fn)
    for name, fn in OPERATORS.items():
        setattr(Tensor, name, fn)


bind_methods()
