"""Paddle's ``paddle.sparse``: COO and CSR sparse tensors and their math.

A sparse tensor (``SparseCooTensor``, ``SparseCsrTensor``) holds oar Tensors: its structure
(``indices``, or ``crows`` and ``cols``) and its ``values``. The structure is bookkeeping read with
numpy; the values are computed with ordinary oar ops (gather, index_add, scatter_nd, matmul), so
gradients flow through them to the values and the dense operands they came from, and ``x.grad`` is
a sparse tensor of ``x``'s structure. ``to_dense`` is a scatter, so it is differentiable too.

>>> import oar
>>> x = oar.sparse.sparse_coo_tensor([[0, 1, 2], [1, 2, 0]], [1.0, 2.0, 3.0], [3, 3], stop_gradient=False)
>>> y = oar.sparse.matmul(x, oar.ones([3, 2]))
>>> y.sum().backward()
>>> x.grad.values().numpy().tolist()
[2.0, 2.0, 2.0]

Where oar differs from Paddle:

- the sparse tensors are their own classes, not ``oar.Tensor``; dense to sparse is
  ``oar.sparse.to_sparse_coo(x, sparse_dim)`` / ``oar.sparse.to_sparse_csr(x)`` (Paddle's dense
  Tensor methods ``x.to_sparse_coo``/``x.to_sparse_csr``);
- ``matmul``, ``masked_matmul``, ``mv`` and ``addmm`` run on the CPU (Paddle 3.3.1 has them on GPU
  only); sparse @ sparse stores the product's structural entries; ``masked_matmul`` takes a COO mask
  as well as a CSR one;
- ``to_dense`` sums repeated indices (Paddle keeps one of them); ``sum`` over all entries of a COO
  tensor gives indices [[0]] and values [total] (Paddle: indices [0], values a 0-D total); ``sum``
  takes one axis (Paddle silently sums the first of a list);
- bad input raises ``oar.errors`` exceptions: indices out of range (also negative ones, which
  Paddle accepts), CSR ``crows`` that do not start at 0 or decrease, or ``cols`` out of range
  (Paddle stores them unchecked); sparse-dense ``add``/``subtract``/``multiply``/``divide`` and
  mixed COO/CSR operands raise ArgumentError (Paddle: unimplemented on CPU);
- the structure (indices, crows, cols) is read with numpy, not traced by ``to_static``; only the
  values are computed with oar ops.
- ``pca_lowrank`` densifies: it is ``oar.linalg.pca_lowrank`` of ``x.to_dense()``.

Not here: ``oar.sparse.nn`` has the activations (``relu``, ``relu6``, ``leaky_relu``, ``softmax``)
but no sparse convolution, pooling or attention.
"""

from __future__ import annotations

from oar.sparse import nn
from oar.sparse._math import (
    abs,
    add,
    addmm,
    asin,
    asinh,
    atan,
    atanh,
    cast,
    coalesce,
    deg2rad,
    divide,
    expm1,
    is_same_shape,
    isnan,
    log1p,
    mask_as,
    masked_matmul,
    matmul,
    multiply,
    mv,
    neg,
    pca_lowrank,
    pow,
    rad2deg,
    reshape,
    sin,
    sinh,
    slice,
    sqrt,
    square,
    subtract,
    sum,
    tan,
    tanh,
    transpose,
)
from oar.sparse._tensor import (
    SparseCooTensor,
    SparseCsrTensor,
    SparseTensor,
    sparse_coo_tensor,
    sparse_csr_tensor,
    to_sparse_coo,
    to_sparse_csr,
)

__all__ = [
    "SparseCooTensor", "SparseCsrTensor", "SparseTensor", "abs", "add", "addmm", "asin", "asinh", "atan",
    "atanh", "cast", "coalesce", "deg2rad", "divide", "expm1", "is_same_shape", "isnan", "log1p", "mask_as",
    "masked_matmul", "matmul", "multiply", "mv", "neg", "nn", "pca_lowrank", "pow", "rad2deg", "reshape",
    "sin", "sinh", "slice", "sparse_coo_tensor", "sparse_csr_tensor", "sqrt", "square", "subtract", "sum",
    "tan", "tanh", "to_sparse_coo", "to_sparse_csr", "transpose",
]

# Paddle's Tensor methods that have a sparse meaning, bound on the sparse classes (not on oar.Tensor).
METHODS = {
    name: globals()[name]
    for name in ("abs", "add", "addmm", "asin", "asinh", "atan", "atanh", "deg2rad", "divide", "expm1",
                 "is_same_shape", "isnan", "log1p", "matmul", "multiply", "mv", "neg", "pow", "rad2deg",
                 "reshape", "sin", "sinh", "slice", "sqrt", "square", "subtract", "sum", "tan", "tanh",
                 "transpose")
}
METHODS.update({
    "cast": lambda self, dtype: cast(self, value_dtype=dtype),
    "astype": lambda self, dtype: cast(self, value_dtype=dtype),
    "__add__": add, "__sub__": subtract, "__mul__": multiply, "__rmul__": multiply, "__truediv__": divide,
    "__matmul__": matmul, "__neg__": neg,
})
for _name, _method in METHODS.items():
    setattr(SparseTensor, _name, _method)
