"""oar-nn's op table: every op nn registers against numpy, its meta, finite differences, and
to_static against eager (``oar.testing.op_table_tests``)."""

from __future__ import annotations

from oar.plugins import registries
from oar.testing import op_table_tests

from .op_cases import all_cases

globals().update(op_table_tests(all_cases(), source="nn"))


def test_nn_registers_its_ops_through_the_plugin_hook():
    from oar.nn.functional import ALL_OPS

    ops = registries().ops
    assert {op.name for op in ALL_OPS} == {name for name in ops if ops.source_of(name) == "nn"}
