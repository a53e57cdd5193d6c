"""oar-numba's one-pass optimizer updates: registered in front of oar-nn's numpy rules, the same
floats as those rules, and the numpy rules for the cases they do not cover."""

from __future__ import annotations

import numpy as np
import pytest
from oar_numba import _optimizer

import oar
from oar.optimizer.adam import adam_update
from oar.optimizer.momentum import momentum_update
from oar.optimizer.optimizer import UPDATE_RULES


def adam_state(param):
    dtype = param.dtype
    return {"moment1": np.zeros_like(param), "moment2": np.zeros_like(param),
            "beta1_pow_acc": np.array([0.9], dtype), "beta2_pow_acc": np.array([0.999], dtype)}


def test_the_numba_rules_serve_adam_adamw_and_momentum_on_cpu():
    oar.ones([1]) + 1  # loads the plugins
    for name in ("adam", "adamw", "momentum"):
        assert UPDATE_RULES[(name, "cpu")].__module__ == "oar_numba._optimizer", name


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("coeff", [0.0, 0.01])
@pytest.mark.parametrize("shape", [(3, 5), (300, 300)])  # the serial and the parallel kernel
def test_adam_gives_the_numpy_rules_floats(dtype, coeff, shape):
    rng = np.random.default_rng(0)
    expected = rng.standard_normal(shape).astype(dtype)
    got = expected.copy()
    want_state, got_state = adam_state(expected), adam_state(got)
    rule = _optimizer.make_adam_update(adam_update)
    for _ in range(3):
        grad = rng.standard_normal(shape).astype(dtype)
        grad[0, 0] = 0  # a zero moment: the division by sqrt(0) + epsilon
        args = {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "amsgrad": False, "coeff": coeff}
        adam_update(expected, grad, 1e-3, want_state, **args)
        rule(got, grad, 1e-3, got_state, **args)
    np.testing.assert_array_equal(got, expected)
    for key in want_state:
        np.testing.assert_array_equal(got_state[key], want_state[key])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_momentum_gives_the_numpy_rules_floats(dtype):
    rng = np.random.default_rng(1)
    expected = rng.standard_normal((300, 300)).astype(dtype)
    got = expected.copy()
    want, have = {"velocity": np.zeros_like(expected)}, {"velocity": np.zeros_like(got)}
    rule = _optimizer.make_momentum_update(momentum_update)
    for _ in range(3):
        grad = rng.standard_normal(expected.shape).astype(dtype)
        args = {"momentum": 0.9, "use_nesterov": False, "rescale_grad": 1.0, "l2_coeff": 0.0}
        momentum_update(expected, grad, 0.1, want, **args)
        rule(got, grad, 0.1, have, **args)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(have["velocity"], want["velocity"])


def test_uncovered_cases_go_to_the_numpy_rules():
    calls = []

    def fallback(*args, **kwargs):
        calls.append(kwargs)

    adam = _optimizer.make_adam_update(fallback)
    momentum = _optimizer.make_momentum_update(fallback)
    param = np.ones((4, 4), np.float32)
    adam(param, np.ones((4, 4), np.float32), 0.1, adam_state(param), beta1=0.9, beta2=0.999, epsilon=1e-8,
         amsgrad=True)
    adam(param, np.ones((4, 8), np.float32)[:, ::2], 0.1, adam_state(param), beta1=0.9, beta2=0.999,
         epsilon=1e-8, amsgrad=False)  # a strided gradient
    momentum(param, np.ones((4, 4), np.float32), 0.1, {"velocity": np.zeros_like(param)}, momentum=0.9,
             use_nesterov=True, rescale_grad=1.0, l2_coeff=0.0)
    momentum(param, np.ones((4, 4), np.float32), 0.1, {"velocity": np.zeros_like(param)}, momentum=0.9,
             use_nesterov=False, rescale_grad=1.0, l2_coeff=1e-4)
    assert len(calls) == 4
    np.testing.assert_array_equal(param, np.ones((4, 4), np.float32))
