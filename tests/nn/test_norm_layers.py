"""Normalisation layers: Paddle's defaults (initial values, momentum convention, state-dict
keys), running statistics in training and evaluation, use_global_stats, gradients (first and
second order) and errors."""

from __future__ import annotations

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar.errors import ArgumentError, DTypeError, ShapeError

_rng = np.random.default_rng(21)
EPS = 1e-5


def _normalized(x, axes, eps=EPS):
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


def _fd_grad(fn, x: np.ndarray, weights: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    out = np.zeros_like(x)
    for k in range(x.size):
        for sign in (1, -1):
            shifted = x.copy()
            shifted.reshape(-1)[k] += sign * eps
            out.reshape(-1)[k] += sign * float((fn(shifted) * weights).sum()) / (2 * eps)
    return out


# -- batch norm -------------------------------------------------------------------------------------
def test_batch_norm_2d_defaults_and_state_dict():
    bn = oar.nn.BatchNorm2D(3)
    assert list(bn.state_dict()) == ["weight", "bias", "_mean", "_variance"]
    assert bn.weight.tolist() == [1.0, 1.0, 1.0] and bn.bias.tolist() == [0.0, 0.0, 0.0]
    assert bn._mean.tolist() == [0.0, 0.0, 0.0] and bn._variance.tolist() == [1.0, 1.0, 1.0]
    assert [name for name, _ in bn.named_parameters()] == ["weight", "bias"]
    assert bn._momentum == 0.9 and bn._epsilon == 1e-5
    assert repr(bn) == "BatchNorm2D(num_features=3, momentum=0.9, epsilon=1e-05, data_format=NCHW)"


def test_batch_norm_training_uses_batch_stats_and_updates_running_stats_paddle_style():
    bn = oar.nn.BatchNorm2D(2, momentum=0.8)
    x = _rng.normal(2.0, 3.0, size=(4, 2, 3, 3))
    y = bn(oar.to_tensor(x))
    np.testing.assert_allclose(y.numpy(), _normalized(x, (0, 2, 3)), rtol=1e-4, atol=1e-5)
    batch_mean, batch_var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))  # biased variance, as Paddle
    np.testing.assert_allclose(bn._mean.numpy(), 0.8 * 0 + 0.2 * batch_mean, rtol=1e-5)
    np.testing.assert_allclose(bn._variance.numpy(), 0.8 * 1 + 0.2 * batch_var, rtol=1e-5)
    # a second step moves the running statistics again from where they are
    x2 = _rng.normal(-1.0, 0.5, size=(4, 2, 3, 3))
    expected_mean = 0.8 * bn._mean.numpy() + 0.2 * x2.mean(axis=(0, 2, 3))
    bn(oar.to_tensor(x2))
    np.testing.assert_allclose(bn._mean.numpy(), expected_mean, rtol=1e-5)


def test_batch_norm_eval_uses_running_stats_and_changes_nothing():
    bn = oar.nn.BatchNorm1D(3)
    for _ in range(3):
        bn(oar.to_tensor(_rng.normal(1.0, 2.0, size=(8, 3))))
    mean, var = bn._mean.numpy().copy(), bn._variance.numpy().copy()
    bn.eval()
    x = _rng.normal(size=(5, 3))
    y = bn(oar.to_tensor(x))
    np.testing.assert_allclose(y.numpy(), (x - mean) / np.sqrt(var + EPS), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(bn._mean.numpy(), mean)
    np.testing.assert_array_equal(bn._variance.numpy(), var)


def test_use_global_stats():
    x = _rng.normal(3.0, 2.0, size=(4, 2, 5))
    frozen = oar.nn.BatchNorm1D(2, use_global_stats=True)  # training, but the running statistics normalise
    y = frozen(oar.to_tensor(x))
    np.testing.assert_allclose(y.numpy(), x / np.sqrt(1 + EPS), rtol=1e-5)
    assert frozen._mean.tolist() == [0.0, 0.0]
    batch = oar.nn.BatchNorm1D(2, use_global_stats=False).eval()  # evaluation, but batch statistics
    y = batch(oar.to_tensor(x))
    np.testing.assert_allclose(y.numpy(), _normalized(x, (0, 2)), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(batch._mean.numpy(), 0.1 * x.mean(axis=(0, 2)), rtol=1e-5)
    # the functional form: training=False by default
    rm, rv = oar.to_tensor([1.0, 2.0]), oar.to_tensor([4.0, 9.0])
    out = F.batch_norm(oar.to_tensor(x), rm, rv)
    np.testing.assert_allclose(out.numpy(), (x - [[[1.0], [2.0]]]) / np.sqrt(np.array([[[4.0], [9.0]]]) + EPS),
                               rtol=1e-5)
    assert rm.tolist() == [1.0, 2.0]


def test_batch_norm_channel_last_and_3d():
    x = _rng.normal(size=(2, 3, 3, 4))
    bn = oar.nn.BatchNorm2D(4, data_format="NHWC")
    np.testing.assert_allclose(bn(oar.to_tensor(x)).numpy(), _normalized(x, (0, 1, 2)), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bn._mean.numpy(), 0.1 * x.mean(axis=(0, 1, 2)), rtol=1e-5)
    x5 = _rng.normal(size=(2, 2, 2, 2, 3))
    np.testing.assert_allclose(oar.nn.BatchNorm3D(2)(oar.to_tensor(x5)).numpy(), _normalized(x5, (0, 2, 3, 4)),
                               rtol=1e-4, atol=1e-5)
    nlc = _rng.normal(size=(2, 5, 3))
    np.testing.assert_allclose(oar.nn.BatchNorm1D(3, data_format="NLC")(oar.to_tensor(nlc)).numpy(),
                               _normalized(nlc, (0, 1)), rtol=1e-4, atol=1e-5)


def test_batch_norm_gradients_match_finite_differences():
    x = _rng.normal(size=(3, 2, 2, 2))
    w, b = _rng.uniform(0.5, 1.5, size=2), _rng.normal(size=2)
    weights = _rng.standard_normal(x.shape)

    def ref(arr):
        return _normalized(arr, (0, 2, 3)) * w.reshape(1, 2, 1, 1) + b.reshape(1, 2, 1, 1)

    bn = oar.nn.BatchNorm2D(2).to(dtype="float64")
    bn.set_state_dict({"weight": w, "bias": b, "_mean": np.zeros(2), "_variance": np.ones(2)})
    xt = oar.to_tensor(x, stop_gradient=False)
    (bn(xt) * oar.to_tensor(weights)).sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), _fd_grad(ref, x, weights), rtol=1e-5, atol=1e-7)
    xh = _normalized(x, (0, 2, 3))
    np.testing.assert_allclose(bn.weight.grad.numpy(), (weights * xh).sum(axis=(0, 2, 3)), rtol=1e-6)
    np.testing.assert_allclose(bn.bias.grad.numpy(), weights.sum(axis=(0, 2, 3)), rtol=1e-6)


def test_batch_norm_eval_gradients():
    bn = oar.nn.BatchNorm1D(3).to(dtype="float64")
    bn.set_state_dict({"weight": np.array([1.0, 2.0, 3.0]), "bias": np.zeros(3), "_mean": np.array([0.5, 0.0, -1.0]),
                       "_variance": np.array([4.0, 1.0, 0.25])})
    bn.eval()
    x = oar.to_tensor(_rng.normal(size=(4, 3)), stop_gradient=False)
    bn(x).sum().backward()
    expected = np.array([1.0, 2.0, 3.0]) / np.sqrt(np.array([4.0, 1.0, 0.25]) + EPS)
    np.testing.assert_allclose(x.grad.numpy(), np.broadcast_to(expected, (4, 3)), rtol=1e-6)
    np.testing.assert_allclose(bn.bias.grad.numpy(), [4.0, 4.0, 4.0])


def test_weight_attr_false_fixes_the_affine_parameters():
    bn = oar.nn.BatchNorm2D(2, weight_attr=False, bias_attr=False)
    assert bn.weight.stop_gradient and bn.bias.stop_gradient and list(bn.state_dict())[:2] == ["weight", "bias"]
    frozen = oar.nn.BatchNorm2D(2, weight_attr=oar.nn.ParamAttr(learning_rate=0.0))
    assert frozen.weight.stop_gradient and not frozen.bias.stop_gradient


def test_batch_norm_half_precision_input_with_float32_parameters():
    bn = oar.nn.BatchNorm2D(2)
    x = oar.to_tensor(_rng.normal(size=(2, 2, 2, 2))).astype("float16")
    y = bn(x)
    assert y.dtype == oar.float16 and bn._mean.dtype == oar.float32
    np.testing.assert_allclose(y.astype("float32").numpy(), _normalized(x.astype("float32").numpy(), (0, 2, 3)),
                               atol=2e-2)


def test_legacy_batch_norm():
    bn = oar.nn.BatchNorm(3, act="relu")
    assert list(bn.state_dict()) == ["weight", "bias", "_mean", "_variance"]
    x = _rng.normal(size=(4, 3, 2))
    np.testing.assert_allclose(bn(oar.to_tensor(x)).numpy(), np.maximum(_normalized(x, (0, 2)), 0), rtol=1e-4,
                               atol=1e-5)
    assert bn._mean.numpy().any()
    test_mode = oar.nn.BatchNorm(3, is_test=True)
    np.testing.assert_allclose(test_mode(oar.to_tensor(x)).numpy(), x / np.sqrt(1 + EPS), rtol=1e-5)
    nhwc = oar.nn.BatchNorm(2, data_layout="NHWC")
    x2 = _rng.normal(size=(3, 4, 2))
    np.testing.assert_allclose(nhwc(oar.to_tensor(x2)).numpy(), _normalized(x2, (0, 1)), rtol=1e-4, atol=1e-5)


def test_batch_norm_errors():
    with pytest.raises(ShapeError, match="BatchNorm2D: expected a 4-D input"):
        oar.nn.BatchNorm2D(3)(oar.ones([2, 3]))
    with pytest.raises(ArgumentError, match="BatchNorm1D: data_format"):
        oar.nn.BatchNorm1D(3, data_format="NCHW")
    with pytest.raises(ShapeError, match=r"batch_norm: running_mean has shape \[4\], expected \[3\]"):
        F.batch_norm(oar.ones([2, 3]), oar.zeros([4]), oar.ones([3]))
    with pytest.raises(ShapeError, match="batch_norm: weight has shape"):
        F.batch_norm(oar.ones([2, 3]), oar.zeros([3]), oar.ones([3]), weight=oar.ones([2]))
    with pytest.raises(DTypeError, match="batch_norm: x must be a floating tensor"):
        F.batch_norm(oar.to_tensor([[1, 2]]), oar.zeros([2]), oar.ones([2]))
    with pytest.raises(ArgumentError, match="batch_norm: data_format"):
        F.batch_norm(oar.ones([2, 3]), oar.zeros([3]), oar.ones([3]), data_format="CHW")


def test_batch_norm_state_dict_round_trip():
    bn = oar.nn.BatchNorm2D(2)
    bn(oar.to_tensor(_rng.normal(size=(2, 2, 3, 3)), dtype="float32"))
    other = oar.nn.BatchNorm2D(2)
    other.set_state_dict(bn.state_dict())
    for key, value in bn.state_dict().items():
        np.testing.assert_array_equal(other.state_dict()[key].numpy(), value.numpy())


# -- layer norm, rms norm ---------------------------------------------------------------------------
def test_layer_norm_defaults_and_forward():
    ln = oar.nn.LayerNorm([3, 4])
    assert ln.weight.shape == [12] and ln.bias.shape == [12]  # Paddle keeps them flat
    assert ln.weight.numpy().tolist() == [1.0] * 12 and ln.bias.numpy().tolist() == [0.0] * 12
    assert repr(ln) == "LayerNorm(normalized_shape=[3, 4], epsilon=1e-05)"
    x = _rng.normal(size=(2, 3, 4))
    np.testing.assert_allclose(ln(oar.to_tensor(x)).numpy(), _normalized(x, (1, 2)), rtol=1e-4, atol=1e-5)
    bare = oar.nn.LayerNorm(4, weight_attr=False, bias_attr=False)
    assert bare.weight is None and bare.bias is None and list(bare.state_dict()) == []
    np.testing.assert_allclose(bare(oar.to_tensor(x)).numpy(), _normalized(x, (2,)), rtol=1e-4, atol=1e-5)


def test_layer_norm_gradients_first_and_second_order():
    x = _rng.normal(size=(2, 5))
    w, b = _rng.uniform(0.5, 1.5, size=5), _rng.normal(size=5)
    weights = _rng.standard_normal(x.shape)

    def ref(arr):
        return _normalized(arr, (1,)) * w + b

    xt = oar.to_tensor(x, stop_gradient=False)
    wt, bt = oar.to_tensor(w, stop_gradient=False), oar.to_tensor(b, stop_gradient=False)
    (F.layer_norm(xt, 5, wt, bt) * oar.to_tensor(weights)).sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), _fd_grad(ref, x, weights), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(wt.grad.numpy(), (weights * _normalized(x, (1,))).sum(0), rtol=1e-6)
    np.testing.assert_allclose(bt.grad.numpy(), weights.sum(0), rtol=1e-6)
    analytic, numeric = _second_order(lambda t: F.layer_norm(t, 5, oar.to_tensor(w), oar.to_tensor(b)), x)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-4, atol=1e-6)


def _second_order(fn, x_np, eps=1e-5):
    w = _rng.standard_normal(fn(oar.to_tensor(x_np)).shape)
    v = _rng.standard_normal(x_np.shape)

    def first(arr, create_graph=False):
        x = oar.to_tensor(arr, stop_gradient=False)
        (g,) = oar.grad((fn(x) * oar.to_tensor(w)).sum(), x, create_graph=create_graph)
        return x, g

    x, g = first(x_np, True)
    (analytic,) = oar.grad((g * oar.to_tensor(v)).sum(), x)
    numeric = np.zeros_like(x_np)
    for k in range(x_np.size):
        values = []
        for sign in (1, -1):
            shifted = x_np.copy()
            shifted.reshape(-1)[k] += sign * eps
            values.append(float((first(shifted)[1].numpy() * v).sum()))
        numeric.reshape(-1)[k] = (values[0] - values[1]) / (2 * eps)
    return analytic.numpy(), numeric


@pytest.mark.parametrize("fn", [
    lambda t: F.batch_norm(t, oar.zeros([2], dtype="float64"), oar.ones([2], dtype="float64"), training=True),
    lambda t: F.batch_norm(t, oar.zeros([2], dtype="float64"), oar.ones([2], dtype="float64"),
                           weight=oar.to_tensor([0.5, 2.0]).astype("float64"), training=True),
    lambda t: F.group_norm(t, 2),
    lambda t: F.instance_norm(t),
    lambda t: F.rms_norm(t, 3),
], ids=["batch_norm", "batch_norm_weighted", "group_norm", "instance_norm", "rms_norm"])
def test_second_order_gradients(fn):
    analytic, numeric = _second_order(fn, _rng.normal(size=(3, 2, 3)))
    np.testing.assert_allclose(analytic, numeric, rtol=1e-4, atol=1e-6)


def test_third_order_through_layer_norm_is_connected():
    x = oar.to_tensor(_rng.normal(size=(2, 4)), stop_gradient=False)
    (g,) = oar.grad((F.layer_norm(x, 4) ** 3).sum(), x, create_graph=True)
    (gg,) = oar.grad(g.sum(), x, create_graph=True)
    (ggg,) = oar.grad((gg * gg).sum(), x)
    assert ggg.shape == [2, 4] and np.isfinite(ggg.numpy()).all() and np.abs(ggg.numpy()).sum() > 0


def test_rms_norm_layer():
    m = oar.nn.RMSNorm(4)
    assert m.weight.tolist() == [1.0] * 4
    x = _rng.normal(size=(3, 4))
    np.testing.assert_allclose(m(oar.to_tensor(x)).numpy(), x / np.sqrt((x * x).mean(-1, keepdims=True) + EPS),
                               rtol=1e-5)
    assert oar.nn.RMSNorm([2, 3], weight_attr=False).weight is None
    np.testing.assert_allclose(F.rms_norm(oar.to_tensor(x), 4, eps=0.5).numpy(),
                               x / np.sqrt((x * x).mean(-1, keepdims=True) + 0.5), rtol=1e-5)


def test_layer_norm_errors():
    with pytest.raises(ShapeError, match=r"layer_norm: normalized_shape \[3\] must match the last dimensions"):
        oar.nn.LayerNorm(3)(oar.ones([2, 4]))
    with pytest.raises(ShapeError, match="layer_norm: weight has shape"):
        F.layer_norm(oar.ones([2, 4]), 4, weight=oar.ones([3]))
    with pytest.raises(ArgumentError, match="LayerNorm: normalized_shape"):
        oar.nn.LayerNorm("abc")


# -- group norm, instance norm -----------------------------------------------------------------------
def test_group_norm_defaults_forward_and_errors():
    gn = oar.nn.GroupNorm(num_groups=2, num_channels=4)
    assert list(gn.state_dict()) == ["weight", "bias"]
    assert gn.weight.tolist() == [1.0] * 4 and gn.bias.tolist() == [0.0] * 4
    x = _rng.normal(size=(2, 4, 3))
    expected = _normalized(x.reshape(2, 2, 6), (2,)).reshape(x.shape)
    np.testing.assert_allclose(gn(oar.to_tensor(x)).numpy(), expected, rtol=1e-4, atol=1e-5)
    with pytest.raises(ArgumentError, match="GroupNorm: num_channels"):
        oar.nn.GroupNorm(3, 4)
    with pytest.raises(ShapeError, match="GroupNorm: expected 4 channels"):
        gn(oar.ones([2, 3, 3]))
    with pytest.raises(ArgumentError, match="group_norm: num_groups"):
        F.group_norm(oar.ones([2, 4, 3]), 3)


def test_instance_norm_parameter_names_and_forward():
    m = oar.nn.InstanceNorm2D(3)
    assert list(m.state_dict()) == ["scale", "bias"]
    assert m.scale.tolist() == [1.0] * 3
    x = _rng.normal(size=(2, 3, 4, 4))
    np.testing.assert_allclose(m(oar.to_tensor(x)).numpy(), _normalized(x, (2, 3)), rtol=1e-4, atol=1e-5)
    bare = oar.nn.InstanceNorm1D(3, weight_attr=False, bias_attr=False)
    assert bare.scale is None and list(bare.state_dict()) == []
    x3 = _rng.normal(size=(2, 3, 5))
    np.testing.assert_allclose(bare(oar.to_tensor(x3)).numpy(), _normalized(x3, (2,)), rtol=1e-4, atol=1e-5)
    x5 = _rng.normal(size=(1, 2, 2, 2, 3))
    np.testing.assert_allclose(oar.nn.InstanceNorm3D(2)(oar.to_tensor(x5)).numpy(), _normalized(x5, (2, 3, 4)),
                               rtol=1e-4, atol=1e-5)
    with pytest.raises(ArgumentError, match="must be False together"):
        oar.nn.InstanceNorm2D(3, weight_attr=False)
    with pytest.raises(ShapeError, match="InstanceNorm2D: expected a 4-D input"):
        m(oar.ones([2, 3, 4]))


def test_norm_layers_train_a_tiny_model():
    oar.seed(3)
    net = oar.nn.Sequential(oar.nn.Linear(4, 8), oar.nn.BatchNorm1D(8), oar.nn.ReLU(), oar.nn.LayerNorm(8),
                            oar.nn.Linear(8, 1))
    x = oar.to_tensor(_rng.normal(size=(16, 4)), dtype="float32")
    target = oar.to_tensor((x.numpy() @ np.array([1.0, -2.0, 0.5, 1.5]))[:, None], dtype="float32")
    params = net.parameters()
    first = None
    for _ in range(60):
        loss = ((net(x) - target) ** 2).mean()
        first = first if first is not None else float(loss)
        loss.backward()
        with oar.no_grad():
            for p in params:
                p.subtract_(p.grad * 0.05)
                p.clear_grad()
    assert float(loss) < 0.2 * first
