"""The math of ``oar.sparse``: unary functions of the values, elementwise binary functions over
the union of two structures, products with dense and sparse operands, and structure changes
(reshape, transpose, slice, sum). Values are computed with oar ops, so they are differentiable;
structure is computed with numpy.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from oar._engine.tensor import Tensor
from oar._ops import elementwise as ew
from oar._ops import special
from oar._ops.creation import zeros
from oar._ops.indexing import gather, gather_nd, index_add
from oar._ops.linalg_ext import pca_lowrank as dense_pca_lowrank
from oar._ops.reduction import sum as dense_sum
from oar._ops.shape import reshape as dense_reshape
from oar._ops.shape import squeeze, unsqueeze
from oar._ops.shape import transpose as dense_transpose
from oar.errors import ArgumentError, ShapeError
from oar.sparse._tensor import (
    SparseCooTensor,
    SparseCsrTensor,
    SparseTensor,
    check_index_dtype,
    index_tensor,
)


def check_sparse(x, op: str, argument: str = "x") -> SparseTensor:
    if not isinstance(x, SparseTensor):
        raise ArgumentError(f"{op}: {argument} must be a sparse COO or CSR tensor, got {type(x).__name__}")
    return x


def _same_format(coo: SparseCooTensor, like: SparseTensor) -> SparseTensor:
    """``coo`` in the format of ``like`` (CSR results are re-sorted row-major)."""
    return coo.to_sparse_csr() if like.is_sparse_csr() else coo


def check_no_dense_dims(x: SparseTensor, op: str) -> None:
    if x.dense_dim():
        raise ArgumentError(f"{op}: x has {x.dense_dim()} dense dim(s) (shape {x.shape}, sparse_dim "
                            f"{x.sparse_dim()}); only tensors whose dims are all sparse are supported")


# --- unary functions of the values: f(0) = 0, so the structure stays -----------------------------

def _unary(fn: Callable, op_name: str, doc_example: str = "") -> Callable:
    def unary(x, name=None):
        return check_sparse(x, op_name)._with_values(fn(x.values()))

    unary.__name__ = unary.__qualname__ = op_name
    unary.__doc__ = (f"``{op_name}`` of the stored values of a sparse COO or CSR tensor; the structure is kept.\n"
                     f"{doc_example}")
    return unary


_SIN_EXAMPLE = """
>>> import oar
>>> x = oar.sparse.sparse_coo_tensor([[0, 2]], [0.5, -1.0], [3])
>>> oar.sparse.abs(x).values().numpy().tolist()
[0.5, 1.0]
"""

abs = _unary(ew.abs, "abs", _SIN_EXAMPLE)
asin = _unary(special.asin, "asin")
asinh = _unary(special.asinh, "asinh")
atan = _unary(special.atan, "atan")
atanh = _unary(special.atanh, "atanh")
deg2rad = _unary(special.deg2rad, "deg2rad")
expm1 = _unary(special.expm1, "expm1")
log1p = _unary(ew.log1p, "log1p")
neg = _unary(ew.neg, "neg")
rad2deg = _unary(special.rad2deg, "rad2deg")
sin = _unary(ew.sin, "sin")
sinh = _unary(special.sinh, "sinh")
sqrt = _unary(ew.sqrt, "sqrt")
square = _unary(ew.square, "square")
tan = _unary(ew.tan, "tan")
tanh = _unary(ew.tanh, "tanh")
isnan = _unary(ew.isnan, "isnan")


def pow(x, factor, name=None):
    """The stored values raised to ``factor`` (a number); the structure is kept.

    >>> import oar
    >>> x = oar.sparse.sparse_coo_tensor([[0, 2]], [2.0, 3.0], [3])
    >>> oar.sparse.pow(x, 2).values().numpy().tolist()
    [4.0, 9.0]
    """
    return check_sparse(x, "pow")._with_values(ew.pow(x.values(), factor))


def cast(x, index_dtype=None, value_dtype=None, name=None):
    """``x`` with its structure stored as ``index_dtype`` (int32 or int64) and its values cast to
    ``value_dtype``; None keeps either.

    >>> import oar
    >>> x = oar.sparse.sparse_coo_tensor([[0, 2]], [2.0, 3.0], [3])
    >>> y = oar.sparse.cast(x, "int32", "float64")
    >>> y.indices().dtype, y.dtype
    (oar.int32, oar.float64)
    """
    check_sparse(x, "cast")
    values = x.values() if value_dtype is None else ew.cast(x.values(), value_dtype)
    if index_dtype is None:
        return x._with_values(values)
    index_dtype = check_index_dtype(index_dtype, "cast")
    if x.is_sparse_coo():
        return SparseCooTensor(ew.cast(x.indices(), index_dtype), values, x.shape, x.is_coalesced())
    return SparseCsrTensor(ew.cast(x.crows(), index_dtype), ew.cast(x.cols(), index_dtype), values, x.shape)


# --- elementwise binary functions -----------------------------------------------------------------

def _binary_operands(x, y, op: str) -> tuple[SparseCooTensor, SparseCooTensor]:
    check_sparse(x, op)
    if not isinstance(y, SparseTensor):
        raise ArgumentError(f"{op}: y must be a sparse tensor like x (Paddle has no sparse-dense {op} on CPU); "
                            f"got {type(y).__name__}, use x.to_dense() for a dense result")
    if x.is_sparse_coo() != y.is_sparse_coo():
        raise ArgumentError(f"{op}: x and y must both be COO or both be CSR; convert one with to_sparse_coo() "
                            f"or to_sparse_csr()")
    if x.shape != y.shape or x.sparse_dim() != y.sparse_dim():
        raise ShapeError(f"{op}: x {x.shape} (sparse_dim {x.sparse_dim()}) and y {y.shape} (sparse_dim "
                         f"{y.sparse_dim()}) must have the same shape and sparse_dim")
    return x.to_sparse_coo().coalesce(), y.to_sparse_coo().coalesce()


def _linear(indices: np.ndarray, sparse_shape) -> np.ndarray:
    return np.ravel_multi_index(tuple(indices), sparse_shape) if indices.size else np.zeros(0, np.int64)


def _on_union(x: SparseCooTensor, y: SparseCooTensor, fn: Callable) -> SparseCooTensor:
    """``fn(x_values, y_values)`` on the union of the two structures (an absent entry is zero)."""
    sparse_shape = x.shape[:x.sparse_dim()]
    x_linear, y_linear = _linear(x.index_array(), sparse_shape), _linear(y.index_array(), sparse_shape)
    union = np.union1d(x_linear, y_linear)

    def spread(values: Tensor, linear: np.ndarray) -> Tensor:
        if len(linear) == len(union):  # coalesced and the same structure: already in union order
            return values
        spread_values = zeros([len(union), *values.shape[1:]], dtype=values.dtype)
        return index_add(spread_values, index_tensor(np.searchsorted(union, linear)), 0, values)

    indices = np.array(np.unravel_index(union, sparse_shape)).reshape(len(sparse_shape), -1)
    return SparseCooTensor(index_tensor(indices), fn(spread(x.values(), x_linear), spread(y.values(), y_linear)),
                           x.shape, True)


def add(x, y, name=None):
    """``x + y`` of two sparse tensors of one shape and format, on the union of their entries.

    >>> import oar
    >>> x = oar.sparse.sparse_coo_tensor([[0, 1]], [1.0, 2.0], [3])
    >>> y = oar.sparse.sparse_coo_tensor([[1, 2]], [10.0, 20.0], [3])
    >>> oar.sparse.add(x, y).values().numpy().tolist()
    [1.0, 12.0, 20.0]
    """
    xc, yc = _binary_operands(x, y, "add")
    return _same_format(_on_union(xc, yc, ew.add), x)


def subtract(x, y, name=None):
    """``x - y`` of two sparse tensors of one shape and format, on the union of their entries."""
    xc, yc = _binary_operands(x, y, "subtract")
    return _same_format(_on_union(xc, yc, ew.subtract), x)


def multiply(x, y, name=None):
    """``x * y``: of two sparse tensors on the union of their entries (zeros where only one has
    an entry, as Paddle), or of a sparse tensor and a number on its values.

    >>> import oar
    >>> x = oar.sparse.sparse_coo_tensor([[0, 1]], [1.0, 2.0], [3])
    >>> oar.sparse.multiply(x, x).values().numpy().tolist(), oar.sparse.multiply(x, 3.0).values().numpy().tolist()
    ([1.0, 4.0], [3.0, 6.0])
    """
    if isinstance(y, (int, float)) and not isinstance(y, bool):
        return check_sparse(x, "multiply")._with_values(ew.multiply(x.values(), y))
    xc, yc = _binary_operands(x, y, "multiply")
    return _same_format(_on_union(xc, yc, ew.multiply), x)


def divide(x, y, name=None):
    """``x / y``: by a number on the values; of two sparse tensors everywhere, as Paddle (an entry
    neither stores is 0 / 0 = nan), so the result stores every entry."""
    if isinstance(y, (int, float)) and not isinstance(y, bool):
        return check_sparse(x, "divide")._with_values(ew.divide(x.values(), y))
    _binary_operands(x, y, "divide")
    return _same_format(_all_entries(ew.divide(x.to_dense(), y.to_dense()), x.sparse_dim()), x)


def _all_entries(dense: Tensor, sparse_dim: int) -> SparseCooTensor:
    """Every entry of ``dense`` stored, zeros included (values gathered, so differentiable)."""
    indices = np.indices(dense.shape[:sparse_dim]).reshape(sparse_dim, -1)
    return SparseCooTensor(index_tensor(indices), gather_nd(dense, index_tensor(indices.T)), dense.shape, True)


def is_same_shape(x, y):
    """Whether ``x`` and ``y`` (sparse or dense) have the same shape.

    >>> import oar
    >>> oar.sparse.is_same_shape(oar.sparse.sparse_coo_tensor([[0]], [1.0], [2]), oar.ones([2]))
    True
    """
    return list(x.shape) == list(y.shape)


def coalesce(x, name=None):
    """A COO tensor's indices sorted row-major with the values of repeated indices summed.

    >>> import oar
    >>> x = oar.sparse.sparse_coo_tensor([[2, 0, 2]], [1.0, 2.0, 3.0], [3])
    >>> y = oar.sparse.coalesce(x)
    >>> y.indices().numpy().tolist(), y.values().numpy().tolist()
    ([[0, 2]], [2.0, 4.0])
    """
    if not check_sparse(x, "coalesce").is_sparse_coo():
        raise ArgumentError("coalesce: x must be a COO tensor (Paddle has no CSR coalesce); a CSR tensor "
                            "built by oar.sparse is already row-major")
    return x.coalesce()


# --- products -------------------------------------------------------------------------------------

def _flat_rows_cols(x: SparseTensor) -> tuple[np.ndarray, np.ndarray]:
    """Row and column of each stored entry of a 2-D or 3-D ``x`` with the batch folded into both
    (row ``b * M + r`` of a [B*M, N] result, column ``b * K + c`` of a [B*K, N] operand)."""
    indices = x.to_sparse_coo().index_array()
    if x.ndim == 2:
        return indices[0], indices[1]
    rows, inner = x.shape[1], x.shape[2]
    return indices[0] * rows + indices[1], indices[0] * inner + indices[2]


def _sparse_dense_product(x: SparseTensor, y: Tensor, op: str) -> Tensor:
    """``x @ y`` for sparse ``x`` [(B,) M, K] and dense ``y`` [(B,) K, N]: each stored entry scales
    a gathered row of ``y`` and is added into its output row."""
    check_no_dense_dims(x, op)
    if x.ndim not in (2, 3) or y.ndim != x.ndim or x.shape[:-2] != y.shape[:-2] or x.shape[-1] != y.shape[-2]:
        raise ShapeError(f"{op}: x {x.shape} and y {y.shape} must be [M, K] @ [K, N] or [B, M, K] @ [B, K, N]")
    batch = x.shape[0] if x.ndim == 3 else 1
    rows, cols = _flat_rows_cols(x)
    flat_y = dense_reshape(y, [batch * y.shape[-2], y.shape[-1]])
    contributions = ew.multiply(gather(flat_y, index_tensor(cols)), unsqueeze(x.values(), -1))
    out = zeros([batch * x.shape[-2], y.shape[-1]], dtype=contributions.dtype)
    out = index_add(out, index_tensor(rows), 0, contributions)
    return dense_reshape(out, [*x.shape[:-1], y.shape[-1]])


def _product_structure(x: SparseTensor, y: SparseTensor) -> np.ndarray:
    """The COO indices where ``x @ y`` has a structural entry (some stored x[i, k] and y[k, j])."""
    x_pattern = np.zeros(x.shape, bool)
    x_pattern[tuple(x.to_sparse_coo().index_array())] = True
    y_pattern = np.zeros(y.shape, bool)
    y_pattern[tuple(y.to_sparse_coo().index_array())] = True
    product = np.matmul(x_pattern.astype(np.int64), y_pattern.astype(np.int64)) > 0
    return np.array(np.nonzero(product)).reshape(product.ndim, -1)


def matmul(x, y, name=None):
    """``x @ y`` for a sparse 2-D or 3-D ``x``: a dense ``y`` gives a dense result, a sparse ``y``
    (same format) a sparse one holding the structural entries of the product (computed as
    ``x @ y.to_dense()``, so meant for operands that fit densely).

    >>> import oar
    >>> x = oar.sparse.sparse_coo_tensor([[0, 1], [1, 0]], [2.0, 3.0], [2, 2])
    >>> oar.sparse.matmul(x, oar.to_tensor([[1.0, 2.0], [3.0, 4.0]])).numpy().tolist()
    [[6.0, 8.0], [3.0, 6.0]]
    """
    check_sparse(x, "matmul")
    if not isinstance(y, SparseTensor):
        return _sparse_dense_product(x, y, "matmul")
    if x.is_sparse_coo() != y.is_sparse_coo():
        raise ArgumentError("matmul: sparse x and y must both be COO or both be CSR")
    check_no_dense_dims(y, "matmul")
    dense = _sparse_dense_product(x, y.to_dense(), "matmul")
    indices = _product_structure(x, y)
    product = SparseCooTensor(index_tensor(indices), gather_nd(dense, index_tensor(indices.T)), dense.shape, True)
    return _same_format(product, x)


def masked_matmul(x, y, mask, name=None):
    """``x @ y`` of dense ``x`` [(B,) M, K] and ``y`` [(B,) K, N] computed only at the entries of
    the sparse ``mask`` [(B,) M, N]; the result has the mask's structure and format.

    >>> import oar
    >>> mask = oar.sparse.sparse_csr_tensor([0, 1, 2], [1, 0], [1.0, 1.0], [2, 2])
    >>> x = oar.to_tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> oar.sparse.masked_matmul(x, x, mask).values().numpy().tolist()
    [10.0, 15.0]
    """
    check_sparse(mask, "masked_matmul", "mask")
    if isinstance(x, SparseTensor) or isinstance(y, SparseTensor):
        raise ArgumentError("masked_matmul: x and y must be dense tensors")
    if (x.ndim not in (2, 3) or y.ndim != x.ndim or x.shape[:-2] != y.shape[:-2] or x.shape[-1] != y.shape[-2]
            or list(mask.shape) != [*x.shape[:-1], y.shape[-1]]):
        raise ShapeError(f"masked_matmul: x {x.shape} @ y {y.shape} must be [(B,) M, K] @ [(B,) K, N] with mask "
                         f"[(B,) M, N], got mask {mask.shape}")
    indices = mask.to_sparse_coo().index_array()
    batch_of = indices[0] if x.ndim == 3 else np.zeros(indices.shape[1], np.int64)
    x_rows = gather(dense_reshape(x, [-1, x.shape[-1]]), index_tensor(batch_of * x.shape[-2] + indices[-2]))
    y_columns = dense_reshape(dense_transpose(y, [*range(y.ndim - 2), y.ndim - 1, y.ndim - 2]), [-1, y.shape[-2]])
    y_cols = gather(y_columns, index_tensor(batch_of * y.shape[-1] + indices[-1]))
    values = dense_sum(ew.multiply(x_rows, y_cols), axis=-1)
    return mask._with_values(values)


def mv(x, vec, name=None):
    """The product of a sparse 2-D ``x`` [M, N] and a dense vector ``vec`` [N], dense [M].

    >>> import oar
    >>> x = oar.sparse.sparse_coo_tensor([[0, 1], [1, 0]], [2.0, 3.0], [2, 2])
    >>> oar.sparse.mv(x, oar.to_tensor([1.0, 10.0])).numpy().tolist()
    [20.0, 3.0]
    """
    check_sparse(x, "mv")
    if x.ndim != 2 or vec.ndim != 1 or x.shape[1] != vec.shape[0]:
        raise ShapeError(f"mv: x must be 2-D [M, N] and vec 1-D [N], got x {x.shape} and vec {vec.shape}")
    return squeeze(_sparse_dense_product(x, unsqueeze(vec, -1), "mv"), -1)


def addmm(input, x, y, beta=1.0, alpha=1.0, name=None):
    """``beta * input + alpha * (x @ y)`` for a sparse ``x``: dense ``input`` and ``y`` give a dense
    result; sparse ``input`` and ``y`` (the format of ``x``) a sparse one.

    >>> import oar
    >>> x = oar.sparse.sparse_coo_tensor([[0, 1], [1, 0]], [2.0, 3.0], [2, 2])
    >>> oar.sparse.addmm(oar.ones([2, 2]), x, oar.eye(2), beta=0.5, alpha=2.0).numpy().tolist()
    [[0.5, 4.5], [6.5, 0.5]]
    """
    product = matmul(x, y)
    if isinstance(product, SparseTensor):
        if not isinstance(input, SparseTensor):
            raise ArgumentError("addmm: with a sparse y, input must be sparse too")
        return add(multiply(input, float(beta)), multiply(product, float(alpha)))
    if isinstance(input, SparseTensor):
        raise ArgumentError("addmm: with a dense y, input must be dense too")
    if list(input.shape) != list(product.shape):
        raise ShapeError(f"addmm: input {input.shape} must have the shape of x @ y {product.shape}")
    return ew.add(ew.multiply(input, beta), ew.multiply(product, alpha))


def mask_as(x, mask, name=None):
    """The entries of dense ``x`` at the structure of the sparse ``mask`` (its format kept).

    >>> import oar
    >>> mask = oar.sparse.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 1.0], [2, 2])
    >>> oar.sparse.mask_as(oar.to_tensor([[1.0, 2.0], [3.0, 4.0]]), mask).values().numpy().tolist()
    [2.0, 3.0]
    """
    check_sparse(mask, "mask_as", "mask")
    if isinstance(x, SparseTensor) or list(x.shape) != mask.shape:
        raise ShapeError(f"mask_as: x must be dense of the mask's shape {mask.shape}, got {list(x.shape)}")
    indices = mask.to_sparse_coo().index_array()
    return mask._with_values(gather_nd(x, index_tensor(indices.T)))


def pca_lowrank(x, q=None, center=True, niter=2, name=None):
    """The randomized PCA ``(U, S, V)`` of a sparse 2-D ``x`` [N, M] (centered over its rows by
    default): ``oar.linalg.pca_lowrank`` of ``x.to_dense()``, so the same algorithm and random
    draws, and differentiable in the values.

    >>> import oar
    >>> x = oar.sparse.sparse_coo_tensor([[0, 1, 2], [1, 2, 0]], [1.0, 2.0, 3.0], [3, 3])
    >>> u, s, v = oar.sparse.pca_lowrank(x, q=2)
    >>> u.shape, s.shape, v.shape
    ([3, 2], [2], [3, 2])
    """
    check_no_dense_dims(check_sparse(x, "pca_lowrank"), "pca_lowrank")
    if x.ndim != 2:
        raise ShapeError(f"pca_lowrank: x must be a 2-D sparse tensor [N, M], got shape {x.shape}")
    return dense_pca_lowrank(x.to_dense(), q=q, center=center, niter=niter)


# --- structure ------------------------------------------------------------------------------------

def reshape(x, shape, name=None):
    """``x`` reshaped (one size may be -1): each entry keeps its row-major position.

    >>> import oar
    >>> x = oar.sparse.sparse_coo_tensor([[0, 1, 2], [1, 2, 0]], [1.0, 2.0, 3.0], [3, 3])
    >>> oar.sparse.reshape(x, [9]).indices().numpy().tolist()
    [[1, 5, 6]]
    """
    check_no_dense_dims(check_sparse(x, "reshape"), "reshape")
    shape = [int(d) for d in shape]
    if shape.count(-1) > 1 or any(d < -1 for d in shape):
        raise ShapeError(f"reshape: shape may hold one -1 and no other negative size, got {shape}")
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        shape[shape.index(-1)] = x.numel() // known if known else 0
    if int(np.prod(shape, dtype=np.int64)) != x.numel():
        raise ShapeError(f"reshape: cannot reshape x {x.shape} ({x.numel()} elements) to {shape}")
    if x.is_sparse_csr() and len(shape) not in (2, 3):
        raise ShapeError(f"reshape: a CSR tensor reshapes to 2-D or 3-D, got {shape}")
    coo = x.to_sparse_coo()
    indices = np.array(np.unravel_index(_linear(coo.index_array(), x.shape), shape)).reshape(len(shape), -1)
    reshaped = SparseCooTensor(index_tensor(indices), coo.values(), shape, coo.is_coalesced())
    return _same_format(reshaped, x)


def transpose(x, perm, name=None):
    """``x`` with its dims permuted by ``perm`` (a COO result keeps the entries' order, as Paddle;
    a CSR result is re-sorted row-major).

    >>> import oar
    >>> x = oar.sparse.sparse_coo_tensor([[0, 1, 2], [1, 2, 0]], [1.0, 2.0, 3.0], [3, 3])
    >>> oar.sparse.transpose(x, [1, 0]).indices().numpy().tolist()
    [[1, 2, 0], [0, 1, 2]]
    """
    check_no_dense_dims(check_sparse(x, "transpose"), "transpose")
    perm = [int(p) % x.ndim if -x.ndim <= int(p) < x.ndim else int(p) for p in perm]
    if sorted(perm) != list(range(x.ndim)):
        raise ArgumentError(f"transpose: perm must be a permutation of the {x.ndim} dims of x {x.shape}, got {perm}")
    coo = x.to_sparse_coo()
    moved = SparseCooTensor(index_tensor(coo.index_array()[perm]), coo.values(), [x.shape[p] for p in perm])
    return _same_format(moved, x)


def slice(x, axes, starts, ends, name=None):
    """The entries of ``x`` with ``starts[i] <= index < ends[i]`` along ``axes[i]`` (negative bounds
    count from the end, bounds are clipped), shifted to start at 0.

    >>> import oar
    >>> x = oar.sparse.sparse_coo_tensor([[0, 1, 2], [1, 2, 0]], [1.0, 2.0, 3.0], [3, 3])
    >>> y = oar.sparse.slice(x, [0], [1], [3])
    >>> y.shape, y.indices().numpy().tolist(), y.values().numpy().tolist()
    ([2, 3], [[0, 1], [2, 0]], [2.0, 3.0])
    """
    check_no_dense_dims(check_sparse(x, "slice"), "slice")
    if not len(axes) == len(starts) == len(ends):
        raise ArgumentError(f"slice: axes, starts and ends must have one length, got {len(axes)}, {len(starts)} "
                            f"and {len(ends)}")
    coo = x.to_sparse_coo()
    indices, shape = coo.index_array().copy(), x.shape
    keep = np.ones(indices.shape[1], bool)
    for axis, start, end in zip(axes, starts, ends):
        axis = int(axis)
        if not -x.ndim <= axis < x.ndim:
            raise ArgumentError(f"slice: axis {axis} is out of range for x {x.shape}")
        axis %= x.ndim
        size = x.shape[axis]
        start, end = (int(b) + size if int(b) < 0 else int(b) for b in (start, end))
        start, end = min(max(start, 0), size), min(max(end, 0), size)
        keep &= (indices[axis] >= start) & (indices[axis] < end)
        indices[axis] -= start
        shape[axis] = max(end - start, 0)
    kept = np.nonzero(keep)[0]
    sliced = SparseCooTensor(index_tensor(indices[:, kept]), gather(coo.values(), index_tensor(kept)), shape,
                             coo.is_coalesced())
    return _same_format(sliced, x)


def sum(x, axis=None, dtype=None, keepdim=False, name=None):
    """The sum of a sparse tensor's entries, a sparse tensor: over all of them (COO: shape [1], or
    all ones with ``keepdim``; CSR: all ones) or along one ``axis`` (a CSR tensor only along -1,
    keeping the dim, as Paddle).

    >>> import oar
    >>> x = oar.sparse.sparse_coo_tensor([[0, 1, 2], [1, 2, 0]], [1.0, 2.0, 3.0], [3, 3])
    >>> oar.sparse.sum(x).values().numpy().tolist(), oar.sparse.sum(x, axis=0).values().numpy().tolist()
    ([6.0], [3.0, 1.0, 2.0])
    """
    check_no_dense_dims(check_sparse(x, "sum"), "sum")
    values = x.values() if dtype is None else ew.cast(x.values(), dtype)
    if isinstance(axis, (list, tuple)):
        if len(axis) != 1:
            raise ArgumentError(f"sum: axis must be None, an int or a list of one int, got {list(axis)}")
        axis = axis[0]
    if axis is None:
        total = dense_reshape(dense_sum(values), [1])
        ndim = x.ndim if (keepdim or x.is_sparse_csr()) else 1
        whole = SparseCooTensor(index_tensor(np.zeros((ndim, 1), np.int64)), total, [1] * ndim, True)
        return _same_format(whole, x)
    axis = int(axis)
    if not -x.ndim <= axis < x.ndim:
        raise ArgumentError(f"sum: axis {axis} is out of range for x {x.shape}")
    axis %= x.ndim
    if x.is_sparse_csr():
        if axis != x.ndim - 1:
            raise ArgumentError(f"sum: a CSR tensor sums along axis -1 only (as Paddle), got axis {axis}")
        keepdim = True
    indices = x.to_sparse_coo().index_array()
    if keepdim:
        indices = indices.copy()
        indices[axis] = 0
        shape = [1 if d == axis else size for d, size in enumerate(x.shape)]
    else:
        indices = np.delete(indices, axis, axis=0)
        shape = [size for d, size in enumerate(x.shape) if d != axis]
    summed = SparseCooTensor(index_tensor(indices), values, shape).coalesce()
    return _same_format(summed, x)


__all__ = [
    "abs", "add", "addmm", "asin", "asinh", "atan", "atanh", "cast", "coalesce", "deg2rad", "divide",
    "expm1", "is_same_shape", "isnan", "log1p", "mask_as", "masked_matmul", "matmul", "multiply", "mv",
    "neg", "pca_lowrank", "pow", "rad2deg", "reshape", "sin", "sinh", "slice", "sqrt", "square", "subtract", "sum",
    "tan", "tanh", "transpose",
]
