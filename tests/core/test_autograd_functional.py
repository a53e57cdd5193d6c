"""``oar.autograd.jacobian`` / ``hessian`` (lazy, row by row) and ``Function``, against numpy's
analytic derivatives and finite differences, in float64."""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar.autograd import Hessian, Jacobian
from oar.errors import ArgumentError, ShapeError
from oar.testing import GRAD_ATOL, GRAD_RTOL, TOLERANCES, numeric_gradient

RTOL, ATOL = TOLERANCES["float64"]
RNG = np.random.default_rng(0)


def leaf(a):
    return oar.to_tensor(np.asarray(a, dtype="float64"), stop_gradient=False)


def test_function_is_paddles_alias_of_pylayer():
    assert oar.autograd.Function is oar.autograd.PyLayer


def test_jacobian_of_a_vector_function_matches_the_analytic_matrix():
    a = RNG.normal(size=4)
    x = leaf(a)
    J = oar.autograd.jacobian(oar.sin(x) * x.sum(), x)
    expected = np.diag(np.cos(a) * a.sum()) + np.sin(a)[:, None]
    assert isinstance(J, Jacobian) and J.shape == [4, 4]
    np.testing.assert_allclose(J[:].numpy(), expected, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(J[2].numpy(), expected[2], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(J[:, 1].numpy(), expected[:, 1], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(J[1:4:2, -1].numpy(), expected[1:4:2, -1], rtol=RTOL, atol=ATOL)
    assert float(J[0, 3]) == pytest.approx(expected[0, 3])
    np.testing.assert_allclose((J + 1).numpy(), expected + 1, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose((J @ J).numpy(), expected @ expected, rtol=RTOL, atol=ATOL)


def test_rows_are_evaluated_lazily_and_cached():
    x = leaf([1.0, 2.0, 3.0])
    J = oar.autograd.jacobian(x * x, x)
    assert J._cache == {}
    J[1]
    assert sorted(J._cache) == [1]
    J[0:2]
    assert sorted(J._cache) == [0, 1]


def test_jacobian_agrees_with_finite_differences():
    a = RNG.normal(size=3)

    def f(v):
        return np.tanh(v) * v[::-1] + v ** 2

    x = leaf(a)
    J = oar.autograd.jacobian(oar.tanh(x) * x.flip(0) + x ** 2, x)[:].numpy()
    for row in range(3):
        numeric = numeric_gradient(lambda v, row=row: float(f(v)[row]), a.copy())
        np.testing.assert_allclose(J[row], numeric, rtol=GRAD_RTOL, atol=GRAD_ATOL * 100)


def test_zero_dimensional_ys_or_xs_drop_their_axis():
    x = leaf([1.0, 2.0, 3.0])
    J = oar.autograd.jacobian((x * x).sum(), x)
    assert J.shape == [3] and J[:].tolist() == [2.0, 4.0, 6.0] and float(J[1]) == 4.0
    s = leaf(2.0)
    J0 = oar.autograd.jacobian(s * s, s)
    assert J0.shape == [] and float(J0._evaluate_all()) == 4.0
    with pytest.raises(IndexError):
        J0[0]
    Js = oar.autograd.jacobian(x * s, s)
    assert Js.shape == [3] and Js[:].tolist() == [1.0, 2.0, 3.0]


def test_sequences_give_nested_tuples_and_unused_inputs_give_zeros():
    x1, x2 = leaf([1.0, 2.0]), leaf([3.0, 4.0, 5.0])
    J = oar.autograd.jacobian((x1 * 2, x2.sum() * x1), (x1, x2))
    assert len(J) == 2 and len(J[0]) == 2
    np.testing.assert_allclose(J[0][0][:].numpy(), 2 * np.eye(2))
    np.testing.assert_allclose(J[0][1][:].numpy(), np.zeros((2, 3)))
    np.testing.assert_allclose(J[1][1][:].numpy(), np.array([[1.0] * 3, [2.0] * 3]))
    constant = oar.to_tensor([1.0, 2.0], dtype="float64")
    assert oar.autograd.jacobian(constant * 2, x1)[:].tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_batched_jacobian_is_one_matrix_per_row():
    a = RNG.normal(size=(3, 2))
    x = leaf(a)
    J = oar.autograd.jacobian(x * x * x, x, batch_axis=0)
    expected = np.stack([np.diag(3 * r ** 2) for r in a])
    assert J.shape == [3, 2, 2]
    np.testing.assert_allclose(J[:].numpy(), expected, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(J[:, 1].numpy(), expected[:, 1], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(J[2, :, 0].numpy(), expected[2, :, 0], rtol=RTOL, atol=ATOL)
    # A 1-D ys: one output per batch row, the matrix is [B, N] (Paddle 3.3.1 gives [B, 1, N] for J[:]).
    J1 = oar.autograd.jacobian((x * x).sum(1), x, batch_axis=0)
    assert J1.shape == [3, 2]
    np.testing.assert_allclose(J1[:].numpy(), 2 * a, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(J1[1].numpy(), 2 * a[1], rtol=RTOL, atol=ATOL)


def test_hessian_matches_the_analytic_matrix_and_stays_differentiable():
    a = RNG.normal(size=3)
    x = leaf(a)
    # f = (sum x)^2 * x0  ->  H = 2 x0 * ones + 2 sum(x) (e0 1^T + 1 e0^T)
    H = oar.autograd.hessian(x.sum() ** 2 * x[0], x)
    e0 = np.eye(3)[0]
    expected = 2 * a[0] * np.ones((3, 3)) + 2 * a.sum() * (np.outer(e0, np.ones(3)) + np.outer(np.ones(3), e0))
    assert isinstance(H, Hessian) and H.shape == [3, 3]
    np.testing.assert_allclose(H[:].numpy(), expected, rtol=RTOL, atol=ATOL)
    # Third derivative through the Hessian: d/dx of trace(H) = d/dx (6 x0 + 4 sum x) = [10, 4, 4].
    (third,) = oar.grad(H[:].trace(), x)
    np.testing.assert_allclose(third.numpy(), [10.0, 4.0, 4.0], rtol=RTOL, atol=ATOL)


def test_hessian_of_several_inputs_and_batched():
    x1, x2 = leaf([1.0, 2.0]), leaf([3.0])
    H = oar.autograd.hessian((x1 * x1).sum() * x2.sum(), (x1, x2))
    np.testing.assert_allclose(H[0][0][:].numpy(), 6 * np.eye(2))
    np.testing.assert_allclose(H[0][1][:].numpy(), [[2.0], [4.0]])
    np.testing.assert_allclose(H[1][0][:].numpy(), [[2.0, 4.0]])
    np.testing.assert_allclose(H[1][1][:].numpy(), [[0.0]])
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    xb = leaf(a)
    Hb = oar.autograd.hessian((xb ** 3).sum(1), xb, batch_axis=0)
    assert Hb.shape == [2, 2, 2]
    np.testing.assert_allclose(Hb[:].numpy(), np.stack([np.diag(6 * r) for r in a]))


def test_bad_arguments_are_refused():
    x = leaf([[1.0, 2.0]])
    with pytest.raises(ShapeError, match="xs.ndim"):
        oar.autograd.jacobian(x, x)
    with pytest.raises(ArgumentError, match="batch_axis"):
        oar.autograd.jacobian(x, x, batch_axis=1)
    with pytest.raises(ShapeError, match="one element"):
        oar.autograd.hessian(x, x)
    v = leaf([1.0, 2.0])
    with pytest.raises(IndexError, match="Ellipsis"):
        oar.autograd.jacobian(v * v, v)[..., 0]
