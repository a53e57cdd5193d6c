"""Creation functions and random numbers: Paddle's defaults, values, seeding and distributions.

Random ops' seeded draws are also in the op table (``op_cases/random.py``); here are the
properties that need many samples or several calls.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import oar
from oar.errors import ArgumentError, DTypeError, ShapeError
from oar.plugins import registries

N = 200_000  # samples for distribution checks: the standard error of a mean is ~0.002 * std


@pytest.fixture
def default_float64():
    oar.set_default_dtype("float64")
    yield
    oar.set_default_dtype("float32")


# -- creation -----------------------------------------------------------------------------------
@pytest.mark.parametrize("fn, value", [(oar.zeros, 0), (oar.ones, 1)])
def test_zeros_ones(fn, value):
    x = fn([2, 3])
    assert x.shape == [2, 3] and x.dtype == oar.float32 and x.stop_gradient
    assert (x.numpy() == value).all()
    assert fn(4, dtype="int32").dtype == oar.int32
    assert fn((2,), dtype=oar.bool).dtype == oar.bool
    assert fn([]).shape == [] and fn([0, 3]).shape == [0, 3]


def test_creation_default_dtype_follows_set_default_dtype(default_float64):
    for fn in (oar.zeros, oar.ones, oar.empty, oar.rand, oar.randn, oar.standard_normal):
        assert fn([2]).dtype == oar.float64, fn.__name__
    assert oar.full([2], 1.5).dtype == oar.float64
    assert oar.eye(2).dtype == oar.float64
    assert oar.linspace(0, 1, 3).dtype == oar.float64
    assert oar.arange(0.0, 2.0).dtype == oar.float64
    assert oar.normal(shape=[2]).dtype == oar.float64


@pytest.mark.parametrize("shape, expected", [
    (3, [3]), ((2, 3), [2, 3]), ([2, 3], [2, 3]), (np.array([2, 3]), [2, 3]),
    (oar.to_tensor([2, 3]), [2, 3]), ([oar.to_tensor(2), 3], [2, 3]), ([np.int64(4)], [4]),
])
def test_shape_forms(shape, expected):
    if isinstance(shape, np.ndarray):
        shape = shape.tolist()
    assert oar.zeros(shape).shape == expected
    assert oar.rand(shape).shape == expected


@pytest.mark.parametrize("shape, message", [
    ([2, -1], r"zeros: shape \[2, -1\] has a negative dimension \(-1\)"),
    ([2, 1.5], r"zeros: shape must hold ints, got \[2, 1.5\] \(a float at position 1\)"),
    ("2, 3", r"zeros: shape must be a list or tuple of ints .*got str"),
    ([True], r"zeros: shape must hold ints"),
    (oar.to_tensor([2.0, 3.0]), r"zeros: a shape tensor must be a 1-d integer tensor, got float32\[2\]"),
])
def test_bad_shapes_say_what_is_wrong(shape, message):
    with pytest.raises(ArgumentError, match=message):
        oar.zeros(shape)


@pytest.mark.parametrize("call, message", [
    (lambda: oar.ones([2], dtype="flaot32"), r"ones: unknown dtype 'flaot32'; expected one of"),
    (lambda: oar.full([2], 1, dtype=object), r"full: unsupported dtype"),
    (lambda: oar.rand([2], dtype="int32"), r"rand: dtype int32 is not supported here; expected one of \['float16'"),
    (lambda: oar.randn([2], dtype="bool"), r"randn: dtype bool is not supported"),
    (lambda: oar.uniform([2], dtype="int64"), r"uniform: dtype int64 is not supported"),
    (lambda: oar.randint(0, 5, [2], dtype="float32"), r"randint: dtype float32 is not supported.*'int64'"),
    (lambda: oar.arange(3, dtype="bool"), r"arange: dtype bool is not supported"),
    (lambda: oar.zeros_like(oar.ones([2]), dtype="cint"), r"zeros_like: unknown dtype 'cint'"),
])
def test_bad_dtypes_say_what_is_wrong(call, message):
    with pytest.raises(DTypeError, match=message):
        call()


def test_full_dtype_rules():
    assert oar.full([2], 1.5).dtype == oar.float32
    assert oar.full([2], 1).dtype == oar.float32  # Paddle: ints fill the default float dtype too
    assert oar.full([2], True).dtype == oar.bool
    assert oar.full([2], 3, dtype="int64").tolist() == [3, 3]
    assert oar.full([1, 2], oar.to_tensor(2.5)).tolist() == [[2.5, 2.5]]
    assert np.isinf(oar.full([1], float("inf")).numpy()).all()
    with pytest.raises(ArgumentError, match=r"full: fill_value inf does not fit dtype int32"):
        oar.full([1], float("inf"), dtype="int32")
    with pytest.raises(ArgumentError, match=r"full: fill_value must be a number, got str"):
        oar.full([1], "1")


def test_empty_and_eye():
    assert oar.empty([2, 3]).shape == [2, 3] and oar.empty([2], "int64").dtype == oar.int64
    np.testing.assert_array_equal(oar.eye(3).numpy(), np.eye(3, dtype=np.float32))
    assert oar.eye(2, 3, dtype="int32").tolist() == [[1, 0, 0], [0, 1, 0]]
    assert oar.eye(0).shape == [0, 0]
    with pytest.raises(ArgumentError, match=r"eye: shape \[-1\] has a negative dimension"):
        oar.eye(-1)
    with pytest.raises(ArgumentError, match=r"eye: num_rows must be a number, got str"):
        oar.eye("3")


def test_arange_follows_paddle():
    assert oar.arange(5).tolist() == [0, 1, 2, 3, 4] and oar.arange(5).dtype == oar.int64
    x = oar.arange(3, 9, 2.0)  # any float among start/end/step -> the default float dtype
    assert x.dtype == oar.float32 and x.tolist() == [3.0, 5.0, 7.0]
    assert oar.arange(0.5, 3).tolist() == [0.5, 1.5, 2.5]
    assert oar.arange(oar.to_tensor(3), 7).tolist() == [3, 4, 5, 6]
    assert oar.arange(oar.to_tensor(1.0), 3).dtype == oar.float32
    assert oar.arange(4.999, dtype="float32").tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert oar.arange(0, 5.5, dtype="int64").tolist() == [0, 1, 2, 3, 4]  # bounds cast to dtype first
    assert oar.arange(5, 0, -2).tolist() == [5, 3, 1]
    np.testing.assert_allclose(oar.arange(1, 0, -0.25, dtype="float64").numpy(), [1.0, 0.75, 0.5, 0.25])
    assert oar.arange(3, 3).shape == [0]
    with pytest.raises(ArgumentError, match=r"arange: step must not be 0"):
        oar.arange(0, 5, 0)
    with pytest.raises(ArgumentError, match=r"arange: step 1 moves away from end: start=5, end=0"):
        oar.arange(5, 0)


def test_linspace_follows_paddle():
    x = oar.linspace(0, 10, 5)
    assert x.dtype == oar.float32 and x.tolist() == [0.0, 2.5, 5.0, 7.5, 10.0]
    assert oar.linspace(0, 10, 1).tolist() == [0.0]
    assert oar.linspace(2, 3, 0).shape == [0]
    assert oar.linspace(0, 10, 4, dtype="int32").tolist() == [0, 3, 6, 10]  # truncated, as Paddle's kernel
    np.testing.assert_allclose(oar.linspace(-1.0, 1.0, 7, "float64").numpy(), np.linspace(-1, 1, 7), rtol=0, atol=1e-15)
    assert oar.linspace(oar.to_tensor(0.0), oar.to_tensor(1.0), oar.to_tensor(3)).tolist() == [0.0, 0.5, 1.0]
    with pytest.raises(ArgumentError, match=r"linspace: num must be a non-negative int, got -1"):
        oar.linspace(0, 1, -1)
    with pytest.raises(ArgumentError, match=r"linspace: num must be a non-negative int, got 2.5"):
        oar.linspace(0, 1, 2.5)


def test_like_functions():
    x = oar.to_tensor([[1.0, 2.0, 3.0]], stop_gradient=False)
    for fn, value in ((oar.zeros_like, 0), (oar.ones_like, 1)):
        y = fn(x)
        assert y.shape == [1, 3] and y.dtype == oar.float32 and y.stop_gradient and (y.numpy() == value).all()
        assert fn(x, dtype="int32").dtype == oar.int32
    assert oar.full_like(x, 2).tolist() == [[2.0, 2.0, 2.0]]
    assert oar.full_like(oar.to_tensor([1, 2]), 9).dtype == oar.int64
    assert oar.empty_like(x, "float64").dtype == oar.float64 and oar.empty_like(x).shape == [1, 3]
    assert oar.zeros_like(np.ones((2, 2))).shape == [2, 2]
    with pytest.raises(ArgumentError, match=r"full_like: fill_value nan does not fit dtype int64"):
        oar.full_like(oar.to_tensor([1, 2]), float("nan"))


# -- seeding and state ------------------------------------------------------------------------------
RANDOM_CALLS = {
    "rand": lambda: oar.rand([3, 4]),
    "randn": lambda: oar.randn([3, 4]),
    "standard_normal": lambda: oar.standard_normal([5]),
    "normal": lambda: oar.normal(1.0, 2.0, [5]),
    "normal_tensor": lambda: oar.normal(oar.zeros([4]), oar.ones([4])),
    "uniform": lambda: oar.uniform([6], min=-3, max=3),
    "randint": lambda: oar.randint(0, 1000, [8]),
    "randperm": lambda: oar.randperm(20),
    "bernoulli": lambda: oar.bernoulli(oar.full([16], 0.5)),
    "multinomial": lambda: oar.multinomial(oar.ones([2, 50]), 10),
}


@pytest.mark.parametrize("name", sorted(RANDOM_CALLS))
def test_same_seed_same_values_different_seed_different_values(name):
    call = RANDOM_CALLS[name]
    oar.seed(2024)
    first = call().numpy()
    second = call().numpy()  # the generator moved on
    oar.seed(2024)
    again = call().numpy()
    oar.seed(2025)
    other = call().numpy()
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, second)
    assert not np.array_equal(first, other)


def test_seed_returns_the_global_generator_and_matches_numpy():
    generator = oar.seed(3)
    assert isinstance(generator, np.random.Generator) and generator is oar.seed(4)
    oar.seed(3)
    np.testing.assert_array_equal(oar.rand([5], "float64").numpy(), np.random.default_rng(3).random(5))
    oar.seed(-1)  # any 64-bit int, as Paddle
    with pytest.raises(ArgumentError, match=r"seed: expected an int, got float"):
        oar.seed(1.5)


def test_rng_state_roundtrip_is_plain_data():
    oar.seed(11)
    oar.rand([3])
    state = oar.get_rng_state()
    assert isinstance(state, list) and len(state) == 1
    restored = json.loads(json.dumps(state))  # plain data: no pickle needed
    expected = oar.randn([4]).numpy()
    oar.rand([10])
    oar.set_rng_state(restored)
    np.testing.assert_array_equal(oar.randn([4]).numpy(), expected)
    oar.set_rng_state(restored[0])
    np.testing.assert_array_equal(oar.randn([4]).numpy(), expected)
    state[0]["state"]["state"] = 0  # the returned state is a copy
    oar.set_rng_state(restored)
    np.testing.assert_array_equal(oar.randn([4]).numpy(), expected)
    with pytest.raises(ArgumentError, match=r"set_rng_state: expected what get_rng_state\(\) returned"):
        oar.set_rng_state([{"bit_generator": "MT19937"}])
    with pytest.raises(ArgumentError, match=r"set_rng_state: the state is malformed"):
        oar.set_rng_state([{"bit_generator": "PCG64", "state": {}}])


def test_uniform_seed_argument_is_reproducible_without_global_seed():
    a = oar.uniform([5], seed=42).numpy()
    oar.rand([7])
    np.testing.assert_array_equal(oar.uniform([5], seed=42).numpy(), a)
    assert not np.array_equal(oar.uniform([5], seed=43).numpy(), a)


# -- distributions ------------------------------------------------------------------------------
def test_uniform_distributions():
    oar.seed(0)
    u = oar.rand([N]).numpy()
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.003
    v = oar.uniform([N], dtype="float64", min=-2.0, max=6.0).numpy()
    assert v.dtype == np.float64 and v.min() >= -2.0 and v.max() < 6.0
    assert abs(v.mean() - 2.0) < 0.04 and abs(v.std() - 8 / np.sqrt(12)) < 0.03
    assert (oar.uniform([3], min=1.0, max=1.0).numpy() == 1.0).all()
    with pytest.raises(ArgumentError, match=r"uniform: min \(2.0\) must not be greater than max \(1.0\)"):
        oar.uniform([3], min=2.0, max=1.0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision_uniform_stays_below_max(dtype):
    oar.seed(1)
    u = oar.rand([N], dtype=dtype)
    assert u.dtype == dtype
    values = u.numpy().astype(np.float64)
    assert values.min() >= 0.0 and values.max() < 1.0 and abs(values.mean() - 0.5) < 0.01


def test_normal_distributions():
    oar.seed(0)
    z = oar.randn([N]).numpy()
    assert z.dtype == np.float32 and abs(z.mean()) < 0.01 and abs(z.std() - 1.0) < 0.01
    n = oar.normal(3.0, 2.0, [N]).numpy()
    assert abs(n.mean() - 3.0) < 0.02 and abs(n.std() - 2.0) < 0.02
    s = oar.standard_normal([N], dtype="float64").numpy()
    assert s.dtype == np.float64 and abs(s.std() - 1.0) < 0.01


def test_normal_with_tensors_follows_their_shape_dtype_and_is_differentiable():
    mean = oar.to_tensor([[0.0, 10.0], [100.0, -5.0]], dtype="float64", stop_gradient=False)
    std = oar.to_tensor([1.0, 2.0, 3.0, 4.0], dtype="float64", stop_gradient=False)
    out = oar.normal(mean, std)
    assert out.shape == [2, 2] and out.dtype == oar.float64
    out.sum().backward()
    np.testing.assert_allclose(mean.grad.numpy(), np.ones((2, 2)))
    assert std.grad.shape == [4]
    assert oar.normal(mean, 0.0).tolist() == mean.tolist()
    big = oar.normal(oar.full([N], 5.0), 0.5).numpy()
    assert abs(big.mean() - 5.0) < 0.01 and abs(big.std() - 0.5) < 0.01
    assert oar.normal(0.0, oar.full([2, 3], 2.0)).shape == [2, 3]
    assert oar.normal(oar.zeros([2], "float32"), oar.ones([2], "float64")).dtype == oar.float32  # mean's dtype
    with pytest.raises(ShapeError, match=r"normal: mean \[2, 2\] and std \[3\] must have the same number of elements"):
        oar.normal(mean, oar.ones([3], dtype="float64"))
    with pytest.raises(ArgumentError, match=r"normal: give shape when mean and std are numbers"):
        oar.normal()
    with pytest.raises(ArgumentError, match=r"normal: a tensor mean/std must be floating, got int64"):
        oar.normal(oar.to_tensor([1, 2]))


def test_randint():
    x = oar.randint(5)  # Paddle: high=None draws from [0, low), shape [1]
    assert x.shape == [1] and x.dtype == oar.int64
    oar.seed(0)
    v = oar.randint(-3, 3, [N]).numpy()
    assert v.min() == -3 and v.max() == 2
    counts = np.bincount(v + 3)
    assert np.all(np.abs(counts / N - 1 / 6) < 0.005)
    assert oar.randint(0, 10, [2, 2], dtype="int32").dtype == oar.int32
    with pytest.raises(ArgumentError, match=r"randint: low \(3\) must be less than high \(3\)"):
        oar.randint(3, 3)
    with pytest.raises(ArgumentError, match=r"randint: high must be an int, got 2.5"):
        oar.randint(0, 2.5)
    with pytest.raises(ArgumentError, match=r"randint: \[0, 1000\) does not fit dtype int8"):
        oar.randint(0, 1000, dtype="int8")


def test_randperm():
    p = oar.randperm(50)
    assert p.dtype == oar.int64 and sorted(p.tolist()) == list(range(50))
    assert oar.randperm(4, dtype="float32").dtype == oar.float32
    assert oar.randperm(0).shape == [0]
    with pytest.raises(ArgumentError, match=r"randperm: n must be a non-negative int, got -2"):
        oar.randperm(-2)


def test_bernoulli():
    oar.seed(0)
    probs = oar.to_tensor([0.0, 0.2, 0.9, 1.0], dtype="float64")
    draws = np.stack([oar.bernoulli(probs).numpy() for _ in range(5000)])
    assert draws.dtype == np.float64 and set(np.unique(draws)) <= {0.0, 1.0}
    np.testing.assert_allclose(draws.mean(axis=0), [0.0, 0.2, 0.9, 1.0], atol=0.02)
    assert (draws[:, 0] == 0).all() and (draws[:, 3] == 1).all()
    flat = oar.bernoulli(oar.zeros([N]), p=0.3).numpy()
    assert flat.dtype == np.float32 and abs(flat.mean() - 0.3) < 0.005
    assert oar.bernoulli(oar.full([2, 2], 0.5, dtype="float16")).dtype == oar.float16
    with pytest.raises(ArgumentError, match=r"bernoulli: probabilities must lie in \[0, 1\]; x has values from -0.5 to 0.5"):
        oar.bernoulli(oar.to_tensor([-0.5, 0.5]))
    with pytest.raises(ArgumentError, match=r"bernoulli: p must lie in \[0, 1\], got 1.5"):
        oar.bernoulli(oar.ones([2]), p=1.5)


def test_multinomial():
    oar.seed(0)
    probs = oar.to_tensor([0.1, 0.2, 0.7])
    draws = oar.multinomial(probs, 20000, replacement=True)
    assert draws.shape == [20000] and draws.dtype == oar.int64
    np.testing.assert_allclose(np.bincount(draws.numpy(), minlength=3) / 20000, [0.1, 0.2, 0.7], atol=0.015)
    rows = oar.multinomial(oar.to_tensor([[1.0, 1.0, 1.0, 1.0], [0.0, 5.0, 5.0, 0.0]]), 2)
    assert rows.shape == [2, 2]
    assert len(set(rows.numpy()[0])) == 2 and set(rows.numpy()[1]) == {1, 2}  # no repeats without replacement
    unnormalised = oar.multinomial(oar.to_tensor([0.0, 3.0]), 1)
    assert unnormalised.tolist() == [1]


@pytest.mark.parametrize("call, error, message", [
    (lambda: oar.multinomial(oar.ones([3]), 4), ArgumentError,
     r"multinomial: without replacement, num_samples \(4\) must not exceed the number of categories \(3\)"),
    (lambda: oar.multinomial(oar.to_tensor([0.0, 1.0, 0.0]), 2), ArgumentError,
     r"without replacement, num_samples \(2\) must not exceed the number of nonzero probabilities in a row \(1\)"),
    (lambda: oar.multinomial(oar.to_tensor([[0.0, 0.0], [1.0, 1.0]]), 1), ArgumentError,
     r"multinomial: every row of x needs a positive sum"),
    (lambda: oar.multinomial(oar.to_tensor([-1.0, 2.0]), 1), ArgumentError,
     r"multinomial: probabilities must be finite and >= 0"),
    (lambda: oar.multinomial(oar.ones([2, 2, 2]), 1), ShapeError,
     r"multinomial: x \[2, 2, 2\] must be 1-d \(one distribution\) or 2-d"),
    (lambda: oar.multinomial(oar.ones([3]), 0), ArgumentError, r"multinomial: num_samples must be a positive int"),
])
def test_multinomial_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_random_functions_dtype_and_shape_defaults():
    assert oar.rand([2]).dtype == oar.float32
    assert oar.randn([2]).dtype == oar.float32
    assert oar.standard_normal([2]).dtype == oar.float32
    assert oar.uniform([2]).dtype == oar.float32
    assert oar.normal(shape=[2]).dtype == oar.float32
    assert oar.randint(3).dtype == oar.int64
    assert oar.randperm(3).dtype == oar.int64
    assert oar.multinomial(oar.ones([3])).shape == [1]
    x = oar.rand([2, 3])
    assert x.stop_gradient and oar.rand([]).shape == []


def test_random_ops_are_registered_as_nondiff_random():
    ops = registries().ops
    for name in ("uniform", "gaussian", "randint", "randperm"):
        assert {"nondiff", "random", "creation"} <= ops.get(name).traits, name
    for name in ("bernoulli", "multinomial"):
        assert {"nondiff", "random"} <= ops.get(name).traits and "creation" not in ops.get(name).traits, name
    assert "nondiff" in ops.get("full_like").traits
