"""The gpu's random kernels, dispatched with ``place="gpu"``: their distributions (mean and variance
of 100k draws within five standard errors), ranges, dtypes and shapes, reproducibility under
``oar.seed`` and an op's own seed, and different draws on successive calls. The numbers are not
the cpu's (another generator), so nothing is compared with numpy's draws. Also dropout on gpu
tensors: its keep rate and scaling (its mask comes from ``oar.bernoulli``, which core draws on the
host and moves to the input's device)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar.errors import ArgumentError
from oar.ops import dispatch
from oar.plugins import registries

N = 100_000


def create(op: str, shape, dtype: str, **attrs):
    out = dispatch(registries().ops.lookup(op), (), {"shape": list(shape), "dtype": dtype, "place": "gpu", **attrs})
    assert out.place.backend == "gpu" and out.dtype.name == dtype and out.shape == list(shape)
    return out.numpy()


def uniform(shape, dtype="float32", low=-2.0, high=3.0, seed=0):
    return create("uniform", shape, dtype, min=low, max=high, seed=seed)


def gaussian(shape, dtype="float32", mean=1.0, std=2.0, seed=0):
    return create("gaussian", shape, dtype, mean=mean, std=std, seed=seed)


def randint(shape, dtype="int64", low=-5, high=7):
    return create("randint", shape, dtype, low=low, high=high)


def bernoulli(x, p=None):
    out = dispatch(registries().ops.lookup("bernoulli"), (oar.to_tensor(x, place="gpu"),), {"p": p})
    assert out.place.backend == "gpu" and out.dtype.np == x.dtype and out.shape == list(x.shape)
    return out.numpy()


def assert_moments(a, mean: float, var: float, fourth: float) -> None:
    """The sample mean and variance of ``a`` within five standard errors of ``mean`` and ``var``
    (``fourth``: the distribution's fourth central moment, for the variance's standard error)."""
    a = a.astype(np.float64).ravel()
    n = a.size
    assert abs(a.mean() - mean) < 5 * math.sqrt(var / n), a.mean()
    assert abs(a.var() - var) < 5 * math.sqrt((fourth - var * var) / n), a.var()


def test_uniform_float32_distribution_and_range():
    a = uniform([N // 4, 4])
    width = 5.0
    assert_moments(a, 0.5, width**2 / 12, width**4 / 80)
    assert a.min() >= -2.0 and a.max() < 3.0
    # every tenth of the interval gets its share
    counts = np.histogram(a, bins=10, range=(-2.0, 3.0))[0]
    assert np.all(np.abs(counts - N / 10) < 5 * math.sqrt(N * 0.1 * 0.9)), counts


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_uniform_other_dtypes_stay_below_max(dtype):
    # bfloat16 rounds 1 - u < 2**-9 up to 1.0 (about 16 of 8192 draws): those must stay below max
    a = uniform([8192], dtype, 0.0, 1.0)
    below = np.nextafter(np.asarray(1.0, a.dtype), np.asarray(0.0, a.dtype))
    assert a.min() >= 0.0 and a.max() <= below
    assert abs(a.astype(np.float64).mean() - 0.5) < 5 * math.sqrt(1 / 12 / a.size)
    if dtype == "bfloat16":
        assert (a == below).sum() > 0


def test_gaussian_distribution():
    assert_moments(gaussian([N]), 1.0, 4.0, 3 * 16.0)
    assert_moments(gaussian([N // 4], "float64", -3.0, 0.5), -3.0, 0.25, 3 * 0.0625)
    b = gaussian([4096], "bfloat16", 0.0, 1.0)
    assert np.isfinite(b.astype(np.float32)).all() and abs(b.astype(np.float64).mean()) < 5 / 64


def test_randint_range_and_uniformity():
    a = randint([N])
    assert a.min() == -5 and a.max() == 6
    counts = np.bincount(a + 5, minlength=12)
    assert np.all(np.abs(counts - N / 12) < 5 * math.sqrt(N / 12 * 11 / 12)), counts
    small = randint([3000], "int8", 100, 103)
    assert set(np.unique(small).tolist()) == {100, 101, 102}


def test_bernoulli_rate_from_x_and_from_p():
    x = np.full(N, 0.3, np.float32)
    x[: N // 2] = 0.8
    a = bernoulli(x)
    assert set(np.unique(a).tolist()) <= {0.0, 1.0}
    for rate, part in ((0.8, a[: N // 2]), (0.3, a[N // 2:])):
        assert abs(part.mean() - rate) < 5 * math.sqrt(rate * (1 - rate) / part.size)
    b = bernoulli(np.zeros(N // 4, np.float64), p=0.25)
    assert abs(b.mean() - 0.25) < 5 * math.sqrt(0.25 * 0.75 / b.size)
    assert bernoulli(np.array([0, 1, 1, 0], np.int32)).tolist() == [0, 1, 1, 0]


def test_bernoulli_refuses_probabilities_outside_0_1():
    with pytest.raises(ArgumentError, match="bernoulli: probabilities must lie in \\[0, 1\\]"):
        bernoulli(np.array([0.5, 1.5], np.float32))
    with pytest.raises(ArgumentError, match="bernoulli: probabilities must lie in \\[0, 1\\]"):
        bernoulli(np.array([0.5, np.nan], np.float32))


def test_randint_refuses_a_range_too_wide_for_its_draws():
    with pytest.raises(ArgumentError, match="randint: the gpu draws ranges"):
        randint([4], "int64", -(2**63), 2**63 - 1)


def test_global_seed_reproduces_and_successive_calls_differ():
    oar.seed(123)
    first = [uniform([5000]), gaussian([5000]), randint([5000]), bernoulli(np.full(5000, 0.5, np.float32))]
    again = [uniform([5000]), gaussian([5000]), randint([5000]), bernoulli(np.full(5000, 0.5, np.float32))]
    for a, b in zip(first, again):
        assert not np.array_equal(a, b)
    oar.seed(123)
    replay = [uniform([5000]), gaussian([5000]), randint([5000]), bernoulli(np.full(5000, 0.5, np.float32))]
    for a, b in zip(first, replay):
        np.testing.assert_array_equal(a, b)
    state = oar.get_rng_state()
    a = uniform([100])
    oar.set_rng_state(state)
    np.testing.assert_array_equal(uniform([100]), a)


def test_an_op_seed_gives_the_same_numbers_on_every_call():
    a = uniform([1000], seed=42)
    oar.seed(1)
    np.testing.assert_array_equal(uniform([1000], seed=42), a)
    assert not np.array_equal(uniform([1000], seed=43), a)
    np.testing.assert_array_equal(gaussian([1000], seed=42), gaussian([1000], seed=42))


def test_empty_shapes():
    assert uniform([0, 3]).shape == (0, 3)
    assert randint([0]).shape == (0,)


def test_dropout_on_gpu_tensors(gpu):
    x = oar.ones([200, 250])
    oar.seed(9)
    y = F.dropout(x, p=0.3)
    assert y.place.backend == "gpu"
    a = y.numpy()
    kept = a != 0
    assert abs(kept.mean() - 0.7) < 5 * math.sqrt(0.7 * 0.3 / a.size)
    np.testing.assert_allclose(a[kept], np.float32(1 / 0.7), rtol=1e-6)  # upscale_in_train
    oar.seed(9)
    np.testing.assert_array_equal(F.dropout(x, p=0.3).numpy(), a)
    assert not np.array_equal(F.dropout(x, p=0.3).numpy(), a)
    np.testing.assert_array_equal(F.dropout(x, p=0.3, training=False).numpy(), x.numpy())
