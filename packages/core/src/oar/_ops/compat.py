"""Paddle's other names for existing ops (``cat``, ``clamp``, ``permute``, ``div``, ``eq``, ...), the
cast methods (``x.float()``, ``x.long()``), the tensor information methods and properties
(``x.element_size()``, ``x.requires_grad``, ``x.mT``), the tensor-creating methods
(``x.new_zeros``) and the random fills (``x.uniform_()``, ``oar.poisson``).

Most names are thin functions over the op families. Three draws need kernels of their own and are
ops here: ``poisson``, ``binomial`` and ``standard_gamma`` (random, nondifferentiable, drawn on
the host from oar's one generator like every random op; see ``oar._ops.random``).

Where oar differs from Paddle 3.3.1:

- ``x.geometric_(p)`` fills ``x`` with draws of the geometric distribution, the number of trials
  up to the first success (integers 1, 2, ...), as its documentation says and as
  ``torch.Tensor.geometric_`` does; Paddle 3.3.1's kernel returns ``log(u) / log1p(-p)`` without
  rounding, which is not integer-valued.
- ``x.random_()`` without ``to`` draws from ``[0, 2**mantissa]`` for floating ``x`` (as Paddle)
  and ``[0, max - 1]`` for integer ``x``.
- ``x.copy_(src)`` returns ``x`` (Paddle returns another handle on the same tensor).
- ``x.pin_memory()`` returns ``x``: oar's host memory needs no pinning (Paddle raises on a
  CPU-only build). ``x.stride()``, ``x.is_contiguous()``, ``x.offset`` and ``x.data_ptr()`` read
  the host buffer (numpy's strides), so a view's strides may differ from Paddle's where Paddle
  copies instead of viewing.
- ``get_cuda_rng_state``/``set_cuda_rng_state`` read and set the one generator every random op
  draws from, whatever the device (oar's GPU backends draw on the host), so they are the same as
  ``get_rng_state``/``set_rng_state``; ``oar.Generator(device)`` is that generator for every
  device.
"""

from __future__ import annotations

import builtins

import numpy as np

from oar._engine import dtypes as _dt
from oar._engine.device import place_backend
from oar._engine.inplace import apply_inplace, check_target
from oar._engine.inplace import inplace_variant as _inplace
from oar._engine.op import Op
from oar._engine.tensor import from_numpy, to_tensor
from oar._ops._common import Tensor, TensorMeta, dispatch, fmt_shape
from oar._ops._common import as_tensor as _as_tensor
from oar._ops.assign import assign, clone
from oar._ops.creation import _scalar_arg, arange, dtype_arg, empty, full, ones, shape_arg, zeros, zeros_like
from oar._ops.elementwise import abs as _abs
from oar._ops.elementwise import (
    add_n,
    cast,
    clip,
    divide,
    equal,
    exp,
    floor,
    floor_divide,
    greater_equal,
    greater_than,
    isfinite,
    isnan,
    less_equal,
    less_than,
    log1p,
    logical_and,
    logical_or,
    multiply,
    neg,
    not_equal,
    subtract,
    tan,
    to_device,
    trunc,
    where,
)
from oar._ops.inplace import where_
from oar._ops.linalg import bmm, matmul, outer
from oar._ops.random import (
    _gaussian,
    _uniform,
    bernoulli,
    default_generator,
    get_rng_state,
    initial_seed,
    multinomial,
    normal,
    randint_op,
    seed,
    set_rng_state,
)
from oar._ops.reduction import all as _all
from oar._ops.shape import broadcast_to, concat, stack, transpose
from oar.errors import ArgumentError, DTypeError, ShapeError

RANDOM = ("nondiff", "random")
FLOATS = (_dt.float16, _dt.bfloat16, _dt.float32, _dt.float64)


def _into(out, result: Tensor) -> Tensor:
    """``result`` written into ``out`` (Paddle's ``out=`` argument), which is returned."""
    return result if out is None else assign(result, output=out)


# -- aliases --------------------------------------------------------------------------------------
def cat(x, axis=0, name=None, *, out=None) -> Tensor:
    """``concat`` (Paddle 3's other name).

    >>> import oar
    >>> oar.cat([oar.ones([1, 2]), oar.zeros([1, 2])]).tolist()
    [[1.0, 1.0], [0.0, 0.0]]
    """
    return _into(out, concat(x, axis))


def concatenate(x, axis=0, name=None, *, out=None) -> Tensor:
    """``concat`` (NumPy's name)."""
    return _into(out, concat(x, axis))


def clamp(x, min=None, max=None, name=None, *, out=None) -> Tensor:  # noqa: A002 - Paddle's argument names
    """``clip``: ``x`` limited to ``[min, max]``.

    >>> import oar
    >>> oar.clamp(oar.to_tensor([1.0, 2.0, 3.0]), 1.5, 2.5).tolist()
    [1.5, 2.0, 2.5]
    """
    return _into(out, clip(x, min, max))


def permute(input, dims, *more_dims) -> Tensor:  # noqa: A002 - Paddle's argument name
    """``transpose`` with the axes as a list or as arguments: ``x.permute(2, 0, 1)``.

    >>> import oar
    >>> oar.zeros([2, 3, 4]).permute(2, 0, 1).shape
    [4, 2, 3]
    """
    return transpose(input, [dims, *more_dims] if more_dims or not isinstance(dims, (list, tuple, Tensor)) else dims)


def swapaxes(x, perm, name=None) -> Tensor:
    """Swap two axes, ``swapaxes(x, 0, 2)``; with a list ``perm`` it is ``transpose(x, perm)``,
    as Paddle's (which is ``transpose`` with its two-int form).

    >>> import oar
    >>> oar.swapaxes(oar.zeros([2, 3, 4]), 0, 2).shape
    [4, 3, 2]
    """
    x = _as_tensor(x, "x", "swapaxes")
    if isinstance(perm, (int, np.integer)) and isinstance(name, (int, np.integer)):  # swapaxes(x, dim0, dim1)
        axes = list(builtins.range(x.ndim))
        first, second = (_axis(a, x.ndim, "swapaxes") for a in (perm, name))
        axes[first], axes[second] = axes[second], axes[first]
        perm = axes
    return transpose(x, perm)


swapdims = swapaxes


def _axis(axis, ndim: int, fn: str) -> int:
    if not -max(ndim, 1) <= axis < max(ndim, 1):
        raise ArgumentError(f"{fn}: axis {axis} is out of range for a {ndim}-d tensor")
    return int(axis) % max(ndim, 1)


def div(x, y, name=None, *, rounding_mode=None, out=None) -> Tensor:
    """``x / y``; ``rounding_mode="trunc"`` rounds toward zero, ``"floor"`` toward negative
    infinity (integers then stay integers).

    >>> import oar
    >>> a, b = oar.to_tensor([-7.0, 7.0]), oar.to_tensor([2.0, 2.0])
    >>> oar.div(a, b).tolist(), oar.div(a, b, rounding_mode="trunc").tolist()
    ([-3.5, 3.5], [-3.0, 3.0])
    """
    if rounding_mode is None:
        result = divide(x, y)
    elif rounding_mode == "floor":
        result = floor_divide(x, y)
    elif rounding_mode == "trunc":
        quotient = divide(x, y)
        kinds = [t.dtype for t in (x, y) if isinstance(t, Tensor)]
        if kinds and all(d.is_integer for d in kinds):  # an integer quotient stays an integer, as in Paddle
            result = cast(trunc(quotient), _dt.promote_types(*kinds) if len(kinds) == 2 else kinds[0])
        else:
            result = trunc(quotient)
    else:
        raise ArgumentError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")
    return _into(out, result)


def mul(x, y, name=None, *, out=None) -> Tensor:
    """``multiply``: ``x * y``."""
    return _into(out, multiply(x, y))


def sub(x, y, name=None, *, alpha=1, out=None) -> Tensor:
    """``x - alpha * y``.

    >>> import oar
    >>> oar.sub(oar.to_tensor([1.0, 2.0]), oar.to_tensor([2.0, 2.0]), alpha=2).tolist()
    [-3.0, -2.0]
    """
    return _into(out, subtract(x, y if alpha == 1 else y * alpha))


def true_divide(input, other, *, out=None) -> Tensor:  # noqa: A002 - Paddle's argument name
    """``x / y`` as floats (integers divide as floats)."""
    return _into(out, divide(input, other))


def negative(x, name=None) -> Tensor:
    """``-x``."""
    return neg(x)


def positive(x, name=None) -> Tensor:
    """``+x``: ``x`` itself; a bool tensor raises, as in Paddle."""
    x = _as_tensor(x, "x", "positive")
    if x.dtype.is_bool:
        raise DTypeError("positive: the unary + is not defined for a bool tensor")
    return x


def _comparison(fn, name: str):
    def compare(x, y, name=None, *, out=None) -> Tensor:
        return _into(out, fn(x, y))

    compare.__name__ = compare.__qualname__ = name
    compare.__doc__ = f"``{fn.__name__}`` (Paddle 3's other name), a bool tensor."
    return compare


eq = _comparison(equal, "eq")
ne = _comparison(not_equal, "ne")
gt = _comparison(greater_than, "gt")
ge = _comparison(greater_equal, "ge")
lt = _comparison(less_than, "lt")
le = _comparison(less_equal, "le")
greater = _comparison(greater_than, "greater")
less = _comparison(less_than, "less")


def equal_all(x, y, name=None) -> Tensor:
    """Whether ``x`` and ``y`` have the same shape and values: a 0-d bool tensor.

    >>> import oar
    >>> x = oar.to_tensor([1.0, 2.0])
    >>> oar.equal_all(x, x).item(), oar.equal_all(x, oar.to_tensor([1.0, 3.0])).item()
    (True, False)
    """
    x, y = _as_tensor(x, "x", "equal_all"), _as_tensor(y, "y", "equal_all")
    if x.shape != y.shape:
        return full([], False, "bool")
    return _all(equal(x, y))


def _comparison_inplace(fn, op_name: str):
    def compare_(x, y, name=None) -> Tensor:
        check_target(_tensor_arg(x, op_name), op_name)
        return assign(fn(x, y), output=x)  # x becomes a bool tensor, as in Paddle

    compare_.__name__ = compare_.__qualname__ = op_name
    compare_.__doc__ = f"In-place ``{fn.__name__}``: ``x`` becomes the bool tensor ``{fn.__name__}(x, y)``; returns ``x``."
    return compare_


equal_ = _comparison_inplace(equal, "equal_")
not_equal_ = _comparison_inplace(not_equal, "not_equal_")
greater_equal_ = _comparison_inplace(greater_equal, "greater_equal_")
greater_than_ = _comparison_inplace(greater_than, "greater_than_")
less_equal_ = _comparison_inplace(less_equal, "less_equal_")
less_than_ = _comparison_inplace(less_than, "less_than_")
less_ = _comparison_inplace(less_than, "less_")
clamp_ = _inplace(clip, "clamp_", "In-place ``clamp``: ``x`` limited to ``[min, max]``; returns ``x``.")
mul_ = _inplace(multiply, "mul_", "In-place ``mul``: ``x`` becomes ``x * y``; returns ``x``.")
div_ = _inplace(div, "div_", "In-place ``div`` (with its ``rounding_mode``); returns ``x``.")
sub_ = _inplace(sub, "sub_", "In-place ``sub``: ``x`` becomes ``x - alpha * y``; returns ``x``.")


def cast_(x, dtype) -> Tensor:
    """``x`` converted to ``dtype`` in place (its dtype changes); returns ``x``.

    >>> import oar
    >>> x = oar.to_tensor([1.5, 2.5])
    >>> oar.cast_(x, "int32") is x, x.dtype, x.tolist()
    (True, oar.int32, [1, 2])
    """
    return assign(cast(x, dtype), output=x)


def increment(x, value=1.0, name=None) -> Tensor:
    """``x + value`` written into ``x``, a one-element tensor (Paddle's loop counter); returns ``x``.

    >>> import oar
    >>> oar.increment(oar.to_tensor([1.0])).tolist()
    [2.0]
    """
    x = _as_tensor(x, "x", "increment")
    if x.size != 1:
        raise ShapeError(f"increment: x must have exactly one element, got shape {fmt_shape(x.shape)}")
    # value is taken in x's dtype (1.5 adds 1 to an int tensor), as in Paddle
    step = cast(full(list(x.shape), float(_scalar_arg(value, "increment", "value")), "float64"), x.dtype)
    return apply_inplace(x, x + step, "increment")


def range(start=0, end=None, step=1, dtype=None, *, out=None, device=None, requires_grad=False,  # noqa: A001
          name=None) -> Tensor:
    """Values from ``start`` to ``end`` *inclusive* by ``step`` (``arange`` stops before ``end``);
    ``range(n)`` is ``0 .. n``. The default dtype is the default float dtype, as in Paddle.

    >>> import oar
    >>> oar.range(0, 2, 0.5).tolist(), oar.range(3).tolist()
    ([0.0, 0.5, 1.0, 1.5, 2.0], [0.0, 1.0, 2.0, 3.0])
    """
    if end is None:
        start, end = 0, start
    start, end, step = (_scalar_arg(v, "range", label) for v, label in ((start, "start"), (end, "end"), (step, "step")))
    if step == 0:
        raise ArgumentError("range: step must not be 0")
    count = builtins.max(int(np.floor((end - start) / step)) + 1, 0)
    d = dtype_arg(dtype, "range", kinds=("int", "float"))
    result = arange(0, count, 1, "int64" if d.is_integer else "float64") * step + start
    result = _to_device_of(cast(result, d), device)
    result.stop_gradient = not requires_grad
    return _into(out, result)


def _to_device_of(x: Tensor, device) -> Tensor:
    if device is None:
        return x
    return to_device(x, place_backend(device))


def tolist(x) -> list:
    """``x`` as nested Python lists (``x.tolist()``).

    >>> import oar
    >>> oar.tolist(oar.to_tensor([[1, 2]]))
    [[1, 2]]
    """
    return _as_tensor(x, "x", "tolist").tolist()


def numel(x, name=None) -> Tensor:
    """The number of elements of ``x``, a 0-d int64 tensor."""
    return _as_tensor(x, "x", "numel").numel()


def shape(input) -> Tensor:  # noqa: A002 - Paddle's argument name
    """The shape of ``input`` as a 1-d int64 tensor (``input.shape`` is a list).

    >>> import oar
    >>> oar.shape(oar.zeros([2, 3])).tolist()
    [2, 3]
    """
    dims = _as_tensor(input, "input", "shape").shape
    return _as_tensor(np.asarray(dims, dtype=np.int64).reshape(len(dims)), "input", "shape")


def rank(input) -> Tensor:  # noqa: A002 - Paddle's argument name
    """The number of dimensions of ``input``, a 0-d int32 tensor."""
    return full([], _as_tensor(input, "input", "rank").ndim, "int32")


def as_tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """``to_tensor`` (Paddle 3's other name): a new tensor from ``data``, which may be a tensor.

    >>> import oar
    >>> oar.as_tensor([1.5, 2.0], dtype="float64").dtype
    oar.float64
    """
    return to_tensor(data, dtype=dtype, place=device, stop_gradient=not requires_grad)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False) -> Tensor:
    """``to_tensor`` (the array API's name): a new tensor from ``obj``; ``copy=False`` is refused,
    as oar always copies the data of a new tensor."""
    if copy is False:
        raise ArgumentError("asarray: copy=False is not supported: a new oar tensor always holds its own copy")
    return to_tensor(obj, dtype=dtype, place=device, stop_gradient=not requires_grad)


# -- tensor information -----------------------------------------------------------------------
def is_tensor(x) -> bool:
    """Whether ``x`` is an ``oar.Tensor``."""
    return isinstance(x, Tensor)


def _tensor_arg(x, fn: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise ArgumentError(f"{fn}: expected a Tensor, got {type(x).__name__}")
    return x


def is_floating_point(x) -> bool:
    """Whether ``x``'s dtype is a floating one (float16, bfloat16, float32, float64)."""
    return _tensor_arg(x, "is_floating_point").dtype.is_floating


def is_integer(x) -> bool:
    """Whether ``x``'s dtype is an integer one (bool is not)."""
    return _tensor_arg(x, "is_integer").dtype.is_integer


def is_empty(x, name=None) -> Tensor:
    """Whether ``x`` has no elements, a 0-d bool tensor."""
    return full([], _tensor_arg(x, "is_empty").size == 0, "bool")


def _cast_method(dtype: _dt.DType):
    def method(self) -> Tensor:
        return cast(self, dtype)

    method.__doc__ = f"This tensor as {dtype.name} (``oar.cast``)."
    return method


CASTS = {
    "bool": _dt.bool_, "byte": _dt.uint8, "char": _dt.int8, "short": _dt.int16, "int": _dt.int32,
    "long": _dt.int64, "half": _dt.float16, "float": _dt.float32, "double": _dt.float64,
    "bfloat16": _dt.bfloat16, "float16": _dt.float16, "float32": _dt.float32, "float64": _dt.float64,
    "int8": _dt.int8, "int16": _dt.int16, "int32": _dt.int32, "int64": _dt.int64, "uint8": _dt.uint8,
}


def type_as(self, other) -> Tensor:
    """This tensor cast to ``other``'s dtype."""
    return cast(self, _tensor_arg(other, "type_as").dtype)


def element_size(self) -> int:
    """Bytes per element."""
    return self.dtype.itemsize


def stride(self, dim=None):
    """The strides, in elements, of this tensor's memory (a view's follow its base's), or of
    axis ``dim``.

    >>> import oar
    >>> x = oar.zeros([2, 3])
    >>> x.stride(), x.stride(0), x.t().stride()
    ([3, 1], 3, [1, 3])
    """
    data = self._data
    if isinstance(data, np.ndarray):
        strides = [s // self.dtype.itemsize for s in data.strides]
    else:  # a device buffer's strides are in elements already
        strides = list(data.strides)
    return strides if dim is None else strides[_axis(dim, len(strides), "stride")]


def is_contiguous(self) -> bool:
    """Whether this tensor's elements lie in memory in row-major order without gaps (a
    transposed or strided view's do not)."""
    data = self._data
    return bool(data.flags["C_CONTIGUOUS"] if isinstance(data, np.ndarray) else data.is_contiguous())


def contiguous(self) -> Tensor:
    """This tensor when it is contiguous, else a contiguous copy (which keeps the gradient path)."""
    return self if is_contiguous(self) else clone(self)


def data_ptr(self) -> int:
    """The address of this tensor's first element (in host memory, or the device's)."""
    data = self._data
    return int(data.ctypes.data if isinstance(data, np.ndarray) else data.data_ptr())


def _offset(self) -> int:
    """Bytes from the start of the base tensor's memory to a view's first element; 0 for a tensor
    that is no view."""
    base = None if self._view is None else self._view.base
    if base is None:
        return 0
    return data_ptr(self) - data_ptr(base)


def _device(self) -> str:
    """Where this tensor lives: ``"cpu"`` or ``"gpu:0"``."""
    return "cpu" if self._backend == "cpu" else f"{self._backend}:0"


def get_device(self) -> int:
    """The device index: -1 on the cpu, 0 on the gpu."""
    return -1 if self._backend == "cpu" else 0


def pin_memory(self, blocking=True) -> Tensor:
    """This tensor (see the module docstring: oar's host memory needs no pinning)."""
    return self


def is_same_shape(self, y) -> bool:
    """Whether ``y`` has this tensor's shape."""
    return self.shape == _tensor_arg(y, "is_same_shape").shape


def _get_requires_grad(self) -> bool:
    return not self.stop_gradient


def _set_requires_grad(self, value) -> None:
    self.stop_gradient = not value


def requires_grad_(self, requires_grad=True) -> Tensor:
    """Set ``requires_grad`` (``stop_gradient = not requires_grad``); returns this tensor."""
    self.stop_gradient = not requires_grad
    return self


def _new(fill):
    def method(var, *size, dtype=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
        if len(size) == 1 and isinstance(size[0], (list, tuple, Tensor)):
            size = size[0]
        result = fill(list(size) if isinstance(size, tuple) else size, dtype if dtype is not None else var.dtype)
        result = to_device(result, var._backend if device is None else place_backend(device))
        result.stop_gradient = not requires_grad
        return result

    return method


new_empty = _new(empty)
new_zeros = _new(zeros)
new_ones = _new(ones)
new_empty.__doc__ = "A new uninitialised tensor of ``size``, with this tensor's dtype and device unless given."
new_zeros.__doc__ = "A new tensor of zeros of ``size``, with this tensor's dtype and device unless given."
new_ones.__doc__ = "A new tensor of ones of ``size``, with this tensor's dtype and device unless given."


def new_full(var, size, fill_value, *, dtype=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """A new tensor of ``size`` filled with ``fill_value``, with this tensor's dtype and device
    unless given.

    >>> import oar
    >>> oar.zeros([1], dtype="int32").new_full([2], 3).tolist()
    [3, 3]
    """
    return _new(lambda s, d: full(s, fill_value, d))(var, size, dtype=dtype, device=device,
                                                      requires_grad=requires_grad)


def _matrix_transpose(self) -> Tensor:
    """The last two axes swapped (``x.mT``)."""
    if self.ndim < 2:
        raise ShapeError(f"mT: the tensor must have at least 2 dimensions, got shape {fmt_shape(self.shape)}")
    return swapaxes(self, -2, -1)


def copy_(self, src, blocking=True) -> Tensor:
    """``src``'s values (and shape) into this tensor, which keeps its dtype; returns it.

    >>> import oar
    >>> x = oar.zeros([2])
    >>> _ = x.copy_(oar.to_tensor([1.0, 2.0])); x.tolist()
    [1.0, 2.0]
    """
    src = _as_tensor(src, "src", "copy_")
    if src.dtype is not self.dtype:
        raise DTypeError(f"copy_: src has dtype {src.dtype.name} but the tensor is {self.dtype.name}; cast src first")
    return assign(src, output=self)


def _get_data(self) -> Tensor:
    return self.detach()


def _set_data(self, value) -> None:
    assign(_as_tensor(value, "value", "data").detach(), output=self)


def _get_grad(self):
    return self.grad


def _set_grad(self, value) -> None:
    self.grad = value


def apply(self, func) -> Tensor:
    """``func(self)``, for a tensor that needs no gradient (no gradient flows through ``func``).

    >>> import oar
    >>> oar.to_tensor([1.0, 2.0]).apply(lambda t: t * 2).tolist()
    [2.0, 4.0]
    """
    if not self.stop_gradient:
        raise ArgumentError("apply: the tensor requires a gradient; apply runs func outside autograd, so detach it "
                            "first")
    return func(self)


def apply_(self, func) -> Tensor:
    """``self`` replaced by ``func(self)`` in place; returns ``self`` (no gradient, as ``apply``)."""
    return apply_inplace(self, apply(self, func), "apply_")


def _always(value: bool, what: str):
    def method(self) -> bool:
        return value

    method.__doc__ = f"{value}: {what}."
    return method


# -- random fills and draws -------------------------------------------------------------------
def _float_target(x, fn: str) -> Tensor:
    x = _tensor_arg(x, fn)
    if not x.dtype.is_floating:
        raise DTypeError(f"{fn}: x must be a floating tensor, got {x.dtype.name}")
    check_target(x, fn)
    return x


def _on(x: Tensor, drawn: Tensor) -> Tensor:
    return drawn if drawn._backend == x._backend else to_device(drawn, x._backend)


def _unit_uniform(x: Tensor, fn: str) -> Tensor:
    return _on(x, _uniform(list(x.shape), x.dtype, 0.0, 1.0, 0, fn))


def _number(value, fn: str, label: str) -> float:
    return float(_scalar_arg(value, fn, label))


def uniform_(x, min=0, max=1.0, seed=0, name=None) -> Tensor:  # noqa: A002 - Paddle's argument names
    """Fill ``x`` in place with values drawn uniformly from ``[min, max)``; returns ``x``.

    >>> import oar
    >>> x = oar.zeros([100]).uniform_(2.0, 3.0)
    >>> bool(((x >= 2.0) & (x < 3.0)).all())
    True
    """
    x = _float_target(x, "uniform_")
    low, high = _number(min, "uniform_", "min"), _number(max, "uniform_", "max")
    if not low <= high:
        raise ArgumentError(f"uniform_: min ({low}) must not be greater than max ({high})")
    return apply_inplace(x, _on(x, _uniform(list(x.shape), x.dtype, low, high, int(seed), "uniform_")), "uniform_")


def normal_(x, mean=0.0, std=1.0, name=None) -> Tensor:
    """Fill ``x`` in place with normal draws of ``mean`` and ``std``; returns ``x``."""
    x = _float_target(x, "normal_")
    mean, std = _number(mean, "normal_", "mean"), _number(std, "normal_", "std")
    if std < 0:
        raise ArgumentError(f"normal_: std must be >= 0, got {std}")
    return apply_inplace(x, _gaussian(list(x.shape), x.dtype, mean, std, "normal_", x._backend), "normal_")


def log_normal_(x, mean=1.0, std=2.0, name=None) -> Tensor:
    """Fill ``x`` in place with ``exp`` of normal draws of ``mean`` and ``std``; returns ``x``."""
    x = _float_target(x, "log_normal_")
    mean, std = _number(mean, "log_normal_", "mean"), _number(std, "log_normal_", "std")
    if std < 0:
        raise ArgumentError(f"log_normal_: std must be >= 0, got {std}")
    return apply_inplace(x, exp(_gaussian(list(x.shape), x.dtype, mean, std, "log_normal_", x._backend)),
                         "log_normal_")


def log_normal(mean=1.0, std=2.0, shape=None, name=None) -> Tensor:
    """``exp`` of ``normal(mean, std, shape)``: log-normal draws (tensor ``mean``/``std`` as ``normal``).

    >>> import oar
    >>> oar.log_normal(oar.to_tensor([1.0, 0.0]), 0.0).tolist() == [float(oar.exp(oar.to_tensor(1.0))), 1.0]
    True
    """
    if shape is None and not isinstance(mean, Tensor) and not isinstance(std, Tensor):
        raise ArgumentError("log_normal: give shape when mean and std are numbers")
    return exp(normal(mean, std, shape))


def exponential_(x, lam=1.0, name=None) -> Tensor:
    """Fill ``x`` in place with exponential draws of rate ``lam``; returns ``x``."""
    x = _float_target(x, "exponential_")
    lam = _number(lam, "exponential_", "lam")
    if lam <= 0:
        raise ArgumentError(f"exponential_: lam must be > 0, got {lam}")
    return apply_inplace(x, neg(log1p(neg(_unit_uniform(x, "exponential_")))) / lam, "exponential_")


def cauchy_(x, loc=0, scale=1, name=None) -> Tensor:
    """Fill ``x`` in place with Cauchy draws of median ``loc`` and half-width ``scale``; returns ``x``."""
    x = _float_target(x, "cauchy_")
    loc, scale = _number(loc, "cauchy_", "loc"), _number(scale, "cauchy_", "scale")
    if scale <= 0:
        raise ArgumentError(f"cauchy_: scale must be > 0, got {scale}")
    return apply_inplace(x, tan((_unit_uniform(x, "cauchy_") - 0.5) * np.pi) * scale + loc, "cauchy_")


def geometric_(x, probs, name=None) -> Tensor:
    """Fill ``x`` in place with the number of Bernoulli(``probs``) trials up to the first success
    (1, 2, ...); ``probs`` a number or a tensor that broadcasts to ``x``. Returns ``x``."""
    x = _float_target(x, "geometric_")
    if isinstance(probs, Tensor):
        low, high = float(probs.min()), float(probs.max())
        probs = cast(probs, x.dtype)
    else:
        low = high = probs = _number(probs, "geometric_", "probs")
    if not (0.0 < low and high <= 1.0):
        raise ArgumentError(f"geometric_: probs must lie in (0, 1], got values from {low} to {high}")
    # k = floor(log(U) / log(1 - p)) + 1 with U = 1 - u in (0, 1]; p = 1 (certain success) is 1, set apart
    # so that log1p(-1) is never computed
    certain = probs >= 1.0
    if isinstance(probs, Tensor):
        probs = where(certain, 0.5, probs)
    elif certain:
        return apply_inplace(x, ones(list(x.shape), x.dtype), "geometric_")
    trials = floor(divide(log1p(neg(_unit_uniform(x, "geometric_"))), log1p(neg(probs)))) + 1.0
    return apply_inplace(x, where(certain, 1.0, trials) if isinstance(certain, Tensor) else trials, "geometric_")


def bernoulli_(x, p=0.5, name=None) -> Tensor:
    """Fill ``x`` in place with 1 drawn with probability ``p`` (a number or a tensor that
    broadcasts to ``x``), else 0; returns ``x``."""
    x = _float_target(x, "bernoulli_")
    if isinstance(p, Tensor):
        probs = broadcast_to(cast(p, x.dtype), x.shape)
    else:
        p = _number(p, "bernoulli_", "p")
        if not 0.0 <= p <= 1.0:
            raise ArgumentError(f"bernoulli_: p must lie in [0, 1], got {p}")
        probs = full(list(x.shape), p, x.dtype)
    return apply_inplace(x, _on(x, bernoulli(probs)), "bernoulli_")


def _randint(low: int, high: int, shape: list, dtype: _dt.DType) -> Tensor:
    attrs = {"shape": shape, "dtype": "int64", "low": low, "high": high, "place": "cpu"}
    return cast(dispatch(randint_op, (), attrs), dtype)


def _default_random_high(d: _dt.DType) -> int:
    if d.is_floating:  # every integer up to 2**mantissa is exact in the dtype
        return 2 ** (np.finfo(d.np).nmant + 1) + 1 if d is not _dt.bfloat16 else 2 ** 8 + 1
    if d.is_bool:
        return 2
    return int(np.iinfo(d.np).max)


def random_(x, from_=0, to=None, *, generator=None) -> Tensor:
    """Fill ``x`` in place with integers drawn uniformly from ``[from_, to)`` (see the module
    docstring for ``to=None``); returns ``x``.

    >>> import oar
    >>> x = oar.zeros([50]).random_(0, 3)
    >>> sorted(set(x.tolist())) <= [0.0, 1.0, 2.0]
    True
    """
    x = _tensor_arg(x, "random_")
    check_target(x, "random_")
    if generator is not None and not isinstance(generator, Generator):
        raise ArgumentError(f"random_: generator must be None or oar.Generator() (oar has one generator), got "
                            f"{type(generator).__name__}")
    if to is None:
        low, high = 0, _default_random_high(x.dtype)
        if from_ != 0:
            low, high = 0, int(from_)
    else:
        low, high = int(from_), int(to)
    if low >= high:
        raise ArgumentError(f"random_: from_ ({low}) must be less than to ({high})")
    return apply_inplace(x, _on(x, _randint(low, high, list(x.shape), x.dtype)), "random_")


def _like_device(x: Tensor, device) -> str:
    return x._backend if device is None else place_backend(device)


def rand_like(input, name=None, *, dtype=None, device=None, requires_grad=False) -> Tensor:  # noqa: A002
    """Uniform draws from ``[0, 1)`` with ``input``'s shape, dtype (unless given) and device."""
    x = _tensor_arg(input, "rand_like")
    d = dtype_arg(dtype, "rand_like", default=x.dtype, kinds=("float",))
    result = to_device(_uniform(list(x.shape), d, 0.0, 1.0, 0, "rand_like"), _like_device(x, device))
    result.stop_gradient = not requires_grad
    return result


def randn_like(x, dtype=None, name=None, *, device=None, requires_grad=False) -> Tensor:
    """Standard normal draws with ``x``'s shape, dtype (unless given) and device.

    >>> import oar
    >>> oar.randn_like(oar.zeros([2, 3], dtype="float64")).dtype
    oar.float64
    """
    x = _tensor_arg(x, "randn_like")
    d = dtype_arg(dtype, "randn_like", default=x.dtype, kinds=("float",))
    result = _gaussian(list(x.shape), d, 0.0, 1.0, "randn_like", _like_device(x, device))
    result.stop_gradient = not requires_grad
    return result


def randint_like(x, low=0, high=None, dtype=None, name=None) -> Tensor:
    """Integers drawn uniformly from ``[low, high)`` (``[0, low)`` when ``high`` is None) with
    ``x``'s shape and device, in ``dtype`` (default ``x``'s)."""
    x = _tensor_arg(x, "randint_like")
    d = dtype_arg(dtype, "randint_like", default=x.dtype, kinds=("bool", "int", "float"))
    if high is None:
        low, high = 0, low
    low, high = _scalar_arg(low, "randint_like", "low"), _scalar_arg(high, "randint_like", "high")
    if not isinstance(low, int) or not isinstance(high, int) or isinstance(low, bool) or isinstance(high, bool):
        raise ArgumentError(f"randint_like: low and high must be ints, got {low!r} and {high!r}")
    if low >= high:
        raise ArgumentError(f"randint_like: low ({low}) must be less than high ({high})")
    return _on(x, _randint(low, high, shape_arg(list(x.shape), "randint_like"), d))


def _draw_meta(x: TensorMeta, *rest) -> TensorMeta:
    return x


def _host(x: Tensor) -> Tensor:
    return x if x._backend == "cpu" else to_device(x, "cpu")


def _poisson_kernel(x):
    if x.size and not np.all(x >= 0):
        raise ArgumentError("poisson: the rates in x must be >= 0")
    return default_generator().poisson(x.astype(np.float64)).astype(x.dtype)


poisson_op = Op("poisson", reference=_poisson_kernel, meta=_draw_meta, traits=RANDOM, dtypes=FLOATS)


def poisson(x, name=None) -> Tensor:
    """Poisson draws, one per element of ``x`` (the rates), in ``x``'s dtype.

    >>> import oar
    >>> oar.poisson(oar.to_tensor([0.0, 0.0])).tolist()
    [0.0, 0.0]
    """
    x = _as_tensor(x, "x", "poisson")
    return _on(x, dispatch(poisson_op, (_host(x),), {}))


def _binomial_kernel(count, prob):
    if prob.size and not (np.all(prob >= 0) and np.all(prob <= 1)):
        raise ArgumentError("binomial: prob must lie in [0, 1]")
    if count.size and not np.all(count >= 0):
        raise ArgumentError("binomial: count must be >= 0")
    return default_generator().binomial(count.astype(np.int64), prob.astype(np.float64)).astype(np.int64)


def _binomial_meta(count: TensorMeta, prob: TensorMeta) -> TensorMeta:
    if tuple(count.shape) != tuple(prob.shape):
        raise ShapeError(f"binomial: count {fmt_shape(count.shape)} and prob {fmt_shape(prob.shape)} must have "
                         f"the same shape")
    return TensorMeta(tuple(count.shape), _dt.int64)


binomial_op = Op("binomial", reference=_binomial_kernel, meta=_binomial_meta, traits=RANDOM)


def binomial(count, prob, name=None) -> Tensor:
    """Binomial draws: successes in ``count`` trials of probability ``prob`` (same shape), int64.

    >>> import oar
    >>> oar.binomial(oar.to_tensor([10, 20]), oar.to_tensor([0.0, 1.0])).tolist()
    [0, 20]
    """
    count, prob = _as_tensor(count, "count", "binomial"), _as_tensor(prob, "prob", "binomial")
    if not prob.dtype.is_floating:
        raise DTypeError(f"binomial: prob must be a floating tensor, got {prob.dtype.name}")
    _binomial_meta(TensorMeta(tuple(count.shape), count.dtype), TensorMeta(tuple(prob.shape), prob.dtype))
    return _on(count, dispatch(binomial_op, (_host(count), _host(cast(prob, "float64"))), {}))


def _standard_gamma_kernel(x):
    if x.size and not np.all(x > 0):
        raise ArgumentError("standard_gamma: the concentrations in x must be > 0")
    return default_generator().standard_gamma(x.astype(np.float64)).astype(x.dtype)


standard_gamma_op = Op("standard_gamma", reference=_standard_gamma_kernel, meta=_draw_meta, traits=RANDOM,
                       dtypes=FLOATS)


def standard_gamma(x, name=None) -> Tensor:
    """Gamma draws of concentration ``x`` (one per element) and rate 1, in ``x``'s dtype."""
    x = _as_tensor(x, "x", "standard_gamma")
    return _on(x, dispatch(standard_gamma_op, (_host(x),), {}))


class Generator:
    """The random number generator every random op of oar draws from, as ``paddle.Generator``
    (which returns the device's default generator): oar has one, for every device, so each
    ``Generator()`` is the same object.

    >>> import oar
    >>> g = oar.Generator()
    >>> g.manual_seed(7) is g, g.initial_seed()
    (True, 7)
    >>> state = g.get_state(); a = oar.rand([2]).tolist(); g.set_state(state)
    >>> oar.rand([2]).tolist() == a
    True
    """

    _instance: Generator | None = None

    def __new__(cls, device=None):
        if device is not None:
            place_backend(device)  # an unknown device name raises
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def manual_seed(self, seed_value) -> Generator:
        """Seed it (``oar.seed``); returns it."""
        seed(seed_value)
        return self

    def seed(self) -> int:
        """Seed it with a fresh seed from the operating system's entropy; returns the seed."""
        fresh = int(np.random.SeedSequence().entropy % 2**63)
        seed(fresh)
        return fresh

    def initial_seed(self) -> int:
        """The seed it was last seeded with."""
        return initial_seed()

    def get_state(self) -> dict:
        """Its state, plain data that ``set_state`` takes back."""
        return get_rng_state()[0]

    def set_state(self, state) -> None:
        """Restore a state from ``get_state``."""
        set_rng_state([state])

    def random(self) -> int:
        """A random 64-bit unsigned integer."""
        return int(default_generator().integers(0, 2**64, dtype=np.uint64))

    def __repr__(self) -> str:
        return "<oar.Generator: the global generator>"


def manual_seed(seed_value) -> Generator:
    """Seed the global generator (``oar.seed``); returns it as a ``Generator``, as Paddle 3 does."""
    return Generator().manual_seed(seed_value)


def get_cuda_rng_state() -> list[dict]:
    """``get_rng_state()``: oar's one generator feeds every device (see the module docstring)."""
    return get_rng_state()


def set_cuda_rng_state(state_list) -> None:
    """``set_rng_state``: oar's one generator feeds every device (see the module docstring)."""
    set_rng_state(state_list)


# -- closeness, and the products Paddle 3 names ---------------------------------------------------
def isclose(x, y, rtol=1e-05, atol=1e-08, equal_nan=False, name=None) -> Tensor:
    """``|x - y| <= atol + rtol * |y|`` elementwise (equal infinities are close; NaN is close to NaN
    only with ``equal_nan``), as ``paddle.isclose``; broadcasts; a bool tensor. Integer tensors
    compare in float64 (Paddle has no integer kernel).

    >>> import oar
    >>> oar.isclose(oar.to_tensor([1.0, 2.0]), oar.to_tensor([1.0 + 1e-7, 2.1])).tolist()
    [True, False]
    """
    x, y = _as_tensor(x, "x", "isclose"), _as_tensor(y, "y", "isclose")
    if rtol < 0 or atol < 0:
        raise ArgumentError(f"isclose: rtol and atol must not be negative, got rtol={rtol}, atol={atol}")
    if not (x.dtype.is_floating or x.dtype.is_complex):
        x, y = cast(x, "float64"), cast(y, "float64")
    elif x.dtype is not y.dtype:
        raise DTypeError(f"isclose: x and y must have the same dtype, got {x.dtype.name} and {y.dtype.name}")
    finite = logical_and(isfinite(x), isfinite(y))  # inf and nan are compared by equal alone (no inf - inf)
    xs, ys = where(finite, x, zeros_like(x)), where(finite, y, zeros_like(y))
    close = logical_or(equal(x, y), logical_and(finite, less_equal(_abs(xs - ys), atol + rtol * _abs(ys))))
    return logical_or(close, logical_and(isnan(x), isnan(y))) if equal_nan else close


def allclose(x, y, rtol=1e-05, atol=1e-08, equal_nan=False, name=None) -> Tensor:
    """Whether every element of ``x`` is close to ``y`` (``isclose``): a bool 0-d tensor, as
    ``paddle.allclose``.

    >>> import oar
    >>> bool(oar.allclose(oar.to_tensor([1.0, 2.0]), oar.to_tensor([1.0, 2.0 + 1e-9])))
    True
    """
    return _all(isclose(x, y, rtol, atol, equal_nan))


def addmm(input, x, y, beta=1.0, alpha=1.0, name=None) -> Tensor:  # noqa: A002 - Paddle's name
    """``beta * input + alpha * (x @ y)`` for matrices ``x`` [m, k] and ``y`` [k, n], ``input``
    broadcasting to [m, n], as ``paddle.addmm``.

    >>> import oar
    >>> oar.addmm(oar.ones([2, 2]), oar.eye(2), oar.full([2, 2], 3.0), beta=0.5, alpha=2.0).tolist()
    [[6.5, 6.5], [6.5, 6.5]]
    """
    x, y = _as_tensor(x, "x", "addmm"), _as_tensor(y, "y", "addmm")
    if len(x.shape) != 2 or len(y.shape) != 2:
        raise ShapeError(f"addmm: x and y must be matrices, got shapes {fmt_shape(x.shape)} and {fmt_shape(y.shape)}")
    return beta * _as_tensor(input, "input", "addmm") + alpha * matmul(x, y)


def baddbmm(input, x, y, beta=1.0, alpha=1.0, name=None) -> Tensor:  # noqa: A002 - Paddle's name
    """``beta * input + alpha * bmm(x, y)`` for batches ``x`` [b, m, k] and ``y`` [b, k, n], as
    ``paddle.baddbmm``."""
    x, y = _as_tensor(x, "x", "baddbmm"), _as_tensor(y, "y", "baddbmm")
    if len(x.shape) != 3 or len(y.shape) != 3:
        raise ShapeError(f"baddbmm: x and y must be batches of matrices [b, m, k], got shapes {fmt_shape(x.shape)} "
                         f"and {fmt_shape(y.shape)}")
    return beta * _as_tensor(input, "input", "baddbmm") + alpha * bmm(x, y)


addmm_ = _inplace(addmm, "addmm_")
baddbmm_ = _inplace(baddbmm, "baddbmm_")


def ger(x, y, name=None, *, out=None) -> Tensor:
    """The outer product of vectors ``x`` and ``y`` (``outer``), as ``paddle.ger``."""
    return _into(out, outer(x, y))


# -- DLPack ---------------------------------------------------------------------------------------
class _Capsule:
    """A bare DLPack capsule as numpy's ``from_dlpack`` takes it: an object with ``__dlpack__``."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU: oar's host tensors are what a capsule from to_dlpack holds


def from_dlpack(dlpack, *, device=None, copy=None) -> Tensor:
    """A tensor sharing memory with ``dlpack`` (a DLPack capsule, or any object with
    ``__dlpack__``: a numpy array, another framework's CPU tensor), as ``paddle.from_dlpack``;
    ``copy=True`` copies.

    >>> import numpy as np, oar
    >>> oar.from_dlpack(np.arange(3.0)).tolist()
    [0.0, 1.0, 2.0]
    """
    if device is not None and place_backend(device) != "cpu":
        raise ArgumentError(f"from_dlpack: oar reads DLPack data on the cpu, got device={device!r}")
    source = dlpack if hasattr(dlpack, "__dlpack__") else _Capsule(dlpack)
    try:
        array = np.from_dlpack(source)
    except (TypeError, ValueError, BufferError, RuntimeError) as exc:
        raise ArgumentError(f"from_dlpack: cannot read {type(dlpack).__name__} as DLPack data on the cpu: {exc}") from None
    return to_tensor(array) if copy else from_numpy(array)


def to_dlpack(x) -> object:
    """A DLPack capsule of ``x``'s data (on the host), as ``paddle.to_dlpack``: a consumer such as
    ``oar.from_dlpack`` or another framework's shares the memory."""
    x = _as_tensor(x, "x", "to_dlpack")
    return (x._data if x._backend == "cpu" else x.numpy()).__dlpack__()


OPS = [poisson_op, binomial_op, standard_gamma_op]

__all__ = [
    "cat", "concatenate", "clamp", "permute", "swapaxes", "swapdims", "div", "div_", "mul", "sub", "sub_",
    "true_divide", "negative", "positive", "eq", "ne", "gt", "ge", "lt", "le", "greater", "less", "equal_all",
    "equal_", "greater_equal_", "greater_than_", "less_", "less_equal_", "less_than_", "cast_", "increment",
    "range", "tolist", "numel", "shape", "rank", "as_tensor", "asarray", "is_tensor", "is_floating_point", "is_integer", "is_empty",
    "normal_", "bernoulli_", "log_normal", "log_normal_", "cauchy_", "geometric_", "rand_like", "randn_like",
    "randint_like", "poisson", "binomial", "standard_gamma", "Generator", "manual_seed", "get_cuda_rng_state",
    "set_cuda_rng_state", "isclose", "allclose", "addmm", "addmm_", "baddbmm", "baddbmm_", "ger", "from_dlpack",
    "to_dlpack",
]

# Paddle 3.3.1's Tensor methods of this family.
METHODS: dict = {
    "cat": cat, "concat": concat, "stack": stack, "add_n": add_n, "where_": where_, "cast_": cast_,
    "clamp": clamp, "clamp_": clamp_, "permute": permute, "swapaxes": swapaxes, "swapdims": swapdims,
    "div": div, "div_": div_, "mul": mul, "mul_": mul_, "sub": sub, "sub_": sub_, "true_divide": true_divide,
    "negative": negative, "eq": eq, "ne": ne, "gt": gt, "ge": ge, "lt": lt, "le": le, "greater": greater,
    "less": less, "equal_all": equal_all, "equal_": equal_, "not_equal_": not_equal_,
    "greater_equal_": greater_equal_, "greater_than_": greater_than_, "less_": less_, "less_equal_": less_equal_,
    "less_than_": less_than_, "increment": increment, "rank": rank,
    "is_tensor": is_tensor, "is_floating_point": is_floating_point, "is_integer": is_integer, "is_empty": is_empty,
    **{name: _cast_method(d) for name, d in CASTS.items()},
    "type_as": type_as, "element_size": element_size, "itemsize": property(element_size, doc="Bytes per element."),
    "stride": stride, "get_strides": stride, "strides": property(stride, doc="The strides, in elements."),
    "is_contiguous": is_contiguous, "contiguous": contiguous, "data_ptr": data_ptr,
    "offset": property(_offset),
    "layout": property(lambda self: "NCHW", doc="'NCHW', what Paddle reports for a dense tensor."),
    "device": property(_device), "get_device": get_device,
    "is_cuda": property(lambda self: self._backend != "cpu", doc="Whether the tensor is on the gpu."),
    "pin_memory": pin_memory, "is_same_shape": is_same_shape,
    "requires_grad": property(_get_requires_grad, _set_requires_grad, doc="``not stop_gradient``."),
    "requires_grad_": requires_grad_,
    "new_empty": new_empty, "new_full": new_full, "new_ones": new_ones, "new_zeros": new_zeros,
    "mT": property(_matrix_transpose), "copy_": copy_,
    "data": property(_get_data, _set_data, doc="This tensor without its gradient path; assigning replaces its value."),
    "grad_": property(_get_grad, _set_grad, doc="``grad``."),
    "is_dense": _always(True, "oar's tensors are dense"), "is_sparse": _always(False, "oar's tensors are dense"),
    "is_sparse_coo": _always(False, "oar's tensors are dense"), "is_sparse_csr": _always(False, "oar's tensors are dense"),
    "is_dist": _always(False, "oar's tensors are not distributed ones"),
    "apply": apply, "apply_": apply_,
    "uniform_": uniform_, "normal_": normal_, "log_normal_": log_normal_, "exponential_": exponential_,
    "cauchy_": cauchy_, "geometric_": geometric_, "bernoulli_": bernoulli_, "random_": random_,
    "multinomial": multinomial, "isclose": isclose, "allclose": allclose, "addmm": addmm, "addmm_": addmm_,
    "baddbmm": baddbmm, "baddbmm_": baddbmm_,
}
