"""The op table: every registered op against numpy, its meta, and finite differences."""

from __future__ import annotations

import pytest

from oar.plugins import registries
from oar.testing import check_forward, check_grad, check_output

from .op_cases import all_cases

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_forward_noncontiguous(case):
    check_output(case, case.dtypes[0], contiguous=False)


GRAD_CASES = [c for c in CASES if c.grad]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c.id for c in GRAD_CASES])
def test_gradient(case):
    check_grad(case)


def core_ops():
    ops = registries().ops
    return {name: op for name, op in ops.items() if ops.source_of(name) == "oar.core"}


def test_every_core_op_has_a_case():
    covered = {c.op for c in CASES}
    missing = sorted(set(core_ops()) - covered - {"to_device"})  # to_device needs a second backend
    assert not missing, f"ops with no case in tests/core/op_cases: {missing}"


def test_every_op_is_complete():
    """Every op has a meta function, a reference kernel, and a gradient rule or 'nondiff'."""
    for name, op in registries().ops.items():
        assert callable(op.meta), name
        assert callable(op.reference), name
        assert op.grad is not None or "nondiff" in op.traits, f"op {name!r} has no gradient rule and is not marked nondiff"


def test_differentiable_cases_have_grad_checks():
    for name, op in core_ops().items():
        if "nondiff" in op.traits or name == "to_device":
            continue
        assert any(c.op == name and c.grad for c in CASES), f"op {name!r} has no gradient case"
