"""``oar.Tensor``: an n-dimensional array on a device, with Paddle's semantics and autograd.

A tensor holds its backend's array (a numpy array on ``cpu``), ``stop_gradient`` (True for user
tensors, False for parameters, as in Paddle), and -- when an op that needs a gradient made it --
the tape node that made it. Math methods (``x.exp()``, ``x + y``) are bound in
``oar._core.tensor_methods`` to the same ops as ``oar.exp`` and ``oar.add``.
"""

from __future__ import annotations

import itertools

import numpy as np

from oar._core import dtypes as _dt
from oar.errors import ArgumentError, DTypeError, GradientError

_name_counter = itertools.count()


class Place:
    """Where a tensor lives: ``Place(cpu)``; ``oar.CPUPlace()`` and ``oar.CUDAPlace(0)`` make one."""

    __slots__ = ("backend", "index")

    def __init__(self, backend: str = "cpu", index: int = 0):
        self.backend = backend
        self.index = index

    def is_cpu_place(self) -> bool:
        return self.backend == "cpu"

    def is_gpu_place(self) -> bool:
        return self.backend == "gpu"

    def get_device_id(self) -> int:
        return self.index

    def __eq__(self, other) -> bool:
        return isinstance(other, Place) and (self.backend, self.index) == (other.backend, other.index)

    def __hash__(self) -> int:
        return hash((self.backend, self.index))

    def __repr__(self) -> str:
        return "Place(cpu)" if self.backend == "cpu" else f"Place({self.backend}:{self.index})"


def CPUPlace() -> Place:  # noqa: N802 - Paddle's name
    return Place("cpu")


def CUDAPlace(index: int = 0) -> Place:  # noqa: N802 - Paddle's name
    return Place("gpu", index)


def _place_backend(place) -> str | None:
    if place is None:
        return None
    if isinstance(place, Place):
        return place.backend
    name = str(place).split(":")[0].lower()
    return "gpu" if name == "cuda" else name


class _HookHandle:
    __slots__ = ("_hooks", "_hook")

    def __init__(self, hooks: list, hook):
        self._hooks = hooks
        self._hook = hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


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
        "_name", "persistable", "__weakref__",
    )
    __array_priority__ = 100  # numpy defers to Tensor's reflected operators

    def __init__(self, data=None, dtype=None, place=None, stop_gradient: bool = True):
        src = to_tensor(np.zeros([0], np.float32) if data is None else data, dtype, place, stop_gradient)
        self._init_from(src._data, src._backend, stop_gradient)

    def _init_from(self, data, backend, stop_gradient) -> None:
        self._data = data
        self._backend = backend
        self.stop_gradient = stop_gradient
        self._grad = None
        self._node = None
        self._out_index = 0
        self._vc = None
        self._hooks = None
        self._name = None
        self.persistable = False

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
        return t

    # -- properties ---------------------------------------------------------------------------
    @property
    def shape(self) -> list[int]:
        return list(self._data.shape)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    @property
    def size(self) -> int:
        return int(self._data.size)

    def numel(self) -> int:
        return int(self._data.size)

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
    def numpy(self) -> np.ndarray:
        """The values as a numpy array (a copy for non-cpu devices)."""
        if self._backend == "cpu":
            return self._data
        from oar._core.dispatch import BACKENDS

        return BACKENDS.get(self._backend).to_numpy(self._data)

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def item(self, *index):
        a = self.numpy()
        if not index and a.size != 1:
            raise ArgumentError(f"item: only a tensor with one element converts to a Python scalar, this one has shape {self.shape}")
        return a.item(*index)

    def tolist(self):
        return self.numpy().tolist()

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

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        for i in range(self._data.shape[0]):
            yield self[i]

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        body = np.array2string(self.numpy(), separator=", ", prefix="       ")
        grad = f", stop_gradient={self.stop_gradient}"
        return f"Tensor(shape={self.shape}, dtype={self.dtype.name}, place={self.place}{grad},\n       {body})"

    __str__ = __repr__

    def __deepcopy__(self, memo):
        t = Tensor._wrap(self._data.copy(), self._backend, self.stop_gradient, None, 0, None)
        t.persistable = self.persistable
        memo[id(self)] = t
        return t

    # -- autograd -----------------------------------------------------------------------------
    def backward(self, grad_tensor: Tensor | None = None, retain_graph: bool = False) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad`` (a scalar loss needs no grad_tensor)."""
        from oar._core.autograd import backward

        backward([self], None if grad_tensor is None else [grad_tensor], retain_graph=retain_graph)

    def clear_grad(self, set_to_zero: bool = False) -> None:
        """Drop the gradient (or zero it in place with ``set_to_zero=True``)."""
        if set_to_zero and self._grad is not None:
            self._grad._data[...] = 0
        else:
            self._grad = None

    clear_gradient = clear_grad

    def detach(self) -> Tensor:
        """The same values, cut from the tape (shares memory, as Paddle's ``detach``)."""
        return Tensor._wrap(self._data, self._backend, True, None, 0, self._vc)

    def detach_(self) -> Tensor:
        self._node = None
        self.stop_gradient = True
        return self

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; a return value replaces it.

        Returns a handle whose ``remove()`` unregisters the hook.
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
        hooks.append(hook)
        return _HookHandle(hooks, hook)

    def retain_grads(self) -> None:
        """Keep the gradient of this non-leaf tensor in ``.grad`` after backward."""
        import weakref

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

    # -- devices ------------------------------------------------------------------------------
    def cpu(self) -> Tensor:
        return self._to_backend("cpu")

    def cuda(self, device_id=None, blocking=True) -> Tensor:
        return self._to_backend("gpu")

    def _to_backend(self, backend: str) -> Tensor:
        if backend == self._backend:
            return self
        from oar._ops.elementwise import to_device

        return to_device(self, backend)

    def to(self, *args, **kwargs) -> Tensor:
        """``x.to('cpu')``, ``x.to('float64')``, ``x.to(device='cpu', dtype='float32')``."""
        device = kwargs.pop("device", None)
        dtype = kwargs.pop("dtype", None)
        kwargs.pop("blocking", None)
        if kwargs:
            raise ArgumentError(f"Tensor.to: unexpected arguments {sorted(kwargs)}")
        for a in args:
            if isinstance(a, (Place,)) or (isinstance(a, str) and _place_backend(a) in ("cpu", "gpu")):
                device = a
            else:
                dtype = a
        out = self
        if device is not None:
            out = out._to_backend(_place_backend(device))
        if dtype is not None:
            out = out.astype(dtype)
        return out


def to_tensor(data, dtype=None, place=None, stop_gradient: bool = True) -> Tensor:
    """Make a tensor from a Python scalar, nested list, numpy array or tensor (always a copy).

    Python floats become the default dtype (float32), ints int64, bools bool, as in Paddle.

    >>> import oar
    >>> oar.to_tensor([1, 2, 3]).dtype
    oar.int64
    >>> oar.to_tensor(1.5).shape
    []
    """
    from oar._core.dispatch import BACKENDS, current_device

    backend = _place_backend(place) or current_device()
    if isinstance(data, Tensor):
        array = data.numpy().copy()
        if dtype is not None:
            array = array.astype(_dt.get_dtype(dtype).np)
    else:
        target = _dt.get_dtype(dtype) if dtype is not None else None
        try:
            array = np.array(data, dtype=target.np if target is not None else None)
        except (ValueError, TypeError) as exc:
            raise ArgumentError(f"to_tensor: cannot make a tensor from {type(data).__name__}: {exc}") from None
        if target is None:
            if array.dtype.kind == "f":
                array = array.astype(_dt.default_float().np if not isinstance(data, np.ndarray) else array.dtype)
            elif array.dtype.kind in "iu" and not isinstance(data, np.ndarray):
                array = array.astype(np.int64)
            elif array.dtype.kind in "OUS":
                raise ArgumentError(f"to_tensor: cannot make a tensor of {array.dtype} data; give numbers")
            if array.dtype not in _dt.NP_TO_DTYPE:
                raise DTypeError(f"to_tensor: unsupported dtype {array.dtype}")
    if backend != "cpu":
        array = BACKENDS.get(backend).from_numpy(array)
    return Tensor._wrap(array, backend, stop_gradient, None, 0, None)
