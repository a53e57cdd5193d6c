"""Op cases of the reduction family: reductions, scans, norms, sorting and their helper ops.

Inputs of max/min/sort/topk/median gradient cases have distinct values, so that finite
differences are unambiguous; prod and cumprod include exact zeros, where their gradient rules
take a special path.
"""

from __future__ import annotations

import numpy as np

import oar
from oar._ops.reduction import scatter_add_along_axis, take_along_axis
from oar.testing import OpCase

from ._data import away_from, ints, positive, rand

ALL_FLOATS = ("float32", "float64", "float16", "bfloat16")


def _distinct(*shape, low=-1.0, high=1.0) -> np.ndarray:
    """Values at least (high - low) / size apart, in a shuffled order."""
    size = int(np.prod(shape))
    values = np.linspace(low, high, size) + rand(size) * (high - low) / (4 * size)
    return np.random.default_rng(size).permutation(values).reshape(shape)


def _with_zeros(values: np.ndarray, *positions) -> np.ndarray:
    out = values.copy()
    for p in positions:
        out[p] = 0.0
    return out


def _logsumexp(x, axis=None, keepdims=False):
    with np.errstate(divide="ignore"):  # log(0) = -inf over an empty axis
        return np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))


def _sort_desc(x, axis=-1):
    index = np.argsort(-x, axis=axis, kind="stable")
    return np.take_along_axis(x, index, axis=axis)


def _topk(x, k, axis=-1, largest=True):
    index = np.argsort(-x if largest else x, axis=axis, kind="stable")
    index = np.take(index, np.arange(k), axis=axis)
    return np.take_along_axis(x, index, axis=axis), index


def _median_min(x, axis):
    index = np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    index = np.take(index, [(n - 1) // 2], axis=axis)
    return np.squeeze(np.take_along_axis(x, index, axis=axis), axis), np.squeeze(index, axis)


def _scatter_add(src, index, axis, shape):
    out = np.zeros(shape)
    for position in np.ndindex(*index.shape):
        target = list(position)
        target[axis] = index[position]
        out[tuple(target)] += src[position]
    return out


def _cumsum_flat(x):
    return np.cumsum(x.reshape(-1))


_GATHER_INDEX = np.array([[2, 0, 2, 1], [1, 1, 0, 2]])  # duplicates: the scatter gradient adds

CASES = [
    # sum
    OpCase("sum", oar.sum, np.sum, [rand(2, 3)], dtypes=ALL_FLOATS, id="sum_all"),
    OpCase("sum", lambda x: oar.sum(x, axis=1, keepdim=True), lambda x: np.sum(x, axis=1, keepdims=True), [rand(2, 3, 4)], id="sum_keepdim"),
    OpCase("sum", lambda x: oar.sum(x, axis=[0, 2]), lambda x: np.sum(x, axis=(0, 2)), [rand(2, 3, 4)], id="sum_axes"),
    OpCase("sum", lambda x: oar.sum(x, axis=-1), lambda x: np.sum(x, axis=-1), [rand(2, 3, 4)], id="sum_negative_axis"),
    OpCase("sum", lambda x: oar.sum(x, axis=[]), np.sum, [rand(2, 3)], id="sum_empty_axis_list_reduces_all"),
    OpCase("sum", lambda x: oar.sum(x, axis=0), lambda x: np.sum(x, axis=0), [rand(0, 3)], id="sum_empty"),
    OpCase("sum", lambda x: oar.sum(x, axis=0), np.sum, [rand()], id="sum_0d"),
    OpCase("sum", lambda x: oar.sum(x, dtype="float64"), lambda x: np.sum(x), [rand(2, 3)], dtypes=("float32",), id="sum_dtype"),
    OpCase("sum", oar.sum, lambda x: np.sum(x, dtype=np.int64), [ints(2, 3, dtype=np.int32)], grad=False, dtypes=("float32",), id="sum_int32_to_int64"),
    OpCase("sum", lambda x: oar.sum(x, axis=1), lambda x: np.sum(x, axis=1, dtype=np.int64), [ints(2, 3) > 4], grad=False, dtypes=("float32",), id="sum_bool"),
    # mean
    OpCase("mean", oar.mean, np.mean, [rand(2, 3)], dtypes=ALL_FLOATS, id="mean_all"),
    OpCase("mean", lambda x: oar.mean(x, axis=-1), lambda x: np.mean(x, axis=-1), [rand(2, 3, 4)], id="mean_last"),
    OpCase("mean", lambda x: oar.mean(x, axis=(0, 2), keepdim=True), lambda x: np.mean(x, axis=(0, 2), keepdims=True), [rand(2, 3, 4)], id="mean_axes_keepdim"),
    OpCase("mean", oar.mean, np.mean, [rand()], id="mean_0d"),
    OpCase("mean", lambda x: oar.mean(x, axis=1), lambda x: np.mean(x, axis=1), [ints(2, 3, dtype=np.int32)], grad=False, dtypes=("float32",), id="mean_int"),
    # prod
    OpCase("prod", oar.prod, np.prod, [positive(2, 3)], id="prod_all"),
    OpCase("prod", lambda x: oar.prod(x, axis=1, keepdim=True), lambda x: np.prod(x, axis=1, keepdims=True), [rand(2, 3, 2)], id="prod_keepdim"),
    OpCase("prod", lambda x: oar.prod(x, axis=[0, -1]), lambda x: np.prod(x, axis=(0, 2)), [rand(2, 3, 2)], id="prod_axes"),
    OpCase("prod", lambda x: oar.prod(x, axis=0), lambda x: np.prod(x, axis=0), [_with_zeros(rand(3, 4), (1, 0), (0, 2), (2, 2))], id="prod_one_and_two_zeros"),
    OpCase("prod", oar.prod, np.prod, [rand()], id="prod_0d"),
    OpCase("prod", lambda x: oar.prod(x, axis=0), lambda x: np.prod(x, axis=0), [rand(0, 3)], grad=False, id="prod_empty"),
    OpCase("prod", lambda x: oar.prod(x, axis=1), lambda x: np.prod(x, axis=1, dtype=np.int32), [ints(2, 3, low=1, high=5, dtype=np.int32)], grad=False, dtypes=("float32",), id="prod_int32_stays_int32"),
    OpCase("prod", lambda x: oar.prod(x, dtype="float64"), np.prod, [positive(2, 2)], dtypes=("float32",), id="prod_dtype"),
    # max, min, amax, amin
    OpCase("max", oar.max, np.max, [_distinct(2, 3)], dtypes=ALL_FLOATS, id="max_all"),
    OpCase("max", lambda x: oar.max(x, axis=1), lambda x: np.max(x, axis=1), [_distinct(3, 4)], id="max_axis"),
    OpCase("max", lambda x: oar.max(x, axis=[0, 2], keepdim=True), lambda x: np.max(x, axis=(0, 2), keepdims=True), [_distinct(2, 3, 4)], id="max_axes_keepdim"),
    OpCase("max", oar.max, np.max, [rand()], id="max_0d"),
    OpCase("max", lambda x: oar.max(x, axis=0), lambda x: np.max(x, axis=0), [ints(3, 4)], grad=False, dtypes=("float32",), id="max_int"),
    OpCase("min", lambda x: oar.min(x, axis=-1), lambda x: np.min(x, axis=-1), [_distinct(3, 4)], id="min_axis"),
    OpCase("min", oar.min, np.min, [_distinct(2, 3)], id="min_all"),
    OpCase("amax", lambda x: oar.amax(x, axis=0), lambda x: np.max(x, axis=0), [_distinct(3, 4)], id="amax_axis"),
    OpCase("amax", lambda x: oar.amax(x, keepdim=True), lambda x: np.max(x, keepdims=True), [_distinct(2, 3)], id="amax_all_keepdim"),
    OpCase("amin", lambda x: oar.amin(x, axis=[0, 1]), lambda x: np.min(x, axis=(0, 1)), [_distinct(2, 3, 2)], id="amin_axes"),
    OpCase("amin", lambda x: oar.amin(x, axis=1), lambda x: np.min(x, axis=1), [ints(3, 4, dtype=np.int32)], grad=False, dtypes=("float32",), id="amin_int"),
    # argmax, argmin
    OpCase("argmax", oar.argmax, np.argmax, [_distinct(3, 4)], grad=False, id="argmax_flat"),
    OpCase("argmax", lambda x: oar.argmax(x, axis=1), lambda x: np.argmax(x, axis=1), [_distinct(3, 4)], grad=False, id="argmax_axis"),
    OpCase("argmax", lambda x: oar.argmax(x, axis=-2, keepdim=True), lambda x: np.argmax(x, axis=-2, keepdims=True), [_distinct(2, 3, 4)], grad=False, id="argmax_keepdim"),
    OpCase("argmax", lambda x: oar.argmax(x, keepdim=True), lambda x: np.argmax(x, keepdims=True), [_distinct(2, 3)], grad=False, id="argmax_flat_keepdim"),
    OpCase("argmax", lambda x: oar.argmax(x, axis=0, dtype="int32"), lambda x: np.argmax(x, axis=0).astype(np.int32), [ints(3, 4)], grad=False, dtypes=("float32",), id="argmax_int_dtype_int32"),
    OpCase("argmax", oar.argmax, np.argmax, [rand()], grad=False, id="argmax_0d"),
    OpCase("argmin", lambda x: oar.argmin(x, axis=0), lambda x: np.argmin(x, axis=0), [_distinct(3, 4)], grad=False, id="argmin_axis"),
    OpCase("argmin", oar.argmin, np.argmin, [ints(3, 4)], grad=False, dtypes=("float32",), id="argmin_int_flat"),
    # var, std
    OpCase("var", oar.var, lambda x: np.var(x, ddof=1), [rand(2, 3)], id="var_all"),
    OpCase("var", lambda x: oar.var(x, axis=1, unbiased=False), lambda x: np.var(x, axis=1), [rand(3, 4)], id="var_biased"),
    OpCase("var", lambda x: oar.var(x, axis=[0, 2], keepdim=True), lambda x: np.var(x, axis=(0, 2), ddof=1, keepdims=True), [rand(2, 3, 4)], id="var_axes_keepdim"),
    OpCase("var", lambda x: oar.var(x, axis=1), lambda x: np.var(x, axis=1, ddof=1), [ints(2, 5, dtype=np.int32)], grad=False, dtypes=("float32",), id="var_int"),
    OpCase("std", oar.std, lambda x: np.std(x, ddof=1), [rand(2, 3)], id="std_all"),
    OpCase("std", lambda x: oar.std(x, axis=-1, unbiased=False, keepdim=True), lambda x: np.std(x, axis=-1, keepdims=True), [rand(3, 4)], id="std_biased_keepdim"),
    OpCase("std", lambda x: oar.std(x, axis=0), lambda x: np.std(x, axis=0, ddof=1), [rand(4, 2)], id="std_axis"),
    # logsumexp
    OpCase("logsumexp", oar.logsumexp, _logsumexp, [rand(2, 3)], id="logsumexp_all"),
    OpCase("logsumexp", lambda x: oar.logsumexp(x, axis=-1, keepdim=True), lambda x: _logsumexp(x, axis=-1, keepdims=True), [rand(2, 3, 4)], id="logsumexp_keepdim"),
    OpCase("logsumexp", lambda x: oar.logsumexp(x, axis=[0, 2]), lambda x: _logsumexp(x, axis=(0, 2)), [rand(2, 3, 2)], id="logsumexp_axes"),
    OpCase("logsumexp", oar.logsumexp, _logsumexp, [rand()], id="logsumexp_0d"),
    OpCase("logsumexp", lambda x: oar.logsumexp(x, axis=0), lambda x: _logsumexp(x, axis=0), [rand(0, 3)], grad=False, id="logsumexp_empty"),
    # all, any
    OpCase("all", oar.all, np.all, [ints(2, 3) > 0], grad=False, dtypes=("float32",), id="all_bool"),
    OpCase("all", lambda x: oar.all(x, axis=1), lambda x: np.all(x, axis=1), [ints(3, 4, high=3)], grad=False, dtypes=("float32",), id="all_int_axis"),
    OpCase("all", lambda x: oar.all(x, axis=0, keepdim=True), lambda x: np.all(x, axis=0, keepdims=True), [np.zeros((0, 3), bool)], grad=False, dtypes=("float32",), id="all_empty"),
    OpCase("any", lambda x: oar.any(x, axis=-1), lambda x: np.any(x, axis=-1), [ints(3, 4, high=5) > 3], grad=False, dtypes=("float32",), id="any_bool_axis"),
    OpCase("any", oar.any, np.any, [np.array([[0.0, 0.5], [0.0, 0.0]])], grad=False, id="any_float"),
    OpCase("any", lambda x: oar.any(x, axis=0), lambda x: np.any(x, axis=0), [np.zeros((0, 2), bool)], grad=False, dtypes=("float32",), id="any_empty"),
    # cumsum, cumprod
    OpCase("cumsum", oar.cumsum, _cumsum_flat, [rand(2, 3)], dtypes=ALL_FLOATS, id="cumsum_flat"),
    OpCase("cumsum", lambda x: oar.cumsum(x, axis=1), lambda x: np.cumsum(x, axis=1), [rand(2, 3, 2)], id="cumsum_axis"),
    OpCase("cumsum", lambda x: oar.cumsum(x, axis=-1), lambda x: np.cumsum(x, axis=-1), [rand(3, 4)], id="cumsum_negative_axis"),
    OpCase("cumsum", oar.cumsum, np.cumsum, [rand()], id="cumsum_0d_flattens"),
    OpCase("cumsum", lambda x: oar.cumsum(x, axis=0), lambda x: x.copy(), [rand()], id="cumsum_0d_axis"),
    OpCase("cumsum", lambda x: oar.cumsum(x, axis=0), lambda x: np.cumsum(x, axis=0), [rand(0, 3)], id="cumsum_empty"),
    OpCase("cumsum", lambda x: oar.cumsum(x, axis=0), lambda x: np.cumsum(x, axis=0, dtype=np.int64), [ints(3, 2, dtype=np.int32)], grad=False, dtypes=("float32",), id="cumsum_int32_to_int64"),
    OpCase("cumsum", lambda x: oar.cumsum(x, dtype="float64"), lambda x: np.cumsum(x), [rand(2, 2)], dtypes=("float32",), id="cumsum_dtype"),
    OpCase("cumprod", lambda x: oar.cumprod(x, dim=1), lambda x: np.cumprod(x, axis=1), [rand(2, 4)], id="cumprod_dim"),
    OpCase("cumprod", oar.cumprod, lambda x: np.cumprod(x.reshape(-1)), [rand(2, 3)], id="cumprod_flat"),
    OpCase("cumprod", lambda x: oar.cumprod(x, dim=-1), lambda x: np.cumprod(x, axis=-1), [_with_zeros(rand(3, 5), (0, 1), (1, 1), (1, 3), (2, 4))], id="cumprod_zeros"),
    OpCase("cumprod", lambda x: oar.cumprod(x, dim=0), lambda x: np.cumprod(x, axis=0), [ints(3, 2, low=1, high=4)], grad=False, dtypes=("float32",), id="cumprod_int"),
    OpCase("cumprod", lambda x: oar.cumprod(x, dim=0), lambda x: x.copy(), [rand()], id="cumprod_0d"),
    # norm (p_norm; matrix norms 1/inf also go through amax/amin)
    OpCase("p_norm", oar.norm, lambda x: np.linalg.norm(x.reshape(-1)), [rand(2, 3)], dtypes=ALL_FLOATS, id="norm_default"),
    OpCase("p_norm", lambda x: oar.norm(x, p="fro", axis=[0, 1]), lambda x: np.linalg.norm(x, "fro", axis=(0, 1)), [rand(2, 3, 2)], id="norm_fro_matrix"),
    OpCase("p_norm", lambda x: oar.norm(x, p=2, axis=-1, keepdim=True), lambda x: np.linalg.norm(x, 2, axis=-1, keepdims=True), [rand(3, 4)], id="norm_2_keepdim"),
    OpCase("p_norm", lambda x: oar.norm(x, p=1, axis=0), lambda x: np.linalg.norm(x, 1, axis=0), [away_from(rand(3, 4))], id="norm_1"),
    OpCase("p_norm", lambda x: oar.norm(x, p=np.inf, axis=1), lambda x: np.linalg.norm(x, np.inf, axis=1), [_distinct(3, 4)], id="norm_inf"),
    OpCase("p_norm", lambda x: oar.norm(x, p=-np.inf, axis=1), lambda x: np.linalg.norm(x, -np.inf, axis=1), [away_from(_distinct(3, 4))], id="norm_neg_inf"),
    OpCase("p_norm", lambda x: oar.norm(x, p=0, axis=1), lambda x: np.linalg.norm(x, 0, axis=1), [_with_zeros(rand(3, 4), (0, 1), (2, 2))], id="norm_0"),
    OpCase("p_norm", lambda x: oar.norm(x, p=3, axis=-1), lambda x: np.linalg.norm(x, 3, axis=-1), [away_from(rand(2, 5))], id="norm_3"),
    OpCase("p_norm", lambda x: oar.norm(x, p=0.5, axis=0), lambda x: np.sum(np.abs(x) ** 0.5, axis=0) ** 2, [away_from(rand(3, 2))], id="norm_half"),
    OpCase("p_norm", lambda x: oar.norm(x, p=-1.5, axis=1), lambda x: np.sum(np.abs(x) ** -1.5, axis=1) ** (-1 / 1.5), [away_from(rand(2, 3), margin=0.2)], id="norm_negative_p"),
    OpCase("p_norm", lambda x: oar.norm(x, p=1, axis=[0, 1]), lambda x: np.linalg.norm(x, 1, axis=(0, 1)), [away_from(_distinct(3, 4))], id="norm_matrix_1"),
    OpCase("p_norm", lambda x: oar.norm(x, p=-np.inf, axis=[1, 0], keepdim=True), lambda x: np.linalg.norm(x, -np.inf, axis=(1, 0), keepdims=True), [away_from(_distinct(3, 4))], id="norm_matrix_neg_inf_swapped"),
    OpCase("p_norm", lambda x: oar.norm(x, p=2, axis=0), lambda x: np.linalg.norm(x, 2, axis=0), [rand(0, 3)], grad=False, id="norm_empty"),
    OpCase("p_norm", lambda x: oar.norm(x, axis=1), lambda x: np.linalg.norm(x, axis=1), [ints(2, 3, dtype=np.int32)], grad=False, dtypes=("float32",), id="norm_int"),
    # sort, argsort, topk
    OpCase("sort", oar.sort, lambda x: np.sort(x, axis=-1), [_distinct(3, 4)], dtypes=ALL_FLOATS, id="sort"),
    OpCase("sort", lambda x: oar.sort(x, axis=0, descending=True), lambda x: _sort_desc(x, axis=0), [_distinct(3, 4)], id="sort_descending_axis0"),
    OpCase("sort", lambda x: oar.sort(x, axis=1), lambda x: np.sort(x, axis=1), [_distinct(2, 3, 2)], id="sort_middle_axis"),
    OpCase("sort", oar.sort, lambda x: x.copy(), [rand()], id="sort_0d"),
    OpCase("sort", lambda x: oar.sort(x, axis=0), lambda x: np.sort(x, axis=0), [rand(0, 3)], grad=False, id="sort_empty"),
    OpCase("sort", oar.sort, np.sort, [ints(3, 5)], grad=False, dtypes=("float32",), id="sort_int"),
    OpCase("sort", oar.argsort, lambda x: np.argsort(x, axis=-1, kind="stable"), [_distinct(3, 4)], grad=False, id="argsort"),
    OpCase("sort", lambda x: oar.argsort(x, axis=0, descending=True), lambda x: np.argsort(-x, axis=0, kind="stable"), [ints(6, 3, high=3)], grad=False, dtypes=("float32",), id="argsort_ties_descending"),
    OpCase("topk", lambda x: oar.topk(x, 2), lambda x: _topk(x, 2), [_distinct(3, 5)], dtypes=ALL_FLOATS, id="topk"),
    OpCase("topk", lambda x: oar.topk(x, 3, axis=0, largest=False), lambda x: _topk(x, 3, axis=0, largest=False), [_distinct(4, 3)], id="topk_smallest_axis0"),
    OpCase("topk", lambda x: oar.topk(x, 2, axis=1), lambda x: _topk(x, 2, axis=1), [_distinct(2, 4, 2)], id="topk_middle_axis"),
    OpCase("topk", lambda x: oar.topk(x, 1), lambda x: (x.copy(), np.array(0)), [rand()], id="topk_0d"),
    OpCase("topk", lambda x: oar.topk(x, 3), lambda x: _topk(x, 3), [ints(2, 6, high=3)], grad=False, dtypes=("float32",), id="topk_int_ties"),
    # median
    OpCase("median", oar.median, np.median, [_distinct(2, 3)], id="median_flat_even"),
    OpCase("median", lambda x: oar.median(x, axis=1), lambda x: np.median(x, axis=1), [_distinct(3, 5)], id="median_axis_odd"),
    OpCase("median", lambda x: oar.median(x, axis=0, keepdim=True), lambda x: np.median(x, axis=0, keepdims=True), [_distinct(4, 3)], id="median_axis_even_keepdim"),
    OpCase("median", lambda x: oar.median(x, axis=-1, mode="min"), lambda x: _median_min(x, -1), [_distinct(3, 4)], id="median_min"),
    OpCase("median", lambda x: oar.median(x, mode="min"), lambda x: _median_min(x.reshape(-1), 0)[0], [_distinct(2, 2)], id="median_min_flat"),
    OpCase("median", oar.median, np.median, [rand()], id="median_0d"),
    OpCase("median", lambda x: oar.median(x, axis=0), lambda x: np.median(x, axis=0), [ints(4, 3)], grad=False, dtypes=("float32",), id="median_int"),
    # the gather/scatter pair behind the gradients of sort, topk and median
    OpCase("_take_along_axis", lambda x, i: take_along_axis(x, i, 0), lambda x, i: np.take_along_axis(x, i, 0), [rand(3, 4), _GATHER_INDEX], id="take_along_axis"),
    OpCase("_take_along_axis", lambda x, i: take_along_axis(x, i, 1), lambda x, i: np.take_along_axis(x, i, 1), [rand(2, 5), _GATHER_INDEX], id="take_along_axis_last"),
    OpCase("_scatter_add_along_axis", lambda s, i: scatter_add_along_axis(s, i, 0, (3, 4)), lambda s, i: _scatter_add(s, i, 0, (3, 4)), [rand(2, 4), _GATHER_INDEX], id="scatter_add_along_axis"),
    OpCase("_scatter_add_along_axis", lambda s, i: scatter_add_along_axis(s, i, 1, (2, 5)), lambda s, i: _scatter_add(s, i, 1, (2, 5)), [rand(2, 4), _GATHER_INDEX], id="scatter_add_along_axis_last"),
]

# N <= 1 along the reduced axes (issue #24): the unbiased moments are NaN as numpy's (ddof=1)
# and Paddle 3's, the biased ones of one element 0; no gradient case (a NaN's derivative).
with np.errstate(invalid="ignore", divide="ignore"):  # numpy warns at import of the references
    CASES += [
        OpCase("var", lambda x: oar.var(x, axis=1), lambda x: np.var(x, axis=1, ddof=1), [rand(3, 1)], grad=False,
               id="var_one_element_per_row"),
        OpCase("var", lambda x: oar.var(x, axis=0), lambda x: np.full(x.shape[1:], np.nan), [rand(0, 3)], grad=False,
               id="var_empty"),
        OpCase("var", lambda x: oar.var(x, axis=1, unbiased=False), lambda x: np.var(x, axis=1), [rand(2, 1)],
               id="var_biased_one_element"),
        OpCase("std", lambda x: oar.std(x), lambda x: np.std(x, ddof=1), [rand(1, 1)], grad=False,
               id="std_one_element"),
        OpCase("std", lambda x: oar.std(x, axis=[0, 1], keepdim=True), lambda x: np.full((1, 1, 2), np.nan),
               [rand(0, 3, 2)], grad=False, id="std_empty_keepdim"),
    ]
