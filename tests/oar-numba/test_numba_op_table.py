"""oar-nn's op table with oar-numba installed: every op with a numba kernel passes the same forward,
non-contiguous and finite-difference checks as its reference, and the numba kernel is the one
dispatched for float32 and float64."""

from __future__ import annotations

import numpy as np
import pytest
from numba_test_support import nn_op_cases
from oar_numba import KERNELS

from oar.plugins import registries
from oar.testing import check_grad, check_output, record_ops

# Ops whose gradient rule dispatches a covered op: their cases check that op's kernel too.
GRADIENT_OF = {"embedding": "embedding_grad", "softmax": "softmax_grad", "adaptive_avg_pool": "adaptive_avg_pool_grad",
               "relu": "relu_grad", "log_softmax": "log_softmax_grad", "avg_pool": "avg_pool_grad",
               "group_norm": "group_norm_grad"}
CASES = [c for c in nn_op_cases() if c.op in KERNELS or GRADIENT_OF.get(c.op) in KERNELS]
GRAD_CASES = [c for c in CASES if c.grad]


def test_every_numba_kernel_has_op_cases():
    tested = {c.op for c in CASES} | {GRADIENT_OF[c.op] for c in GRAD_CASES if c.op in GRADIENT_OF}
    assert set(KERNELS) <= tested, f"numba kernels without an op case: {sorted(set(KERNELS) - tested)}"


def _forget_resolved_kernels():
    for name in KERNELS:
        registries().ops.get(name)._kernels.clear()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_forward(case):
    for dtype in case.dtypes:
        _forget_resolved_kernels()
        with record_ops() as rec:
            check_output(case, dtype, recorder=rec)
        assert case.op in rec.ops
        if case.op in KERNELS and dtype in ("float32", "float64"):
            # resolved on this call and cached by the dispatcher: the numba kernel ran. The key is
            # the first input's dtype: the dtype under test, or its own (int8) when not a float.
            first = case.inputs[0].dtype
            key = np.dtype(dtype) if first.kind == "f" else first
            assert registries().ops.get(case.op)._kernels[("cpu", key)] is KERNELS[case.op]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_forward_noncontiguous(case):
    check_output(case, case.dtypes[0], contiguous=False)


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c.id for c in GRAD_CASES])
def test_gradient(case):
    _forget_resolved_kernels()
    check_grad(case)
    backward_op = GRADIENT_OF.get(case.op)
    if backward_op is not None:
        assert registries().ops.get(backward_op)._kernels[("cpu", np.dtype("float64"))] is KERNELS[backward_op]
