"""``oar.Tensor``: an n-dimensional array on a device, with Paddle's semantics and autograd.

A tensor holds its backend's array (a numpy array on ``cpu``), ``stop_gradient`` (True for user
tensors, False for parameters, as in Paddle), and -- when an op that needs a gradient made it --
the tape node that made it. This class holds what needs no op: properties, conversion to numpy
and Python, gradients' storage and hooks, ``set_value``. Methods that call ops (``x.exp()``,
``x + y``, ``x.to(...)``, iteration) are bound by the op definitions (``oar._ops.tensor_methods``)
to the same ops as ``oar.exp`` and ``oar.add``; ``backward`` is bound by ``oar._engine.autograd``.
"""

from __future__ import annotations

import itertools
import weakref

import numpy as np

from oar._engine import dtypes as _dt
from oar._engine import profiling as _profiling
from oar._engine.device import Place, backend_for
from oar._engine.registries import BACKENDS
from oar.errors import ArgumentError, DTypeError, GradientError, ShapeError

_name_counter = itertools.count()

# Called with a tensor whose values Python is about to read (``numpy()``, and through it
# ``item()``, ``float()``, ``bool()``, ...): to_static's tracer puts a check here that turns a
# read of a traced value into a graph break instead of a value baked into the program.
DATA_WATCHERS: list = []
# Called with a tensor whose shape (``"shape"``) or size (``"size"``) Python reads: to_static's
# tracer hands out a dynamic dim as a SymInt there, so that decisions on it are guarded.
SHAPE_WATCHERS: list = []


class View:
    """How a tensor shares memory with other tensors (``Tensor._view``; None for most tensors).

    A view (an output of an op with the ``view`` trait) has ``base``, the tensor whose memory it
    is, and ``chain``, the view ops from ``base`` to it as ``(op, attrs, output index)``; a view of
    a view has the same base and a longer chain. ``x.detach()`` of a view (or of a tensor others
    view) is ``detached``: it writes into that memory, but autograd does not tie it to the base. A
    tensor that views were made of has ``views``, weak references to them, which an in-place op
    that changes its history follows (``oar._engine.inplace``); if it is no view itself, its
    ``View`` has ``base`` None.
    """

    __slots__ = ("base", "chain", "views", "detached")

    def __init__(self, base, chain: tuple, detached: bool = False):
        self.base, self.chain, self.views, self.detached = base, chain, None, detached

    def live_views(self, base) -> list:
        """The views of ``base`` (whose ``View`` this is) that are alive and still its views."""
        found = []
        for ref in self.views or ():
            v = ref()
            if v is not None and v._view is not None and v._view.base is base:
                found.append(v)
        return found


def register_view(out: Tensor, src: Tensor, step: tuple) -> None:
    """Record that ``out`` is a view of ``src`` made by ``step`` (``(op, attrs, output index)``);
    every view op's call runs it."""
    view = src._view
    if view is None:
        view = src._view = View(None, ())
        out._view = View(src, (step,))
    elif view.base is None or view.detached:  # a view of a tensor that has views (or is a detach())
        out._view = View(src, (step,))
    else:  # a view of a view: the same base
        out._view = View(view.base, view.chain + (step,))
        view = view.base._view
    _remember(view, out)


def _remember(view: View, t: Tensor) -> None:
    """Add ``t`` to the weak references of ``view`` (its base's), forgetting the dead now and then."""
    refs = view.views
    if refs is None:
        refs = view.views = []
    refs.append(weakref.ref(t))
    n = len(refs)
    if n >= 64 and not n & (n - 1):  # at each power of two: drop the dead, amortised O(1)
        refs[:] = [r for r in refs if r() is not None]


class _HookHandle:
    __slots__ = ("_hooks", "_hook")

    def __init__(self, hooks: list, hook):
        self._hooks = hooks
        self._hook = hook

    def remove(self) -> None:
        self._hooks[:] = [h for h in self._hooks if h is not self._hook]  # by identity: == would compare tensors


class Tensor:
    """A multi-dimensional array with autograd, as ``paddle.Tensor``.

    >>> import oar
    >>> x = oar.to_tensor([[1.0, 2.0], [3.0, 4.0]], stop_gradient=False)
    >>> y = (x * x).sum()
    >>> y.backward()
    >>> x.grad.numpy().tolist()
    [[2.0, 4.0], [6.0, 8.0]]
    """

    __slots__ = (
        "_data", "_backend", "stop_gradient", "_grad", "_node", "_out_index", "_vc", "_hooks",
        "_name", "persistable", "_view", "__weakref__",
    )
    __array_priority__ = 100  # numpy defers to Tensor's reflected operators

    def __init__(self, data=None, dtype=None, place=None, stop_gradient: bool = True):
        src = to_tensor(np.zeros([0], np.float32) if data is None else data, dtype, place, stop_gradient)
        self._init_from(src._data, src._backend, stop_gradient)

    def _init_from(self, data, backend, stop_gradient) -> None:
        self._data, self._backend, self.stop_gradient, self._out_index, self.persistable = data, backend, stop_gradient, 0, False
        self._grad = self._node = self._vc = self._hooks = self._name = self._view = None

    @staticmethod
    def _wrap(data, backend, stop_gradient, node, out_index, vc) -> Tensor:
        t = object.__new__(Tensor)
        t._data = data
        t._backend = backend
        t.stop_gradient = stop_gradient
        t._grad = None
        t._node = node
        t._out_index = out_index
        t._vc = vc
        t._hooks = None
        t._name = None
        t.persistable = False
        t._view = None
        return t

    # -- properties ---------------------------------------------------------------------------
    @property
    def shape(self) -> list[int]:
        if SHAPE_WATCHERS:
            return SHAPE_WATCHERS[-1](self, "shape")
        return list(self._data.shape)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    @property
    def size(self) -> int:
        if SHAPE_WATCHERS:
            return SHAPE_WATCHERS[-1](self, "size")
        return int(self._data.size)

    def numel(self) -> Tensor:
        """The number of elements as a 0-d int64 tensor (``x.size`` is the same as an int)."""
        return _from_numpy(np.asarray(self._data.size, np.int64), self._backend)

    ndimension = dim

    @property
    def dtype(self) -> _dt.DType:
        return _dt.NP_TO_DTYPE[self._data.dtype]

    @property
    def place(self) -> Place:
        return Place(self._backend)

    @property
    def name(self) -> str:
        if self._name is None:
            self._name = f"generated_tensor_{next(_name_counter)}"
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        self._name = value

    @property
    def grad(self) -> Tensor | None:
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None and list(value.shape) != self.shape:
            raise ArgumentError(f"grad: cannot set a gradient of shape {value.shape} on a tensor of shape {self.shape}")
        self._grad = value

    @property
    def is_leaf(self) -> bool:
        return self._node is None

    @property
    def inplace_version(self) -> int:
        return 0 if self._vc is None else self._vc[0]

    # -- conversion ---------------------------------------------------------------------------
    def numpy(self, copy: bool = True) -> np.ndarray:
        """The values as a new, writable numpy array, as Paddle's ``Tensor.numpy()``.

        ``copy=False`` is the zero-copy path: a read-only view of a cpu tensor's buffer. It shows
        later in-place changes of the tensor, and writing into it raises, since a write would
        change values that autograd saved without it knowing. A device tensor's values are
        copied to the host either way. ``np.asarray(t)`` gives the view (numpy's ``copy=None``:
        no copy unless needed), ``np.array(t)`` a copy, and ``np.asarray(t, copy=False)`` raises
        where only a copy can give the array asked for.

        >>> import oar
        >>> t = oar.to_tensor([1.0, 2.0])
        >>> a = t.numpy()
        >>> a[0] = 5.0  # a copy: the tensor keeps its values
        >>> t.tolist(), t.numpy(copy=False).flags.writeable
        ([1.0, 2.0], False)
        """
        a = self._values()
        if self._backend != "cpu":  # to_numpy made the host's own copy
            return a
        a = a.copy() if copy else a.view()
        a.setflags(write=copy)
        return a

    def _values(self) -> np.ndarray:
        """The values on the host for oar's own reads (``item``, ``tolist``, printing, copies):
        on cpu the buffer itself, so it must not be handed out."""
        if DATA_WATCHERS:
            DATA_WATCHERS[-1](self)
        return self._data if self._backend == "cpu" else BACKENDS.get(self._backend).to_numpy(self._data)

    def __array__(self, dtype=None, copy=None):
        a = self.numpy(copy=False)
        cast = dtype is not None and a.dtype != np.dtype(dtype)
        if copy is False and (cast or self._backend != "cpu"):  # numpy's rule: copy=False never copies
            raise ValueError(f"numpy: a {self.dtype.name} tensor on {self.place} cannot be read as a "
                             f"{np.dtype(dtype or a.dtype)} array without a copy (copy=False)")
        return a.astype(dtype) if cast else a.copy() if copy else a

    def item(self, *index):
        a = self._values()
        if not index and a.size != 1:
            raise ArgumentError(f"item: only a tensor with one element converts to a Python scalar, this one has shape {self.shape}")
        return a.item(*index)

    def tolist(self):
        return self._values().tolist()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if not self.dtype.is_integer:
            raise DTypeError(f"only integer tensors can be used as an index, this one is {self.dtype.name}")
        return int(self.item())

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise ArgumentError(
                f"the truth value of a tensor with {self._data.size} elements (shape {self.shape}) is "
                f"ambiguous; use .any() or .all()"
            )
        return bool(self.item())

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        indent = len("Tensor(")
        return (
            f"Tensor(shape={self.shape}, dtype={self.dtype.name}, place={self.place}, "
            f"stop_gradient={self.stop_gradient},\n{' ' * indent}{format_values(self._values(), indent)})"
        )

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0:
            return format(self.item(), spec)
        return format(repr(self), spec)

    def __deepcopy__(self, memo):
        if self._node is not None:
            raise GradientError(
                "deepcopy: only leaf tensors can be deep-copied (this one was computed by op "
                f"{self._node.op.name!r} and holds its graph); deep-copy x.detach() instead"
            )
        t = _from_numpy(self.numpy(), self._backend)
        t.stop_gradient = self.stop_gradient
        t.persistable = self.persistable
        if self._name is not None:
            t._name = f"{self._name}_deepcopy"
        if self._grad is not None:
            t._grad = _from_numpy(self._grad.numpy(), self._backend)
        memo[id(self)] = t
        return t

    # -- autograd (``backward`` is bound by oar._engine.autograd) ----------------------------------
    def clear_gradient(self, set_to_zero: bool = True) -> None:
        """Zero the gradient in place (Paddle's default), or drop it with ``set_to_zero=False``."""
        grad = self._grad
        if not set_to_zero or grad is None:
            self._grad = None
        elif type(grad._data) is np.ndarray and grad._data.flags.writeable:
            grad._data[...] = 0
        else:  # a read-only or device gradient: replace it by zeros
            zeros = BACKENDS.get(grad._backend).zeros(tuple(grad._data.shape), grad._data.dtype)
            self._grad = Tensor._wrap(zeros, grad._backend, True, None, 0, None)

    clear_grad = clear_gradient  # Paddle's other name for it

    def gradient(self) -> np.ndarray | None:
        """The gradient as a numpy array, or None (Paddle's ``Tensor.gradient()``)."""
        return None if self._grad is None else self._grad.numpy()

    def detach(self) -> Tensor:
        """The same values, cut from the tape (shares memory, as Paddle's ``detach``): an in-place
        op on either changes both.

        >>> import oar
        >>> x = oar.to_tensor([1.0, 2.0])
        >>> _ = x.detach().add_(1.0)
        >>> x.tolist()
        [2.0, 3.0]
        """
        if self._vc is None:  # share one version counter, so in-place changes through either show
            self._vc = [0]
        t = Tensor._wrap(self._data, self._backend, True, None, 0, self._vc)
        view = self._view
        if view is not None and view.base is not None:  # a view: t views the same memory
            if any(op.view_inverse is None for op, _, _ in view.chain):
                return t  # of a read-only view (a broadcast, a gradient): a value, its own buffer on a write
            t._view = View(view.base, view.chain, detached=True)
        elif view is not None or (type(self._data) is np.ndarray and self._data.base is not None):
            if view is None:  # a borrowed buffer: both write into it from now on
                self._view = View(None, ())
            t._view = View(self, (), detached=True)
        else:
            return t
        _remember(t._view.base._view, t)  # so that a new buffer for the base unties it (_set_buffer)
        return t

    def detach_(self) -> Tensor:
        self._node = None
        self.stop_gradient = True
        return self

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; a return value replaces it.

        As in Paddle, the hook returns None (the gradient stays) or a tensor of the gradient's
        shape and dtype; anything else is an error naming this tensor. Returns a handle whose
        ``remove()`` unregisters the hook.

        >>> import oar
        >>> x = oar.to_tensor([1.0, 2.0], stop_gradient=False)
        >>> handle = x.register_hook(lambda g: g * 10.0)
        >>> (x * x).sum().backward()
        >>> x.grad.tolist()
        [20.0, 40.0]
        """
        if self.stop_gradient:
            raise GradientError("register_hook: cannot register a hook on a tensor with stop_gradient=True")
        if self._node is None:
            if self._hooks is None:
                self._hooks = []
            hooks = self._hooks
        else:
            node = self._node
            if node.hooks is None:
                node.hooks = {}
            hooks = node.hooks.setdefault(self._out_index, [])
        hooks.append((hook, weakref.ref(self)))  # a weakref: the node must not keep its outputs alive
        return _HookHandle(hooks, hooks[-1])

    def retain_grads(self) -> None:
        """Keep the gradient of this non-leaf tensor in ``.grad`` after backward."""
        if self._node is None:
            return
        node = self._node
        if node.retained is None:
            node.retained = {}
        node.retained[self._out_index] = weakref.ref(self)

    def _bump_version(self) -> None:
        if self._vc is None:
            self._vc = [0]
        self._vc[0] += 1

    def _set_buffer(self, data) -> None:
        """Hold ``data``, a new buffer, instead of the current one (an in-place change that cannot
        write into the old buffer). Tensors that alias the old buffer (views, ``detach()``) keep
        their values, so this tensor stops sharing their version counter, and neither is a view of
        the other any more; it keeps its version number, which the caller then bumps."""
        self._data = data
        if self._vc is not None:
            self._vc = [self._vc[0]]
        view = self._view
        if view is not None:
            self._view = None
            for v in view.live_views(self):
                v._view = None  # the old memory's own: an in-place op gives it a buffer of its own

    def set_value(self, value) -> Tensor:
        """Copy ``value`` (a numpy array or Tensor of the same shape and dtype) into this tensor,
        in place, as Paddle's ``Tensor.set_value``: the object, its gradient and the optimizer's
        state for it stay (a view writes into its base). Its version changes, so a backward that
        saved it raises.

        >>> import numpy as np, oar
        >>> w = oar.zeros([2], dtype="float32")
        >>> w.set_value(np.array([1.0, 2.0], np.float32)).tolist()
        [1.0, 2.0]
        """
        if isinstance(value, Tensor):
            array = value._values()
        elif isinstance(value, np.ndarray):
            array = value
        else:
            raise ArgumentError(f"set_value: expected a numpy array or a Tensor, got {type(value).__name__}")
        if tuple(array.shape) != tuple(self._data.shape):
            raise ShapeError(f"set_value: the value has shape {list(array.shape)} but the tensor has shape "
                             f"{self.shape}; shapes must match")
        if array.dtype != self._data.dtype:
            got = _dt.NP_TO_DTYPE.get(array.dtype, array.dtype)
            raise DTypeError(f"set_value: the value has dtype {getattr(got, 'name', got)} but the tensor is "
                             f"{self.dtype.name}; cast the value first (e.g. value.astype('{self.dtype.name}'))")
        data = self._data
        if type(data) is np.ndarray and data.flags.writeable and (data.base is None or self._view is not None):
            np.copyto(data, array)  # a view writes into its base's memory
        elif self._backend == "cpu":  # a read-only or borrowed buffer: the tensor gets its own
            self._set_buffer(np.array(array))
        else:
            self._set_buffer(BACKENDS.get(self._backend).from_numpy(np.array(array)))
        self._bump_version()
        return self


def _from_numpy(array: np.ndarray, backend: str) -> Tensor:
    """A new constant tensor of ``array`` on ``backend``."""
    if backend != "cpu":
        array = BACKENDS.get(backend).from_numpy(array)
    return Tensor._wrap(array, backend, True, None, 0, None)


_profiling.TENSOR_TYPES = (Tensor,)


def to_tensor(data, dtype=None, place=None, stop_gradient: bool = True) -> Tensor:
    """Make a tensor from a Python scalar, nested list, numpy array or tensor (always a copy).

    As in Paddle: Python floats (and lists of them) become the default dtype (float32), Python
    ints int64, bools bool; numpy arrays and numpy scalars keep their dtype.

    >>> import oar, numpy as np
    >>> oar.to_tensor([1, 2, 3]).dtype
    oar.int64
    >>> oar.to_tensor(1.5).shape
    []
    >>> oar.to_tensor(np.zeros(2)).dtype
    oar.float64
    """
    backend = backend_for(place, "to_tensor")
    target = None
    if dtype is not None:
        try:
            target = _dt.get_dtype(dtype)
        except DTypeError as exc:
            raise DTypeError(f"to_tensor: argument 'dtype': {exc}") from None
    if isinstance(data, Tensor):
        array = data._values()
        array = array.astype(target.np if target is not None else array.dtype)  # astype copies
    else:
        if isinstance(data, (str, bytes)):
            raise ArgumentError(f"to_tensor: argument 'data' is a {type(data).__name__} ({data!r}); give numbers, a list, a numpy array or a Tensor")
        keeps_dtype = isinstance(data, (np.ndarray, np.generic))
        try:
            array = np.array(data, dtype=target.np if target is not None else None)
        except (ValueError, TypeError) as exc:
            raise ArgumentError(
                f"to_tensor: cannot make a tensor from argument 'data' ({type(data).__name__}): {exc}"
            ) from None
        if array.dtype.kind in "OUSV" and array.dtype not in _dt.NP_TO_DTYPE:
            raise ArgumentError(
                f"to_tensor: argument 'data' holds {array.dtype} values ({type(data).__name__}); give "
                f"numbers (ragged nested lists are not tensors either)"
            )
        if target is None and not keeps_dtype:
            if array.dtype.kind == "f":
                array = array.astype(_dt.default_float().np)
            elif array.dtype.kind == "c":  # Python complex numbers: the complex of the default float
                array = array.astype(_dt.complex_of(_dt.default_float()).np)
            elif array.dtype.kind in "iu":
                array = array.astype(np.int64)
        if array.dtype not in _dt.NP_TO_DTYPE:
            supported = [d.name for d in _dt.ALL_DTYPES]
            raise DTypeError(f"to_tensor: argument 'data' has dtype {array.dtype}, which oar does not support; supported: {supported}")
    if backend != "cpu":
        array = BACKENDS.get(backend).from_numpy(array)
    elif _profiling.TENSOR_MEMORY.on:  # oar.device's memory statistics count what is made outside ops too
        _profiling.TENSOR_MEMORY.track(array)
    return Tensor._wrap(array, backend, stop_gradient, None, 0, None)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor that shares memory with ``ndarray``, as Paddle's ``paddle.from_numpy``: writes
    into either are seen by the other, and no copy is made (``to_tensor`` always copies). The
    tensor keeps the array's dtype and needs no gradient; a read-only array gives a tensor that
    in-place ops do not write into.

    >>> import numpy as np, oar
    >>> a = np.zeros(3, np.float32)
    >>> t = oar.from_numpy(a)
    >>> _ = t.add_(oar.ones([3]))
    >>> a.tolist()
    [1.0, 1.0, 1.0]
    """
    if not isinstance(ndarray, np.ndarray):
        raise ArgumentError(f"from_numpy: expected a numpy.ndarray, got {type(ndarray).__name__}")
    if ndarray.dtype not in _dt.NP_TO_DTYPE:
        supported = [d.name for d in _dt.ALL_DTYPES]
        raise DTypeError(f"from_numpy: the array has dtype {ndarray.dtype}, which oar does not support; "
                         f"supported: {supported}")
    t = Tensor._wrap(ndarray, "cpu", True, None, 0, None)
    if ndarray.base is not None:
        t._view = View(None, ())  # a borrowed buffer, as detach() marks one: in-place writes go into it
    return t


# ------------------------------------------------------------------------------------------
# printing, in Paddle's format
# ------------------------------------------------------------------------------------------
class _PrintOptions:
    precision = 8
    threshold = 1000
    edgeitems = 3
    sci_mode = False


PRINT_OPTIONS = _PrintOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, sci_mode=None, linewidth=None) -> None:
    """How tensors print, as ``paddle.set_printoptions``: digits after the point, how many
    elements before the values are summarised, how many at each edge of a summary, and
    scientific notation.

    >>> import oar
    >>> oar.set_printoptions(precision=2)
    >>> print(oar.to_tensor([0.125, 1.0]))
    Tensor(shape=[2], dtype=float32, place=Place(cpu), stop_gradient=True,
           [0.12, 1.  ])
    >>> oar.set_printoptions(precision=8)
    """
    for name, value, kind in (
        ("precision", precision, int), ("threshold", threshold, int), ("edgeitems", edgeitems, int),
        ("sci_mode", sci_mode, bool),
    ):
        if value is None:
            continue
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ArgumentError(f"set_printoptions: {name} must be {kind.__name__}, got {value!r}")
        setattr(PRINT_OPTIONS, name, value)


def _format_item(value, width: int = 0, signed: bool = False) -> str:
    if isinstance(value, complex):  # Paddle: (1.50000000-2.00000000j), every digit of the precision
        p = PRINT_OPTIONS.precision
        kind = "e" if PRINT_OPTIONS.sci_mode else "f"
        text = f"({value.real:.{p}{kind}}{value.imag:+.{p}{kind}}j)"
    elif isinstance(value, float):
        if PRINT_OPTIONS.sci_mode:
            text = f"{value:.{PRINT_OPTIONS.precision}e}"
        elif np.ceil(value) == value:
            text = f"{value:.0f}."
        else:
            text = f"{value:.{PRINT_OPTIONS.precision}f}"
    else:
        text = str(value)
    if width <= len(text):
        return text
    if signed and not text.startswith(("-", "(-")):
        return " " + text.ljust(width - 1)
    return text.ljust(width)


def _edges(a: np.ndarray, edge: int) -> np.ndarray:
    """The elements a summary shows: ``edge`` at each end of every dimension."""
    for axis in range(a.ndim):
        if a.shape[axis] > 2 * edge:
            a = np.concatenate([a.take(range(edge), axis), a.take(range(-edge, 0), axis)], axis)
    return a


def _format_nested(a: np.ndarray, summarize: bool, indent: int, width: int, signed: bool) -> str:
    edge = PRINT_OPTIONS.edgeitems
    if a.ndim == 0:
        return _format_item(a.item(), width, signed)
    rows = range(a.shape[0])
    if summarize and a.shape[0] > 2 * edge:
        rows = [*range(edge), None, *range(a.shape[0] - edge, a.shape[0])]
    if a.ndim == 1:
        parts = ["..." if i is None else _format_item(a[i].item(), width, signed) for i in rows]
        return "[" + ", ".join(parts) + "]"
    parts = ["..." if i is None else _format_nested(a[i], summarize, indent + 1, width, signed) for i in rows]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def format_values(a: np.ndarray, indent: int = 0) -> str:
    """The values part of a tensor's repr, as Paddle prints it (``[1.50000000, 2.        ]``)."""
    if a.dtype.kind == "f" or a.dtype == _dt.bfloat16.np:
        a = a.astype(np.float64) if a.dtype == np.float64 else a.astype(np.float32)
    summarize = a.ndim > 0 and a.size > PRINT_OPTIONS.threshold
    shown = _edges(a, PRINT_OPTIONS.edgeitems) if summarize else a
    width, signed = 0, False
    for value in shown.reshape(-1).tolist():
        text = _format_item(value)
        width = max(width, len(text))
        signed = signed or (text.startswith("(-") if isinstance(value, complex) else value < 0)
    return _format_nested(a, summarize, indent, width, signed)
