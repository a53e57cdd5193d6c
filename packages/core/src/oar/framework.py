"""The framework-level names Paddle keeps at its top level: flags, mode switches
(``in_dynamic_mode``), dtype information (``finfo``, ``iinfo``), constants (``pi``, ``inf``,
``nan``, ``newaxis``), the dtype-named tensor constructors (``FloatTensor``), ``Size``,
``LazyGuard`` and the reader decorator ``batch``.

Where oar differs from Paddle 3.3.1:

- oar has no global static mode: a static graph is captured from Python code with
  ``oar.jit.to_static`` (or built with ``oar.static``'s ``Program``), so ``enable_static()`` raises
  and says so; ``disable_static()`` does nothing (oar always runs eagerly). ``in_dynamic_mode()`` is
  False while ``to_static`` traces a function (a mode above eager execution that is neither an
  observer, like the profiler, nor a rewriter, like autocast).
- ``set_flags``/``get_flags`` know only the flags in ``FLAGS`` (each documented there); any other
  name raises, as in Paddle for a name it does not know.
- ``LazyGuard`` is a context manager under which layers are built eagerly, as outside it: oar
  initialises parameters when they are made (Paddle defers them to the first use).
- ``disable_signal_handler()`` does nothing: oar installs no signal handler.
- ``Size`` is a ``tuple`` subclass (Paddle 3's ``paddle.Size``); ``x.shape`` stays a list in oar.
"""

from __future__ import annotations

import math

import numpy as np

from oar._engine import dtypes as _dt
from oar._engine import threads as _threads
from oar._engine.dispatch import modes_above_eager
from oar._engine.tensor import Tensor, to_tensor
from oar.errors import ArgumentError

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
newaxis = None
dtype = _dt.DType  # the class of oar.float32, ...: ``isinstance(x.dtype, oar.dtype)``


class finfo:  # noqa: N801 - Paddle's (and NumPy's) name
    """Machine limits of a floating dtype: ``bits``, ``eps``, ``max``, ``min``, ``tiny`` (=
    ``smallest_normal``), ``resolution`` and ``dtype`` (its name), as ``paddle.finfo``.

    >>> import oar
    >>> oar.finfo(oar.float32).eps == 2.0 ** -23, oar.finfo("bfloat16").bits
    (True, 16)
    """

    def __init__(self, dtype):
        d = _dtype_arg(dtype, "finfo")
        if not d.is_floating:
            raise ArgumentError(f"finfo: dtype must be a floating dtype, got {d.name}; use oar.iinfo for integers")
        info = _dt.ml_dtypes.finfo(d.np) if d is _dt.bfloat16 else np.finfo(d.np)
        self.dtype = d.name
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.tiny)
        self.resolution = 10.0 ** -int(info.precision)  # exactly 1e-06 for float32, as Paddle's

    def __repr__(self) -> str:
        return (f"oar.finfo(min={self.min:g}, max={self.max:g}, eps={self.eps:g}, resolution={self.resolution:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, bits={self.bits}, dtype={self.dtype})")


class iinfo:  # noqa: N801 - Paddle's (and NumPy's) name
    """Limits of an integer dtype: ``bits``, ``min``, ``max`` and ``dtype`` (its name).

    >>> import oar
    >>> oar.iinfo(oar.int32).max, oar.iinfo("uint8").min
    (2147483647, 0)
    """

    def __init__(self, dtype):
        d = _dtype_arg(dtype, "iinfo")
        if not d.is_integer:
            raise ArgumentError(f"iinfo: dtype must be an integer dtype, got {d.name}; use oar.finfo for floats")
        info = np.iinfo(d.np)
        self.dtype, self.bits, self.min, self.max = d.name, int(info.bits), int(info.min), int(info.max)

    def __repr__(self) -> str:
        return f"oar.iinfo(min={self.min}, max={self.max}, bits={self.bits}, dtype={self.dtype})"


def _dtype_arg(value, fn: str) -> _dt.DType:
    try:
        return _dt.get_dtype(value)
    except _dt.DTypeError as exc:
        raise ArgumentError(f"{fn}: {exc}") from None


# -- modes --------------------------------------------------------------------------------------
def in_dynamic_mode() -> bool:
    """True while ops run eagerly; False while ``oar.jit.to_static`` traces a function."""
    return all(mode.observer or mode.outermost for mode in modes_above_eager())


def enable_static() -> None:
    """Refused: oar has no global static mode (see the module docstring)."""
    raise RuntimeError(
        "enable_static: oar has no global static mode; capture a static graph from a function with "
        "oar.jit.to_static(fn) (or save one with oar.jit.save), or build one with oar.static.Program"
    )


def disable_static(place=None) -> None:
    """Nothing to do: oar always runs eagerly (dynamic mode)."""


def disable_signal_handler() -> None:
    """Nothing to do: oar installs no signal handler."""


# -- flags --------------------------------------------------------------------------------------
_deterministic = [True]


def _set_deterministic(value) -> None:
    if not isinstance(value, (bool, np.bool_, int)):
        raise ArgumentError(f"set_flags: FLAGS_cudnn_deterministic must be a bool, got {value!r}")
    _deterministic[0] = bool(value)


FLAGS = {
    # name: (getter, setter, what it does in oar)
    "FLAGS_paddle_num_threads": (_threads.num_threads, _threads.set_num_threads,
                                 "threads for oar's CPU kernels (oar.set_num_threads)"),
    "FLAGS_cudnn_deterministic": (lambda: _deterministic[0], _set_deterministic,
                                  "recorded only: oar's kernels give the same results on every run either way"),
}
"""The flags ``set_flags``/``get_flags`` know, with their getter, setter and meaning in oar."""


def _flag(name: str, fn: str):
    if not isinstance(name, str) or name not in FLAGS:
        raise ArgumentError(f"{fn}: unknown flag {name!r}; oar knows {sorted(FLAGS)}")
    return FLAGS[name]


def set_flags(flags) -> None:
    """Set flags from a dict ``{name: value}``; the names oar knows are in ``oar.framework.FLAGS``.

    >>> import oar
    >>> oar.set_flags({"FLAGS_paddle_num_threads": 1})
    >>> oar.get_flags("FLAGS_paddle_num_threads")
    {'FLAGS_paddle_num_threads': 1}
    """
    if not isinstance(flags, dict):
        raise ArgumentError(f"set_flags: flags must be a dict of flag names to values, got {type(flags).__name__}")
    for name in flags:
        _flag(name, "set_flags")  # all names checked before any is set
    for name, value in flags.items():
        FLAGS[name][1](value)


def get_flags(flags) -> dict:
    """The values of the flags named (a name or a list of names), as a dict."""
    names = [flags] if isinstance(flags, str) else flags
    if not isinstance(names, (list, tuple)):
        raise ArgumentError(f"get_flags: flags must be a flag name or a list of names, got {type(flags).__name__}")
    return {name: _flag(name, "get_flags")[0]() for name in names}


# -- small utilities ----------------------------------------------------------------------------
def check_shape(shape, op_name, expected_shape_type=(list, tuple, Tensor), expected_element_type=(int, Tensor),
                expected_tensor_dtype=("int32", "int64")) -> None:
    """Raise unless ``shape`` is a list/tuple of ints (or 1-element integer tensors) or an
    integer tensor, as ``op_name`` expects; -1 is allowed only in a list.

    >>> import oar
    >>> oar.check_shape([2, -1], "reshape")
    """
    if not isinstance(shape, expected_shape_type):
        raise ArgumentError(f"{op_name}: shape must be one of {_names(expected_shape_type)}, got "
                            f"{type(shape).__name__}")
    if isinstance(shape, Tensor):
        if shape.dtype.name not in expected_tensor_dtype:
            raise ArgumentError(f"{op_name}: a shape tensor must have dtype {list(expected_tensor_dtype)}, got "
                                f"{shape.dtype.name}")
        return
    for item in shape:
        if isinstance(item, bool) or not isinstance(item, expected_element_type):
            raise ArgumentError(f"{op_name}: the shape's elements must be {_names(expected_element_type)}, got "
                                f"{type(item).__name__} in {shape!r}")
        if isinstance(item, Tensor):
            if item.dtype.name not in expected_tensor_dtype:
                raise ArgumentError(f"{op_name}: a tensor in the shape must have dtype {list(expected_tensor_dtype)}, "
                                    f"got {item.dtype.name}")
        elif item < -1:
            raise ArgumentError(f"{op_name}: the shape's elements must be >= -1, got {item} in {shape!r}")


def _names(types) -> list[str]:
    return [t.__name__ for t in (types if isinstance(types, tuple) else (types,))]


def batch(reader, batch_size, drop_last=False):
    """Paddle's reader decorator: a reader (a function returning an iterator) of lists of
    ``batch_size`` items; the last, shorter list is dropped with ``drop_last``.

    >>> import oar
    >>> list(oar.batch(lambda: iter(range(5)), 2)())
    [[0, 1], [2, 3], [4]]
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise ArgumentError(f"batch: batch_size must be a positive int, got {batch_size!r}")

    def batch_reader():
        items = []
        for item in reader():
            items.append(item)
            if len(items) == batch_size:
                yield items
                items = []
        if items and not drop_last:
            yield items

    return batch_reader


class LazyGuard:
    """A context manager for building a model whose parameters Paddle would initialise lazily;
    oar builds them eagerly inside it too (see the module docstring).

    >>> import oar
    >>> with oar.LazyGuard():
    ...     pass
    """

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        return False


class Size(tuple):
    """A shape as a tuple of ints (Paddle 3's ``paddle.Size``).

    >>> import oar
    >>> oar.Size([2, 3]), oar.Size([2, 3]).numel()
    (oar.Size([2, 3]), 6)
    """

    def __new__(cls, iterable=()):
        dims = tuple(iterable)
        for d in dims:
            if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
                raise ArgumentError(f"Size: the dimensions must be ints, got {type(d).__name__} in {dims!r}")
        return super().__new__(cls, (int(d) for d in dims))

    def numel(self) -> int:
        """The number of elements of a tensor of this shape."""
        return math.prod(self)

    def __repr__(self) -> str:
        return f"oar.Size({list(self)})"


class _DTypeTensor:
    """A constructor of tensors of one dtype (``oar.FloatTensor``): ``FloatTensor([1, 2])`` from
    data, ``FloatTensor(2, 3)`` an uninitialised (zero-filled) one of that shape, ``FloatTensor()``
    an empty one; ``isinstance(t, oar.FloatTensor)`` checks the dtype."""

    def __init__(self, name: str, dtype: _dt.DType):
        self.__name__ = self.__qualname__ = name
        self.dtype = dtype

    def __call__(self, *args, device=None):
        if not args:
            data = np.zeros((0,), self.dtype.np)
        elif all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
            data = np.zeros(args, self.dtype.np)
        elif len(args) == 1:
            data = args[0].numpy() if isinstance(args[0], Tensor) else args[0]
        else:
            raise ArgumentError(f"{self.__name__}: give data, or the dimensions as ints, got {args!r}")
        return to_tensor(data, dtype=self.dtype.name, place=device)

    def __instancecheck__(self, instance) -> bool:
        return isinstance(instance, Tensor) and instance.dtype is self.dtype

    def __repr__(self) -> str:
        return f"<class 'oar.{self.__name__}'>"


FloatTensor = _DTypeTensor("FloatTensor", _dt.float32)
DoubleTensor = _DTypeTensor("DoubleTensor", _dt.float64)
HalfTensor = _DTypeTensor("HalfTensor", _dt.float16)
BFloat16Tensor = _DTypeTensor("BFloat16Tensor", _dt.bfloat16)
ByteTensor = _DTypeTensor("ByteTensor", _dt.uint8)
CharTensor = _DTypeTensor("CharTensor", _dt.int8)
ShortTensor = _DTypeTensor("ShortTensor", _dt.int16)
IntTensor = _DTypeTensor("IntTensor", _dt.int32)
LongTensor = _DTypeTensor("LongTensor", _dt.int64)
BoolTensor = _DTypeTensor("BoolTensor", _dt.bool_)

__all__ = [
    "pi", "e", "inf", "nan", "newaxis", "dtype", "finfo", "iinfo", "in_dynamic_mode", "enable_static",
    "disable_static", "disable_signal_handler", "set_flags", "get_flags", "check_shape", "batch", "LazyGuard",
    "Size", "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor", "ShortTensor",
    "IntTensor", "LongTensor", "BoolTensor",
]
