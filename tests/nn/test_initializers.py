"""oar.nn.initializer: each initializer's statistics match Paddle's formula on large tensors, with
Paddle's fan convention ([in, out] Linear weights, [out, in, k, k] conv weights); seeding makes
them reproducible; the default and global initializers of layers are Paddle's."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest

import oar
from oar.errors import ArgumentError, ShapeError
from oar.nn import initializer as I  # noqa: N812 - the usual short name of the module

N_LINEAR = [600, 1000]  # fan_in 600, fan_out 1000: 600,000 samples
N_CONV = [64, 32, 9, 9]  # fan_in 32*81 = 2592, fan_out 64*81 = 5184: 165,888 samples


def filled(init, shape, dtype="float32") -> np.ndarray:
    t = oar.zeros(shape, dtype=dtype)
    assert init(t) is t
    return t.numpy().astype(np.float64)


def assert_uniform(values, low, high):
    # float32 draws: a draw within half an ulp of a bound rounds to float32(bound), which can lie
    # just outside the float64 bound (float32(-0.1) < -0.1) - about 1 in 50 runs on 600,000 samples
    assert values.min() >= np.float32(low) and values.max() <= np.float32(high)
    assert values.min() < low + 0.01 * (high - low) and values.max() > high - 0.01 * (high - low)
    np.testing.assert_allclose(values.mean(), (low + high) / 2, atol=0.01 * (high - low))
    np.testing.assert_allclose(values.std(), (high - low) / math.sqrt(12), rtol=0.01)


def assert_normal(values, mean, std):
    np.testing.assert_allclose(values.mean(), mean, atol=0.01 * std)
    np.testing.assert_allclose(values.std(), std, rtol=0.01)
    # the fraction within one std of the mean: 68.27% for a normal distribution
    np.testing.assert_allclose(np.mean(np.abs(values - mean) < std), 0.6827, atol=0.01)


def test_compute_fans_follows_paddle():
    assert I.compute_fans([]) == (1, 1)
    assert I.compute_fans([7]) == (7, 7)
    assert I.compute_fans([3, 5]) == (3, 5)  # Linear weight [in, out]
    assert I.compute_fans([16, 8, 3, 3]) == (8 * 9, 16 * 9)  # Conv2D weight [out, in, kh, kw]
    assert I.compute_fans([16, 8, 5]) == (40, 80)


def test_constant():
    np.testing.assert_array_equal(filled(I.Constant(0.25), [3, 4]), np.full([3, 4], 0.25))
    np.testing.assert_array_equal(filled(I.Constant(), [2]), np.zeros(2))
    assert filled(I.Constant(3), [2], dtype="int64").tolist() == [3, 3]


def test_normal_and_uniform():
    assert_normal(filled(I.Normal(1.5, 0.3), N_LINEAR), 1.5, 0.3)
    assert_normal(filled(I.Normal(), N_LINEAR), 0.0, 1.0)
    assert_uniform(filled(I.Uniform(-0.2, 0.6), N_LINEAR), -0.2, 0.6)
    assert_uniform(filled(I.Uniform(), N_LINEAR), -1.0, 1.0)
    with pytest.raises(ArgumentError, match="low"):
        I.Uniform(1.0, 0.0)


def truncated_moments(mean, std, a, b):
    """Mean and std of N(mean, std**2) truncated to [a, b], in closed form."""
    alpha, beta = (a - mean) / std, (b - mean) / std
    pdf = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))  # noqa: E731
    z = cdf(beta) - cdf(alpha)
    m = mean + std * (pdf(alpha) - pdf(beta)) / z
    var = std**2 * (1 + (alpha * pdf(alpha) - beta * pdf(beta)) / z - ((pdf(alpha) - pdf(beta)) / z) ** 2)
    return m, math.sqrt(var)


@pytest.mark.parametrize(("mean", "std", "a", "b"), [(0.0, 1.0, -2.0, 2.0), (0.0, 2.0, -2.0, 2.0),
                                                     (1.0, 0.5, 0.0, 3.0), (0.0, 0.02, -0.04, 0.04)])
def test_truncated_normal_bounds_are_values_not_stds(mean, std, a, b):
    values = filled(I.TruncatedNormal(mean, std, a, b), N_LINEAR, dtype="float64")
    assert values.min() >= a and values.max() <= b
    expected_mean, expected_std = truncated_moments(mean, std, a, b)
    np.testing.assert_allclose(values.mean(), expected_mean, atol=0.01 * expected_std)
    np.testing.assert_allclose(values.std(), expected_std, rtol=0.01)


def test_truncated_normal_defaults_and_bad_bounds():
    values = filled(I.TruncatedNormal(), N_LINEAR)
    assert values.min() >= -2 and values.max() <= 2
    np.testing.assert_allclose(values.std(), truncated_moments(0, 1, -2, 2)[1], rtol=0.01)
    with pytest.raises(ArgumentError, match="a < b"):
        I.TruncatedNormal(a=1.0, b=1.0)
    with pytest.raises(ArgumentError, match="a <= mean <= b"):
        filled(I.TruncatedNormal(mean=0.0, std=0.1, a=5.0, b=6.0), [4])


@pytest.mark.parametrize("shape", [N_LINEAR, N_CONV], ids=["linear", "conv"])
def test_xavier(shape):
    fan_in, fan_out = I.compute_fans(shape)
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    assert_uniform(filled(I.XavierUniform(), shape), -limit, limit)
    assert_uniform(filled(I.XavierUniform(gain=2.0), shape), -2 * limit, 2 * limit)
    assert_normal(filled(I.XavierNormal(), shape), 0.0, math.sqrt(2.0 / (fan_in + fan_out)))
    assert_normal(filled(I.XavierNormal(fan_in=10, fan_out=40, gain=0.5), shape), 0.0, 0.5 * math.sqrt(2.0 / 50))
    assert_uniform(filled(I.XavierUniform(fan_in=20, fan_out=30), shape), -math.sqrt(6 / 50), math.sqrt(6 / 50))


@pytest.mark.parametrize("shape", [N_LINEAR, N_CONV], ids=["linear", "conv"])
def test_kaiming(shape):
    fan_in, _ = I.compute_fans(shape)
    assert_normal(filled(I.KaimingNormal(), shape), 0.0, math.sqrt(2.0 / fan_in))
    limit = math.sqrt(2.0) * math.sqrt(3.0 / fan_in)
    assert_uniform(filled(I.KaimingUniform(), shape), -limit, limit)
    gain = math.sqrt(2.0 / (1 + 0.2**2))
    assert_normal(filled(I.KaimingNormal(negative_slope=0.2, nonlinearity="leaky_relu"), shape), 0.0, gain / math.sqrt(fan_in))
    assert_normal(filled(I.KaimingNormal(fan_in=50, nonlinearity="tanh"), shape), 0.0, (5 / 3) / math.sqrt(50))
    limit = math.sqrt(3.0 / 100)
    assert_uniform(filled(I.KaimingUniform(fan_in=100, nonlinearity="linear"), shape), -limit, limit)
    with pytest.raises(ArgumentError, match="nonlinearity 'swish'"):
        I.KaimingNormal(nonlinearity="swish")


def test_calculate_gain_matches_paddle():
    assert I.calculate_gain("sigmoid") == 1.0
    assert I.calculate_gain("conv2d_transpose") == 1.0
    assert I.calculate_gain("tanh") == 5.0 / 3
    assert I.calculate_gain("relu") == math.sqrt(2.0)
    assert I.calculate_gain("leaky_relu") == math.sqrt(2.0 / (1 + 0.01**2))
    assert I.calculate_gain("leaky_relu", 0.5) == math.sqrt(2.0 / 1.25)
    assert I.calculate_gain("selu") == 0.75
    with pytest.raises(ArgumentError, match="gelu"):
        I.calculate_gain("gelu")


@pytest.mark.parametrize("shape", [[10, 15], [15, 10], [12, 12], [6, 3, 2, 2], [3, 4, 5]], ids=str)
def test_orthogonal_rows_or_columns_are_orthonormal(shape):
    w = filled(I.Orthogonal(), shape, dtype="float64").reshape(shape[0], -1)
    rows, cols = w.shape
    if rows <= cols:
        np.testing.assert_allclose(w @ w.T, np.eye(rows), atol=1e-12)
    if rows >= cols:
        np.testing.assert_allclose(w.T @ w, np.eye(cols), atol=1e-12)
    w3 = filled(I.Orthogonal(gain=3.0), shape, dtype="float64").reshape(shape[0], -1)
    small = min(rows, cols)
    np.testing.assert_allclose(np.linalg.svd(w3, compute_uv=False), np.full(small, 3.0), atol=1e-12)
    with pytest.raises(ShapeError, match="2 or more dimensions"):
        filled(I.Orthogonal(), [5])


def test_assign_copies_arrays_lists_and_tensors():
    value = np.arange(6, dtype=np.float64).reshape(2, 3)
    np.testing.assert_array_equal(filled(I.Assign(value), [2, 3]), value)
    np.testing.assert_array_equal(filled(I.Assign([[1, 2], [3, 4]]), [2, 2]), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(filled(I.Assign(oar.to_tensor([0.5, 1.5])), [2]), [0.5, 1.5])
    init = I.Assign(value)
    value[0, 0] = 100.0  # the initializer keeps its own copy
    assert filled(init, [2, 3])[0, 0] == 0.0
    with pytest.raises(ShapeError, match=r"value has shape \[2, 3\], the parameter \[3, 2\]"):
        filled(init, [3, 2])
    fc = oar.nn.Linear(2, 3, weight_attr=oar.nn.ParamAttr(initializer=I.Assign(np.ones([2, 3]))))
    np.testing.assert_array_equal(fc.weight.numpy(), np.ones([2, 3], np.float32))


def test_bilinear_gives_the_bilinear_upsampling_kernel():
    w = filled(I.Bilinear(), [2, 3, 4, 4])
    line = np.array([0.25, 0.75, 0.75, 0.25])  # factor 2: kernel size 4
    for i in range(2):
        for j in range(3):
            np.testing.assert_allclose(w[i, j], np.outer(line, line))
    w5 = filled(I.Bilinear(), [1, 1, 5, 5])  # factor 3: kernel size 5
    line = np.array([1, 2, 3, 2, 1]) / 3
    np.testing.assert_allclose(w5[0, 0], np.outer(line, line), rtol=1e-6)
    with pytest.raises(ShapeError, match="square"):
        filled(I.Bilinear(), [1, 1, 3, 4])
    with pytest.raises(ShapeError, match="4 dimensions"):
        filled(I.Bilinear(), [3, 3])


def test_dirac_preserves_the_identity():
    w = filled(I.Dirac(), [4, 3, 3, 3])
    x = np.random.default_rng(0).standard_normal(3)
    # at the kernel centre the weight maps input channel i to output channel i
    np.testing.assert_allclose(w[:, :, 1, 1] @ x, np.concatenate([x, [0.0]]))
    assert w.sum() == 3
    wg = filled(I.Dirac(groups=2), [4, 2, 3])
    assert wg[0, 0, 1] == wg[1, 1, 1] == wg[2, 0, 1] == wg[3, 1, 1] == 1 and wg.sum() == 4


def test_seed_makes_initialization_reproducible():
    def draw():
        return [filled(init, [50, 40]) for init in (I.Normal(), I.TruncatedNormal(), I.Uniform(), I.XavierUniform(),
                                                     I.XavierNormal(), I.KaimingNormal(), I.KaimingUniform(), I.Orthogonal())]

    oar.seed(123)
    first = draw()
    oar.seed(123)
    second = draw()
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(draw()[0], first[0])
    oar.seed(7)
    w1 = oar.nn.Linear(8, 8).weight.numpy().copy()
    oar.seed(7)
    np.testing.assert_array_equal(oar.nn.Linear(8, 8).weight.numpy(), w1)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_initializers_fill_low_and_high_precision_parameters(dtype):
    t = oar.zeros([300, 300], dtype=dtype)
    I.Normal(0.0, 2.0)(t)
    assert t.dtype == dtype
    np.testing.assert_allclose(t.numpy().astype(np.float64).std(), 2.0, rtol=0.02)


def test_initializing_bumps_the_version_and_returns_the_parameter():
    fc = oar.nn.Linear(3, 3)
    before = fc.weight.inplace_version
    assert I.Constant(1.0)(fc.weight) is fc.weight
    assert fc.weight.inplace_version == before + 1


def test_linear_defaults_are_xavier_uniform_weight_and_zero_bias():
    oar.seed(0)
    fc = oar.nn.Linear(600, 1000)
    limit = math.sqrt(6.0 / 1600)
    assert_uniform(fc.weight.numpy().astype(np.float64), -limit, limit)
    np.testing.assert_array_equal(fc.bias.numpy(), np.zeros(1000, np.float32))


class TwoParams(oar.nn.Layer):
    """A layer with its own default initializer, as Conv and Embedding have."""

    def __init__(self, weight_attr=None, bias_attr=None):
        super().__init__()
        self.weight = self.create_parameter([2, 2], attr=weight_attr, default_initializer=I.Constant(7.0))
        self.bias = self.create_parameter([2], attr=bias_attr, is_bias=True, default_initializer=I.Constant(8.0))


def test_global_initializer_overrides_layer_defaults_but_not_param_attrs():
    assert TwoParams().weight.tolist() == [[7.0, 7.0], [7.0, 7.0]]
    try:
        I.set_global_initializer(I.Constant(1.0), I.Constant(2.0))
        layer = TwoParams()
        assert layer.weight.tolist() == [[1.0, 1.0], [1.0, 1.0]] and layer.bias.tolist() == [2.0, 2.0]
        fc = oar.nn.Linear(2, 2)
        assert fc.weight.tolist() == [[1.0, 1.0], [1.0, 1.0]] and fc.bias.tolist() == [2.0, 2.0]
        given = TwoParams(weight_attr=oar.nn.ParamAttr(initializer=I.Constant(3.0)), bias_attr=I.Constant(4.0))
        assert given.weight.tolist() == [[3.0, 3.0], [3.0, 3.0]] and given.bias.tolist() == [4.0, 4.0]
        I.set_global_initializer(I.Constant(5.0))  # no bias initializer: biases go back to the defaults
        assert TwoParams().bias.tolist() == [8.0, 8.0]
    finally:
        I.set_global_initializer(None)
    assert TwoParams().weight.tolist() == [[7.0, 7.0], [7.0, 7.0]]
    with pytest.raises(TypeError, match="weight_init must be an Initializer"):
        I.set_global_initializer("normal")


def test_set_global_initializer_is_also_importable_from_layers():
    from oar.nn.layer.layers import set_global_initializer

    assert set_global_initializer is I.set_global_initializer


def test_the_public_list_is_paddles():
    expected = {"Assign", "Bilinear", "Constant", "Dirac", "KaimingNormal", "KaimingUniform", "Normal", "Orthogonal",
                "TruncatedNormal", "Uniform", "XavierNormal", "XavierUniform", "calculate_gain", "set_global_initializer"}
    assert expected <= set(I.__all__)
    for name in I.__all__:
        assert getattr(oar.nn.initializer, name) is getattr(I, name)


def test_docstring_examples_run():
    result = doctest.testmod(I, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
