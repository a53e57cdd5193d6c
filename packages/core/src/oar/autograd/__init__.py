"""``oar.autograd``: Paddle's ``paddle.autograd`` -- backward, custom ops and grad modes.

>>> import oar
>>> from oar.autograd import PyLayer
>>> class Double(PyLayer):
...     @staticmethod
...     def forward(ctx, x):
...         return x * 2
...     @staticmethod
...     def backward(ctx, dy):
...         return dy * 2
>>> x = oar.to_tensor([1.0, 2.0], stop_gradient=False)
>>> oar.autograd.backward(Double.apply(x).sum())
>>> x.grad.tolist()
[2.0, 2.0]

``jacobian`` and ``hessian`` return lazy matrices as Paddle 3's do: nothing is differentiated until
the matrix is indexed, then only the rows asked for are (one reverse pass per row, each row cached)
and the result stays differentiable (``create_graph=True``).

>>> x = oar.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
>>> J = oar.autograd.jacobian(x * x, x)
>>> J.shape, J[1].tolist()
([3, 3], [0.0, 4.0, 0.0])
>>> oar.autograd.hessian((x ** 3).sum(), x)[:].tolist()
[[6.0, 0.0, 0.0], [0.0, 12.0, 0.0], [0.0, 0.0, 18.0]]

Differences from Paddle: a batched Jacobian of a 1-D ``ys`` (shape ``[B, N]``) indexes as its
``shape`` says (``J[:]`` is ``[B, N]`` and ``J[b]`` is row ``b``; Paddle 3.3.1 returns ``[B, 1, N]``
for ``J[:]`` and fails on ``J[b]``). ``saved_tensors_hooks`` is not provided: oar's tape keeps the
inputs of each op by reference, with no point where a pack hook could replace them.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

from oar._engine.autograd import backward as backward
from oar._engine.autograd import enable_grad as enable_grad
from oar._engine.autograd import grad as grad
from oar._engine.autograd import is_grad_enabled as is_grad_enabled
from oar._engine.autograd import no_grad as no_grad
from oar._engine.autograd import queue_callback as queue_callback
from oar._engine.autograd import set_grad_enabled as set_grad_enabled
from oar._engine.pylayer import PyLayer as PyLayer
from oar._engine.pylayer import PyLayerContext as PyLayerContext
from oar._engine.tensor import Tensor
from oar._ops.creation import zeros
from oar._ops.shape import concat
from oar.errors import ArgumentError, ShapeError

Function = PyLayer  # Paddle 3.3's alias (paddle.autograd.Function is paddle.autograd.PyLayer)

__all__ = [
    "backward", "PyLayer", "PyLayerContext", "grad", "no_grad", "enable_grad", "set_grad_enabled",
    "is_grad_enabled", "queue_callback", "Function", "jacobian", "hessian",
]


class Jacobian:
    """The Jacobian of ``ys`` with respect to ``xs``, evaluated row by row when indexed.

    Not batched, ``ys`` and ``xs`` are 0-D or 1-D and the matrix is ``[M, N]`` (an axis of a 0-D
    one left out); batched (``batch_axis=0``) they are ``[B]`` or ``[B, M]`` and ``[B, N]``, and
    the matrix is ``[B, M, N]``. Index it as a tensor (ints and slices, no Ellipsis); any other
    use (arithmetic, ``.numpy()``, ``.shape`` aside) evaluates the whole matrix.
    """

    def __init__(self, ys, xs, is_batched: bool = False) -> None:
        if isinstance(ys, Jacobian):
            ys = ys._evaluate_all()
        for what, t in (("ys", ys), ("xs", xs)):
            if not isinstance(t, Tensor):
                raise ArgumentError(f"jacobian: {what} must be a Tensor or a sequence of Tensors, got "
                                    f"{type(t).__name__}")
        low, high = (1, 2) if is_batched else (0, 1)
        for what, t in (("xs", xs), ("ys", ys)):
            if not low <= t.ndim <= high:
                raise ShapeError(f"jacobian: {what}.ndim should be {low} or {high} when "
                                 f"{'batch_axis=0' if is_batched else 'batch_axis=None'}, but {what} has shape "
                                 f"{list(t.shape)}")
        self._xs, self._batched, self._cache = xs, is_batched, {}
        if is_batched:
            self._flat_ys = ys.reshape([ys.shape[0], -1])
            self._inner_shape = [xs.shape[0], self._flat_ys.shape[1], xs.reshape([xs.shape[0], -1]).shape[1]]
            # The inner matrix is always [B, M, N]; an axis for a 1-D ys or xs is indexed at 0.
            self._kept = [0] + [1] * (ys.ndim == 2) + [2] * (xs.ndim == 2)
        else:
            self._flat_ys = ys.reshape([-1])
            self._inner_shape = [self._flat_ys.shape[0], xs.reshape([-1]).shape[0]]
            self._kept = [0] * (ys.ndim == 1) + [1] * (xs.ndim == 1)
        self.shape = [self._inner_shape[axis] for axis in self._kept]

    @property
    def _lazy_axis(self) -> int:
        return 1 if self._batched else 0

    def _row(self, k: int):
        """Row ``k`` of the inner matrix: ``[N]``, or ``[B, N]`` batched (cached)."""
        if k not in self._cache:
            y = self._flat_ys[:, k] if self._batched else self._flat_ys[k]
            (dx,) = grad(y, self._xs, create_graph=True, allow_unused=True) if not y.stop_gradient else (None,)
            if dx is None:  # ys does not depend on xs: Paddle gives zeros
                dx = zeros(self._xs.shape, dtype=self._xs.dtype)
            self._cache[k] = dx.reshape([self._inner_shape[0], -1] if self._batched else [-1])
        return self._cache[k]

    def __getitem__(self, index):
        if not self.shape:
            raise IndexError("jacobian: a 0-D Jacobian (ys and xs both 0-D) can not be indexed")
        index = index if isinstance(index, tuple) else (index,)
        if any(i is Ellipsis for i in index):
            raise IndexError("jacobian: an Ellipsis index is not supported")
        if len(index) > len(self.shape):
            raise IndexError(f"jacobian: {len(index)} indices for a Jacobian of shape {self.shape}")
        inner = [0] * len(self._inner_shape)
        for axis in self._kept:
            inner[axis] = slice(None)
        for axis, i in zip(self._kept, index):
            inner[axis] = i if isinstance(i, slice) else operator.index(i)
        lazy = inner[self._lazy_axis]
        rest = inner[:self._lazy_axis] + inner[self._lazy_axis + 1:]
        size = self._inner_shape[self._lazy_axis]
        if isinstance(lazy, int):
            if not -size <= lazy < size:
                raise IndexError(f"jacobian: index {lazy} is out of range for an axis of size {size}")
            return self._row(lazy % size)[tuple(rest)]
        rows = [self._row(k) for k in range(*lazy.indices(size))]
        row_shape = [self._inner_shape[0], 1, -1] if self._batched else [1, -1]
        if not rows:
            raise IndexError(f"jacobian: the slice {lazy} selects no row")
        part = concat([r.reshape(row_shape) for r in rows], axis=self._lazy_axis)
        inner[self._lazy_axis] = slice(None)
        return part[tuple(inner)]

    def _evaluate_all(self):
        if not self.shape:
            return self._row(0).reshape([])
        return self[:]

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._evaluate_all(), name)


def _binary(method: str):
    def apply(self, other):
        other = other._evaluate_all() if isinstance(other, Jacobian) else other
        return getattr(self._evaluate_all(), method)(other)
    apply.__name__ = method
    return apply


for _method in ("__add__", "__sub__", "__mul__", "__truediv__", "__pow__", "__mod__", "__floordiv__", "__matmul__",
                "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__radd__", "__rsub__", "__rmul__",
                "__rtruediv__", "__neg__"):
    setattr(Jacobian, _method, _binary(_method) if _method != "__neg__" else lambda self: -self._evaluate_all())
Jacobian.__hash__ = object.__hash__


class Hessian(Jacobian):
    """The Hessian of a scalar (per batch row) ``ys``: the Jacobian of its gradient."""


def _check_batch_axis(batch_axis) -> bool:
    if batch_axis is not None and batch_axis != 0:
        raise ArgumentError(f"jacobian: batch_axis should be None or 0, but got {batch_axis}")
    return batch_axis is not None


def jacobian(ys, xs, batch_axis=None):
    """The Jacobian of ``ys`` with respect to ``xs``, as ``paddle.autograd.jacobian``: a lazy
    ``Jacobian`` (or a tuple of them, nested as ``ys`` and ``xs`` are sequences).

    >>> import oar
    >>> x = oar.to_tensor([[1.0, 2.0], [3.0, 4.0]], stop_gradient=False)
    >>> J = oar.autograd.jacobian(x * x, x, batch_axis=0)
    >>> J.shape, J[1].tolist()
    ([2, 2, 2], [[6.0, 0.0], [0.0, 8.0]])
    """
    batched = _check_batch_axis(batch_axis)
    ys_many, xs_many = isinstance(ys, Sequence), isinstance(xs, Sequence)
    if ys_many and xs_many:
        return tuple(tuple(Jacobian(y, x, batched) for x in xs) for y in ys)
    if ys_many:
        return tuple(Jacobian(y, xs, batched) for y in ys)
    if xs_many:
        return tuple(Jacobian(ys, x, batched) for x in xs)
    return Jacobian(ys, xs, batched)


def hessian(ys, xs, batch_axis=None):
    """The Hessian of the one-element ``ys`` (one element per batch row with ``batch_axis=0``)
    with respect to ``xs``, as ``paddle.autograd.hessian``: a lazy ``Hessian``, or for a sequence
    ``xs`` a tuple of tuples, ``H[i][j]`` the block of ``xs[i]`` and ``xs[j]``.

    >>> import oar
    >>> x = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    >>> oar.autograd.hessian((x[0] * x[1]) ** 2, x)[:].tolist()
    [[8.0, 8.0], [8.0, 2.0]]
    """
    batched = _check_batch_axis(batch_axis)
    if not isinstance(ys, Tensor):
        raise ArgumentError(f"hessian: ys must be a Tensor, got {type(ys).__name__}")
    if batched:
        if ys.ndim == 0 or ys[0].size != 1:
            raise ShapeError(f"hessian: ys must hold one element per batch row with batch_axis=0, but it has "
                             f"shape {list(ys.shape)}")
        ys = ys.reshape([-1])
    else:
        if ys.size != 1:
            raise ShapeError(f"hessian: ys must hold one element with batch_axis=None, but it has shape "
                             f"{list(ys.shape)}")
        ys = ys.reshape([])

    def block(gradient_of, x):  # the Jacobian, with respect to x, of the gradient with respect to gradient_of
        return Hessian(Jacobian(ys, gradient_of, batched)._evaluate_all(), x, batched)

    if isinstance(xs, Sequence):
        return tuple(tuple(block(xi, xj) for xj in xs) for xi in xs)
    return block(xs, xs)
