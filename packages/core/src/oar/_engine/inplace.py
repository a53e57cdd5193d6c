"""The one mechanism under every in-place op (``x.add_(y)``, ``x[i] = v``, ``out=``): ``apply_inplace``.

Every in-place variant computes its result with the ordinary (out-of-place) op from ``x`` itself,
then hands it to ``apply_inplace(x, result)``, which

1. refuses a leaf that requires grad while grad is enabled (as Paddle: use ``x.detach()`` or
   ``oar.no_grad()``), and a view of one; and a read-only view (``expand``/``broadcast_to``, whose
   elements share memory locations) at any time, with the op that made it;
2. checks that the result fits ``x``: same shape, and a dtype ``x`` can hold without changing kind
   (an int tensor cannot take a float result);
3. writes the result into ``x``'s memory. What a view is follows Paddle 3: the outputs of the ops
   with the ``view`` trait -- ``reshape`` and ``flatten`` (when the strides allow it: of a
   transposed tensor they copy), ``transpose``, ``squeeze``/``unsqueeze``, ``slice``,
   ``strided_slice``, ``split``/``chunk``/``unbind`` and basic indexing (``x[0]``, ``x[1:3]``,
   ``x[..., None]``; an index tensor copies) -- and ``x.detach()`` share memory with their input,
   so ``x[0].add_(1)`` changes ``x``. Other ops' results are tensors of their own, even where
   numpy hands back memory of the input (``flip``, the ``alias`` trait): an in-place op on them,
   or on a tensor whose buffer is read-only or borrowed, gives them a buffer of their own;
4. bumps ``x``'s version counter, which every tensor sharing its memory shares, so a node that
   saved any of them and reads it in backward raises a ``GradientError`` instead of using the new
   values;
5. with grad enabled, makes ``x`` the output of the result's tape node, so later ops and backward
   see the new value. Nodes recorded before keep their edge to ``x``'s old node (the autograd
   engine fixes a node's edges when it records it). Under ``oar.no_grad()`` the change is
   invisible to autograd: ``x`` keeps its node and ``stop_gradient`` (optimizer updates).

An in-place op on a view changes its base's history too, as PyTorch's ``CopySlices``: when grad is
enabled and the base or the result needs a gradient (or a mode above eager, to_static's tracer,
follows tensors), the base becomes "the old base with the view's elements replaced by the result",
written with ordinary ops by each view op's ``view_inverse`` (a ``setitem``, a reshape back), so
gradients reach both the old base and the in-place operand, and a trace records the same
program. Every live view of a tensor whose history so changed -- the modified view itself, and
the views of a base modified directly -- is then re-derived from the base's new value by its
chain of view ops, so that it reads the new history, not the one it was made from::

    b = a * 1.0           # a requires grad
    v = b[0]              # a view: memory and version shared with b
    v.multiply_(w)        # b -> setitem(b_old, multiply(getitem(b_old), w)); v -> getitem(b)

No in-place op has its own kernel or gradient rule: each is its out-of-place op plus this copy
(``oar._ops.inplace`` defines them). A result of another dtype is cast with core's ``cast`` op,
looked up in the op registry.

>>> import oar
>>> x = oar.to_tensor([[1.0, 2.0], [3.0, 4.0]])
>>> y = x[0].add_(1.0)
>>> x.tolist(), x.inplace_version
([[2.0, 3.0], [3.0, 4.0]], 1)
"""

from __future__ import annotations

import numpy as np

from oar._engine import eager as _eager
from oar._engine.dispatch import dispatch, modes_above_eager
from oar._engine.op import fmt_shape
from oar._engine.registries import BACKENDS, OPS
from oar._engine.tensor import Tensor
from oar.errors import ArgumentError, DTypeError, GradientError, ShapeError

_KIND_RANK = {"bool": 0, "int": 1, "float": 2}


def apply_inplace(x: Tensor, result: Tensor, name: str | None = None) -> Tensor:
    """Make ``x`` hold ``result`` (computed from ``x`` by ordinary ops) in place; returns ``x``.

    This is the whole in-place contract (see the module docstring); ``x[index] = v``, ``out=``
    arguments and every ``*_`` op go through it.
    """
    op = name or "in-place op"
    check_target(x, op)
    if tuple(result._data.shape) != tuple(x._data.shape):
        raise ShapeError(
            f"{op}: the result has shape {fmt_shape(result._data.shape)} but x has shape "
            f"{fmt_shape(x._data.shape)}; an in-place op cannot change its tensor's shape (broadcasting "
            f"may only grow the other operand); use the out-of-place op"
        )
    target = x.dtype
    if result.dtype is not target:
        if _KIND_RANK[result.dtype.kind] > _KIND_RANK[target.kind]:
            raise DTypeError(
                f"{op}: the result has dtype {result.dtype.name} but x is {target.name}; an in-place op "
                f"cannot turn a {target.kind} tensor into a {result.dtype.kind} one; use the out-of-place "
                f"op or cast x first"
            )
        result = dispatch(OPS.get("cast"), (result,), {"dtype": target.name})
    modes = modes_above_eager()
    view = x._view
    base = None if view is None else view.base
    tied = base is not None and not view.detached  # a detach() writes into its base unseen by autograd
    new_base = None
    needs_grad = not (base is None or base.stop_gradient and result.stop_gradient)
    if base is not None and (modes or (tied and _eager.grad_enabled and needs_grad)):
        new_base = _replace_view(base, view.chain, result, tied)  # before the write: a trace binds the old base
    _write(x, result)
    x._bump_version()
    if new_base is not None:
        _write_back(base, new_base, modes, tied)
        if tied:
            return x
    changed = x._node is not result._node or x.stop_gradient != result.stop_gradient
    _follow(x, result, modes)
    if view is not None and view.views and (modes or (changed and _eager.grad_enabled)):
        _rederive_views(x, modes)
    return x


def check_target(x, op: str) -> None:
    """Raise unless ``x`` may be modified in place now (see ``apply_inplace``)."""
    if not isinstance(x, Tensor):
        raise ArgumentError(f"{op}: expected a Tensor to modify in place, got {type(x).__name__}")
    if _eager.grad_enabled and x._node is None and not x.stop_gradient:
        raise GradientError(
            f"{op}: a leaf tensor that requires grad (shape {x.shape}, stop_gradient=False) cannot be "
            f"modified in place, as its gradient would be lost; modify x.detach() or do it under "
            f"oar.no_grad() (as an optimizer does), or work on x.clone()"
        )
    view = x._view
    if view is None or not view.chain:  # not a view (a tensor that has views writes as any other)
        return
    maker = next((step[0].name for step in view.chain if step[0].view_inverse is None), None)
    if maker is not None:
        raise ArgumentError(
            f"{op}: x (shape {x.shape}) is a read-only view made by op {maker!r} (expand and broadcast_to "
            f"make one): several of its elements are one element of the memory it views; modify "
            f"x.clone(), a tensor of its own, or use the out-of-place op"
        )
    if type(x._data) is np.ndarray and not x._data.flags.writeable:
        raise ArgumentError(
            f"{op}: x (shape {x.shape}) is a view of a tensor whose memory is read-only (one memory-mapped "
            f"from a file, or made from a read-only numpy array); modify x.clone() instead, or the base "
            f"tensor itself (which then gets a buffer of its own)"
        )
    base = view.base
    if view.detached or not _eager.grad_enabled or base.stop_gradient:
        return
    if base._node is None:
        raise GradientError(
            f"{op}: x (shape {x.shape}) is a view of a leaf tensor that requires grad (shape {base.shape}, "
            f"stop_gradient=False), so modifying it would modify that leaf, whose gradient would be lost; "
            f"do it under oar.no_grad() (as an optimizer does), or work on a clone() of the leaf"
        )
    if x.stop_gradient:  # a view made under no_grad: its values are its base's, its history is not
        raise GradientError(
            f"{op}: x (shape {x.shape}) is a view made under oar.no_grad() (or with stop_gradient set) of a "
            f"tensor that requires grad (shape {base.shape}); modified in place with grad enabled, the "
            f"base's gradient through the changed elements would be lost; make the view again with grad "
            f"enabled, or modify it under oar.no_grad()"
        )


def _follow(t: Tensor, value: Tensor, modes) -> None:
    """``t`` now holds ``value``: the modes above eager (a trace) and, with grad, the tape follow."""
    for mode in modes:  # a tracing mode follows t to its new value
        mode.rebind(t, value)
    if _eager.grad_enabled:
        t._node, t._out_index, t.stop_gradient = value._node, value._out_index, value.stop_gradient


def _view_step(t: Tensor, step: tuple) -> Tensor:
    """``step`` of a view's chain made again from ``t``: an internal tensor, not a view to follow
    (a trace keeps every tensor it saw alive; each would be made again at the next write)."""
    op, attrs, index = step
    out = dispatch(op, (t,), attrs)
    for o in out if type(out) is tuple else (out,):
        o._view = None
    return out[index] if type(out) is tuple else out


def _replace_view(base: Tensor, chain: tuple, value: Tensor, tied: bool) -> Tensor:
    """``base`` with the elements that ``chain`` (its view ops) views replaced by ``value``, computed
    by ordinary ops: each view op's ``view_inverse``, from the innermost view out; recorded on the
    tape only if ``tied`` (not a detach())."""
    grad = _eager.grad_enabled
    _eager.grad_enabled = grad and tied
    try:
        parents = [base]
        for step in chain[:-1]:
            parents.append(_view_step(parents[-1], step))
        for (op, attrs, index), parent in zip(reversed(chain), reversed(parents)):
            value = op.view_inverse(parent, value, attrs, index)
    finally:
        _eager.grad_enabled = grad
    return value


def _write_back(base: Tensor, new_base: Tensor, modes, tied: bool) -> None:
    """``base`` now holds ``new_base`` (a write through one of its views): it and its views follow
    (with autograd only if ``tied``); a trace follows a ``detach()`` of it written through, too."""
    grad = _eager.grad_enabled
    _eager.grad_enabled = grad and tied
    try:
        _follow(base, new_base, modes)
        _rederive_views(base, modes)
    finally:
        _eager.grad_enabled = grad
    outer = base._view
    if modes and outer is not None and outer.base is not None and outer.detached:
        _write_back(outer.base, _replace_view(outer.base, outer.chain, new_base, False), modes, False)


def _rederive_views(base: Tensor, modes) -> None:
    """Each live view of ``base`` made again from ``base``'s new value by its chain of view ops (its
    memory already shows the new values): autograd and a trace then see it follow the base."""
    view = base._view
    for v in view.live_views(base) if view is not None else ():
        if v._view.detached:  # a detach(): autograd does not follow, a trace follows its memory
            continue
        t = base
        for step in v._view.chain:
            t = _view_step(t, step)
        _follow(v, t, modes)


def _write(x: Tensor, result: Tensor) -> None:
    data, new = x._data, result._data
    if new is data:
        return
    if (type(data) is np.ndarray and type(new) is np.ndarray and data.flags.writeable
            and (data.base is None or x._view is not None)):
        np.copyto(data, new)  # a view writes into its base's memory
        return
    # A read-only or borrowed array (one a kernel handed out of its input's memory, a flip):
    # x gets a buffer of its own instead.
    if result._node is not None or getattr(new, "base", None) is not None:
        new = _copy(new, x._backend)  # the node keeps its own output buffer
    x._set_buffer(new)


def _copy(data, backend: str):
    if type(data) is np.ndarray:
        return data.copy()
    b = BACKENDS.get(backend)
    return b.from_numpy(b.to_numpy(data).copy())


def inplace_variant(fn, name: str, doc: str | None = None):
    """The in-place variant ``name`` of the out-of-place function ``fn``: ``x`` becomes
    ``fn(x, ...)`` through ``apply_inplace``; returns ``x``."""

    def inplace(x, *args, **kwargs):
        check_target(x, name)  # before computing: a refused call records nothing
        return apply_inplace(x, fn(x, *args, **kwargs), name)

    inplace.__name__ = inplace.__qualname__ = name
    inplace.__doc__ = doc or f"In-place ``{fn.__name__}``: ``x`` becomes ``{fn.__name__}(x, ...)``; returns ``x``."
    return inplace
