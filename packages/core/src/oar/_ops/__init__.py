"""Core's op definitions, one module per family. ``ALL_OPS`` lists every op core registers."""

from __future__ import annotations

from oar._ops import creation, elementwise, reduction, shape

ALL_OPS = [*elementwise.OPS, *reduction.OPS, *shape.OPS, *creation.OPS]
