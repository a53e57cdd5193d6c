"""Core's op definitions, one module per family. ``ALL_OPS`` lists every op core registers."""

from __future__ import annotations

from oar._ops import (
    assign,
    control_flow,
    creation,
    elementwise,
    indexing,
    inplace,
    linalg,
    random,
    reduction,
    shape,
)

FAMILIES = (creation, elementwise, reduction, shape, indexing, linalg, random, assign, inplace, control_flow)
ALL_OPS = [op for family in FAMILIES for op in family.OPS]
