"""The op table: every op core registers against numpy, its meta, finite differences, and
to_static against eager (``oar.testing.op_table_tests``)."""

from __future__ import annotations

from oar.plugins import registries
from oar.testing import op_table_tests

from .op_cases import all_cases

globals().update(op_table_tests(
    all_cases(), source="oar.core",
    uncovered=["to_device"],  # a copy to another backend: oar-core alone has only cpu
    breaks={"matmul_reflected_operator": "x.numpy() @ y"},  # the case's function reads a tensor into Python
))


def test_every_op_is_complete():
    """Every op has a meta function, a reference kernel, and a gradient rule or 'nondiff'."""
    for name, op in registries().ops.items():
        assert callable(op.meta), name
        assert callable(op.reference), name
        assert op.grad is not None or "nondiff" in op.traits, f"op {name!r} has no gradient rule and is not marked nondiff"
