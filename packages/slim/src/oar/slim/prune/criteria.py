"""Filter importance: one score per channel of a parameter along an axis; the lowest go first.

The scores follow PaddleSlim's pruners: L1 is the mean absolute value of each filter
(``l1norm_pruner.py``), L2 its Euclidean norm (``l2norm_pruner.py``), FPGM the sum of its
Euclidean distances to every filter of the layer (``fpgm_pruner.py``: a filter close to the
geometric median is the one the others can stand in for).

>>> import numpy as np
>>> w = np.array([[1.0, -1.0], [3.0, 0.0], [0.5, 0.5]])
>>> l1_norm(w).tolist(), pruned_mask(l1_norm(w), 0.34).tolist()
([1.0, 1.5, 0.5], [True, True, False])
"""

from __future__ import annotations

import numpy as np

from oar.errors import ArgumentError


def _filters(value: np.ndarray, axis: int) -> np.ndarray:
    """``value`` as a matrix with one row per channel along ``axis``."""
    value = np.asarray(value, dtype=np.float64)
    return np.moveaxis(value, axis, 0).reshape(value.shape[axis], -1)


def l1_norm(value: np.ndarray, axis: int = 0) -> np.ndarray:
    """The mean absolute value of each channel along ``axis`` (PaddleSlim's L1 score)."""
    return np.abs(_filters(value, axis)).mean(axis=1)


def l2_norm(value: np.ndarray, axis: int = 0) -> np.ndarray:
    """The Euclidean norm of each channel along ``axis``."""
    return np.sqrt(np.square(_filters(value, axis)).sum(axis=1))


def fpgm(value: np.ndarray, axis: int = 0) -> np.ndarray:
    """The sum of Euclidean distances from each channel to all channels along ``axis`` (FPGM)."""
    rows = _filters(value, axis)
    # |a - b|^2 = |a|^2 + |b|^2 - 2 a.b, clipped at 0 against rounding.
    sq = np.square(rows).sum(axis=1)
    dist2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * rows @ rows.T, 0.0)
    return np.sqrt(dist2).sum(axis=1)


CRITERIA = {"l1_norm": l1_norm, "l2_norm": l2_norm, "geometry_median": fpgm}


def pruned_mask(scores: np.ndarray, ratio: float) -> np.ndarray:
    """The keep-mask that drops the ``round(len * ratio)`` lowest scores (ties: the first index
    first); at least one channel is always kept, as in PaddleSlim."""
    ratio = float(ratio)
    if not 0.0 <= ratio < 1.0:
        raise ArgumentError(f"pruning ratio must be in [0, 1), got {ratio}")
    n = len(scores)
    pruned = min(n - 1, int(round(n * ratio)))
    keep = np.ones(n, dtype=bool)
    keep[np.argsort(scores, kind="stable")[:pruned]] = False
    return keep
