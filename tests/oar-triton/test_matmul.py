"""The matmul family's gpu kernels beyond the op table's rows: tiles cut by the shapes, transposed
and strided operands read in place, batch broadcasting and folding, 1-d operands, float16 /
bfloat16 / float64 and the integer products, the epilogues (bias, activations, linear_grad's
column sums, quantized_linear's zero points and scales), empty shapes, and the errors."""

from __future__ import annotations

import numpy as np
import pytest
from oar_triton.backend import BACKEND
from oar_triton.kernels import matmul as mm

import oar
import oar.nn.functional as F
from oar.errors import ArgumentError, DTypeError, ShapeError
from oar.nn.functional import common, quant
from oar.nn.functional.fused import fused_linear, fused_linear_op
from oar.nn.quant import quantized_linear
from oar.ops import dispatch, get_dtype
from oar.testing import sum_tolerance

RNG = np.random.default_rng(11)


def rand(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(get_dtype(dtype).np)


def ints(*shape, dtype="int8", low=-100, high=100):
    return RNG.integers(low, high, shape).astype(dtype)


def on_device(place: str, fn, arrays):
    previous = oar.get_device()
    oar.set_device(place)  # tensors fn makes itself (a default zero point) go there too
    try:
        return fn(*[oar.to_tensor(a) for a in arrays])
    finally:
        oar.set_device(previous)


def on_both(fn, *arrays):
    """``fn`` of tensors made from ``arrays`` on the gpu and on the cpu (outputs as numpy arrays)."""
    gpu, cpu = on_device("gpu", fn, arrays), on_device("cpu", fn, arrays)
    gpu, cpu = (gpu, cpu) if isinstance(gpu, tuple) else ((gpu,), (cpu,))
    assert all(t.place.is_gpu_place() for t in gpu)
    return [t.numpy() for t in gpu], [t.numpy() for t in cpu]


def assert_close(got, expected, terms: int, where: str = "") -> None:
    """Equal shapes and dtypes; integers exactly, floats to ``sum_tolerance`` of ``terms`` products."""
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype, f"{where}: {g.dtype}{g.shape} vs {e.dtype}{e.shape}"
        if e.dtype.kind in "biu":
            np.testing.assert_array_equal(g, e, err_msg=where)
            continue
        e64 = e.astype(np.float64)
        scale = float(np.abs(e64).max()) if e.size else 1.0
        rtol, atol = sum_tolerance(get_dtype(e.dtype).name, terms, scale)
        np.testing.assert_allclose(g.astype(np.float64), e64, rtol=rtol, atol=atol, err_msg=where)


def device(a: np.ndarray):
    return BACKEND.from_numpy(a)


def host(d) -> np.ndarray:
    return BACKEND.to_numpy(d)


# -- matmul ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("xs, ys, tx, ty", [
    ((70, 50), (50, 90), False, False),  # 2 x 2 tiles of 64, K in two steps of 32, all cut
    ((50, 70), (90, 50), True, True),
    ((3, 1, 5, 7), (4, 7, 6), False, False),  # batch dims broadcast on both sides
    ((2, 3, 37, 7), (7, 6), False, False),  # y one matrix: the batch folds into 222 rows
    ((2, 3, 7, 37), (6, 7), True, True),  # a transposed x does not fold: 6 batched products
    ((2, 2, 2, 2, 3, 4), (2, 1, 2, 1, 4, 3), False, False),  # 4 unmergeable batch dims: launched per index
    ((7,), (7,), False, False),  # 1-d . 1-d -> 0-d
    ((7,), (2, 7, 3), True, False),  # transposing a 1-d operand does nothing
    ((2, 3, 7), (7,), False, True),
    ((0, 3), (3, 2), False, False),
    ((2, 0), (0, 3), False, False),  # no products: zeros
])
def test_matmul_matches_the_cpu(xs, ys, tx, ty):
    got, expected = on_both(lambda x, y: oar.matmul(x, y, tx, ty), rand(*xs), rand(*ys))
    assert_close(got, expected, xs[-2] if tx and len(xs) > 1 else xs[-1], f"{xs} @ {ys}")


def test_strided_operands_are_read_in_place(monkeypatch):
    def no_copies(array):
        raise AssertionError(f"an operand of shape {array.shape} was copied")

    monkeypatch.setattr(mm, "contiguous", no_copies)
    base_x, base_y = rand(90, 40), rand(3, 60, 50)
    x = device(base_x).view((30, 45), (1, 80), 5)  # base_x[::2, 5:35].T: transposed and stepped
    y = device(base_y).view((3, 45, 20), (3000, 50, 2), 1)  # base_y[:, :45, 1:40:2]
    got = mm.matmul(x, y)
    np.testing.assert_allclose(host(got), base_x[::2, 5:35].T @ base_y[:, :45, 1:40:2], rtol=1e-5, atol=1e-5)
    row = device(base_x).view((4, 30, 45), (0, 1, 80), 5)  # a batch broadcast as stride 0
    got = mm.matmul(row, device(base_y[0, :45, 1:40:2].copy()))
    np.testing.assert_allclose(host(got), np.broadcast_to(base_x[::2, 5:35].T @ base_y[0, :45, 1:40:2], (4, 30, 20)),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_matmul_other_floats(dtype):
    x, y = rand(2, 70, 40, dtype=dtype), rand(40, 30, dtype=dtype)
    got, expected = on_both(oar.matmul, x, y)
    assert_close(got, expected, 40, dtype)
    got, expected = on_both(lambda a, b: oar.matmul(a, b, transpose_y=True), rand(3, 20, dtype=dtype), rand(5, 20, dtype=dtype))
    assert_close(got, expected, 20, dtype)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8"])
def test_integer_matmul_is_exact_and_wraps_as_numpy(dtype):
    x, y = ints(20, 70, dtype=dtype, low=0 if dtype == "uint8" else -100), ints(70, 9, dtype=dtype, low=0 if dtype == "uint8" else -100)
    got, expected = on_both(oar.matmul, x, y)  # int8/uint8 sums overflow and wrap
    assert_close(got, expected, 70, dtype)


def test_tf32_is_a_switch_off_by_default(monkeypatch):
    assert mm.ALLOW_TF32 is False
    assert mm.gemm_options(np.dtype(np.float32))["PRECISION"] == "ieee"
    monkeypatch.setattr(mm, "ALLOW_TF32", True)
    assert mm.gemm_options(np.dtype(np.float32))["PRECISION"] == "tf32"
    assert mm.gemm_options(np.dtype(np.float16))["PRECISION"] is None  # halves: products are exact in float32


# -- linear, linear_grad, fused_linear ------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_linear(dtype):
    x, w, b = rand(2, 33, 50, dtype=dtype), rand(50, 70, dtype=dtype), rand(70, dtype=dtype)
    got, expected = on_both(F.linear, x, w, b)
    assert_close(got, expected, 50, dtype)


@pytest.mark.parametrize("x_grad", [True, False])
def test_linear_grad_sums_the_bias_gradient_in_the_gemm(x_grad):
    g, x, w = rand(3, 30, 70), rand(3, 30, 40), rand(40, 70)  # gw: 90 rows contracted, 1 x 2 tiles
    got, expected = on_both(lambda *t: dispatch(common.linear_grad_op, t, {"x_grad": x_grad}), g, x, w)
    assert len(got) == (3 if x_grad else 2)
    assert_close(got, expected, 90)


def test_linear_grad_of_rows_whose_dims_do_not_merge():
    g, x, w = rand(30, 3, 70), rand(3, 30, 40), rand(40, 70)
    view = device(g).view((3, 30, 70), (70, 210, 1), 0)  # g.transpose(1, 0, 2): copied to one [90, 70] matrix
    g2, x2 = g.transpose(1, 0, 2).reshape(90, 70), x.reshape(90, 40)
    expected = ((g2 @ w.T).reshape(3, 30, 40), x2.T @ g2, g2.sum(axis=0))
    for out, ref in zip(mm.linear_grad(view, device(x), device(w)), expected):
        np.testing.assert_allclose(host(out), ref, rtol=1e-5, atol=1e-4)


def test_linear_grad_of_empty_shapes():
    got, expected = on_both(lambda *t: dispatch(common.linear_grad_op, t, {"x_grad": True}), rand(0, 5), rand(0, 3),
                            rand(3, 5))
    assert_close(got, expected, 1)  # no rows: gw and gb are zeros
    g = rand(4, 5)
    gx, gw, gb = mm.linear_grad(device(g), device(rand(4, 0)), device(rand(0, 5)))  # no input features
    assert host(gx).shape == (4, 0) and host(gw).shape == (0, 5)
    np.testing.assert_allclose(host(gb), g.sum(axis=0), rtol=1e-6)  # the column sums come without a gw tile


@pytest.mark.parametrize("act, act_attrs", [("relu", {}), ("gelu", {"approximate": False}), ("gelu", {"approximate": True}),
                                            ("leaky_relu", {"negative_slope": 0.2}), ("silu", {}), ("sigmoid", {}),
                                            ("tanh", {})])
def test_fused_linear_activation_epilogues(act, act_attrs):
    x, w, b = rand(70, 20), rand(20, 30), rand(30)
    got, expected = on_both(lambda *t: fused_linear(*t, act=act, act_attrs=act_attrs), x, w, b)
    assert_close(got, expected, 20, act)


def test_fused_linear_attributes():
    def run(*t, **attrs):
        return dispatch(fused_linear_op, t, {"transpose_x": False, "transpose_y": False, "act": None, "act_attrs": {}, **attrs})

    x, w = rand(4, 20), rand(30, 20)
    got, expected = on_both(lambda a, b, c: run(a, b, c, transpose_y=True, act="relu"), x, w, rand(1, 30))  # a [1, N] bias
    assert_close(got, expected, 20, "transpose_y")
    got, expected = on_both(lambda a, b: run(a, b), x, w.T.copy())  # no bias
    assert_close(got, expected, 20, "no bias")
    got, expected = on_both(lambda a, b, c: run(a, b, c), rand(2, 4, 20), rand(20), rand(4))  # 1-d weight: bias along M
    assert_close(got, expected, 20, "1-d weight")
    got, expected = on_both(lambda a, b, c: run(a, b, c, act="relu"), rand(5, 20, dtype="bfloat16"),
                            rand(20, 30, dtype="bfloat16"), rand(30, dtype="bfloat16"))
    assert_close(got, expected, 20, "bfloat16")


def test_an_activation_without_a_triton_lowering_is_refused():
    with pytest.raises(ArgumentError, match=r"fused_linear: the gpu backend has no epilogue for act='swish7'.*'relu'"):
        mm.fused_linear(device(rand(2, 3)), device(rand(3, 4)), act="swish7")
    with pytest.raises(ArgumentError, match=r"quantized_linear: the gpu backend has no epilogue for act='swish7'"):
        mm.quantized_linear(device(ints(2, 3)), device(np.float32(1)), device(np.int8(0)), device(ints(3, 4)),
                            device(np.float32(1)), device(np.int8(0)), act="swish7")


# -- int8 GEMMs -----------------------------------------------------------------------------------
def test_matmul_int8_is_exact():
    x, y = ints(70, 100, low=-128, high=128), ints(33, 100, low=-128, high=128)  # K cut by the 64-step
    got, expected = on_both(quant.matmul_int8, x, y)
    assert got[0].dtype == np.int32
    np.testing.assert_array_equal(got[0], expected[0])


@pytest.mark.parametrize("per_channel", [False, True])
def test_quantized_linear_matches_the_reference_exactly(per_channel):
    n = 70
    x, w = ints(2, 20, 100, low=-128, high=128), ints(100, n, low=-128, high=128)  # K cut by the 64-step
    w_scale = np.linspace(0.001, 0.01, n).astype(np.float32) if per_channel else np.float32(0.004)
    w_zero = ints(n, low=-5, high=5) if per_channel else np.int8(-3)
    bias = rand(n)

    def run(x, xs, xz, w, ws, wz, b):
        return quantized_linear(x, xs, w, ws, bias=b, x_zero_point=xz, weight_zero_point=wz, act="relu")

    got, expected = on_both(run, x, np.float32(0.02), np.int8(7), w, w_scale, w_zero, bias)
    assert got[0].dtype == np.float32 and got[0].shape == (2, 20, n)
    np.testing.assert_array_equal(got[0], expected[0])  # exact int32 sums, then the reference's float32 steps
    got, expected = on_both(lambda *t: quantized_linear(t[0], t[1], t[2], t[3], act="gelu",
                                                        act_attrs={"approximate": True}),
                            x[0], np.float32(0.02), w, w_scale)
    assert_close(got, expected, 1, "gelu")


# -- dot, outer -----------------------------------------------------------------------------------
@pytest.mark.parametrize("xs", [(300,), (40, 300), (0, 5), (3, 0)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_dot(xs, dtype):
    got, expected = on_both(oar.dot, rand(*xs, dtype=dtype), rand(*xs, dtype=dtype))
    assert_close(got, expected, xs[-1], f"dot {xs}")


def test_dot_of_integers_and_strided_rows():
    got, expected = on_both(oar.dot, ints(5, 40, dtype="int64"), ints(5, 40, dtype="int64"))
    assert_close(got, expected, 40)
    base = rand(60, 40)
    got = mm.dot(device(base).view((20, 30), (1, 80), 0), device(base).view((20, 30), (40, 1), 0))
    np.testing.assert_allclose(host(got), np.sum(base[::2, :20].T * base[:20, :30], axis=-1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "bool"])
def test_outer_flattens_its_operands(dtype):
    x = rand(3, 4) > 0 if dtype == "bool" else rand(3, 4, dtype=dtype) if dtype[0] == "f" else ints(3, 4, dtype=dtype)
    y = rand(5) > 0 if dtype == "bool" else rand(5, dtype=dtype) if dtype[0] == "f" else ints(5, dtype=dtype)
    got, expected = on_both(oar.outer, x, y)
    np.testing.assert_array_equal(got[0], expected[0])  # one rounding of one product
    base, y = rand(6, 8), rand(5)
    got = mm.outer(device(base).view((3, 4), (16, 2), 0), device(y))  # base[::2, ::2]: its dims do not merge
    np.testing.assert_array_equal(host(got), np.outer(base[::2, ::2], y))
    assert mm.outer(device(rand(0)), device(rand(3))).shape == (0, 3)


# -- errors ---------------------------------------------------------------------------------------
def test_errors_name_the_op_and_the_operands():
    with pytest.raises(ShapeError, match=r"matmul: x \[2, 3\] and y \[4, 5\]: contraction dims differ \(3 vs 4\)"):
        oar.matmul(oar.to_tensor(rand(2, 3), place="gpu"), oar.to_tensor(rand(4, 5), place="gpu"))
    with pytest.raises(DTypeError, match=r"matmul: the gpu kernel multiplies operands of one dtype, got x float32, "
                                         r"y float64"):
        mm.matmul(device(rand(2, 3)), device(rand(3, 2, dtype="float64")))
    with pytest.raises(DTypeError, match=r"dot: the gpu kernel has no bool product"):
        mm.dot(device(rand(3) > 0), device(rand(3) > 0))
    with pytest.raises(ShapeError, match=r"linear: bias float32\[5\] must hold 4 elements"):
        mm.linear(device(rand(2, 3)), device(rand(3, 4)), device(rand(5)))
    with pytest.raises(DTypeError, match=r"matmul_int8: x and y must be int8, got int16 and int8"):
        mm.matmul_int8(device(ints(2, 3, dtype="int16")), device(ints(2, 3)))
    with pytest.raises(DTypeError, match=r"op 'matmul' does not support dtype bool"):
        oar.matmul(oar.to_tensor(rand(2, 2) > 0, place="gpu"), oar.to_tensor(rand(2, 2) > 0, place="gpu"))
