"""Core's and nn's op tables on the gpu: every row whose op has a gpu kernel gives the cpu's
reference results, forward and gradient, in float32 (and float16/bfloat16 for elementwise ops),
running the Triton kernels in the interpreter.

A row's gradient needs a gpu kernel for every op its gradient rule dispatches; where one is not
written yet the backward must stop with the error that names it (``MISSING_FOR_GRADIENT``), never
fall back to the cpu.
"""

from __future__ import annotations

import pytest
from oar_triton.kernels import KERNEL_MODULES
from triton_test_support import assert_same, op_cases, run_case

from oar.errors import DTypeError
from oar.plugins import registries
from oar.testing import record_ops

GPU_OPS = {op for ops in KERNEL_MODULES.values() for op in ops}


def _makes_complex(case) -> bool:
    """Whether the row computes with complex numbers (its inputs, or tensors it builds with
    ``oar.complex``): the gpu has no complex dtypes (test_backend.py checks the refusal)."""
    if any(a.dtype.kind == "c" for a in case.inputs):
        return True
    with record_ops(check_meta=False) as recorder:
        run_case(case, "float32", "cpu", grad=False)
    return bool(recorder.ops & {"complex", "as_complex"})


# Kernels whose behaviour the op table cannot compare with the cpu's: where they are tested instead.
TESTED_ELSEWHERE = {"to_device": "test_backend.py"}
# The gpu draws its random numbers with its own generator: test_random.py checks their distribution.
TESTED_ELSEWHERE.update({op: "test_random.py" for op in GPU_OPS if "random" in registries().ops.get(op).traits})
CASES = [c for c in op_cases() if c.op in GPU_OPS and c.op not in TESTED_ELSEWHERE and not _makes_complex(c)]
# Rows whose gradient rule dispatches an op without a gpu kernel yet: op -> the op the error names.
MISSING_FOR_GRADIENT: dict[str, str] = {}
HALF_OPS = set(KERNEL_MODULES["oar_triton.kernels.elementwise"])


def test_each_op_has_its_gpu_kernel_in_one_family():
    # two families registering one op at one priority: the first silently wins and the other is dead code
    families = {}
    for module, ops in KERNEL_MODULES.items():
        for op in ops:
            families.setdefault(op, []).append(module)
    assert {op: m for op, m in families.items() if len(m) > 1} == {}


def test_every_gpu_kernel_has_op_cases():
    untested = GPU_OPS - {c.op for c in CASES} - set(TESTED_ELSEWHERE)
    assert not untested, f"gpu kernels without an op case: {sorted(untested)}"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_forward(case):
    dtypes = ["float32"] + (["float16", "bfloat16"] if case.op in HALF_OPS and "float16" in case.dtypes else [])
    for dtype in dtypes:
        got, _ = run_case(case, dtype, "gpu", grad=False)
        expected, _ = run_case(case, dtype, "cpu", grad=False)
        assert_same(got, expected, dtype, f"{case.id} [{dtype}] forward")


GRAD_CASES = [c for c in CASES if c.grad]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c.id for c in GRAD_CASES])
def test_gradient(case):
    if case.op in MISSING_FOR_GRADIENT:
        with pytest.raises(DTypeError, match=f"op '{MISSING_FOR_GRADIENT[case.op]}' has no kernel on backend 'gpu' for float32"):
            run_case(case, "float32", "gpu", grad=True)
        return
    _, got = run_case(case, "float32", "gpu", grad=True)
    _, expected = run_case(case, "float32", "cpu", grad=True)
    assert_same(got, expected, "float32", f"{case.id} gradient", terms=max(a.size for a in case.inputs))
