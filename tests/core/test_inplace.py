"""In-place ops: values, the version counter, autograd through them, and the errors they raise."""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar.errors import ArgumentError, DTypeError, GradientError, ShapeError


def leaf(values, dtype="float64"):
    return oar.to_tensor(np.asarray(values, dtype=dtype), stop_gradient=False)


X = np.array([[0.3, -1.2, 2.5], [1.7, -0.4, 0.9]])
POS = np.abs(X) + 0.5
Y = np.array([0.5, -2.0, 1.5])

# (method, args, out-of-place function, input values)
UNARY_AND_BINARY = [
    ("add_", (Y,), lambda x: oar.add(x, oar.to_tensor(Y)), X),
    ("subtract_", (2.0,), lambda x: x - 2.0, X),
    ("multiply_", (Y,), lambda x: x * oar.to_tensor(Y), X),
    ("divide_", (Y,), lambda x: x / oar.to_tensor(Y), X),
    ("floor_divide_", (0.7,), lambda x: x // 0.7, X),
    ("remainder_", (0.7,), lambda x: x % 0.7, X),
    ("mod_", (0.7,), lambda x: oar.mod(x, 0.7), X),
    ("pow_", (3,), lambda x: x ** 3, X),
    ("scale_", (2.0, 1.0), lambda x: oar.scale(x, 2.0, 1.0), X),
    ("clip_", (-1.0, 1.0), lambda x: oar.clip(x, -1.0, 1.0), X),
    ("exp_", (), oar.exp, X),
    ("log_", (), oar.log, POS),
    ("log1p_", (), oar.log1p, POS),
    ("log2_", (), oar.log2, POS),
    ("log10_", (), oar.log10, POS),
    ("sqrt_", (), oar.sqrt, POS),
    ("rsqrt_", (), oar.rsqrt, POS),
    ("square_", (), oar.square, X),
    ("reciprocal_", (), oar.reciprocal, X),
    ("tanh_", (), oar.tanh, X),
    ("sigmoid_", (), lambda x: x.sigmoid(), X),
    ("sin_", (), oar.sin, X),
    ("cos_", (), oar.cos, X),
    ("tan_", (), oar.tan, X),
    ("erf_", (), oar.erf, X),
    ("abs_", (), oar.abs, X),
    ("neg_", (), oar.neg, X),
    ("floor_", (), oar.floor, X),
    ("ceil_", (), oar.ceil, X),
    ("round_", (), oar.round, X),
    ("trunc_", (), oar.trunc, X),
    ("zero_", (), lambda x: x * 0.0, X),
    ("fill_", (7.5,), lambda x: x * 0.0 + 7.5, X),
]


@pytest.mark.parametrize("method, args, reference, values", UNARY_AND_BINARY, ids=[c[0] for c in UNARY_AND_BINARY])
def test_inplace_matches_out_of_place_and_bumps_the_version(method, args, reference, values):
    x = oar.to_tensor(values)
    buffer = x._data
    expected = reference(oar.to_tensor(values)).numpy()
    out = getattr(x, method)(*[oar.to_tensor(a) if isinstance(a, np.ndarray) else a for a in args])
    assert out is x
    assert x.dtype == oar.float64 and x.shape == list(values.shape)
    np.testing.assert_allclose(x.numpy(), expected, rtol=1e-6)
    assert x._data is buffer  # written into x's own buffer
    assert x.inplace_version == 1


INT_INPLACE = [
    ("logical_and_", (np.array([1, 0, 1]),), np.logical_and),
    ("logical_or_", (np.array([0, 0, 1]),), np.logical_or),
    ("logical_xor_", (np.array([1, 1, 0]),), np.logical_xor),
    ("bitwise_and_", (np.array([6, 3, 1]),), np.bitwise_and),
    ("bitwise_or_", (np.array([6, 3, 1]),), np.bitwise_or),
    ("bitwise_xor_", (np.array([6, 3, 1]),), np.bitwise_xor),
]


@pytest.mark.parametrize("method, args, reference", INT_INPLACE, ids=[c[0] for c in INT_INPLACE])
def test_integer_inplace_ops_keep_the_dtype(method, args, reference):
    values = np.array([5, 0, 3])
    x = oar.to_tensor(values)
    getattr(x, method)(*[oar.to_tensor(a) for a in args])
    assert x.dtype == oar.int64
    np.testing.assert_array_equal(x.numpy(), reference(values, *args).astype(np.int64))


def test_unary_logic_inplace():
    x = oar.to_tensor([True, False])
    x.logical_not_()
    assert x.tolist() == [False, True]
    x.bitwise_not_()
    assert x.tolist() == [True, False]


def test_top_level_inplace_functions_are_the_methods():
    for name in ("add_", "subtract_", "multiply_", "divide_", "pow_", "abs_", "neg_", "exp_", "sqrt_",
                 "tanh_", "floor_", "ceil_", "round_", "clip_", "scale_", "reciprocal_", "remainder_",
                 "logical_and_", "bitwise_not_"):
        assert getattr(oar, name) is getattr(oar.Tensor, name), name
    x = oar.to_tensor([1.0, -2.0])
    assert oar.abs_(x) is x and x.tolist() == [1.0, 2.0]
    assert not hasattr(oar, "zero_") and not hasattr(oar, "sigmoid_")  # methods only, as in Paddle


def test_where_inplace_modifies_x():
    x = oar.to_tensor([1.0, -2.0, 3.0])
    out = oar.where_(x > 0, x, oar.to_tensor([0.0, 0.0, 0.0]))
    assert out is x and x.tolist() == [1.0, 0.0, 3.0] and x.inplace_version == 1


def test_out_argument_writes_into_the_given_tensor():
    out = oar.zeros([3], dtype="bool")
    result = oar.logical_and(oar.to_tensor([True, True, False]), oar.to_tensor([True, False, False]), out=out)
    assert result is out and out.tolist() == [True, False, False] and out.inplace_version == 1


# -- augmented assignment ---------------------------------------------------------------------------
def test_augmented_assignment_is_in_place():
    x = oar.to_tensor([1.0, 2.0, 3.0])
    alias, buffer = x, x._data
    x += oar.to_tensor([1.0, 1.0, 1.0])
    x -= 0.5
    x *= 2.0
    x /= oar.to_tensor(4.0)
    assert x is alias and x._data is buffer
    np.testing.assert_allclose(x.numpy(), [0.75, 1.25, 1.75])
    assert x.inplace_version == 4


def test_augmented_assignment_on_a_non_leaf_is_differentiable():
    x = leaf([1.0, 2.0])
    h = x * 1.0
    h *= 3.0  # multiply's rule for h reads only the constant
    h += x
    h.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 4.0])


def test_augmented_assignment_cannot_change_shape_or_kind():
    x = oar.to_tensor([1.0, 2.0, 3.0])
    with pytest.raises(ShapeError, match=r"add_: the result has shape \[2, 3\] but x has shape \[3\]"):
        x += oar.ones([2, 3])
    i = oar.to_tensor([1, 2])
    with pytest.raises(DTypeError, match="divide_: the result has dtype float32 but x is int64"):
        i /= 2
    assert x.tolist() == [1.0, 2.0, 3.0] and i.tolist() == [1, 2]  # nothing written on error
    assert x.inplace_version == 0 and i.inplace_version == 0


def test_result_of_a_narrower_kind_is_cast_into_x():
    x = oar.to_tensor([1.0, 2.0], dtype="float16")
    x.add_(oar.to_tensor([0.5, 0.5], dtype="float32"))
    assert x.dtype == oar.float16 and x.tolist() == [1.5, 2.5]
    f = oar.to_tensor([0.0, 3.0])
    f.logical_not_()  # bool result into a float tensor
    assert f.dtype == oar.float32 and f.tolist() == [1.0, 0.0]


# -- version counter --------------------------------------------------------------------------------
def test_version_counter_counts_inplace_changes_only():
    x = oar.to_tensor([1.0, 2.0])
    assert x.inplace_version == 0
    _ = x + 1.0
    _ = x.exp()
    assert x.inplace_version == 0
    x.add_(1.0)
    x.exp_()
    x.zero_()
    assert x.inplace_version == 3


def test_detach_shares_buffer_and_version():
    x = leaf([1.0, 2.0])
    d = x.detach()
    d.fill_(5.0)
    assert x.tolist() == [5.0, 5.0]
    assert x.inplace_version == d.inplace_version == 1


def test_inplace_through_detach_is_seen_by_nodes_that_saved_the_tensor():
    x = leaf([1.0, 2.0])
    d = x.detach()
    y = x * x
    d.add_(1.0)
    with pytest.raises(GradientError, match="op 'multiply' needs its input"):
        y.sum().backward()


def test_inplace_with_itself_as_the_other_operand():
    x = leaf([1.0, 2.0])
    h = x * 3.0
    h.add_(h)
    h.sum().backward()
    np.testing.assert_allclose(h.numpy(), [6.0, 12.0])
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0])


# -- autograd ------------------------------------------------------------------------------------
def _grad_of(build):
    x = leaf([0.3, -0.7, 1.2])
    build(x).sum().backward()
    return x.grad.numpy()


@pytest.mark.parametrize("name, inplace, out_of_place", [
    ("add_", lambda h: h.add_(2.0), lambda h: h + 2.0),
    ("multiply_", lambda h: h.multiply_(oar.to_tensor([1.0, 2.0, 3.0], dtype="float64")),
     lambda h: h * oar.to_tensor([1.0, 2.0, 3.0], dtype="float64")),
    ("exp_", lambda h: h.exp_(), lambda h: h.exp()),
    ("tanh_", lambda h: h.tanh_(), lambda h: h.tanh()),
    ("sqrt_", lambda h: h.abs().sqrt_(), lambda h: h.abs().sqrt()),
    ("sigmoid_", lambda h: h.sigmoid_(), lambda h: h.sigmoid()),
    ("scale_", lambda h: h.scale_(3.0, 1.0), lambda h: h.scale(3.0, 1.0)),
    ("divide_", lambda h: h.divide_(oar.to_tensor(2.0, dtype="float64")), lambda h: h / 2.0),
    ("reciprocal_", lambda h: h.reciprocal_(), lambda h: h.reciprocal()),
])
def test_gradient_through_inplace_on_a_non_leaf_matches_out_of_place(name, inplace, out_of_place):
    def chain(op):
        def build(x):
            h = x * 1.5  # a non-leaf
            return op(h) * x

        return build

    np.testing.assert_allclose(_grad_of(chain(inplace)), _grad_of(chain(out_of_place)), rtol=1e-12)


def test_inplace_after_an_op_that_saved_its_output_raises_naming_it():
    x = leaf([1.0, 2.0])
    y = x.exp()  # exp's gradient reads its output
    y.add_(1.0)
    with pytest.raises(GradientError, match="op 'exp' needs its output 0 .* modified in place"):
        y.sum().backward()


def test_inplace_on_a_tensor_whose_consumer_does_not_read_it_is_fine():
    x = leaf([1.0, 2.0])
    y = x * 2  # multiply by a constant reads the constant for x's gradient, not y
    y.add_(1.0)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])
    np.testing.assert_allclose(y.numpy(), [3.0, 5.0])


def test_inplace_after_an_op_that_saved_the_input_raises_naming_it():
    x = leaf([1.0, 2.0])
    h = x * 1.0
    z = h * h  # reads h for both gradients
    h.add_(1.0)
    with pytest.raises(GradientError, match=r"op 'multiply' needs its input \d .*version 0 -> 1"):
        z.sum().backward()


def test_an_inplace_op_whose_gradient_needs_the_overwritten_input_raises():
    x = leaf([1.0, 2.0])
    h = x * 1.0
    h.sin_()  # sin's gradient needs the old h, which sin_ overwrote
    with pytest.raises(GradientError, match="op 'sin' needs its input 0"):
        h.sum().backward()


def test_consumers_recorded_before_keep_their_path_to_the_old_value():
    x = leaf([0.5, 1.5])
    h = x * 1.0
    z = h + 1.0  # add reads nothing: its gradient must still reach h's old node
    h.exp_()
    (z.sum() + h.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), 1.0 + np.exp([0.5, 1.5]))
    np.testing.assert_allclose(z.numpy(), [1.5, 2.5])


def test_a_constant_modified_by_a_differentiable_value_starts_tracking():
    w = leaf([2.0, 3.0])
    c = oar.zeros([2], dtype="float64")
    before = c + w  # c was a constant here: its old edge carries no gradient into c's new node
    c.add_(w)
    assert not c.stop_gradient and not c.is_leaf
    (before.sum() + (c * c).sum()).backward()
    np.testing.assert_allclose(w.grad.numpy(), 1.0 + 2 * np.array([2.0, 3.0]))


def test_a_saved_constant_modified_in_place_raises():
    w = leaf([2.0, 3.0])
    c = oar.ones([2], dtype="float64")
    before = c * w  # w's gradient reads c
    c.add_(1.0)
    with pytest.raises(GradientError, match="op 'multiply' needs its input 0"):
        before.sum().backward()


def test_leaf_that_requires_grad_cannot_be_modified_in_place():
    x = leaf([1.0, 2.0])
    with pytest.raises(GradientError, match=r"add_: a leaf tensor that requires grad .* x.detach\(\) .* oar.no_grad\(\)"):
        x.add_(1.0)
    with pytest.raises(GradientError, match="zero_"):
        x.zero_()
    with pytest.raises(GradientError, match="exp_"):
        oar.exp_(x)
    assert x.tolist() == [1.0, 2.0] and x.inplace_version == 0


def test_no_grad_inplace_on_a_parameter_keeps_it_a_leaf_that_requires_grad():
    p = leaf([1.0, 2.0])
    (p * p).sum().backward()
    with oar.no_grad():
        p.subtract_(p.grad * 0.5)  # an optimizer step
    assert p.is_leaf and not p.stop_gradient
    np.testing.assert_allclose(p.numpy(), [0.0, 0.0])
    p.clear_grad()
    (p + 1.0).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), [1.0, 1.0])


def test_no_grad_inplace_on_a_non_leaf_is_invisible_to_autograd():
    x = leaf([1.0, 2.0])
    h = x * 3.0
    with oar.no_grad():
        h.add_(10.0)
    assert not h.stop_gradient and h.tolist() == [13.0, 16.0]
    h.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_nondifferentiable_result_detaches_a_non_leaf():
    x = leaf([1.0, -2.0])
    h = x * 1.0
    h.zero_()
    assert h.stop_gradient and h.is_leaf and h.tolist() == [0.0, 0.0]


def test_read_only_view_refuses_inplace_ops():
    base = oar.to_tensor([1.0, 2.0])
    view = oar.broadcast_to(base, [3, 2])
    with pytest.raises(ArgumentError, match="add_: .*read-only view made by op 'broadcast_to'.*x.clone()"):
        view.add_(1.0)
    assert base.tolist() == [1.0, 2.0] and base.inplace_version == 0
    copy = view.clone()
    copy.add_(1.0)  # a tensor of its own
    np.testing.assert_allclose(copy.numpy(), [[2.0, 3.0]] * 3)


def test_inplace_errors_name_the_op():
    with pytest.raises(ArgumentError, match="fill_: value must be a number"):
        oar.to_tensor([1.0]).fill_("one")
    with pytest.raises(ArgumentError, match="add_: expected a Tensor to modify in place, got list"):
        oar.add_([1.0], 1.0)
    with pytest.raises(DTypeError, match="exp_: .* float32 but x is int64"):
        oar.to_tensor([1, 2]).exp_()
