"""Creating tensors: zeros, ones, full, empty, arange, linspace, eye and the ``*_like`` family.

Functions that make a tensor from Python values alone (``zeros``, ``arange``, ...) are plain
functions, not ops: they run numpy on the host and put the result on the current device, and
a traced program holds their result as a constant. The ``*_like`` functions are one op,
``full_like``, because their shape comes from a tensor whose shape a traced program may only
know at run time.
"""

from __future__ import annotations

import math

import numpy as np

from oar._engine import dtypes as _dt
from oar._engine.device import backend_for
from oar._engine.memory import allocation_error
from oar._engine.op import COMPLEX, Op
from oar._engine.profiling import TENSOR_MEMORY
from oar._engine.registries import BACKENDS
from oar._engine.tensor import Tensor
from oar._ops._common import TensorMeta, as_tensor, dispatch
from oar.errors import ArgumentError, DTypeError


def _allocate(fn: str, shape: list[int], d: _dt.DType, make) -> np.ndarray:
    """``make()``; numpy failing to allocate its array of ``shape`` is an oar error naming ``fn``."""
    try:
        return make()
    except (MemoryError, ValueError) as exc:
        err = allocation_error(fn, exc, shape, d)
        if err is None:
            raise
        raise err from exc


def _make(array: np.ndarray, place=None, stop_gradient: bool = True, fn: str = "creation") -> Tensor:
    backend = backend_for(place, fn)
    if backend != "cpu":
        array = BACKENDS.get(backend).from_numpy(array)
    elif TENSOR_MEMORY.on:  # oar.device's memory statistics count what creation functions make
        TENSOR_MEMORY.track(array)
    return Tensor._wrap(array, backend, stop_gradient, None, 0, None)


def shape_arg(shape, fn: str) -> list[int]:
    """A shape given as an int, a list/tuple of ints (or 0-d integer tensors) or a 1-d integer
    tensor, as a list of non-negative ints; otherwise an ArgumentError naming ``fn``."""
    if isinstance(shape, Tensor):
        if not shape.dtype.is_integer or shape.ndim > 1:
            raise ArgumentError(f"{fn}: a shape tensor must be a 1-d integer tensor, got {shape.dtype.name}{shape.shape}")
        shape = shape.tolist()
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
        shape = [shape]
    if not isinstance(shape, (list, tuple)):
        raise ArgumentError(f"{fn}: shape must be a list or tuple of ints (or a 1-d integer tensor), "
                            f"got {type(shape).__name__}")
    dims = []
    for d in shape:
        if isinstance(d, Tensor) and d.dtype.is_integer and d.size == 1:
            d = d.item()
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
            raise ArgumentError(f"{fn}: shape must hold ints, got {list(shape)!r} (a {type(d).__name__} at "
                                f"position {len(dims)})")
        if d < 0:
            raise ArgumentError(f"{fn}: shape {[int(v) if isinstance(v, (int, np.integer)) else v for v in shape]} "
                                f"has a negative dimension ({int(d)}); dimensions must be >= 0")
        dims.append(int(d))
    return dims


def dtype_arg(dtype, fn: str, default: _dt.DType | None = None, kinds=("bool", "int", "float")) -> _dt.DType:
    """``dtype`` (or ``default`` when it is None) as a DType of one of ``kinds``; a DTypeError naming ``fn``."""
    if dtype is None:
        d = default if default is not None else _dt.default_float()
    else:
        try:
            d = _dt.get_dtype(dtype)
        except DTypeError as exc:
            raise DTypeError(f"{fn}: {exc}") from None
    if d.kind not in kinds:
        allowed = [x.name for x in _dt.ALL_DTYPES if x.kind in kinds]
        raise DTypeError(f"{fn}: dtype {d.name} is not supported here; expected one of {allowed}")
    return d


def _scalar_arg(value, fn: str, name: str):
    """A Python scalar from a number or a one-element tensor."""
    if isinstance(value, Tensor):
        if value.size != 1:
            raise ArgumentError(f"{fn}: {name} must be a number or a tensor with one element, got shape {value.shape}")
        return value.item()
    if isinstance(value, np.generic):
        return value.item()
    if not isinstance(value, (bool, int, float)):
        raise ArgumentError(f"{fn}: {name} must be a number, got {type(value).__name__}")
    return value


def _fill_arg(value, d: _dt.DType, fn: str):
    value = _scalar_arg(value, fn, "fill_value")
    if not d.is_floating and isinstance(value, float) and not math.isfinite(value):
        raise ArgumentError(f"{fn}: fill_value {value} does not fit dtype {d.name}")
    return value


def zeros(shape, dtype=None, name=None, *, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros (default dtype: ``oar.get_default_dtype()``, float32).

    >>> import oar
    >>> oar.zeros([2, 3]).shape
    [2, 3]
    """
    dims, d = shape_arg(shape, "zeros"), dtype_arg(dtype, "zeros")
    return _make(_allocate("zeros", dims, d, lambda: np.zeros(dims, d.np)), device, not requires_grad, "zeros")


def ones(shape, dtype=None, name=None, *, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones (default dtype float32).

    >>> import oar
    >>> oar.ones([2], dtype="int32").tolist()
    [1, 1]
    """
    dims, d = shape_arg(shape, "ones"), dtype_arg(dtype, "ones")
    return _make(_allocate("ones", dims, d, lambda: np.ones(dims, d.np)), device, not requires_grad, "ones")


def full(shape, fill_value, dtype=None, name=None, *, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor of ``shape`` filled with ``fill_value``; without ``dtype`` a bool value gives a
    bool tensor and any other value the default float dtype, as in Paddle.

    >>> import oar
    >>> oar.full([2], 1.5).tolist()
    [1.5, 1.5]
    >>> oar.full([1], True).dtype
    oar.bool
    """
    dims = shape_arg(shape, "full")
    raw = _scalar_arg(fill_value, "full", "fill_value")
    d = dtype_arg(dtype, "full", default=_dt.bool_ if isinstance(raw, bool) else None)
    value = _fill_arg(raw, d, "full")
    return _make(_allocate("full", dims, d, lambda: np.full(dims, value, d.np)), device, not requires_grad, "full")


def empty(shape, dtype=None, name=None, *, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor of ``shape`` whose values are not set (default dtype float32).

    >>> import oar
    >>> oar.empty([2, 3]).shape
    [2, 3]
    """
    dims, d = shape_arg(shape, "empty"), dtype_arg(dtype, "empty")
    return _make(_allocate("empty", dims, d, lambda: np.empty(dims, d.np)), device, not requires_grad, "empty")


def eye(num_rows, num_columns=None, dtype=None, name=None, *, device=None, requires_grad: bool = False) -> Tensor:
    """A 2-d tensor with ones on the diagonal and zeros elsewhere (default dtype float32).

    >>> import oar
    >>> oar.eye(2, 3, dtype="int32").tolist()
    [[1, 0, 0], [0, 1, 0]]
    """
    rows = shape_arg([_scalar_arg(num_rows, "eye", "num_rows")], "eye")[0]
    cols = rows if num_columns is None else shape_arg([_scalar_arg(num_columns, "eye", "num_columns")], "eye")[0]
    d = dtype_arg(dtype, "eye")
    return _make(_allocate("eye", [rows, cols], d, lambda: np.eye(rows, cols, dtype=d.np)), device, not requires_grad,
                 "eye")


def arange(start=0, end=None, step=1, dtype=None, *, device=None, requires_grad: bool = False, name=None) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive) by ``step``: int64 when all three are ints,
    else the default float dtype. As in Paddle, the bounds are cast to ``dtype`` first, and a
    step that walks away from ``end`` is an error rather than an empty tensor.

    >>> import oar
    >>> oar.arange(5).tolist()
    [0, 1, 2, 3, 4]
    >>> oar.arange(3, 9, 2.0).tolist()
    [3.0, 5.0, 7.0]
    """
    if end is None:
        start, end = 0, start
    values = []
    for label, v in (("start", start), ("end", end), ("step", step)):
        values.append(_scalar_arg(v, "arange", label))
    if dtype is None:
        d = _dt.int64 if all(isinstance(v, int) and not isinstance(v, bool) for v in values) else _dt.default_float()
    else:
        d = dtype_arg(dtype, "arange", kinds=("int", "float"))
    lo, hi, st = (np.asarray(v).astype(d.np) for v in values)
    if st == 0:
        raise ArgumentError("arange: step must not be 0")
    if (lo < hi and st < 0) or (lo > hi and st > 0):
        raise ArgumentError(f"arange: step {st.item()} moves away from end: start={lo.item()}, end={hi.item()}")
    if d.is_integer:
        size = (abs(int(hi) - int(lo)) + abs(int(st)) - 1) // abs(int(st))
    else:
        size = int(math.ceil(abs((float(hi) - float(lo)) / float(st))))
    values = _allocate("arange", [size], d, lambda: (lo + np.arange(size).astype(d.np) * st).astype(d.np))
    return _make(values, device, not requires_grad, "arange")


def linspace(start, stop, num, dtype=None, name=None) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop``, both included (default float32).

    Computed in float64 from both ends, then cast (integer dtypes truncate), as Paddle's kernel.

    >>> import oar
    >>> oar.linspace(0, 10, 5).tolist()
    [0.0, 2.5, 5.0, 7.5, 10.0]
    """
    d = dtype_arg(dtype, "linspace", kinds=("int", "float"))
    num = _scalar_arg(num, "linspace", "num")
    if isinstance(num, bool) or not isinstance(num, int) or num < 0:
        raise ArgumentError(f"linspace: num must be a non-negative int, got {num!r}")
    lo = float(np.asarray(_scalar_arg(start, "linspace", "start")).astype(d.np))
    hi = float(np.asarray(_scalar_arg(stop, "linspace", "stop")).astype(d.np))
    if num == 1:
        return _make(np.asarray([lo]).astype(d.np))

    def values() -> np.ndarray:
        i = np.arange(num, dtype=np.float64)
        step = (hi - lo) / max(num - 1, 1)
        return np.where(i < num // 2, lo + step * i, hi - step * (num - 1 - i)).astype(d.np)

    return _make(_allocate("linspace", [num], d, values))


# -- full_like: zeros_like, ones_like, full_like, empty_like ----------------------------------
def _full_like_kernel(x, fill_value, dtype):
    return np.full(x.shape, fill_value, _dt.get_dtype(dtype).np)


def _full_like_meta(x: TensorMeta, fill_value, dtype) -> TensorMeta:
    return TensorMeta(x.shape, _dt.get_dtype(dtype))


full_like_op = Op("full_like", reference=_full_like_kernel, meta=_full_like_meta, traits=("nondiff",) + COMPLEX)


def _like(fn: str, x, fill_value, dtype) -> Tensor:
    x = as_tensor(x, "x", fn)
    d = x.dtype if dtype is None else dtype_arg(dtype, fn)
    return dispatch(full_like_op, (x,), {"fill_value": _fill_arg(fill_value, d, fn), "dtype": d.name})


def full_like(x, fill_value, dtype=None, name=None) -> Tensor:
    """A tensor shaped like ``x`` filled with ``fill_value`` (dtype: ``x``'s unless given).

    >>> import oar
    >>> oar.full_like(oar.ones([2], dtype="int32"), 7).tolist()
    [7, 7]
    """
    return _like("full_like", x, fill_value, dtype)


def zeros_like(x, dtype=None, name=None) -> Tensor:
    """Zeros shaped like ``x`` (dtype: ``x``'s unless given)."""
    return _like("zeros_like", x, 0, dtype)


def ones_like(x, dtype=None, name=None) -> Tensor:
    """Ones shaped like ``x`` (dtype: ``x``'s unless given)."""
    return _like("ones_like", x, 1, dtype)


def empty_like(x, dtype=None, name=None) -> Tensor:
    """A tensor shaped like ``x`` whose values are not to be relied on (oar fills zeros)."""
    return _like("empty_like", x, 0, dtype)


OPS = [full_like_op]
__all__ = [
    "zeros", "ones", "full", "empty", "eye", "arange", "linspace", "full_like", "zeros_like",
    "ones_like", "empty_like",
]

METHODS: dict = {}
