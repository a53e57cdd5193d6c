"""Core's op definitions (layer 2), one module per family. ``ALL_OPS`` lists every op core
registers; ``tensor_methods`` (imported by ``oar/__init__.py``) binds them to ``oar.Tensor``.

Each family imports only the families listed before it in ``FAMILIES`` (shape and reduction,
whose gradients are each other, are the one pair that import both ways):
``tests/core/test_layering.py`` checks it.
"""

from __future__ import annotations

from oar._ops import (
    assign,
    compat,
    complex,
    creation,
    elementwise,
    fused_elementwise,
    indexing,
    inplace,
    linalg,
    linalg_ext,
    manipulation,
    random,
    reduction,
    shape,
    special,
    statistics,
)

FAMILIES = (creation, shape, reduction, indexing, elementwise, fused_elementwise, linalg, random, assign, inplace,
            linalg_ext, special, manipulation, statistics, complex, compat)
ALL_OPS = [op for family in FAMILIES for op in family.OPS]
