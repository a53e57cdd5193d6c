"""Binds Tensor methods and operators to the public op functions: ``x.exp()`` is ``oar.exp(x)``.

``oar.Tensor`` itself (``oar._engine.tensor``) holds no method that calls an op; every such method
is bound here, the top of the op definitions. Operators and the device and iteration methods are
listed here; each op family lists its named methods in its ``METHODS`` table. Gradient rules of
the op families may use these methods and operators: they are bound when ``oar`` is imported.
"""

from __future__ import annotations

from oar._engine.device import Place, place_backend
from oar._engine.tensor import Tensor
from oar._ops import FAMILIES, elementwise
from oar._ops._common import binary_operands, dispatch
from oar._ops.shape import unbind
from oar.errors import ArgumentError

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


def _iter(self):
    if self._data.ndim == 0:
        raise TypeError("iteration over a 0-d tensor")
    yield from unbind(self, 0)  # one op for all rows, each differentiable


def _to_backend(self, backend: str) -> Tensor:
    return self if backend == self._backend else E.to_device(self, backend)


def cpu(self) -> Tensor:
    """This tensor on the cpu (itself when it is there); keeps the tape."""
    return _to_backend(self, "cpu")


def cuda(self, device_id=None, blocking=True) -> Tensor:
    """This tensor on the gpu (needs the oar-triton plugin); keeps the tape."""
    return _to_backend(self, "gpu")


def to(self, *args, **kwargs) -> Tensor:
    """``x.to('cpu')``, ``x.to('float64')``, ``x.to(device='cpu', dtype='float32')``.

    >>> import oar
    >>> oar.to_tensor([1, 2]).to("float32").dtype
    oar.float32
    """
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("blocking", None)
    if kwargs:
        raise ArgumentError(f"Tensor.to: unexpected arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Place) or (isinstance(a, str) and place_backend(a) in ("cpu", "gpu")):
            device = a
        else:
            dtype = a
    out = self
    if device is not None:
        out = _to_backend(out, place_backend(device))
    if dtype is not None:
        out = out.astype(dtype)
    return out


DEVICE_METHODS = {"__iter__": _iter, "cpu": cpu, "cuda": cuda, "to": to, "_to_backend": _to_backend}


def bind_methods() -> None:
    for name, fn in DEVICE_METHODS.items():
        setattr(Tensor, name, fn)
    for family in FAMILIES:
        for name, fn in family.METHODS.items():
            setattr(Tensor, name, fn)
    for name, fn in OPERATORS.items():
        setattr(Tensor, name, fn)


bind_methods()
