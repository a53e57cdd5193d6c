"""oar-core's op table through ONNX Runtime: each case exported alone, run by ORT, equal to eager
within float32 tolerance (``onnx_test_support.parity_tests``); then what the table cannot show:
the cases that need a newer opset than the default, the opset branches of the lowerings (13 and
the newest opset ONNX Runtime runs), numpy's indexing rules beyond the table's rows, edge values
(nan, inf, zero divisors, tiny log1p arguments) and the node sequences written."""

from __future__ import annotations

import functools

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper
from onnx_test_support import core_op_cases, export_and_compare, float32_inputs, parity_tests

import oar
from oar.onnx import ExportError
from oar.static import InputSpec

OPSET_18 = "needs opset 18 (integer Bitwise*, ScatterElements' min/max) and the table runs at the default 17; " \
           "test_cases_that_need_opset_18_match_eager_there runs it at 18"
TRACED_ON_ZEROS = "to_static traces an InputSpec with zero-filled integer inputs, and integer division by zero " \
                  "raises; test_integer_floor_divide_and_remainder_floor_as_python covers the lowering"
COMPLEX = "the case makes a complex tensor (oar.complex), which ONNX Runtime has no kernels for"
NEED_OPSET_18 = ["bitwise_and", "bitwise_or", "ror_scalar", "bitwise_xor", "bitwise_not", "put_along_axis_amin_self",
                 "put_along_axis_amin_no_self", "put_along_axis_amax_self", "put_along_axis_amax_no_self"]

NOT_EXPORTED = {
    "floor_divide_int_operator": TRACED_ON_ZEROS,
    "rfloordiv_int": TRACED_ON_ZEROS,
    "remainder_int_operator": TRACED_ON_ZEROS,
    "matmul_reflected_operator": "the function reads a tensor into numpy (x.numpy() @ y): a graph break, no program",
    **{case_id: COMPLEX for case_id in ("abs_complex", "multiply_complex_by_real", "divide_complex", "exp_complex",
                                        "sqrt_complex", "pow_complex", "add_subtract_complex")},
    **{case_id: OPSET_18 for case_id in NEED_OPSET_18},
}

globals().update(parity_tests(core_op_cases(), not_exported=NOT_EXPORTED))


@functools.cache
def cases_by_id() -> dict:
    return {c.id: c for c in core_op_cases()}


@functools.cache
def newest_runtime_opset() -> int:
    """The newest opset both the installed onnx and ONNX Runtime know."""
    for opset in range(onnx.defs.onnx_opset_version(), 12, -1):
        graph = helper.make_graph([helper.make_node("Abs", ["x"], ["y"])], "probe",
                                  [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])],
                                  [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = min(onnx.IR_VERSION, 10)
        try:
            ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
            return opset
        except Exception:  # noqa: BLE001 - ORT refuses an opset it does not know
            continue
    raise AssertionError("ONNX Runtime runs no opset >= 13")


def run_case(case_id: str, tmp_path, opset: int) -> onnx.ModelProto:
    case = cases_by_id()[case_id]
    return export_and_compare(case.fn, float32_inputs(case), tmp_path, rtol=case.rtol, atol=case.atol, opset=opset)


def op_types(model: onnx.ModelProto) -> list[str]:
    return [n.op_type for n in model.graph.node]


@pytest.mark.parametrize("case_id", NEED_OPSET_18)
def test_cases_that_need_opset_18_match_eager_there(case_id, tmp_path):
    run_case(case_id, tmp_path, 18)


@pytest.mark.parametrize("case_id", ["bitwise_and", "put_along_axis_amax_self"])
def test_an_op_that_needs_a_newer_opset_says_which(case_id, tmp_path):
    with pytest.raises(ExportError, match=r"needs opset 18 or newer \(got 17\)"):
        run_case(case_id, tmp_path, 17)


# -- opset branches -------------------------------------------------------------------------------
# (case, the op type of its opset-13 form, of its newer form, the opset of the newer form)
BRANCHES = [
    ("mean_axes_keepdim", "ReduceMean", "ReduceMean", 18),  # axes: an attribute before 18, an input from 18
    ("sum_keepdim", "ReduceSum", "ReduceSum", 13),
    ("var_axes_keepdim", "ReduceSum", "ReduceSum", 18),
    ("squeeze_ignores_non_1_axis", "Squeeze", "Squeeze", 13),
    ("split_inferred_section", "Split", "Split", 13),
    ("tril_batched_upper_diagonal", "Where", "Trilu", 14),
    ("tril_bool", "And", "Trilu", 14),
    ("pad_circular", "Concat", "Pad", 19),  # Pad(mode='wrap')
    ("cumprod_zeros", "ReduceProd", "CumProd", 26),
    ("remainder", "Where", "Mod", 28),  # Mod's floored form for floats
    ("all_int_axis", "ReduceMin", "ReduceMin", 20),  # bool ReduceMin
    ("any_bool_axis", "ReduceSum", "ReduceMax", 20),
    ("max_int", "ReduceMax", "ReduceMax", 18),
    ("median_axis_even_keepdim", "TopK", "TopK", 18),
    ("norm_3", "ReduceSum", "ReduceSum", 13),
    ("getitem_separated_advanced", "GatherND", "GatherND", 13),
    ("reshape_empty", "Reshape", "Reshape", 13),
    ("one_hot", "OneHot", "OneHot", 13),
]


@pytest.mark.parametrize("case_id,old_form,new_form,since", BRANCHES, ids=[b[0] for b in BRANCHES])
def test_a_lowering_writes_opset_13_and_the_newest_opset(case_id, old_form, new_form, since, tmp_path):
    newest = newest_runtime_opset()
    assert newest > 13, f"ONNX Runtime {ort.__version__} runs opset 13 only"
    old = run_case(case_id, tmp_path / "old", 13)
    new = run_case(case_id, tmp_path / "new", newest)
    assert old.opset_import[0].version == 13 and new.opset_import[0].version == newest
    assert old_form in op_types(old), op_types(old)
    assert (new_form if newest >= since else old_form) in op_types(new), op_types(new)


def test_the_reduce_axes_move_from_attribute_to_input_at_opset_18(tmp_path):
    (old,) = run_case("mean_axes_keepdim", tmp_path / "old", 17).graph.node
    (new,) = run_case("mean_axes_keepdim", tmp_path / "new", 18).graph.node
    assert "axes" in [a.name for a in old.attribute] and len(old.input) == 1
    assert "axes" not in [a.name for a in new.attribute] and len(new.input) == 2


# -- arithmetic at its edges -------------------------------------------------------------------------
def test_integer_floor_divide_and_remainder_floor_as_python(tmp_path):
    # The divisors are 2y + 1: odd, never zero (tracing feeds zeros), both signs.
    x = np.array([[-7, 7, -9, 0, 5, -1]], np.int64)
    y = np.array([[1, -2, 1, 2, -3, 0]], np.int64)
    model = export_and_compare(lambda a, b: (a // (b * 2 + 1), a % (b * 2 + 1), 7 // (b * 2 + 1)), [x, y], tmp_path)
    assert "Round" not in op_types(model)  # integers: Mod and an exact Div, nothing of the float form
    x32 = np.array([-7, 7, 100, -100], np.int32)
    export_and_compare(lambda a: (a // 3, a % -3), [x32], tmp_path, name="int32")


def test_float_floor_divide_and_remainder_are_numpys_on_hard_values(tmp_path):
    x = np.array([1.0, -1.0, 7.5, -7.5, 0.0, 3.0, np.inf, 5.0, -5.0, np.nan], np.float32)
    y = np.array([0.1, 0.1, -2.0, 2.0, -3.0, 0.0, 2.0, np.inf, np.inf, 1.0], np.float32)
    with np.errstate(all="ignore"):
        expected = np.floor_divide(x, y), np.remainder(x, y)
    assert expected[0][0] == 9.0  # 1 // 0.1: floor(1 / 0.1) would say 10
    for opset in (17, 28):
        export_and_compare(lambda a, b: (oar.floor_divide(a, b), oar.remainder(a, b)), [x, y], tmp_path,
                           name=f"opset{opset}", opset=opset, rtol=1e-6, atol=1e-6)
        sess = ort.InferenceSession(str(tmp_path / f"opset{opset}.onnx"), providers=["CPUExecutionProvider"])
        got = sess.run(None, {"x0": x, "x1": y})
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g, e)


def test_constant_divisors_need_no_sign_test(tmp_path):
    x = np.array([-7.5, 7.5, -0.5, 3.0], np.float32)
    model = export_and_compare(lambda a: a % 2.0, [x], tmp_path)
    assert op_types(model) == ["Mod", "Less", "Add", "Where"]


def test_log1p_keeps_the_digits_of_tiny_arguments(tmp_path):
    x = np.array([1e-10, -1e-8, 3e-7, 0.5, -0.5, 10.0, -1.0, np.inf, 0.0], np.float32)
    with np.errstate(divide="ignore"):  # log1p(-1) is -inf
        export_and_compare(oar.log1p, [x], tmp_path, rtol=1e-6, atol=1e-30)  # log(1 + 1e-10) would be 0


def test_nan_and_inf_go_where_numpy_puts_them(tmp_path):
    x = np.array([[3.0, np.nan, -1.0, np.inf, 2.0], [1.0, 4.0, -np.inf, 0.5, 2.0]], np.float32)
    export_and_compare(lambda a: (oar.sort(a), oar.sort(a, descending=True), oar.argsort(a), oar.median(a, axis=1),
                                  oar.median(a, axis=1, mode="min"), oar.trunc(a), oar.isfinite(a)), [x], tmp_path,
                       rtol=1e-6, atol=1e-6)


def test_more_dtypes_and_attributes_than_the_table_has(tmp_path):
    rng = np.random.default_rng(4)
    b1, b2 = rng.random((2, 3)) > 0.5, rng.random(3) > 0.5
    u8 = np.array([0, 1, 200], np.uint8)
    i8 = np.array([-128, -3, 7, 127], np.int8)
    ints = np.array([15, 25, -15, -25, 14], np.int64)
    f = (rng.standard_normal(5) * 300).astype(np.float32)

    def fn(b1, b2, u8, i8, ints, f):
        return (b1 > b2, b1 <= b2, -u8, oar.clip(i8, -1000, 5.5), oar.round(ints, -1), oar.round(f, -2),
                oar.max(b1, axis=1), oar.min(b1), oar.argmax(b1, axis=0), oar.norm(f[0]), oar.norm(f[1], p=0))

    for opset in (17, 20):
        export_and_compare(fn, [b1, b2, u8, i8, ints, f], tmp_path, name=f"opset{opset}", opset=opset)


def test_constant_indices_with_repeats_keep_the_last_write(tmp_path):
    rng = np.random.default_rng(5)
    x, u = rng.standard_normal((3, 2)).astype(np.float32), rng.standard_normal((4, 2)).astype(np.float32)
    rows = oar.to_tensor([1, -2, 0, 2])  # rows 1 and -2 are the same row
    model = export_and_compare(lambda a, b: oar.scatter(a, rows, b), [x, u], tmp_path)
    scatter_nd, = [n for n in model.graph.node if n.op_type == "ScatterND"]
    assert [n.op_type for n in model.graph.node if scatter_nd.input[2] in n.output] == ["Gather"]  # the kept rows
    index = oar.to_tensor([[0, 0], [1, 1], [0, 1]])
    export_and_compare(lambda a: oar.put_along_axis(a, index, 5.0, 1), [x], tmp_path, name="put")


def test_repeated_run_time_indices_take_the_value_of_their_last_writer(tmp_path):
    # ONNX leaves repeated writes undefined: each repeated position is first given its last value
    rng = np.random.default_rng(6)
    x, u = rng.standard_normal((3, 2)).astype(np.float32), rng.standard_normal((4, 2)).astype(np.float32)
    model = export_and_compare(oar.scatter, [x, np.array([1, 1, 0, -2]), u], tmp_path)
    assert {"Equal", "ReduceMax"} <= set(op_types(model))
    scatter_nd, = [n for n in model.graph.node if n.op_type == "ScatterND"]
    assert [n.op_type for n in model.graph.node if scatter_nd.input[2] in n.output] == ["Gather"]


# -- numpy's indexing rules ----------------------------------------------------------------------------
X = np.random.default_rng(7).standard_normal((4, 3, 5, 2)).astype(np.float32)
IDX0 = np.array([3, 0, -1, 3])  # dim 0, with a repeat and a negative index
IDX2 = np.array([[1, 4], [-5, 1]])  # dim 2, 2-d
IDX2B = np.array([0, 4, 2, -1])  # dim 2, the length of IDX0
M1 = np.array([True, False, True])  # dim 1
M2 = np.random.default_rng(8).random((4, 3)) > 0.4  # dims 0 and 1
ZERO = np.array(1, np.int64)  # a 0-d index

GETITEMS = {
    "ints_and_slices": (lambda x: x[1, ::-2, 1:4], []),
    "none_and_ellipsis": (lambda x: x[None, ..., 0, None], []),
    "0d_index_tensor": (lambda x, t: x[:, t], [ZERO]),
    "array_dim0": (lambda x, i: x[i], [IDX0]),
    "2d_array_dim2": (lambda x, j: x[:, :, j], [IDX2]),
    "arrays_apart_go_first": (lambda x, i, k: x[i, :, k], [IDX0, IDX2B]),
    "arrays_broadcast": (lambda x, i, k: x[i[:2, None], 1:, k[:3]], [IDX0, IDX2B]),
    "arrays_adjacent_stay": (lambda x, j: x[1:3, [0, 2, -1], j.reshape([-1])[:3]], [IDX2]),
    "int_and_array_apart": (lambda x, j: x[0, :, j], [IDX2]),
    "int_and_array_adjacent": (lambda x, j: x[:, 0, j], [IDX2]),
    "none_between_arrays": (lambda x, i, k: x[i, None, :, k], [IDX0, IDX2B]),
    "mask_2d": (lambda x, m: x[m], [M2]),
    "mask_dim1": (lambda x, m: x[:, m], [M1]),
    "mask_and_int": (lambda x, m: x[m, 0], [M2]),
    "mask_and_array": (lambda x, m: x[m[:, 0], :, [1]], [M2]),
    "python_true": (lambda x: x[True], []),
    "int_and_python_true": (lambda x: x[0, True], []),
}


@pytest.mark.parametrize("name", list(GETITEMS))
def test_getitem_follows_numpy(name, tmp_path):
    fn, indices = GETITEMS[name]
    export_and_compare(fn, [X] + indices, tmp_path)


SETITEMS = {  # the index (of the index tensors), the value's shape, the index tensors
    "row_reversed": (lambda: (1, slice(None, None, -1)), (3, 5, 2), []),
    "whole": (lambda: Ellipsis, (2,), []),
    "array_repeats_last_wins": (lambda i: i, (4, 3, 5, 2), [IDX0]),
    "arrays_apart": (lambda i, k: (i, slice(None), k), (1, 3, 1), [IDX0, IDX2B]),
    "mask": (lambda m: m, (), [M2]),
    "mask_rows": (lambda m: (slice(None), m), (2,), [M1]),
    "constant_index_repeats": (lambda: ([0, 2, 0], 1), (3, 5, 2), []),
}


@pytest.mark.parametrize("name", list(SETITEMS))
def test_setitem_follows_numpy(name, tmp_path):
    key, value_shape, indices = SETITEMS[name]
    value = np.random.default_rng(9).standard_normal(value_shape).astype(np.float32)

    def fn(x, v, *index):
        y = x.clone()
        y[key(*index)] = v
        return y

    export_and_compare(fn, [X, value] + indices, tmp_path)


# -- what is written ---------------------------------------------------------------------------------
def _ops_of(fn, inputs, tmp_path, opset: int = 17) -> list[str]:
    return op_types(export_and_compare(fn, inputs, tmp_path, opset=opset))


def test_ops_that_return_their_input_write_no_node(tmp_path):
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    fn = lambda a: oar.assign(a).astype("float32").transpose([0, 1]).reshape([2, 3]).squeeze().clip() * 2.0  # noqa: E731
    assert _ops_of(fn, [x], tmp_path) == ["Mul"]


def test_small_node_sequences(tmp_path):
    x = np.random.default_rng(2).standard_normal((2, 3)).astype(np.float32)
    assert _ops_of(lambda a: oar.stack([a, a, a], axis=1), [x], tmp_path / "stack") == ["Concat", "Reshape"]
    assert _ops_of(lambda a: oar.flip(a, [0, 1]), [x], tmp_path / "flip") == ["Slice"]
    assert _ops_of(lambda a: a ** 2, [x], tmp_path / "square") == ["Mul"]
    assert _ops_of(lambda a: oar.matmul(a, a, transpose_y=True), [x], tmp_path / "gemm") == ["Gemm"]
    assert _ops_of(lambda a: oar.sort(a, axis=0), [x], tmp_path / "sort") == ["TopK"]
    assert _ops_of(lambda a: oar.full_like(a, 3.0) + a, [x], tmp_path / "fill") == ["Add"]


def test_a_dynamic_batch_runs_at_every_size(tmp_path):
    spec = [InputSpec([None, 3], "float32", "x")]
    fn = lambda a: (oar.squeeze(oar.unsqueeze(a, 0), 0), oar.sort(a, axis=0), a[:, 1:], oar.cumsum(a, axis=0),  # noqa: E731
                    oar.full_like(a, 2.0), oar.var(a, axis=1))
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    export_and_compare(fn, [x], tmp_path, specs=spec, feeds_for=[[rng.standard_normal((5, 3)).astype(np.float32)],
                                                                  [rng.standard_normal((1, 3)).astype(np.float32)]])
