"""The generated elementwise kernels beyond the op table's rows: several blocks, broadcasting and
views in every position, integer and bool variants, the limits, and a plugin's own op getting a
gpu kernel from its ``"triton"`` lowering alone."""

from __future__ import annotations

import numpy as np
import pytest
from oar_triton.kernels.elementwise import RANK
from oar_triton.kernels.lowerings import TRITON
from triton_test_support import assert_same

import oar
from oar.errors import ArgumentError, ShapeError
from oar.ops import Op, dispatch, same_meta
from oar.plugins import hookimpl

RNG = np.random.default_rng(7)


def _on_both(fn, *arrays):
    """``fn`` of tensors made from ``arrays`` on the gpu and on the cpu, as numpy arrays."""
    out_gpu = fn(*[oar.to_tensor(a, place="gpu") for a in arrays])
    out_cpu = fn(*[oar.to_tensor(a, place="cpu") for a in arrays])
    assert out_gpu.place.is_gpu_place()
    return out_gpu.numpy(), out_cpu.numpy()


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_several_blocks_of_a_chain(dtype):
    x = RNG.standard_normal(5000).astype(oar.ops.get_dtype(dtype).np)  # five programs of 1024
    got, expected = _on_both(lambda t: oar.nn.functional.gelu(t * 2.0 - 1.0).tanh(), x)
    assert_same([got], [expected], dtype, "gelu chain")


def test_broadcast_and_strided_operands():
    a = RNG.standard_normal((3, 1, 5)).astype(np.float32)
    b = RNG.standard_normal((4, 1)).astype(np.float32)
    got, expected = _on_both(lambda x, y: x * y + x, a, b)  # (3, 4, 5) from both sides' broadcasts
    assert got.shape == (3, 4, 5)
    np.testing.assert_array_equal(got, expected)
    c = RNG.standard_normal((6, 4)).astype(np.float32)
    got, expected = _on_both(lambda x: x.T[::2] - 1.0, c)  # a transposed, stepped view
    np.testing.assert_array_equal(got, expected)


def test_integer_and_bool_values():
    i = np.array([[-7, 3, 0], [5, -2, 9]], np.int32)
    for fn in (lambda t: oar.scale(t, 2.0, 1.0), lambda t: oar.clip(t, -3, 4), oar.sign, lambda t: oar.pow(t, 3),
               lambda t: t * t - t, lambda t: oar.maximum(t, oar.full_like(t, 1)), oar.floor):
        got, expected = _on_both(fn, i)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
    b = np.array([True, False, True, False])
    c = np.array([True, True, False, False])
    for fn in (oar.logical_and, oar.logical_xor, lambda x, y: x + y, lambda x, y: x * y, oar.equal):
        got, expected = _on_both(fn, b, c)
        np.testing.assert_array_equal(got, expected)


def test_nan_and_infinity_follow_numpy():
    x = np.array([np.nan, -np.inf, np.inf, -0.0, 2.0], np.float32)
    for fn in (lambda t: oar.maximum(t, oar.zeros_like(t)), oar.nn.functional.relu, oar.isnan, oar.tanh,
               lambda t: oar.clip(t, -1.0, 1.0), oar.nn.functional.sigmoid):
        got, expected = _on_both(fn, x)
        np.testing.assert_array_equal(got, expected)


def test_empty_tensors():
    got, expected = _on_both(lambda t: (t + 1.0).exp(), np.zeros((0, 3), np.float32))
    assert got.shape == expected.shape == (0, 3)


def test_more_dims_than_the_kernels_index_is_refused_by_name():
    x = oar.to_tensor(np.ones([2] * (RANK + 1), np.float32), place="gpu")
    reversed_dims = x.transpose(list(range(RANK + 1))[::-1])  # no two neighbouring dims merge
    with pytest.raises(ShapeError, match=rf"op 'exp' on the gpu: .* {RANK + 1} dims .* at most {RANK}"):
        reversed_dims.exp()


# -- a plugin's own op ----------------------------------------------------------------------------
square_plus_op = Op("test_triton_square_plus", reference=lambda x, shift: x * x + shift, meta=same_meta,
                    traits=("elementwise", "nondiff"))


def _shift(attrs: dict) -> tuple:
    return (float(attrs.get("shift", 0.0)),)


class SquarePlusPlugin:
    @hookimpl
    def oar_register_ops(self, ops):
        ops.add(square_plus_op)

    @hookimpl
    def oar_register_op_lowerings(self, lowerings):
        lowerings.add(TRITON, "test_triton_square_plus", ("{0} * {0} + {p0}", _shift, 1, {}))

    @hookimpl
    def oar_register_kernels(self, kernels):
        from oar_triton.kernels.elementwise import elementwise_kernel

        kernels.register("test_triton_square_plus", "gpu", elementwise_kernel("test_triton_square_plus"),
                         dtypes=["float32"])


def test_a_plugin_op_gets_a_gpu_kernel_from_its_lowering():
    oar.plugins.register(SquarePlusPlugin(), name="test-triton-square-plus")
    try:
        x = np.array([1.0, -2.0, 3.0], np.float32)
        got = dispatch(square_plus_op, (oar.to_tensor(x, place="gpu"),), {"shift": 0.5})
        assert got.place.is_gpu_place()
        np.testing.assert_array_equal(got.numpy(), x * x + 0.5)
    finally:
        oar.plugins.unregister("test-triton-square-plus")


@pytest.mark.parametrize("fn, message", [
    (lambda x, y: oar.floor_divide(x, y), r"floor_divide: integer division by zero \(y has a zero element\)"),
    (lambda x, y: oar.remainder(x, y), r"remainder: integer division by zero"),
    (lambda x, y: x ** (y - 1), r"pow: integer tensors cannot be raised to negative integer powers"),
])
def test_integer_values_the_cpu_refuses_are_refused_on_the_gpu_too(fn, message):
    for device in ("cpu", "gpu"):
        x = oar.to_tensor(np.array([3, 4], np.int64), place=device)
        y = oar.to_tensor(np.array([0, 1], np.int64), place=device)
        with pytest.raises(ArgumentError, match=message):
            fn(x, y)
