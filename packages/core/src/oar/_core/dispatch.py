"""Binding an op call: the mode stack and the eager executor.

``dispatch(op, inputs, attrs)`` hands the call to the mode on top of the stack. The bottom mode
is ``EagerMode``: it runs the kernel now and records a tape node when a gradient is needed.
Tracing (to_static) and wrappers such as autocast push their own mode, which may rewrite the
call and delegate to the mode below (``Mode.apply_below``).

The eager path is the hottest code in oar: it does a cached dict lookup for the kernel, calls
it, and does no autograd work unless an input needs a gradient. Shape and dtype validation by
the op's meta function runs only when a kernel raises, to turn a numpy error into an error in the
user's terms.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from oar._core import dtypes as _dt
from oar._core.op import KernelRegistry, Op, OpRegistry, TensorMeta, resolve_kernel
from oar._core.registry import Registry
from oar.errors import DeviceError, KernelError, OarError

# The registries every plugin fills; ``oar.plugins.registries()`` hands them out.
KERNELS = KernelRegistry()
OPS = OpRegistry(KERNELS)
KERNELS._ops = OPS
BACKENDS = Registry("backend")

grad_enabled = True  # read on every op call: a module global is the fastest lookup


class Backend:
    """Storage and basic allocation of one device kind; kernels are registered separately.

    Subclass this in a plugin and register it with ``oar_register_backends``.
    """

    name = "cpu"

    def is_available(self) -> bool:
        return True

    def device_count(self) -> int:
        return 1

    def from_numpy(self, array: np.ndarray):
        return array

    def to_numpy(self, data) -> np.ndarray:
        return data

    def zeros(self, shape, np_dtype):
        return np.zeros(shape, np_dtype)

    def full(self, shape, value, np_dtype):
        return np.full(shape, value, np_dtype)


class CPUBackend(Backend):
    """The numpy backend of core."""

    name = "cpu"


# glibc's malloc returns freed blocks of more than 128 KiB to the kernel, and the top of its heap
# once more than twice that is free; a training step allocates and frees its activations (MiBs
# each) every step, so every step page-faults them in again (a third of LeNet's step measured so,
# 14.7 -> 11.4 ms). Keeping freed memory in the heap makes the next step reuse it, as Paddle's
# CPU allocator and torch's caching allocators do. Up to KEEP_FREED_BYTES of free heap is kept.
MMAP_THRESHOLD_BYTES = 32 << 20  # glibc's largest allowed; bigger blocks are still mapped
KEEP_FREED_BYTES = 512 << 20
_MALLOPT_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "GLIBC_TUNABLES")


def keep_freed_memory(environ=None) -> bool:
    """Tune glibc's malloc to keep freed memory for reuse (see above); True where it did.

    Nothing changes where the user tuned malloc through the environment, set
    ``OAR_KEEP_FREED_MEMORY=0``, or the C library is not glibc.
    """
    import os
    import sys

    environ = os.environ if environ is None else environ
    if environ.get("OAR_KEEP_FREED_MEMORY", "1") == "0" or any(k in environ for k in _MALLOPT_SETTINGS):
        return False
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
        libc.gnu_get_libc_version  # noqa: B018 - glibc only: musl has no M_* of these numbers
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3  # from glibc's malloc.h
    return bool(mallopt(m_mmap_threshold, MMAP_THRESHOLD_BYTES)) and bool(mallopt(m_trim_threshold, KEEP_FREED_BYTES))


keep_freed_memory()


class Mode:
    """A way of binding op calls; modes stack (``with mode: ...``)."""

    def apply(self, op: Op, inputs: tuple, attrs: dict):
        raise NotImplementedError

    def apply_below(self, op: Op, inputs: tuple, attrs: dict):
        """Delegate to the mode under this one on the stack."""
        index = _mode_stack.index(self)
        return _mode_stack[index - 1].apply(op, inputs, attrs)

    def rebind(self, target, result) -> None:
        """``target`` was just overwritten in place with ``result``'s value (``apply_inplace``);
        a mode that tracks tensors (to_static's tracer) follows it. Most modes ignore it."""

    def __enter__(self):
        _mode_stack.append(self)
        return self

    def __exit__(self, *exc):
        _mode_stack.remove(self)
        return False


def _describe(inputs) -> str:
    return ", ".join(f"{_dt.NP_TO_DTYPE.get(t._data.dtype, t._data.dtype)}{list(t._data.shape)}" for t in inputs)


def explain_failure(op: Op, inputs: tuple, attrs: dict, exc: Exception) -> Exception:
    """Turn a kernel's exception into an oar error: the op's meta says what is wrong."""
    if isinstance(exc, OarError):
        return exc
    metas = [TensorMeta(tuple(t._data.shape), t.dtype) for t in inputs]
    try:
        op.meta(*metas, **attrs)
    except OarError as err:
        return err
    except Exception:  # a meta that itself fails explains nothing; report the kernel error
        pass
    shown = {k: v for k, v in attrs.items()}
    return KernelError(f"op {op.name!r} failed on inputs ({_describe(inputs)}) with attributes {shown}: "
                       f"{type(exc).__name__}: {exc}")


def _promote_inputs(op: Op, inputs: tuple) -> tuple:
    target = None
    for i, t in enumerate(inputs):
        if i in op.nondiff_inputs:
            continue
        d = _dt.NP_TO_DTYPE[t._data.dtype]
        target = d if target is None else _dt.PROMOTION_TABLE[target, d]
    from oar._ops.elementwise import cast

    return tuple(
        t if i in op.nondiff_inputs or t._data.dtype == target.np else cast(t, target)
        for i, t in enumerate(inputs)
    )


class EagerMode(Mode):
    """Run kernels now; record a tape node when some input needs a gradient."""

    def apply(self, op: Op, inputs: tuple, attrs: dict):
        # The hottest calls (x + y, x.exp(), x.sum(), a linear layer): one to three inputs of one
        # device and dtype, a kernel found before. No promotion or device loops: x + y on [1]
        # 1.35 -> 1.06 us here.
        n = len(inputs)
        kernel = None
        if n == 1:
            a = inputs[0]
            backend = a._backend
            kernel = op._kernels.get((backend, a._data.dtype))
            needs_grad = not a.stop_gradient
        elif n == 2:
            a, b = inputs
            backend = a._backend
            if b._backend == backend and a._data.dtype == b._data.dtype:
                kernel = op._kernels.get((backend, a._data.dtype))
                needs_grad = not (a.stop_gradient and b.stop_gradient)
        elif n == 3:
            a, b, c = inputs
            backend, dtype = a._backend, a._data.dtype
            if b._backend == backend == c._backend and b._data.dtype == dtype == c._data.dtype:
                kernel = op._kernels.get((backend, dtype))
                needs_grad = not (a.stop_gradient and b.stop_gradient and c.stop_gradient)
        if kernel is not None:
            try:
                if n == 1:
                    out = kernel(a._data, **attrs)
                elif n == 2:
                    out = kernel(a._data, b._data, **attrs)
                else:
                    out = kernel(a._data, b._data, c._data, **attrs)
            except Exception as exc:
                raise explain_failure(op, inputs, attrs, exc) from exc
            if type(out) is np.ndarray and not op.view and not (needs_grad and grad_enabled and op.grad is not None):
                return _wrap(out, backend, True, None, 0, None)
            return self._finish(op, inputs, attrs, out, backend)
        if inputs:
            first = inputs[0]
            backend = first._backend
            if op.promote:
                dtype0 = first._data.dtype
                for t in inputs:
                    if t._data.dtype != dtype0:
                        inputs = _promote_inputs(op, inputs)
                        break
            for t in inputs:
                if t._backend != backend:
                    raise DeviceError(
                        f"op {op.name!r}: inputs are on different devices ({_places(inputs)}); "
                        f"move them to one device with .to(...) / .cpu() first"
                    )
            key = (backend, inputs[0]._data.dtype)
        else:  # creation ops: the device and dtype come from the attributes
            backend = attrs.get("place") or current_device()
            key = (backend, _dt.get_dtype(attrs["dtype"]).np)
        kernel = op._kernels.get(key)
        if kernel is None:
            kernel = resolve_kernel(op, key[0], key[1])
        try:
            if len(inputs) == 2:  # the common binary case without building a list
                out = kernel(inputs[0]._data, inputs[1]._data, **attrs)
            else:
                out = kernel(*[t._data for t in inputs], **attrs)
        except Exception as exc:
            raise explain_failure(op, inputs, attrs, exc) from exc
        return self._finish(op, inputs, attrs, out, backend)

    @staticmethod
    def _finish(op: Op, inputs: tuple, attrs: dict, out, backend: str):
        """The kernel's result as tensors, with a tape node when some input needs a gradient."""
        record = grad_enabled and op.grad is not None
        if record:
            for t in inputs:
                if not t.stop_gradient:
                    break
            else:
                record = False
        if type(out) is tuple:
            out = tuple([o if type(o) is np.ndarray else np.asarray(o) for o in out])
            if not record:
                result = tuple([_wrap(o, backend, True, None, 0, None) for o in out])
            else:
                result = _record(op, attrs, inputs, out, backend)
            if op.view:
                _share_versions(inputs, result)
            return result
        if type(out) is not np.ndarray and backend == "cpu":
            out = np.asarray(out)
        if not record:
            result = _wrap(out, backend, True, None, 0, None)
        else:
            result = _record(op, attrs, inputs, (out,), backend)[0]
        if op.view:
            _share_versions(inputs, (result,))
        return result


def _share_versions(inputs, outputs) -> None:
    """Give each output that aliases an input's memory that input's version counter.

    An in-place op on a tensor that owns its buffer writes into it, so it changes every view of
    that buffer too; with one counter, a backward that saved the view (or the base) sees the
    change and raises instead of computing a wrong gradient (``detach()`` shares it the same
    way). Only ops with the ``view`` trait can alias, so other ops pay nothing for this.

    A recorded output keeps its node's own counter in the node: view ops' gradient rules read
    their inputs and shapes, never their outputs.
    """
    for o in outputs:
        data = o._data
        for t in inputs:
            if data is t._data or (type(data) is np.ndarray and type(t._data) is np.ndarray
                                   and np.may_share_memory(data, t._data)):
                vc = t._vc
                if vc is None:
                    vc = t._vc = [0]
                o._vc = vc
                break


def _record(op, attrs, inputs, outs, backend):
    from oar._core.autograd import Node

    if len(outs) == 1:  # the common case, without the generator below
        out, vc = outs[0], [0]
        node = Node(op, attrs, inputs, outs, (vc,), backend)
        return (_wrap(out, backend, out.dtype.kind not in "fc", node, 0, vc),)
    vcs = tuple([0] for _ in outs)
    node = Node(op, attrs, inputs, outs, vcs, backend)
    return tuple(
        _wrap(o, backend, o.dtype.kind not in "fc", node, i, vc)
        for i, (o, vc) in enumerate(zip(outs, vcs))
    )


def _wrap(data, backend, stop_gradient, node, out_index, vc):
    """Replaced by ``Tensor._wrap`` when ``oar._core.tensor_methods`` binds the Tensor class."""
    from oar._core.tensor import Tensor

    return Tensor._wrap(data, backend, stop_gradient, node, out_index, vc)


def bind_tensor_class(tensor_class) -> None:
    global _wrap
    _wrap = tensor_class._wrap


def _places(inputs) -> str:
    return ", ".join(f"input {i} on {t._backend}" for i, t in enumerate(inputs))


_mode_stack: list[Mode] = [EagerMode()]


def dispatch(op: Op, inputs: tuple, attrs: dict) -> Any:
    """Bind one call of ``op`` in the active mode."""
    return _mode_stack[-1].apply(op, inputs, attrs)


def current_mode() -> Mode:
    return _mode_stack[-1]


# ------------------------------------------------------------------------------------------
# devices
# ------------------------------------------------------------------------------------------
_current_device = ["cpu"]


def current_device() -> str:
    return _current_device[0]


def set_device(device: str) -> str:
    """Select the device new tensors go to: ``'cpu'`` or ``'gpu'``/``'gpu:0'`` (needs oar-triton).

    >>> import oar
    >>> oar.set_device("cpu")
    'cpu'
    """
    name = str(device).split(":")[0].lower()
    if name == "cuda":
        name = "gpu"
    if name not in BACKENDS:
        known = ", ".join(BACKENDS)
        hint = " Install the oar-triton plugin (pip install oar-triton) for GPU support." if name == "gpu" else ""
        raise DeviceError(f"set_device: no backend {name!r} is installed (installed: {known}).{hint}")
    backend = BACKENDS.get(name)
    if not backend.is_available():
        raise DeviceError(f"set_device: backend {name!r} is installed but no {name} device is available here")
    _current_device[0] = name
    return str(device)


def get_device() -> str:
    """The current device as a string, e.g. ``'cpu'``."""
    return _current_device[0]
