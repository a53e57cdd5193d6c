"""oar.nn.quant beyond the op table: round trips, Paddle's layouts, errors, and training through
the weight-only linear and the fake quantizer."""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar.errors import ArgumentError, DTypeError, ShapeError
from oar.nn import quant


def test_weight_quantize_is_per_output_channel_within_half_a_step():
    w = np.random.default_rng(0).standard_normal((48, 20)).astype(np.float32) * np.linspace(0.1, 5, 20)
    q, scale = quant.weight_quantize(oar.to_tensor(w))
    assert q.shape == [20, 48] and q.dtype is oar.int8 and scale.dtype is oar.float32
    np.testing.assert_allclose(scale.numpy(), np.abs(w).max(axis=0) / 127, rtol=1e-6)
    assert np.abs(q.numpy()).max() == 127
    back = quant.weight_dequantize(q, scale, out_dtype="float32").numpy()
    assert back.shape == w.shape
    assert np.all(np.abs(back - w) <= scale.numpy() / 2 + 1e-7)


def test_a_float16_weight_gets_a_float32_scale_as_in_paddle():
    q, scale = quant.weight_quantize(oar.randn([16, 8]).astype("float16"))
    assert q.dtype is oar.int8 and scale.dtype is oar.float32
    assert quant.weight_dequantize(q, scale).dtype is oar.float16  # Paddle's default out_dtype


def test_an_all_zero_channel_quantizes_to_zero():
    w = np.ones((4, 3), np.float32)
    w[:, 1] = 0
    q, scale = quant.weight_quantize(oar.to_tensor(w))
    assert scale.numpy()[1] == 0 and not q.numpy()[1].any()
    assert np.isfinite(quant.weight_dequantize(q, scale, out_dtype="float32").numpy()).all()


def test_quantize_dequantize_round_trip_per_channel_with_zero_points():
    scale = oar.to_tensor([0.1, 0.5])
    zero_point = oar.to_tensor([3, -4], dtype="int8")
    x = oar.to_tensor([[[0.31, -1.0, 12.0]], [[2.6, -70.0, 0.0]]])  # axis 0: 2 channels
    q = quant.quantize_linear(x, scale, zero_point, axis=0)
    assert q.dtype is oar.int8
    assert q.numpy().tolist() == [[[6, -7, 123]], [[1, -128, -4]]]
    back = quant.dequantize_linear(q, scale, zero_point, axis=0).numpy()
    np.testing.assert_allclose(back, [[[0.3, -1.0, 12.0]], [[2.5, -62.0, 0.0]]], rtol=1e-6)


def test_rounding_is_half_to_even():
    q = quant.quantize_linear(oar.to_tensor([0.5, 1.5, 2.5, -0.5]), oar.to_tensor(1.0))
    assert q.numpy().tolist() == [0, 2, 2, 0]


def test_fake_quantize_passes_the_gradient_inside_the_range_only():
    x = oar.to_tensor([0.3, -2.0, 20.0, -20.0], stop_gradient=False)
    y = quant.fake_quantize_dequantize(x, oar.to_tensor(0.1))
    np.testing.assert_allclose(y.numpy(), [0.3, -2.0, 12.7, -12.8], rtol=1e-6)
    y.sum().backward()
    assert x.grad.numpy().tolist() == [1.0, 1.0, 0.0, 0.0]


def test_weight_only_linear_trains_its_input_and_matches_the_float_linear():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((32, 16)).astype(np.float32)
    q, scale = quant.weight_quantize(oar.to_tensor(w))
    for rows in (3, 40):  # the GEMV and the GEMM paths of oar-numba
        x = oar.to_tensor(rng.standard_normal((rows, 32)).astype(np.float32), stop_gradient=False)
        y = quant.weight_only_linear(x, q, bias=oar.ones([16]), weight_scale=scale)
        np.testing.assert_allclose(y.numpy(), x.numpy() @ w + 1, atol=0.05 * np.sqrt(32))
        y.sum().backward()
        deq = quant.weight_dequantize(q, scale, out_dtype="float32").numpy()
        np.testing.assert_allclose(x.grad.numpy(), np.ones((rows, 16)) @ deq.T, rtol=1e-5, atol=1e-5)


def test_llm_int8_linear_keeps_outlier_columns_in_float():
    rng = np.random.default_rng(2)
    w = rng.standard_normal((64, 8)).astype(np.float32)
    q, scale = quant.weight_quantize(oar.to_tensor(w), algo="llm.int8")
    x = rng.standard_normal((5, 64)).astype(np.float32)
    x[:, 7] = 40.0  # one outlier feature: quantizing it with the rows would cost the rest their precision
    exact = x @ quant.weight_dequantize(q, scale, out_dtype="float32").numpy()
    with_outliers = quant.llm_int8_linear(oar.to_tensor(x), q, weight_scale=scale).numpy()
    without = quant.llm_int8_linear(oar.to_tensor(x), q, weight_scale=scale, threshold=1e9).numpy()
    assert np.abs(with_outliers - exact).max() < np.abs(without - exact).max() / 5


def test_matmul_int8_is_exact_where_float32_is_not():
    x = np.full((1, 4096), 127, np.int8)
    y = np.full((1, 4096), 127, np.int8)
    y[0, 0] = 126
    assert quant.matmul_int8(oar.to_tensor(x), oar.to_tensor(y)).numpy()[0, 0] == 127 * 127 * 4095 + 127 * 126


def test_errors_name_the_argument():
    w = oar.randn([8, 4])
    with pytest.raises(ArgumentError, match="weight_only_int4"):
        quant.weight_quantize(w, algo="weight_only_int4")
    with pytest.raises(ArgumentError, match="group_size"):
        quant.weight_quantize(w, group_size=64)
    with pytest.raises(ShapeError, match="2-d weight"):
        quant.weight_quantize(oar.randn([8]))
    q, s = quant.weight_quantize(w)
    with pytest.raises(ShapeError, match="in_features"):
        quant.weight_only_linear(oar.randn([2, 5]), q, weight_scale=s)
    with pytest.raises(ArgumentError, match="weight_scale"):
        quant.weight_only_linear(oar.randn([2, 8]), q)
    with pytest.raises(DTypeError, match="int8"):
        quant.dequantize_linear(oar.to_tensor([1.0]), oar.to_tensor(1.0))
    with pytest.raises(ShapeError, match="channels"):
        quant.quantize_linear(oar.randn([2, 3]), oar.to_tensor([1.0, 2.0]), axis=1)
