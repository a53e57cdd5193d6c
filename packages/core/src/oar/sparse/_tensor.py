"""The sparse tensor types of ``oar.sparse``: COO and CSR, their constructors and conversions.

A sparse tensor holds oar Tensors: its structure (COO ``indices``, CSR ``crows``/``cols``, int64
or int32) and its ``values``. Structure is bookkeeping: it is read with numpy and carries no
gradient. Values are ordinary oar Tensors, and every function builds new values with oar ops
(gather, index_add, scatter_nd, matmul, ...), so gradients flow through them back to the values
(and dense operands) they came from. ``x.grad`` is a sparse tensor of ``x``'s structure holding
``x.values().grad``.
"""

from __future__ import annotations

import numpy as np

from oar._engine.dtypes import get_dtype
from oar._engine.tensor import Tensor, to_tensor
from oar._ops.creation import zeros
from oar._ops.elementwise import cast as cast_values
from oar._ops.indexing import gather, gather_nd, index_add, scatter_nd
from oar.errors import ArgumentError, DTypeError, IndexOutOfRangeError, ShapeError

INDEX_DTYPES = ("int32", "int64")


def _numpy_of(data, op: str, argument: str) -> np.ndarray:
    """The integer array of a structure argument (indices, crows, cols), read with numpy."""
    array = data.numpy() if isinstance(data, Tensor) else np.asarray(data)
    if array.size == 0:
        array = array.astype(np.int64)
    if array.dtype.kind not in "iu":
        raise DTypeError(f"{op}: {argument} must hold integers, got dtype {array.dtype}")
    return array.astype(np.int64)


def index_tensor(array: np.ndarray, dtype: str = "int64") -> Tensor:
    return to_tensor(np.ascontiguousarray(array, dtype=np.int64), dtype=dtype)


def _values_tensor(values, dtype, stop_gradient: bool) -> Tensor:
    """The values as an oar Tensor: a given Tensor is kept (so gradients reach it), other data is
    copied into a new leaf."""
    if not isinstance(values, Tensor):
        return to_tensor(values, dtype=dtype, stop_gradient=stop_gradient)
    if dtype is not None and get_dtype(dtype) != values.dtype:
        values = cast_values(values, dtype)
    if not stop_gradient and values.stop_gradient:
        # a leaf that stops gradient: the sparse tensor gets its own leaf, the caller's is left alone
        values = values.detach()
        values.stop_gradient = False
    return values


class SparseTensor:
    """What COO and CSR tensors share: the values, the shape, gradients and Paddle's predicates."""

    def __init__(self, values: Tensor, shape):
        self._values = values
        self._shape = [int(d) for d in shape]

    @property
    def shape(self) -> list[int]:
        return list(self._shape)

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def dim(self) -> int:
        return len(self._shape)

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def place(self):
        return self._values.place

    @property
    def stop_gradient(self) -> bool:
        return self._values.stop_gradient

    @stop_gradient.setter
    def stop_gradient(self, value: bool) -> None:
        self._values.stop_gradient = value

    @property
    def grad(self):
        """The gradient as a sparse tensor of this tensor's structure (None before a backward)."""
        grad = self._values.grad
        return None if grad is None else self._with_values(grad)

    def clear_gradient(self) -> None:
        self._values.clear_grad()

    clear_grad = clear_gradient

    def values(self) -> Tensor:
        return self._values

    def nnz(self) -> int:
        return int(self._values.shape[0])

    def numel(self) -> int:
        return int(np.prod(self._shape, dtype=np.int64))

    def is_sparse(self) -> bool:
        return True

    def is_dense(self) -> bool:
        return False

    def is_sparse_coo(self) -> bool:
        return False

    def is_sparse_csr(self) -> bool:
        return False

    def numpy(self) -> np.ndarray:
        """The dense numpy array (Paddle's sparse tensors convert to dense for ``numpy()``)."""
        return self.to_dense().numpy()

    def detach(self):
        return self._with_values(self._values.detach())

    def backward(self, grad_tensor=None, retain_graph: bool = False) -> None:
        self._values.backward(grad_tensor, retain_graph=retain_graph)

    def _structure_repr(self) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        return (f"Tensor(shape={self._shape}, dtype={self.dtype}, stop_gradient={self.stop_gradient},\n"
                f"       {self._structure_repr()},\n       values={self._values.numpy().tolist()})")


class SparseCooTensor(SparseTensor):
    """A COO tensor: ``indices`` [sparse_dim, nnz] and ``values`` [nnz, *dense_shape].

    >>> import oar
    >>> x = oar.sparse.sparse_coo_tensor([[0, 1], [2, 0]], [1.0, 2.0], [2, 3])
    >>> x.to_dense().numpy().tolist()
    [[0.0, 0.0, 1.0], [2.0, 0.0, 0.0]]
    """

    def __init__(self, indices: Tensor, values: Tensor, shape, coalesced: bool = False):
        super().__init__(values, shape)
        self._indices = indices
        self._coalesced = coalesced

    def _with_values(self, values: Tensor) -> SparseCooTensor:
        return SparseCooTensor(self._indices, values, self._shape, self._coalesced)

    def _structure_repr(self) -> str:
        return f"indices={self._indices.numpy().tolist()}"

    def indices(self) -> Tensor:
        return self._indices

    def sparse_dim(self) -> int:
        return int(self._indices.shape[0])

    def dense_dim(self) -> int:
        return len(self._shape) - self.sparse_dim()

    def is_sparse_coo(self) -> bool:
        return True

    def is_coalesced(self) -> bool:
        """Whether this tensor came from ``coalesce`` (Paddle keeps a flag; it does not look)."""
        return self._coalesced

    def index_array(self) -> np.ndarray:
        return self._indices.numpy().astype(np.int64)

    def coalesce(self) -> SparseCooTensor:
        """Sorts the indices (row-major) and sums the values of repeated ones."""
        indices = self.index_array()
        sparse_shape = self._shape[:indices.shape[0]]
        linear = np.ravel_multi_index(tuple(indices), sparse_shape) if indices.size else np.zeros(0, np.int64)
        unique, inverse = np.unique(linear, return_inverse=True)
        if len(unique) == len(linear):
            values = self._values if np.all(np.diff(linear) > 0) else gather(self._values, index_tensor(np.argsort(linear)))
        else:
            total = zeros([len(unique), *self._values.shape[1:]], dtype=self.dtype)
            values = index_add(total, index_tensor(inverse.reshape(-1)), 0, self._values)
        new_indices = np.array(np.unravel_index(unique, sparse_shape)).reshape(len(sparse_shape), -1)
        return SparseCooTensor(index_tensor(new_indices, self._indices.dtype.name), values, self._shape, True)

    def to_dense(self) -> Tensor:
        """The dense tensor, repeated indices summed (a scatter, so gradients reach the values)."""
        index = index_tensor(self.index_array().T)
        return scatter_nd(index, self._values, self._shape)

    def to_sparse_coo(self, sparse_dim: int | None = None) -> SparseCooTensor:
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            return to_sparse_coo(self.to_dense(), sparse_dim)
        return self

    def to_sparse_csr(self) -> SparseCsrTensor:
        if self.dense_dim() != 0 or self.ndim not in (2, 3):
            raise ShapeError(f"to_sparse_csr: a CSR tensor is 2-D or 3-D with no dense dims, got shape "
                             f"{self._shape} with sparse_dim {self.sparse_dim()}")
        coo = self.coalesce()
        return SparseCsrTensor.from_coo_indices(coo.index_array(), coo._values, self._shape)


class SparseCsrTensor(SparseTensor):
    """A CSR tensor, 2-D [rows, cols] or 3-D [batch, rows, cols]: ``crows`` (each batch's row
    offsets, ``batch * (rows + 1)`` of them), ``cols`` and ``values`` [nnz].

    >>> import oar
    >>> x = oar.sparse.sparse_csr_tensor([0, 1, 2], [2, 0], [1.0, 2.0], [2, 3])
    >>> x.to_dense().numpy().tolist()
    [[0.0, 0.0, 1.0], [2.0, 0.0, 0.0]]
    """

    def __init__(self, crows: Tensor, cols: Tensor, values: Tensor, shape):
        super().__init__(values, shape)
        self._crows = crows
        self._cols = cols

    @classmethod
    def from_coo_indices(cls, indices: np.ndarray, values: Tensor, shape, index_dtype: str = "int64"):
        """The CSR tensor of row-major sorted, unique COO ``indices`` (2 or 3 rows)."""
        rows = shape[-2]
        batch = shape[0] if len(shape) == 3 else 1
        batch_of = indices[0] if len(shape) == 3 else np.zeros(indices.shape[1], np.int64)
        counts = np.zeros((batch, rows), np.int64)
        np.add.at(counts, (batch_of, indices[-2]), 1)
        crows = np.concatenate([np.zeros((batch, 1), np.int64), np.cumsum(counts, axis=1)], axis=1)
        return cls(index_tensor(crows.reshape(-1), index_dtype), index_tensor(indices[-1], index_dtype), values, shape)

    def _with_values(self, values: Tensor) -> SparseCsrTensor:
        return SparseCsrTensor(self._crows, self._cols, values, self._shape)

    def _structure_repr(self) -> str:
        return f"crows={self._crows.numpy().tolist()},\n       cols={self._cols.numpy().tolist()}"

    def crows(self) -> Tensor:
        return self._crows

    def cols(self) -> Tensor:
        return self._cols

    def sparse_dim(self) -> int:
        return len(self._shape)

    def dense_dim(self) -> int:
        return 0

    def is_sparse_csr(self) -> bool:
        return True

    def index_array(self) -> np.ndarray:
        """The COO indices of the stored entries, in storage order."""
        rows = self._shape[-2]
        crows = self._crows.numpy().astype(np.int64).reshape(-1, rows + 1)
        counts = np.diff(crows, axis=1)
        row_of = np.repeat(np.tile(np.arange(rows), len(crows)), counts.reshape(-1))
        cols = self._cols.numpy().astype(np.int64)
        if len(self._shape) == 2:
            return np.stack([row_of, cols]).reshape(2, -1)
        batch_of = np.repeat(np.arange(len(crows)), counts.sum(axis=1))
        return np.stack([batch_of, row_of, cols]).reshape(3, -1)

    def to_dense(self) -> Tensor:
        return self.to_sparse_coo().to_dense()

    def to_sparse_coo(self, sparse_dim: int | None = None) -> SparseCooTensor:
        if sparse_dim is not None and sparse_dim != self.ndim:
            return to_sparse_coo(self.to_dense(), sparse_dim)
        return SparseCooTensor(index_tensor(self.index_array(), self._crows.dtype.name), self._values, self._shape)

    def to_sparse_csr(self) -> SparseCsrTensor:
        return self


def _shape_argument(shape, op: str) -> list[int] | None:
    if shape is None:
        return None
    shape = [int(d) for d in (shape.numpy().tolist() if isinstance(shape, Tensor) else shape)]
    if any(d < 0 for d in shape):
        raise ShapeError(f"{op}: shape must not have negative sizes, got {shape}")
    return shape


def _check_in_range(index: np.ndarray, size: int, op: str, argument: str, dim: int, shape) -> None:
    if index.size and (index.min() < 0 or index.max() >= size):
        bad = int(index.min()) if index.min() < 0 else int(index.max())
        raise IndexOutOfRangeError(f"{op}: {argument} holds {bad}, out of range for dim {dim} of size {size} "
                                   f"(shape {list(shape)})")


def sparse_coo_tensor(indices, values, shape=None, dtype=None, place=None, stop_gradient=True) -> SparseCooTensor:
    """A COO sparse tensor from ``indices`` [sparse_dim, nnz] and ``values`` [nnz, *dense_shape].

    Without ``shape`` each sparse dim is its largest index plus one. Indices need not be sorted
    or unique (``coalesce`` sorts them and sums repeats); they must be in range.

    >>> import oar
    >>> x = oar.sparse.sparse_coo_tensor([[0, 1, 2], [1, 2, 0]], [1.0, 2.0, 3.0], [3, 3])
    >>> x.shape, x.nnz(), x.to_dense().numpy()[2].tolist()
    ([3, 3], 3, [3.0, 0.0, 0.0])
    """
    index_array = _numpy_of(indices, "sparse_coo_tensor", "indices")
    if index_array.ndim != 2:
        raise ShapeError(f"sparse_coo_tensor: indices must be 2-D [sparse_dim, nnz], got shape {list(index_array.shape)}")
    values = _values_tensor(values, dtype, stop_gradient)
    if values.ndim == 0 or values.shape[0] != index_array.shape[1]:
        raise ShapeError(f"sparse_coo_tensor: indices [sparse_dim, nnz] {list(index_array.shape)} and values "
                         f"{values.shape} must hold the same number of entries (nnz)")
    sparse_dim = index_array.shape[0]
    shape = _shape_argument(shape, "sparse_coo_tensor")
    if shape is None:
        sparse_shape = (index_array.max(axis=1) + 1).tolist() if index_array.shape[1] else [0] * sparse_dim
        shape = [*sparse_shape, *values.shape[1:]]
    if len(shape) != sparse_dim + values.ndim - 1 or list(shape[sparse_dim:]) != list(values.shape[1:]):
        raise ShapeError(f"sparse_coo_tensor: shape {shape} does not fit indices of sparse_dim {sparse_dim} and "
                         f"values {values.shape} (shape must be [*sparse sizes, *values.shape[1:]])")
    for dim in range(sparse_dim):
        _check_in_range(index_array[dim], shape[dim], "sparse_coo_tensor", f"indices[{dim}]", dim, shape)
    return SparseCooTensor(index_tensor(index_array), values, shape)


def sparse_csr_tensor(crows, cols, values, shape=None, dtype=None, place=None, stop_gradient=True) -> SparseCsrTensor:
    """A CSR sparse tensor, 2-D or 3-D (``crows`` holds ``rows + 1`` offsets per batch).

    Without ``shape`` (2-D only) it is ``[len(crows) - 1, max(cols) + 1]``. ``crows`` must start
    each batch at 0, never decrease and end at that batch's number of entries.

    >>> import oar
    >>> x = oar.sparse.sparse_csr_tensor([0, 2, 3], [0, 2, 1], [1.0, 2.0, 3.0], [2, 3])
    >>> x.to_dense().numpy().tolist()
    [[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]
    """
    op = "sparse_csr_tensor"
    crow_array = _numpy_of(crows, op, "crows")
    col_array = _numpy_of(cols, op, "cols")
    values = _values_tensor(values, dtype, stop_gradient)
    if crow_array.ndim != 1 or col_array.ndim != 1 or values.ndim != 1:
        raise ShapeError(f"{op}: crows, cols and values must be 1-D, got shapes {list(crow_array.shape)}, "
                         f"{list(col_array.shape)} and {values.shape}")
    if len(col_array) != values.shape[0]:
        raise ShapeError(f"{op}: cols ({len(col_array)}) and values ({values.shape[0]}) must have the same length")
    shape = _shape_argument(shape, op)
    if shape is None:
        shape = [len(crow_array) - 1, int(col_array.max()) + 1 if len(col_array) else 0]
    if len(shape) not in (2, 3):
        raise ShapeError(f"{op}: a CSR tensor is 2-D or 3-D, got shape {shape}")
    batch, rows = (shape[0] if len(shape) == 3 else 1), shape[-2]
    if len(crow_array) != batch * (rows + 1):
        raise ShapeError(f"{op}: crows must hold batch * (rows + 1) = {batch * (rows + 1)} offsets for shape "
                         f"{shape}, got {len(crow_array)}")
    per_batch = crow_array.reshape(batch, rows + 1)
    if np.any(per_batch[:, 0] != 0) or np.any(np.diff(per_batch, axis=1) < 0):
        raise ArgumentError(f"{op}: crows must start each batch at 0 and never decrease, got "
                            f"{crow_array.tolist()}")
    if per_batch[:, -1].sum() != len(col_array):
        raise ShapeError(f"{op}: crows end at {per_batch[:, -1].tolist()} entries per batch, but cols holds "
                         f"{len(col_array)}")
    _check_in_range(col_array, shape[-1], op, "cols", len(shape) - 1, shape)
    return SparseCsrTensor(index_tensor(crow_array), index_tensor(col_array), values, shape)


def to_sparse_coo(x: Tensor, sparse_dim: int) -> SparseCooTensor:
    """The COO tensor of a dense ``x`` over its first ``sparse_dim`` dims (Paddle's dense
    ``x.to_sparse_coo(sparse_dim)``); an entry is stored where any of its dense values is nonzero.
    The values are gathered from ``x``, so gradients reach it.

    >>> import oar
    >>> x = oar.sparse.to_sparse_coo(oar.to_tensor([[0.0, 1.0], [2.0, 0.0]]), 2)
    >>> x.indices().numpy().tolist(), x.values().numpy().tolist()
    ([[0, 1], [1, 0]], [1.0, 2.0])
    """
    if isinstance(x, SparseTensor):
        return x.to_sparse_coo(sparse_dim)
    if not 0 < sparse_dim <= x.ndim:
        raise ArgumentError(f"to_sparse_coo: sparse_dim must be in [1, {x.ndim}] for x of shape {x.shape}, "
                            f"got {sparse_dim}")
    dense = x.numpy().reshape(*x.shape[:sparse_dim], -1)
    indices = np.array(np.nonzero(np.any(dense != 0, axis=-1))).reshape(sparse_dim, -1)
    values = gather_nd(x, index_tensor(indices.T))
    return SparseCooTensor(index_tensor(indices), values, x.shape)


def to_sparse_csr(x: Tensor) -> SparseCsrTensor:
    """The CSR tensor of a dense 2-D or 3-D ``x`` (Paddle's dense ``x.to_sparse_csr()``).

    >>> import oar
    >>> x = oar.sparse.to_sparse_csr(oar.to_tensor([[0.0, 1.0], [2.0, 3.0]]))
    >>> x.crows().numpy().tolist(), x.cols().numpy().tolist()
    ([0, 1, 3], [1, 0, 1])
    """
    if isinstance(x, SparseTensor):
        return x.to_sparse_csr()
    if x.ndim not in (2, 3):
        raise ShapeError(f"to_sparse_csr: a CSR tensor is 2-D or 3-D, got x of shape {x.shape}")
    return to_sparse_coo(x, x.ndim).to_sparse_csr()


def check_index_dtype(index_dtype, op: str) -> str:
    name = get_dtype(index_dtype).name
    if name not in INDEX_DTYPES:
        raise DTypeError(f"{op}: index_dtype must be one of {list(INDEX_DTYPES)}, got {name}")
    return name
