"""Eager execution, the bottom of the mode stack: kernel resolution, running, recording the tape.

The eager path is the hottest code in oar: it does a cached dict lookup for the kernel, calls
it, and does no autograd work unless an input needs a gradient. Shape and dtype validation by
the op's meta function runs only when a kernel raises, to turn a numpy error into an error in the
user's terms (``explain_failure``).

Ops that declare ``promote`` get inputs of one dtype by Paddle 3's rules (``promoted_dtype``:
floats promote, other mixes raise a DTypeError): the engine casts the others with core's ``cast``
op, looked up in the op registry, so the cast is recorded on the tape like any op and the engine
imports no op definition.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from oar._engine import dtypes as _dt
from oar._engine.device import current_device
from oar._engine.dispatch import Mode, _mode_stack, dispatch
from oar._engine.memory import allocation_error
from oar._engine.op import Op, TensorMeta
from oar._engine.registries import KERNELS, OPS
from oar._engine.tape import Node
from oar._engine.tensor import Tensor, register_view
from oar.errors import DeviceError, DTypeError, KernelError, OarError, RegistryError

grad_enabled = True  # read on every op call: a module global is the fastest lookup
_wrap = Tensor._wrap


def _cast_outputs(out, np_dtype):
    if isinstance(out, tuple):
        return tuple(o.astype(np_dtype) if o.dtype.kind == "f" else o for o in out)
    return out.astype(np_dtype) if out.dtype.kind == "f" else out


def resolve_kernel(op: Op, backend: str, np_dtype: np.dtype) -> Callable[..., Any]:
    """Find the kernel for (op, backend, dtype), wrapping it for dtypes it computes in another.

    Called on a cache miss only; the result is cached on the op.
    """
    if OPS.lookup(op.name) is None:  # imports a lazily registered op, registering its kernels
        raise RegistryError(
            f"op {op.name!r} is not registered: the package that defines it did not register it "
            f"through the 'oar' plugin entry points (is it installed with pip, and not blocked by "
            f"OAR_DISABLE_PLUGINS?)"
        )
    dtype = _dt.NP_TO_DTYPE.get(np_dtype)
    if dtype is None:
        raise DTypeError(f"op {op.name!r}: unsupported dtype {np_dtype}")
    entry = KERNELS.lookup(op.name, backend, dtype)
    if entry is not None:
        kernel = entry.fn
        if KERNELS.tuner is not None:  # autotune is on: an op with alternatives gets the tuner's kernel
            alternatives = KERNELS.alternatives(op.name, backend, dtype)
            if alternatives:
                kernel = KERNELS.tuner(op.name, backend, dtype, alternatives)
    elif op.float_only and (dtype.is_integer or dtype.is_bool):
        # Integer and bool inputs of float math (exp, sin, mean, ...) compute in the default float;
        # complex inputs need a complex kernel (a cast to a real dtype would drop the imaginary part).
        inner = resolve_kernel(op, backend, _dt.default_float().np)
        target = _dt.default_float().np

        def kernel(*arrays, **attrs):
            return inner(*(a.astype(target) for a in arrays), **attrs)
    elif dtype in (_dt.float16, _dt.bfloat16) and KERNELS.lookup(op.name, backend, _dt.float32):
        inner = KERNELS.lookup(op.name, backend, _dt.float32).fn

        def kernel(*arrays, **attrs):
            up = (a.astype(np.float32) if a.dtype == np_dtype else a for a in arrays)
            return _cast_outputs(inner(*up, **attrs), np_dtype)
    else:
        supported = sorted({d.name for e in KERNELS.candidates(op.name, backend) for d in (e.dtypes or _dt.ALL_DTYPES)})
        if not supported:
            backends = KERNELS.backends_of(op.name)
            raise DTypeError(
                f"op {op.name!r} has no kernel on backend {backend!r} for {dtype.name} (it has kernels on "
                f"{backends}); install the plugin that provides {backend!r} kernels, or move the tensors to a "
                f"device that has one (.cpu())"
            )
        raise DTypeError(f"op {op.name!r} does not support dtype {dtype.name}; supported: {supported}")
    op._kernels[(backend, np_dtype)] = kernel
    return kernel


def _describe(inputs) -> str:
    return ", ".join(f"{_dt.NP_TO_DTYPE.get(t._data.dtype, t._data.dtype)}{list(t._data.shape)}" for t in inputs)


def explain_failure(op: Op, inputs: tuple, attrs: dict, exc: Exception) -> Exception:
    """Turn a kernel's exception into an oar error: the op's meta says what is wrong."""
    if isinstance(exc, OarError):
        return exc
    metas = [TensorMeta(tuple(t._data.shape), t.dtype) for t in inputs]
    try:
        out = op.meta(*metas, **attrs)
    except OarError as err:
        return err
    except Exception:  # a meta that itself fails explains nothing; report the kernel error
        out = None
    shown = {k: v for k, v in attrs.items()}
    out = out if isinstance(out, TensorMeta) else TensorMeta(None, None)  # of several outputs: numpy's says which
    too_big = allocation_error(f"op {op.name!r}", exc, out.shape, out.dtype, f"; inputs ({_describe(inputs)}), attributes {shown}")
    if too_big is not None:
        return too_big
    return KernelError(f"op {op.name!r} failed on inputs ({_describe(inputs)}) with attributes {shown}: "
                       f"{type(exc).__name__}: {exc}")


def _promote_inputs(op: Op, inputs: tuple) -> tuple:
    operands = [t for i, t in enumerate(inputs) if i not in op.nondiff_inputs]
    names = [f"x[{i}]" for i in range(len(operands))] if "shape" in op.traits else None  # concat's list
    target = _dt.promoted_dtype(op.name, op.promote, [_dt.NP_TO_DTYPE[t._data.dtype] for t in operands],
                                [t._data.ndim for t in operands], names)
    cast = OPS.get("cast")
    return tuple(
        t if i in op.nondiff_inputs or t._data.dtype == target.np else dispatch(cast, (t,), {"dtype": target.name})
        for i, t in enumerate(inputs)
    )


class EagerMode(Mode):
    """Run kernels now; record a tape node when some input needs a gradient."""

    def apply(self, op: Op, inputs: tuple, attrs: dict):
        # The hottest calls (x + y, x.exp(), x.sum(), a linear layer): one to three inputs of one
        # device and dtype, a kernel found before, take this path without the promotion and
        # device loops below.
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
            if type(out) is np.ndarray and not (needs_grad and grad_enabled and op.grad is not None):
                result = _wrap(out, backend, True, None, 0, None)
                if op.aliases:
                    _share_versions(op, attrs, inputs, (result,))
                return result
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
            if backend == "cpu":  # numpy scalars become arrays; another backend's buffers stay as they are
                out = tuple([o if type(o) is np.ndarray else np.asarray(o) for o in out])
            if not record:
                result = tuple([_wrap(o, backend, True, None, 0, None) for o in out])
            else:
                result = _record(op, attrs, inputs, out, backend)
            if op.aliases:
                _share_versions(op, attrs, inputs, result)
            return result
        if type(out) is not np.ndarray and backend == "cpu" and "transfer" not in op.traits:
            out = np.asarray(out)  # a numpy scalar; a transfer's output is the target backend's buffer
        if not record:
            result = _wrap(out, backend, True, None, 0, None)
        else:
            result = _record(op, attrs, inputs, (out,), backend)[0]
        if op.aliases:
            _share_versions(op, attrs, inputs, (result,))
        return result


def _share_versions(op: Op, attrs: dict, inputs, outputs) -> None:
    """Give each output that aliases an input's memory that input's version counter; an output
    of a ``view`` op that aliases its one input becomes a view of it (``register_view``).

    An in-place op writes into the memory of the tensor it modifies, so it changes every view of
    that memory too; with one counter, a backward that saved the view (or the base) sees the
    change and raises instead of computing a wrong gradient (``detach()`` shares it the same
    way). Only ops with the ``view`` or ``alias`` trait can alias, so other ops pay nothing for this.

    A recorded output keeps its node's own counter in the node: view ops' gradient rules read
    their inputs and shapes, never their outputs.
    """
    view = op.view and len(inputs) == 1
    i = 0
    for o in outputs:
        data = o._data
        for t in inputs:
            src = t._data
            if data is src or (type(data) is np.ndarray and type(src) is np.ndarray and data.base is not None
                               and (data.base is src or np.may_share_memory(data, src))):
                vc = t._vc
                if vc is None:
                    vc = t._vc = [0]
                o._vc = vc
                if view and type(data) is np.ndarray:  # a device buffer's views are not known
                    register_view(o, t, (op, attrs, i))
                break
        i += 1


def _record(op, attrs, inputs, outs, backend):
    if len(outs) == 1:  # the common case, without the generator below
        out, vc = outs[0], [0]
        node = Node(op, attrs, inputs, outs, (vc,), backend)
        return (_wrap(out, backend, out.dtype.kind not in "fcV", node, 0, vc),)  # V: ml_dtypes' bfloat16
    vcs = tuple([0] for _ in outs)
    node = Node(op, attrs, inputs, outs, vcs, backend)
    return tuple(
        _wrap(o, backend, o.dtype.kind not in "fcV", node, i, vc)
        for i, (o, vc) in enumerate(zip(outs, vcs))
    )


def _places(inputs) -> str:
    return ", ".join(f"input {i} on {t._backend}" for i, t in enumerate(inputs))


_mode_stack.insert(0, EagerMode())
