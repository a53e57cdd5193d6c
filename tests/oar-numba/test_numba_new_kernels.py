"""The kernels added for issue 7's list on what the op table does not reach: half-precision
scales (which the int8-keyed kernels receive as they are), the GEMV / GEMM switch, and arguments
only a direct call can pass (which must give the reference's answer, never a read or write out of
bounds: numba does not check indices)."""

from __future__ import annotations

import numpy as np
import pytest
from oar_numba import KERNELS, _quant

import oar
from oar.nn import quant
from oar.plugins import registries


def reference(op: str):
    return registries().ops.get(op).reference


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_dequantize_with_a_half_precision_scale_matches_the_reference(dtype):
    q = np.random.default_rng(0).integers(-128, 128, (3, 70)).astype(np.int8)
    scale = oar.to_tensor([0.5, 0.25, 0.125]).astype(dtype)
    got = quant.dequantize_linear(oar.to_tensor(q), scale, axis=0)
    expected = reference("dequantize_linear")(q, scale.numpy(), np.zeros(3, np.int8), 0, 8)
    assert got.dtype.name == dtype
    np.testing.assert_array_equal(got.astype("float32").numpy(), expected.astype(np.float32))


@pytest.mark.parametrize("rows", [_quant.GEMV_ROWS, _quant.GEMV_ROWS + 1])
def test_weight_only_linear_agrees_on_both_sides_of_the_gemv_switch(rows):
    rng = np.random.default_rng(rows)
    q, scale = reference("weight_quantize")(rng.standard_normal((96, 40)).astype(np.float32))
    x = rng.standard_normal((rows, 96)).astype(np.float32)
    np.testing.assert_allclose(KERNELS["weight_only_linear"](x, q, scale),
                               reference("weight_only_linear")(x, q, scale), rtol=1e-5, atol=1e-5)


def test_parameters_of_the_wrong_size_go_to_the_references():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 3)).astype(np.float32)
    short = np.ones(2, np.float32)
    for op, args in (("group_norm", (x, short, short, 2, 1e-5)),
                     ("weight_only_linear", (x[0].T.copy(), np.ones((5, 4), np.int8), short)),
                     ("quantize_linear", (x, short, np.zeros(2, np.int8), 1, 8))):
        with pytest.raises(ValueError):  # numpy's broadcasting error, from the reference
            KERNELS[op](*args)


def test_int8_kernels_are_registered_for_int8():
    for op in ("dequantize_linear", "matmul_int8"):
        assert registries().kernels.lookup(op, "cpu", oar.int8).fn is KERNELS[op]


def test_cross_entropy_backward_with_a_label_out_of_range_gives_the_references_answer():
    # only a direct call can pass one (the forward op rejects it); nothing may be written out of bounds
    prob = np.full((3, 4), 0.25, np.float32)
    label = np.array([[1], [7], [-100]])
    g = np.ones((3, 1), np.float32)
    got = KERNELS["softmax_with_cross_entropy_grad"](prob, label, g, ignore_index=-100, axis=-1)
    np.testing.assert_array_equal(got, reference("softmax_with_cross_entropy_grad")(prob, label, g, -100, -1))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("rows, k, n", [(1, 400, 120), (2, 7, 3), (1, 3, 1), (3, 5, 4)])
def test_linear_for_a_few_rows_matches_the_reference(dtype, rows, k, n):
    """A row or two run the compiled loop (k not a multiple of its unroll of 4 included), more
    rows BLAS; a transposed (non-contiguous) x and a float64 bias with float32 operands too."""
    rng = np.random.default_rng(k)
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in ((rows, k), (k, n), (n,)))
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == "float32" else {"rtol": 1e-12, "atol": 1e-12}
    np.testing.assert_allclose(KERNELS["linear"](x, w, b), reference("linear")(x, w, b), **tol)
    xt = np.asfortranarray(x)
    np.testing.assert_allclose(KERNELS["linear"](xt, w, b), reference("linear")(xt, w, b), **tol)
    mixed = KERNELS["linear"](x, w, b.astype(np.float64))
    assert mixed.dtype == reference("linear")(x, w, b.astype(np.float64)).dtype


def test_linear_layer_at_batch_one_trains_as_with_the_reference():
    """Through the public API: Linear at batch 1, forward and gradients against numpy."""
    layer = oar.nn.Linear(5, 3)
    x = oar.to_tensor(np.random.default_rng(0).standard_normal((1, 5)).astype(np.float32), stop_gradient=False)
    y = layer(x)
    np.testing.assert_allclose(y.numpy(), x.numpy() @ layer.weight.numpy() + layer.bias.numpy(), rtol=1e-5, atol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(layer.weight.grad.numpy(), np.repeat(x.numpy().T, 3, axis=1), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), layer.weight.numpy().sum(axis=1, keepdims=True).T, rtol=1e-5)
