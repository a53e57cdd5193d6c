"""oar-nn's op table: every op nn registers against numpy, its meta, and finite differences."""

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


def nn_ops():
    ops = registries().ops
    return {name: op for name, op in ops.items() if ops.source_of(name) == "nn"}


def test_nn_registers_its_ops_through_the_plugin_hook():
    from oar.nn.functional import ALL_OPS

    assert {op.name for op in ALL_OPS} == set(nn_ops())


def test_every_nn_op_has_a_case():
    missing = sorted(set(nn_ops()) - {c.op for c in CASES})
    assert not missing, f"nn ops with no case in tests/nn/op_cases: {missing}"


def test_differentiable_nn_ops_have_grad_cases():
    for name, op in nn_ops().items():
        if "nondiff" in op.traits:
            continue
        assert any(c.op == name and c.grad for c in CASES), f"nn op {name!r} has no gradient case"
