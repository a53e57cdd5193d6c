"""``embedding_grad``: the scatter-add of the output gradient's rows into the table's rows.

The reference sorts the ids and sums runs of equal ids (``argsort`` + ``add.reduceat``). Here the
rows are added in order of occurrence, in one pass on the calling thread: split among threads
(by columns, so that no two write one element) it ran slower at 2 threads than at 1, the threads
taking turns at the page faults of the freshly zeroed table. An id outside the table goes to the
reference, which decides what happens to it.
"""

from __future__ import annotations

import numpy as np

from oar.nn.functional import common as _ref
from oar_numba._jit import serial


@serial
def _scatter_rows(g, ids, out):
    count, dim = g.shape
    for i in range(count):
        row = ids[i]
        for j in range(dim):
            out[row, j] += g[i, j]


def embedding_grad(g, ids, num_embeddings, padding_idx):
    flat = np.ascontiguousarray(ids).reshape(-1)
    if flat.size == 0 or flat.min() < 0 or flat.max() >= num_embeddings:
        return _ref._embedding_grad_kernel(g, ids, num_embeddings, padding_idx)
    dim = g.shape[-1]
    out = np.zeros((num_embeddings, dim), g.dtype)
    _scatter_rows(np.ascontiguousarray(g).reshape(-1, dim), flat.astype(np.int64, copy=False), out)
    if padding_idx >= 0:
        out[padding_idx] = 0
    return out
