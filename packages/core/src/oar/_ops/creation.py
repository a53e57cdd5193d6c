"""Creating tensors: zeros, ones, full, arange, ... and random numbers with ``oar.seed``."""

from __future__ import annotations

import numpy as np

from oar._core import dtypes as _dt
from oar._core.dispatch import BACKENDS, current_device
from oar._core.tensor import Tensor, _place_backend

OPS: list = []


def _make(array: np.ndarray, place=None, stop_gradient: bool = True) -> Tensor:
    backend = _place_backend(place) or current_device()
    if backend != "cpu":
        array = BACKENDS.get(backend).from_numpy(array)
    return Tensor._wrap(array, backend, stop_gradient, None, 0, None)


def _shape_list(shape) -> list[int]:
    if isinstance(shape, Tensor):
        return [int(d) for d in shape.tolist()]
    if isinstance(shape, (int, np.integer)):
        return [int(shape)]
    return [int(d) for d in shape]


def zeros(shape, dtype=None, name=None) -> Tensor:
    """A tensor of zeros (default dtype float32).

    >>> import oar
    >>> oar.zeros([2, 3]).shape
    [2, 3]
    """
    d = _dt.get_dtype(dtype) if dtype is not None else _dt.default_float()
    return _make(np.zeros(_shape_list(shape), d.np))


def ones(shape, dtype=None, name=None) -> Tensor:
    """A tensor of ones (default dtype float32)."""
    d = _dt.get_dtype(dtype) if dtype is not None else _dt.default_float()
    return _make(np.ones(_shape_list(shape), d.np))


def arange(start=0, end=None, step=1, dtype=None, name=None) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive) by ``step``; int64 unless a float is given."""
    if end is None:
        start, end = 0, start
    vals = [float(v) if isinstance(v, Tensor) and v.dtype.is_floating else (v.item() if isinstance(v, Tensor) else v) for v in (start, end, step)]
    if dtype is None:
        d = _dt.int64 if all(isinstance(v, (int, np.integer)) for v in vals) else _dt.default_float()
    else:
        d = _dt.get_dtype(dtype)
    return _make(np.arange(*vals).astype(d.np))


__all__ = ["zeros", "ones", "arange"]

METHODS: dict = {}
