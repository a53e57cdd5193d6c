"""Linalg beyond the op table: error messages, dtypes, AMP category, higher-order gradients."""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar.errors import ArgumentError, DTypeError, ShapeError
from oar.plugins import registries


@pytest.mark.parametrize("call, error, message", [
    (lambda: oar.matmul(oar.ones([2, 3]), oar.ones([4, 5])), ShapeError,
     r"^matmul: x \[2, 3\] and y \[4, 5\]: contraction dims differ \(3 vs 4\)$"),
    (lambda: oar.matmul(oar.ones([2, 3]), oar.ones([2, 3]), transpose_y=True, transpose_x=True), ShapeError,
     r"matmul: x \[2, 3\] and y \[2, 3\] \(transpose_x\) \(transpose_y\): contraction dims differ \(2 vs 3\)"),
    (lambda: oar.matmul(oar.ones([3]), oar.ones([4])), ShapeError, r"contraction dims differ \(3 vs 4\)"),
    (lambda: oar.matmul(oar.ones([2, 2, 3]), oar.ones([3, 3, 1])), ShapeError,
     r"matmul: cannot broadcast x batch dims \[2\] with y batch dims \[3\]"),
    (lambda: oar.matmul(oar.ones([]), oar.ones([3])), ShapeError,
     r"matmul: x \[\] and y \[3\]: both operands need at least 1 dimension"),
    (lambda: oar.ones([2, 3]) @ oar.ones([2, 3]), ShapeError, r"matmul: x \[2, 3\] and y \[2, 3\]"),
    (lambda: oar.matmul(oar.ones([2, 2], "bool"), oar.ones([2, 2], "bool")), DTypeError,
     r"op 'matmul' does not support dtype bool"),
    (lambda: oar.bmm(oar.ones([2, 3]), oar.ones([3, 2])), ShapeError,
     r"bmm: x \[2, 3\] and y \[3, 2\]: both operands must be 3-d"),
    (lambda: oar.bmm(oar.ones([2, 2, 3]), oar.ones([1, 3, 2])), ShapeError,
     r"bmm: x \[2, 2, 3\] and y \[1, 3, 2\]: batch sizes differ \(2 vs 1\)"),
    (lambda: oar.bmm(oar.ones([2, 2, 3]), oar.ones([2, 2, 2])), ShapeError,
     r"bmm: x \[2, 2, 3\] and y \[2, 2, 2\]: contraction dims differ \(3 vs 2\)"),
    (lambda: oar.dot(oar.ones([2, 3]), oar.ones([3])), ShapeError, r"dot: x \[2, 3\] and y \[3\]: shapes must be equal"),
    (lambda: oar.dot(oar.ones([3]), oar.ones([4])), ShapeError, r"dot: x \[3\] and y \[4\]: shapes must be equal"),
    (lambda: oar.dot(oar.ones([1, 2, 3]), oar.ones([1, 2, 3])), ShapeError,
     r"dot: x \[1, 2, 3\] and y \[1, 2, 3\]: expected two 1-d vectors or two 2-d batches"),
    (lambda: oar.matmul(oar.ones([2]), "x"), ArgumentError, r"matmul: argument 'y' must be a Tensor, got str"),
])
def test_errors_name_the_op_and_shapes(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("equation, shapes, error, message", [
    ("ij,jk->ik", [[2, 3], [4, 5]], ShapeError,
     r"einsum: label 'j' of 'ij,jk->ik' is 3 in operand 0 but 4 in operand 1 \(sizes must be equal or 1\)"),
    ("ij,jk", [[2, 3]], ArgumentError, r"einsum: equation 'ij,jk' names 2 operand\(s\) but 1 were given"),
    ("ijk->i", [[2, 3]], ShapeError, r"einsum: operand 0 has shape \[2, 3\] \(2 dims\) but term 'ijk' names 3"),
    ("i1->i", [[2, 3]], ArgumentError, r"einsum: equation 'i1->i' has characters \['1'\] in term 'i1'"),
    ("...i...->i", [[2, 3]], ArgumentError, r"more than one '...'"),
    ("...ij->ij", [[4, 2, 3]], ShapeError, r"the inputs' '...' covers 1 dim\(s\) but the output has no '...'"),
    ("ij->ii", [[2, 3]], ArgumentError, r"einsum: the output 'ii' of 'ij->ii' repeats a label or names one that no"),
    ("ij->k", [[2, 3]], ArgumentError, r"einsum: the output 'k' of 'ij->k' repeats a label or names one"),
    ("ii->i", [[2, 3]], ShapeError, r"einsum: operand 0 has shape \[2, 3\] but repeats label 'i'"),
    ("ij->i->j", [[2, 3]], ArgumentError, r"has more than one '->'"),
    ("...ij", [[3]], ShapeError, r"einsum: operand 0 has shape \[3\] but term '...ij' names 2 dims"),
])
def test_einsum_errors(equation, shapes, error, message):
    with pytest.raises(error, match=message):
        oar.einsum(equation, *[oar.ones(s) for s in shapes])


def test_einsum_operands_as_a_list_and_spaces():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    out = oar.einsum("ij, jk -> ik", [oar.to_tensor(a), oar.to_tensor(b)])
    np.testing.assert_allclose(out.numpy(), a @ b)
    with pytest.raises(ArgumentError, match=r"einsum: give at least one operand"):
        oar.einsum("ij")
    with pytest.raises(ArgumentError, match=r"einsum: equation must be a string"):
        oar.einsum(3, oar.ones([2]))


def test_einsum_differentiates_a_repeated_label():
    # A trace and a diagonal (issue #24): the gradient lies on the diagonal the label reads.
    x = oar.to_tensor(np.arange(9.0).reshape(3, 3), stop_gradient=False)
    out = oar.einsum("ii->", x)
    assert out.item() == 12.0
    out.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.eye(3))
    x.clear_gradient()
    (oar.einsum("ii->i", x) * oar.to_tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.diag([1.0, 2.0, 3.0]))


def test_einsum_second_order_gradient_through_a_diagonal():
    x = oar.to_tensor(np.arange(1.0, 5.0).reshape(2, 2), stop_gradient=False)
    y = (oar.einsum("ii->i", x) ** 3).sum()  # sum of the diagonal's cubes
    (g,) = oar.grad(y, x, create_graph=True)
    np.testing.assert_allclose(g.numpy(), np.diag([3.0, 48.0]))
    (gg,) = oar.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), np.diag([6.0, 24.0]))


def test_matmul_of_mixed_dtypes_raises_as_in_paddle():
    # Paddle's matmul does no type promotion: its kernel takes one dtype (and static `a @ b`
    # raises TypeError for float32 @ float64, test_tensor_type_promotion.py in Paddle).
    x = oar.to_tensor(np.ones((2, 3)), dtype="float32", stop_gradient=False)
    y = oar.to_tensor(np.ones((3, 2)), dtype="float64", stop_gradient=False)
    with pytest.raises(DTypeError, match=r"matmul: x is float32, y is float64; .*x.astype\('float64'\)"):
        oar.matmul(x, y)
    out = oar.matmul(x.astype("float64"), y)
    out.sum().backward()
    assert x.grad.dtype == oar.float32 and y.grad.dtype == oar.float64
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 3), 2.0))


def test_integer_products_keep_integer_dtypes():
    a = oar.to_tensor([[1, 2], [3, 4]], dtype="int32")
    assert oar.matmul(a, a).dtype == oar.int32 and oar.matmul(a, a).tolist() == [[7, 10], [15, 22]]
    assert oar.dot(oar.to_tensor([1, 2]), oar.to_tensor([3, 4])).tolist() == 11
    assert oar.outer(oar.to_tensor([1, 2]), oar.to_tensor([3])).dtype == oar.int64


def test_low_precision_products_accumulate_in_float32():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((8, 512)), rng.standard_normal((512, 8))
    for dtype in ("float16", "bfloat16"):
        out = oar.matmul(oar.to_tensor(a, dtype=dtype), oar.to_tensor(b, dtype=dtype))
        assert out.dtype == dtype
        exact = oar.to_tensor(a, dtype=dtype).numpy().astype(np.float64) @ oar.to_tensor(b, dtype=dtype).numpy().astype(np.float64)
        np.testing.assert_allclose(out.numpy().astype(np.float64), exact, rtol=2e-2, atol=0.3)


def test_products_are_low_precision_ops_for_amp():
    ops = registries().ops
    for name in ("matmul", "dot", "einsum"):
        assert ops.get(name).amp == "low_precision"


def test_matmul_second_order_gradient():
    rng = np.random.default_rng(1)
    x = oar.to_tensor(rng.standard_normal((2, 3)), dtype="float64", stop_gradient=False)
    y = oar.to_tensor(rng.standard_normal((3, 4)), dtype="float64", stop_gradient=False)
    (dx,) = oar.grad(oar.matmul(x, y).sum(), x, create_graph=True)
    np.testing.assert_allclose(dx.numpy(), np.tile(y.numpy().sum(axis=1), (2, 1)))
    (dy,) = oar.grad(dx.sum(), y)  # sum(dx) = 2 * sum(y)
    np.testing.assert_allclose(dy.numpy(), np.full((3, 4), 2.0))


def test_einsum_second_order_gradient():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(3.0)
    x = oar.to_tensor(a, stop_gradient=False)
    y = oar.to_tensor(b, stop_gradient=False)
    s = oar.einsum("ij,j->", x, y)  # s = sum_ij x_ij y_j
    (dx,) = oar.grad(s * s, x, create_graph=True)  # d(s^2)/dx_ij = 2 s y_j
    total = float((a @ b).sum())
    np.testing.assert_allclose(dx.numpy(), 2 * total * np.tile(b, (2, 1)))
    (dy,) = oar.grad(dx.sum(), y)  # sum(dx) = 4 s sum(y): d/dy_k = 4 (sum_i x_ik sum(y) + s)
    np.testing.assert_allclose(dy.numpy(), 4 * (a.sum(axis=0) * b.sum() + total))


def test_tensor_methods():
    x, y = oar.ones([2, 3]), oar.ones([3, 4])
    assert x.matmul(y).shape == [2, 4] and x.mm(y).shape == [2, 4]
    assert oar.ones([2, 2, 3]).bmm(oar.ones([2, 3, 1])).shape == [2, 2, 1]
    assert x.dot(x).tolist() == [3.0, 3.0]
    assert oar.ones([2]).outer(oar.ones([3])).shape == [2, 3]
    assert (np.ones((4, 2)) @ x).shape == [4, 3]
