"""Paddle's ``paddle.sparse.nn.functional`` activations: functions of the stored values (the
structure is kept), and ``softmax`` over the stored entries of each row.

Paddle's sparse convolutions, pooling and attention are not here.
"""

from __future__ import annotations

import numpy as np

from oar._engine.tensor import to_tensor
from oar._ops import elementwise as ew
from oar._ops.creation import zeros
from oar._ops.indexing import gather, index_add
from oar.errors import ArgumentError
from oar.sparse._math import check_no_dense_dims, check_sparse
from oar.sparse._tensor import index_tensor

__all__ = ["relu", "relu6", "leaky_relu", "softmax"]


def relu(x, name=None):
    """``max(value, 0)`` of each stored value.

    >>> import oar
    >>> x = oar.sparse.sparse_coo_tensor([[0, 2]], [-1.0, 2.0], [3])
    >>> oar.sparse.nn.functional.relu(x).values().numpy().tolist()
    [0.0, 2.0]
    """
    return check_sparse(x, "relu")._with_values(ew.clip(x.values(), min=0.0))


def relu6(x, name=None):
    """``min(max(value, 0), 6)`` of each stored value."""
    return check_sparse(x, "relu6")._with_values(ew.clip(x.values(), min=0.0, max=6.0))


def leaky_relu(x, negative_slope=0.01, name=None):
    """``value`` where it is >= 0, else ``negative_slope * value``, of each stored value."""
    values = check_sparse(x, "leaky_relu").values()
    return x._with_values(ew.where(values >= 0, values, ew.multiply(values, negative_slope)))


def softmax(x, axis=-1, name=None):
    """The softmax of each row's stored entries (absent entries take no part, as Paddle).

    >>> import oar
    >>> x = oar.sparse.sparse_csr_tensor([0, 2, 3], [0, 2, 1], [1.0, 1.0, 5.0], [2, 3])
    >>> oar.sparse.nn.functional.softmax(x).values().numpy().tolist()
    [0.5, 0.5, 1.0]
    """
    check_no_dense_dims(check_sparse(x, "softmax"), "softmax")
    if axis not in (-1, x.ndim - 1):
        raise ArgumentError(f"softmax: sparse softmax is along the last axis only, got axis {axis}")
    indices = x.to_sparse_coo().index_array()
    row_shape = x.shape[:-1]
    group = np.ravel_multi_index(tuple(indices[:-1]), row_shape) if indices.size else np.zeros(0, np.int64)
    groups = int(np.prod(row_shape, dtype=np.int64))
    # a constant shift per row keeps exp in range; softmax does not change with it, so no gradient is lost
    row_max = np.full(groups, -np.inf)
    np.maximum.at(row_max, group, x.values().numpy().astype(np.float64))
    shift = to_tensor(row_max[group], dtype=x.dtype)
    exps = ew.exp(ew.subtract(x.values(), shift))
    row_of = index_tensor(group)
    totals = index_add(zeros([groups], dtype=x.dtype), row_of, 0, exps)
    return x._with_values(ew.divide(exps, gather(totals, row_of)))
