"""Shared by oar-onnx's tests: the op tables of core and nn (loaded by path), and the parity check
that exports a function through ``oar.onnx.export`` and runs the file in ONNX Runtime.

The tests run in a virtual environment holding only oar-onnx and its dependencies (nox's
``tests_isolated``), where the repository's ``tests`` package is not importable: the op-case
modules are loaded from their files instead (``oar.testing.op_table_from``).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

import oar
import oar.onnx
from oar.static import InputSpec
from oar.testing import op_table_from, sum_tolerance

REPO = Path(__file__).resolve().parents[2]


def core_op_cases() -> list:
    return op_table_from(REPO / "tests" / "core" / "op_cases", "oar_core_op_cases")


def nn_op_cases() -> list:
    return op_table_from(REPO / "tests" / "nn" / "op_cases", "oar_nn_op_cases")


def session(path: str) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # the tests run two at a time on two cores
    options.inter_op_num_threads = 1
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def flat_outputs(out) -> list[np.ndarray]:
    """The tensors of a function's output, in the order the exported model lists them."""
    from oar.static.passes import output_tensors

    return [np.asarray(t.numpy()) for t in output_tensors(out)]


def tolerance(expected: list[np.ndarray], inputs, dtype: str = "float32") -> tuple[float, float]:
    """A sum's tolerance: as many terms as the largest input has elements, at the outputs' scale."""
    terms = max([int(np.asarray(a).size) for a in inputs] + [1])
    # The largest finite |value|: an output holding -inf (max pooling of windows only in padding)
    # must not make the tolerance infinite.
    scale = max([float(np.max(np.abs(e[np.isfinite(e)]))) for e in expected
                 if e.size and e.dtype.kind == "f" and np.isfinite(e).any()] + [1.0])
    return sum_tolerance(dtype, terms=terms, scale=scale)


def export_and_compare(fn, inputs, folder, *, specs=None, opset: int = 17, feeds_for=None, rtol=None,
                       atol=None, name: str = "model") -> onnx.ModelProto:
    """Export ``fn`` (a function of tensors or a Layer) at ``inputs`` (numpy arrays), check the file
    with onnx's full checker, run it in ONNX Runtime on ``inputs`` (and on each list of arrays in
    ``feeds_for``) and compare with oar eager; returns the loaded model."""
    specs = specs or [InputSpec.from_numpy(a, name=f"x{i}") for i, a in enumerate(inputs)]
    static = oar.jit.to_static(fn, input_spec=specs, full_graph=True) if not hasattr(fn, "forward") else fn
    path = os.path.join(str(folder), name)
    oar.onnx.export(static, path, input_spec=specs if hasattr(fn, "forward") else None, opset_version=opset)
    model = onnx.load(path + ".onnx")
    onnx.checker.check_model(model, full_check=True)
    sess = session(path + ".onnx")
    names = [i.name for i in sess.get_inputs()]
    for arrays in [inputs] + list(feeds_for or []):
        with oar.no_grad():
            expected = flat_outputs(fn(*[oar.to_tensor(a) for a in arrays]))
        got = sess.run(None, dict(zip(names, [np.asarray(a) for a in arrays])))
        assert len(got) == len(expected), f"{len(got)} ONNX outputs, oar gave {len(expected)}"
        r, a = tolerance(expected, arrays)
        for i, (g, e) in enumerate(zip(got, expected)):
            assert g.shape == e.shape, f"output {i}: ONNX shape {g.shape}, oar {e.shape}"
            assert g.dtype == e.dtype, f"output {i}: ONNX dtype {g.dtype}, oar {e.dtype}"
            np.testing.assert_allclose(g, e, rtol=rtol or r, atol=atol or a, err_msg=f"output {i}")
    return model


def float32_inputs(case) -> list[np.ndarray]:
    """The case's inputs with float arrays as float32 (what exported models compute in)."""
    return [a.astype(np.float32) if a.dtype.kind == "f" else a for a in case.inputs]


def exportable(case) -> bool:
    """Whether the case's op has an ONNX lowering (a case of an op without one is listed, with
    the reason, in ``oar.onnx.lowerings.NOT_LOWERED``)."""
    return oar.onnx.lowering_of(case.op) is not None


def parity_tests(cases, *, not_exported: dict[str, str] | None = None):
    """Op-table parity through ONNX Runtime, as pytest tests by name: every case whose op has a
    lowering is exported alone and matches eager; ``not_exported`` (case id -> why) names the
    cases of lowered ops that cannot stand alone as a model (a function that reads a tensor into
    Python, an input ONNX has no dtype for); every op without a lowering has a reason."""
    import pytest

    from oar.onnx.lowerings import not_lowered_ops
    from oar.testing import is_random

    not_exported = dict(not_exported or {})
    rows = [c for c in cases if exportable(c) and c.id not in not_exported and not is_random(c)]

    @pytest.mark.parametrize("case", rows, ids=[c.id for c in rows])
    def test_case_matches_eager_through_onnxruntime(case, tmp_path):
        export_and_compare(case.fn, float32_inputs(case), tmp_path, rtol=case.rtol, atol=case.atol)

    def test_every_op_has_a_lowering_or_a_reason():
        reasons = not_lowered_ops()
        missing = sorted({c.op for c in cases if not exportable(c) and c.op not in reasons})
        assert not missing, f"ops with neither an ONNX lowering nor a reason in NOT_LOWERED: {missing}"

    def test_the_named_cases_exist():
        assert set(not_exported) <= {c.id for c in cases}

    return {f.__name__: f for f in (test_case_matches_eager_through_onnxruntime, test_every_op_has_a_lowering_or_a_reason,
                                    test_the_named_cases_exist)}


def randomize_batch_norm_statistics(model) -> None:
    """Running statistics other than fresh ones (mean 0, variance 1), which would hide a wrong
    folding or conversion of batch norm."""
    rng = np.random.default_rng(11)
    for name, buffer in model.named_buffers():
        if name.endswith("_mean"):
            buffer.set_value(rng.standard_normal(buffer.shape).astype(np.float32) * 0.1)
        elif name.endswith("_variance"):
            buffer.set_value(rng.uniform(0.5, 1.5, buffer.shape).astype(np.float32))
