"""oar.nn.utils (Paddle's paddle.nn.utils) and oar.nn.SpectralNorm against numpy references:
weight_norm / remove_weight_norm, spectral_norm, clip_grad_norm_ / clip_grad_value_,
parameters_to_vector / vector_to_parameters; gradients checked by finite differences."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

import oar
from oar.errors import ArgumentError, GradientError, ShapeError
from oar.nn.utils import (
    clip_grad_norm_,
    clip_grad_value_,
    parameters_to_vector,
    remove_weight_norm,
    spectral_norm,
    vector_to_parameters,
    weight_norm,
)
from oar.testing import GRAD_ATOL, GRAD_RTOL, TOLERANCES, numeric_gradient

RTOL, ATOL = TOLERANCES["float64"]
RNG = np.random.default_rng(19)


@pytest.fixture
def float64():
    oar.set_default_dtype("float64")
    yield
    oar.set_default_dtype("float32")


def np_weight_norm(v, g, dim):
    """g * v / ||v||, the norm over every axis but ``dim`` (over all of v for dim None)."""
    if dim is None:
        return g * v / (np.sqrt((v ** 2).sum()) + 1e-12)
    axes = tuple(a for a in range(v.ndim) if a != dim)
    norm = np.sqrt((v ** 2).sum(axis=axes, keepdims=True) + 1e-12)
    shape = [1] * v.ndim
    shape[dim] = v.shape[dim]
    return v / norm * g.reshape(shape)


# -- weight_norm --------------------------------------------------------------------------------
@pytest.mark.parametrize(("dim", "g_shape"), [(0, [4]), (1, [3]), (-2, [4]), (None, []), (-1, [])])
def test_weight_norm_splits_weight_into_g_and_v(float64, dim, g_shape):
    fc = oar.nn.Linear(4, 3)
    w = fc.weight.numpy().copy()
    weight_norm(fc, dim=dim)
    assert fc.weight_g.shape == g_shape  # dim=-1 means "the whole weight", as in Paddle
    np.testing.assert_allclose(fc.weight_v.numpy(), w, rtol=RTOL, atol=ATOL)
    axes = None if dim in (None, -1) else tuple(a for a in range(2) if a != dim % 2)
    np.testing.assert_allclose(fc.weight_g.numpy(), np.sqrt((w ** 2).sum(axis=axes) + 1e-12), rtol=RTOL, atol=ATOL)
    x = RNG.normal(size=(2, 4))
    np.testing.assert_allclose(fc(oar.to_tensor(x)).numpy(), x @ w + fc.bias.numpy(), rtol=RTOL, atol=ATOL)


def test_weight_norm_recomputes_weight_before_each_call(float64):
    conv = weight_norm(oar.nn.Conv2D(3, 5, 3), dim=1)
    assert conv.weight_g.shape == [3] and conv.weight_v.shape == [5, 3, 3, 3]
    new_g = RNG.uniform(0.5, 2.0, size=[3])
    conv.weight_g.set_value(new_g)
    x = oar.to_tensor(RNG.normal(size=(1, 3, 4, 4)))
    out = conv(x)
    expected_w = np_weight_norm(conv.weight_v.numpy(), new_g, 1)
    np.testing.assert_allclose(conv.weight.numpy(), expected_w, rtol=RTOL, atol=ATOL)
    reference = oar.nn.functional.conv2d(x, oar.to_tensor(expected_w), conv.bias)
    np.testing.assert_allclose(out.numpy(), reference.numpy(), rtol=RTOL, atol=ATOL)


def test_weight_norm_gradients_reach_g_and_v(float64):
    fc = weight_norm(oar.nn.Linear(4, 3), dim=1)
    fc.weight_g.set_value(RNG.uniform(0.5, 2.0, size=[3]))
    x = RNG.normal(size=(5, 4))
    b = fc.bias.numpy()

    def loss(v, g):
        return float(((x @ np_weight_norm(v, g, 1) + b) ** 2).sum())

    oar.sum(oar.square(fc(oar.to_tensor(x)))).backward()
    v0, g0 = fc.weight_v.numpy().copy(), fc.weight_g.numpy().copy()
    np.testing.assert_allclose(fc.weight_v.grad.numpy(), numeric_gradient(lambda v: loss(v, g0), v0),
                               rtol=GRAD_RTOL, atol=GRAD_ATOL)
    np.testing.assert_allclose(fc.weight_g.grad.numpy(), numeric_gradient(lambda g: loss(v0, g), g0),
                               rtol=GRAD_RTOL, atol=GRAD_ATOL)


def test_weight_norm_state_dict_is_paddles_and_round_trips():
    fc = weight_norm(oar.nn.Linear(4, 3))
    assert copy.deepcopy(fc).weight_g.shape == [4]  # a freshly wrapped layer holds no graph yet
    assert list(fc.state_dict()) == ["bias", "weight_v", "weight_g"]
    fc.weight_g.set_value(np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    other = weight_norm(oar.nn.Linear(4, 3))
    other.set_state_dict(fc.state_dict())
    x = oar.rand([2, 4])
    np.testing.assert_allclose(other(x).numpy(), fc(x).numpy(), rtol=TOLERANCES["float32"][0])


def test_remove_weight_norm_restores_a_weight_parameter(float64):
    fc = weight_norm(oar.nn.Linear(4, 3))
    fc.weight_g.set_value(np.full([4], 0.5))
    expected = np_weight_norm(fc.weight_v.numpy(), np.full([4], 0.5), 0)
    assert remove_weight_norm(fc) is fc
    assert list(fc.state_dict()) == ["bias", "weight"]
    assert isinstance(fc.weight, oar.nn.Parameter) and not fc._forward_pre_hooks
    np.testing.assert_allclose(fc.weight.numpy(), expected, rtol=RTOL, atol=ATOL)
    assert not hasattr(fc, "weight_g")
    weight_norm(fc)  # and it can be applied again


def test_training_a_weight_normed_linear_reduces_the_loss():
    oar.seed(3)
    fc = weight_norm(oar.nn.Linear(3, 1))
    x = oar.to_tensor(RNG.normal(size=(32, 3)).astype(np.float32))
    y = oar.matmul(x, oar.to_tensor(np.array([[1.0], [-2.0], [0.5]], np.float32)))
    opt = oar.optimizer.SGD(0.1, parameters=fc.parameters())
    g_before = fc.weight_g.numpy().copy()
    losses = []
    for _ in range(40):
        loss = oar.mean(oar.square(fc(x) - y))
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(loss.item())
    assert losses[-1] < 0.05 * losses[0]
    assert not np.allclose(fc.weight_g.numpy(), g_before)


def test_weight_norm_errors_name_the_layer_and_argument():
    with pytest.raises(ArgumentError, match=r"weight_norm: Linear has no parameter 'kernel' \(its parameters: weight, bias\)"):
        weight_norm(oar.nn.Linear(2, 2), name="kernel")
    with pytest.raises(ArgumentError, match=r"weight_norm: dim must be None or an int in \[-2, 2\).*got 2"):
        weight_norm(oar.nn.Linear(2, 2), dim=2)
    fc = weight_norm(oar.nn.Linear(2, 2))
    with pytest.raises(ArgumentError, match="Linear.weight already has a weight_norm hook"):
        weight_norm(fc)
    with pytest.raises(ArgumentError, match="remove_weight_norm: Linear has no weight_norm on 'bias'"):
        remove_weight_norm(fc, name="bias")
    with pytest.raises(ArgumentError, match="layer must be an oar.nn.Layer, got ndarray"):
        weight_norm(np.zeros(3))


# -- spectral_norm ------------------------------------------------------------------------------
def np_normalize(x, eps=1e-12):
    return x / max(np.linalg.norm(x), eps)


def np_matrix(w, dim):
    return np.moveaxis(w, dim, 0).reshape(w.shape[dim], -1)


def test_spectral_norm_power_iteration_matches_numpy(float64):
    fc = spectral_norm(oar.nn.Linear(4, 3), n_power_iterations=2)
    assert fc.weight_u.shape == [3] and fc.weight_v.shape == [4]  # dim=None is 1 for Linear
    assert list(fc.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    w = fc.weight_orig.numpy()
    u, v = fc.weight_u.numpy().copy(), fc.weight_v.numpy().copy()
    mat = np_matrix(w, 1)
    for _ in range(2):
        v = np_normalize(mat.T @ u)
        u = np_normalize(mat @ v)
    x = RNG.normal(size=(2, 4))
    out = fc(oar.to_tensor(x))
    expected_w = w / (u @ mat @ v)
    np.testing.assert_allclose(fc.weight.numpy(), expected_w, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(out.numpy(), x @ expected_w + fc.bias.numpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(fc.weight_u.numpy(), u, rtol=RTOL, atol=ATOL)  # updated in place in training
    fc.eval()
    fc(oar.to_tensor(x))
    np.testing.assert_allclose(fc.weight_u.numpy(), u, rtol=RTOL, atol=ATOL)  # eval mode: no iteration


def test_spectral_norm_converges_to_unit_spectral_norm(float64):
    conv = spectral_norm(oar.nn.Conv2D(2, 4, 3), n_power_iterations=30)
    assert conv.weight_u.shape == [4] and conv.weight_v.shape == [18]  # dim=None is 0 for Conv2D
    conv(oar.rand([1, 2, 5, 5]))
    assert abs(np.linalg.norm(np_matrix(conv.weight.numpy(), 0), 2) - 1.0) < 1e-6


def test_spectral_norm_gradient_holds_u_and_v_constant(float64):
    fc = spectral_norm(oar.nn.Linear(3, 4), dim=0)
    fc.eval()
    x = RNG.normal(size=(5, 3))
    u, v, b = fc.weight_u.numpy(), fc.weight_v.numpy(), fc.bias.numpy()

    def loss(w):
        return float(((x @ (w / (u @ w @ v)) + b) ** 2).sum())

    oar.sum(oar.square(fc(oar.to_tensor(x)))).backward()
    np.testing.assert_allclose(fc.weight_orig.grad.numpy(), numeric_gradient(loss, fc.weight_orig.numpy().copy()),
                               rtol=GRAD_RTOL, atol=GRAD_ATOL)


def test_spectral_norm_errors():
    with pytest.raises(ArgumentError, match="n_power_iterations must be a positive int, got 0"):
        spectral_norm(oar.nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(ArgumentError, match=r"spectral_norm: dim must be an int in \[-2, 2\).*got 3"):
        spectral_norm(oar.nn.Linear(2, 2), dim=3)
    fc = spectral_norm(oar.nn.Linear(2, 2))
    with pytest.raises(ArgumentError, match="Linear.weight already has a spectral_norm hook"):
        spectral_norm(fc)


# -- nn.SpectralNorm ----------------------------------------------------------------------------
def np_spectral_norm_layer(w, u, v, dim, iters, eps=1e-12):
    mat = np_matrix(w, dim)
    for _ in range(iters):
        v = mat.T @ u
        v = v / (np.linalg.norm(v) + eps)
        u = mat @ v
        u = u / (np.linalg.norm(u) + eps)
    return w / (u @ mat @ v), u, v


def test_spectral_norm_layer_matches_numpy_and_keeps_u_v(float64):
    layer = oar.nn.SpectralNorm([2, 3, 2], dim=1, power_iters=3, dtype="float64")
    assert list(layer.state_dict()) == ["weight_u", "weight_v"]
    assert layer.weight_u.stop_gradient and layer.weight_u.shape == [3] and layer.weight_v.shape == [4]
    u0, v0 = layer.weight_u.numpy().copy(), layer.weight_v.numpy().copy()
    w = RNG.normal(size=(2, 3, 2))
    expected, u, v = np_spectral_norm_layer(w, u0, v0, 1, 3)
    weight = oar.to_tensor(w, stop_gradient=False)
    out = layer(weight)
    np.testing.assert_allclose(out.numpy(), expected, rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(layer.weight_u.numpy(), u0)  # Paddle's kernel iterates on copies
    r = RNG.normal(size=w.shape)
    oar.sum(out * oar.to_tensor(r)).backward()
    mat = np_matrix(w, 1)
    uv = np.moveaxis((np.outer(u, v)).reshape(3, 2, 2), 0, 1)  # d sigma / dW, back in w's layout
    sigma = u @ mat @ v
    expected_grad = (r - uv * (r * expected).sum()) / sigma
    np.testing.assert_allclose(weight.grad.numpy(), expected_grad, rtol=GRAD_RTOL, atol=GRAD_ATOL)


def test_spectral_norm_layer_errors():
    with pytest.raises(ShapeError, match=r"SpectralNorm: expected a weight of shape \[2, 3\].*got \[3, 2\]"):
        oar.nn.SpectralNorm([2, 3])(oar.rand([3, 2]))
    with pytest.raises(ArgumentError, match=r"SpectralNorm: dim must be an int in \[0, 2\).*got 2"):
        oar.nn.SpectralNorm([2, 3], dim=2)
    with pytest.raises(ArgumentError, match="SpectralNorm: power_iters must be a positive int"):
        oar.nn.SpectralNorm([2, 3], power_iters=0)


# -- clip_grad_norm_ / clip_grad_value_ --------------------------------------------------------
GRADS = [RNG.normal(size=(3, 4)) * 3, RNG.normal(size=(5,)), np.array([[0.0, 2.0], [0.0, -7.0]])]


def params_with_grads(grads=GRADS, without_grad=1):
    params = []
    for g in grads:
        p = oar.nn.Parameter(np.zeros(g.shape))
        p.grad = oar.to_tensor(g)
        params.append(p)
    params += [oar.nn.Parameter(np.zeros([2])) for _ in range(without_grad)]  # skipped: no gradient
    return params


def np_total_norm(grads, norm_type):
    if norm_type == math.inf:
        return max(np.abs(g).max() for g in grads)
    if norm_type == 0:
        return float(np.count_nonzero([np.count_nonzero(g) for g in grads]))
    return np.linalg.norm([np.linalg.norm(g.ravel(), norm_type) for g in grads], norm_type)


@pytest.mark.parametrize("norm_type", [2.0, 1, math.inf, 0])
@pytest.mark.parametrize("max_norm", [1.0, 1e4])
def test_clip_grad_norm_matches_numpy(norm_type, max_norm):
    params = params_with_grads()
    total = clip_grad_norm_(iter(params), max_norm, norm_type=norm_type)  # any iterable
    expected_total = np_total_norm(GRADS, norm_type)
    np.testing.assert_allclose(total.numpy(), expected_total, rtol=RTOL)
    scale = min(max_norm / (expected_total + 1e-6), 1.0)
    for p, g in zip(params, GRADS):
        np.testing.assert_allclose(p.grad.numpy(), g * scale, rtol=RTOL, atol=ATOL)
    assert params[-1].grad is None


def test_clip_grad_norm_edge_cases():
    single = params_with_grads(GRADS[:1], without_grad=0)[0]
    assert clip_grad_norm_(single, 1.0).item() == pytest.approx(np.linalg.norm(GRADS[0]))
    assert clip_grad_norm_([oar.nn.Parameter(np.zeros([2]))], 1.0).item() == 0.0
    bad = params_with_grads([np.array([1.0, np.inf])], without_grad=0)
    with pytest.raises(GradientError, match=r"clip_grad_norm_: the total 2-norm of the gradients is inf"):
        clip_grad_norm_(bad, 1.0, error_if_nonfinite=True)
    with pytest.raises(ArgumentError, match=r"clip_grad_norm_: norm_type must be one of inf, 0, 1, 2, got 3"):
        clip_grad_norm_(params_with_grads(), 1.0, norm_type=3)
    with pytest.raises(ArgumentError, match="clip_grad_norm_: max_norm must be a number, got str"):
        clip_grad_norm_(params_with_grads(), "1")
    with pytest.raises(ArgumentError, match=r"clip_grad_norm_: parameters\[1\] must be a Tensor, got ndarray"):
        clip_grad_norm_([single, np.zeros(2)], 1.0)


def test_clip_grad_norm_after_backward_then_step():
    fc = oar.nn.Linear(10, 10)
    oar.mean(fc(oar.uniform([10, 10], min=-1.0, max=1.0)) * 100).backward()
    total = clip_grad_norm_(fc.parameters(), 0.5)
    assert total.item() > 0.5
    clipped = np.sqrt(sum((p.grad.numpy().astype(np.float64) ** 2).sum() for p in fc.parameters()))
    assert clipped == pytest.approx(0.5, rel=1e-4)


def test_clip_grad_value_clips_in_place():
    params = params_with_grads()
    grad_objects = [p.grad for p in params[:3]]
    assert clip_grad_value_(params, 1.5) is None
    for p, g, before in zip(params, GRADS, grad_objects):
        assert p.grad is before
        np.testing.assert_array_equal(p.grad.numpy(), np.clip(g, -1.5, 1.5))
    single = params_with_grads(GRADS[:1], without_grad=0)[0]
    clip_grad_value_(single, 0)
    np.testing.assert_array_equal(single.grad.numpy(), np.zeros_like(GRADS[0]))
    with pytest.raises(ArgumentError, match=r"clip_grad_value_: clip_value must be >= 0.*got -1.0"):
        clip_grad_value_(params, -1)


# -- parameters_to_vector / vector_to_parameters ----------------------------------------------
def test_parameters_to_vector_and_back():
    source, target = oar.nn.Linear(10, 15), oar.nn.Linear(10, 15)
    vec = parameters_to_vector(source.parameters())
    assert vec.shape == [165] and vec.stop_gradient
    np.testing.assert_array_equal(vec.numpy(), np.concatenate([p.numpy().ravel() for p in source.parameters()]))
    weight_object = target.weight
    assert vector_to_parameters(vec, target.parameters()) is None
    assert target.weight is weight_object  # in place
    for a, b in zip(source.parameters(), target.parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_parameters_vector_errors():
    fc = oar.nn.Linear(2, 3)
    with pytest.raises(ShapeError, match=r"vector_to_parameters: vec has 5 elements but the parameters \(\[2, 3\], \[3\]\) hold 9"):
        vector_to_parameters(oar.zeros([5]), fc.parameters())
    with pytest.raises(ShapeError, match=r"vector_to_parameters: vec must be 1-D, got shape \[3, 3\]"):
        vector_to_parameters(oar.zeros([3, 3]), fc.parameters())
    with pytest.raises(ArgumentError, match="parameters_to_vector: parameters is empty"):
        parameters_to_vector([])
    with pytest.raises(oar.errors.DTypeError, match="parameters_to_vector: all parameters must have one dtype"):
        parameters_to_vector([oar.zeros([2], dtype="float32"), oar.zeros([2], dtype="float64")])


def test_nn_utils_is_reachable_as_in_paddle():
    import oar as paddle

    assert paddle.nn.utils.weight_norm is weight_norm
    assert "utils" in dir(paddle.nn)
    assert sorted(paddle.nn.utils.__all__) == sorted([
        "weight_norm", "remove_weight_norm", "spectral_norm", "clip_grad_norm_", "clip_grad_value_",
        "parameters_to_vector", "vector_to_parameters"])
