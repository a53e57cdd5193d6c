"""Op cases of the statistics family (``oar._ops.statistics``): the ops with kernels of their
own. The composed functions (nan-aware reductions, quantiles, kthvalue, trapezoid, renorm,
pdist, ...) are tested in ``tests/core/test_statistics.py``.

Gradient cases of cummax/cummin/mode have distinct values, so that finite differences do not
cross a tie; the counting ops (histograms, bincount, searchsorted, unique, isin) have no gradient.
"""

from __future__ import annotations

import collections

import numpy as np

import oar
from oar.testing import OpCase

from ._data import ints, rand


def _distinct(*shape) -> np.ndarray:
    size = int(np.prod(shape))
    values = np.linspace(-1.0, 1.0, size) + rand(size) / (4 * size)
    return np.random.default_rng(size).permutation(values).reshape(shape)


def _cum_extreme(largest: bool, axis: int = 0):
    """Running extreme and the last index where it was reached, by plain loops."""

    def ref(x):
        moved = np.moveaxis(x, axis, -1)
        values, index = np.empty_like(moved), np.zeros(moved.shape, np.int64)
        for pos in np.ndindex(*moved.shape[:-1]):
            row = moved[pos]
            for i in range(len(row)):
                best = row[: i + 1].max() if largest else row[: i + 1].min()
                values[pos + (i,)] = best
                index[pos + (i,)] = max(j for j in range(i + 1) if row[j] == best)
        return np.moveaxis(values, -1, axis), np.moveaxis(index, -1, axis)

    return ref


def _logcumsumexp(x, axis=0):
    return np.log(np.cumsum(np.exp(x), axis=axis))


def _mode(x, axis=-1, keepdim=False):
    moved = np.moveaxis(x, axis, -1)
    values, index = np.empty(moved.shape[:-1]), np.zeros(moved.shape[:-1], np.int64)
    for pos in np.ndindex(*moved.shape[:-1]):
        row = moved[pos].tolist()
        counts = collections.Counter(row)
        best = min(v for v in counts if counts[v] == max(counts.values()))
        values[pos], index[pos] = best, len(row) - 1 - row[::-1].index(best)
    if keepdim:
        values, index = np.expand_dims(values, axis), np.expand_dims(index, axis)
    return values, index


def _histogram(bins, low=0.0, high=0.0, density=False, weighted=False):
    def ref(x, *weight):
        lo, hi = (x.min(), x.max()) if low == high else (low, high)
        counts, _ = np.histogram(x, bins=bins, range=(lo, hi), weights=weight[0] if weight else None,
                                 density=density)
        return counts if (density or weighted) else counts.astype(np.int64)

    return ref


def _histogramdd(bins, ranges=None, density=False):
    def ref(x, *weights):
        d = x.shape[-1]
        points = x.reshape(-1, d)
        limits = ranges or [v for lo, hi in zip(points.min(0), points.max(0)) for v in (lo, hi)]
        edges = [np.linspace(limits[2 * i], limits[2 * i + 1], bins[i] + 1) for i in range(d)]
        hist, _ = np.histogramdd(points, bins=edges, weights=weights[0].reshape(-1) if weights else None,
                                 density=density)
        return (hist, *edges)

    return ref


def _flat(result):
    hist, edges = result
    return (hist, *edges)


def _searchsorted(right=False):
    def ref(seq, values):
        side = "right" if right else "left"
        if seq.ndim == 1:
            return np.searchsorted(seq, values, side=side)
        return np.stack([np.searchsorted(s, v, side=side) for s, v in zip(seq, values)])

    return ref


def _unique_consecutive(x):
    flat = x.reshape(-1)
    runs = [[flat[0], 1]]
    inverse = [0]
    for v in flat[1:]:
        if v == runs[-1][0]:
            runs[-1][1] += 1
        else:
            runs.append([v, 1])
        inverse.append(len(runs) - 1)
    return np.array([r[0] for r in runs]), np.array(inverse), np.array([r[1] for r in runs])


def _unique_rows(x):
    out, index, inverse, counts = np.unique(x, axis=0, return_index=True, return_inverse=True, return_counts=True)
    return out, index, inverse.reshape(-1), counts


SORTED = np.sort(rand(3, 5), axis=-1)
BINS = rand(4, 6)

CASES = [
    # cummax / cummin: values and the (last) index of the running extreme
    OpCase("cummax", lambda x: oar.cummax(x, axis=0), _cum_extreme(True), [_distinct(5, 3)], id="cummax"),
    OpCase("cummax", lambda x: oar.cummax(x, axis=1, dtype="int32"), _cum_extreme(True, axis=1),
           [np.array([[1.0, 3.0, 3.0, 2.0, 3.0]])], grad=False, id="cummax_ties_int32"),
    OpCase("cummax", lambda x: oar.cummax(x, axis=0), _cum_extreme(True), [ints(6, 2)], grad=False,
           id="cummax_int"),
    OpCase("cummin", lambda x: oar.cummin(x, axis=-1), _cum_extreme(False, axis=-1), [_distinct(2, 6)], id="cummin"),
    OpCase("cummin", oar.cummin, lambda x: tuple(a.reshape(-1) for a in _cum_extreme(False)(x.reshape(-1))),
           [_distinct(2, 3)], id="cummin_flattened"),
    # logcumsumexp
    OpCase("logcumsumexp", lambda x: oar.logcumsumexp(x, axis=1), lambda x: _logcumsumexp(x, 1), [rand(3, 4)],
           id="logcumsumexp"),
    OpCase("logcumsumexp", oar.logcumsumexp, lambda x: _logcumsumexp(x.reshape(-1)), [rand(2, 3) * 3.0],
           id="logcumsumexp_flattened"),
    OpCase("logcumsumexp", lambda x: oar.logcumsumexp(x, axis=0), lambda x: _logcumsumexp(x, 0),
           [np.array([[-30.0, 2.0], [0.5, -1.0], [4.0, 3.0]])], id="logcumsumexp_spread"),
    # mode: the most frequent value, the smallest of a tie, at its last occurrence
    OpCase("mode", oar.mode, _mode, [_distinct(3, 4)], id="mode_distinct"),
    OpCase("mode", lambda x: oar.mode(x, axis=0, keepdim=True), lambda x: _mode(x, 0, True),
           [np.array([[1.0, 2.0, 2.0], [3.0, 2.0, 1.0], [1.0, 3.0, 1.0], [3.0, 0.0, 0.0]])], grad=False,
           id="mode_ties_keepdim"),
    OpCase("mode", oar.mode, _mode, [ints(3, 7, high=4)], grad=False, id="mode_int"),
    # histograms
    OpCase("histogram", lambda x: oar.histogram(x, bins=5), _histogram(5), [BINS], grad=False, id="histogram"),
    OpCase("histogram", lambda x: oar.histogram(x, bins=4, min=-0.5, max=0.5), _histogram(4, -0.5, 0.5), [BINS],
           grad=False, id="histogram_range"),
    OpCase("histogram", lambda x, w: oar.histogram(x, bins=3, weight=w), _histogram(3, weighted=True),
           [BINS, rand(4, 6) + 1.0], grad=False, id="histogram_weighted"),
    OpCase("histogram", lambda x: oar.histogram(x, bins=4, density=True), _histogram(4, density=True), [BINS],
           grad=False, dtypes=("float32",), id="histogram_density"),
    OpCase("histogram", lambda x: oar.histogram(x, bins=3), _histogram(3), [ints(10)], grad=False,
           id="histogram_int"),
    OpCase("histogram_bin_edges", lambda x: oar.histogram_bin_edges(x, bins=4),
           lambda x: np.linspace(x.min(), x.max(), 5), [BINS], grad=False, id="histogram_bin_edges"),
    OpCase("histogram_bin_edges", lambda x: oar.histogram_bin_edges(x, bins=2, min=1.0, max=1.0),
           lambda x: np.array([0.5, 1.0, 1.5]), [np.array([2.0])], grad=False, id="histogram_bin_edges_point"),
    OpCase("histogramdd", lambda x: _flat(oar.histogramdd(x, bins=[2, 3])), _histogramdd([2, 3]), [rand(7, 2)],
           grad=False, id="histogramdd"),
    OpCase("histogramdd", lambda x, w: _flat(oar.histogramdd(x, bins=2, ranges=[-1.0, 1.0, -0.5, 0.5], weights=w,
                                                             density=True)),
           _histogramdd([2, 2], [-1.0, 1.0, -0.5, 0.5], density=True), [rand(2, 3, 2), rand(2, 3) + 1.0],
           grad=False, id="histogramdd_weighted_density"),
    # bincount
    OpCase("bincount", oar.bincount, np.bincount, [ints(12, high=6)], grad=False, id="bincount"),
    OpCase("bincount", lambda x, w: oar.bincount(x, weights=w, minlength=12),
           lambda x, w: np.bincount(x, w, minlength=12), [ints(8, high=6), rand(8)], grad=False,
           id="bincount_weighted_minlength"),
    OpCase("bincount", oar.bincount, np.bincount, [np.zeros(0, np.int64)], grad=False, id="bincount_empty"),
    # searchsorted / bucketize
    OpCase("searchsorted", lambda s, v: oar.searchsorted(s, v), _searchsorted(), [SORTED[0], rand(2, 3)],
           grad=False, id="searchsorted"),
    OpCase("searchsorted", lambda s, v: oar.searchsorted(s, v, right=True), _searchsorted(right=True),
           [SORTED, np.concatenate([SORTED[:, 1:3], rand(3, 2)], axis=1)], grad=False, id="searchsorted_rows_right"),
    OpCase("searchsorted", lambda s, v: oar.searchsorted(s, v, out_int32=True), _searchsorted(),
           [np.array([1, 3, 5, 7]), ints(5)], grad=False, id="searchsorted_int32"),
    OpCase("searchsorted", lambda v, s: oar.bucketize(v, s), lambda v, s: np.searchsorted(s, v),
           [rand(2, 4), SORTED[1]], grad=False, id="bucketize"),
    # unique / unique_consecutive
    OpCase("unique", lambda x: oar.unique(x, return_index=True, return_inverse=True, return_counts=True),
           lambda x: np.unique(x.reshape(-1), return_index=True, return_inverse=True, return_counts=True),
           [ints(3, 5, high=6)], grad=False, id="unique"),
    OpCase("unique", lambda x: oar.unique(x, return_inverse=True), lambda x: np.unique(x, return_inverse=True),
           [np.round(rand(8) * 2.0)], grad=False, id="unique_float"),
    OpCase("unique", lambda x: oar.unique(x, return_index=True, return_inverse=True, return_counts=True, axis=0),
           _unique_rows, [np.array([[2, 1, 3], [3, 0, 1], [2, 1, 3], [0, 0, 0]])], grad=False, id="unique_axis"),
    OpCase("unique_consecutive", lambda x: oar.unique_consecutive(x, return_inverse=True, return_counts=True),
           _unique_consecutive, [np.array([[1, 1, 2, 2], [3, 1, 1, 2]])], grad=False, id="unique_consecutive"),
    OpCase("unique_consecutive", lambda x: oar.unique_consecutive(x, return_counts=True, axis=0),
           lambda x: (x[[0, 2, 3]], np.array([2, 1, 1])),
           [np.array([[2.0, 1.0], [2.0, 1.0], [3.0, 0.0], [2.0, 1.0]])], grad=False,
           id="unique_consecutive_axis"),
    # isin
    OpCase("isin", oar.isin, np.isin, [ints(3, 4), ints(5)], grad=False, id="isin"),
    OpCase("isin", lambda x, t: oar.isin(x, t, invert=True), lambda x, t: ~np.isin(x, t),
           [np.array([1.0, 2.0, 0.5]), np.array([[2.0], [0.5]])], grad=False, id="isin_invert"),
]
