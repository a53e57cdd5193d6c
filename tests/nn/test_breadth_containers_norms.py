"""Containers, norms and small layers added for Paddle API breadth (issue #19): Module,
ModuleList, ModuleDict, ParameterDict, SyncBatchNorm, the Paddle 3.3 keywords of LayerNorm,
GroupNorm, normalize and rms_norm, LocalResponseNorm, PairwiseDistance, Unflatten and Softmax2D.

The functions compose ops, so they are checked against numpy references and their gradients
against finite differences in float64.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar import nn
from oar.errors import ArgumentError, DTypeError, ShapeError
from oar.testing import TOLERANCES, OpCase, check_grad

_rng = np.random.default_rng(33)
RTOL, ATOL = TOLERANCES["float64"]


def rand(*shape, low=-1.0, high=1.0):
    return _rng.uniform(low, high, size=shape)


def check_gradient(fn, *arrays):
    """The autograd gradient of a composed function against central finite differences (float64)."""
    check_grad(OpCase("composed", fn, lambda *a: None, list(arrays)))


# -- containers ------------------------------------------------------------------------------------
def test_module_aliases_are_paddles_layer_containers():
    assert nn.Module is nn.Layer and nn.ModuleList is nn.LayerList and nn.ModuleDict is nn.LayerDict

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Linear(3, 3), nn.Linear(3, 2)])
            self.heads = nn.ModuleDict({"a": nn.Linear(2, 1)})

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return self.heads["a"](x)

    net = Net()
    assert net(oar.rand([4, 3])).shape == [4, 1] and len(net.parameters()) == 6


def test_parameter_dict_registers_its_parameters():
    weight, bias = nn.Linear(3, 2).weight, nn.Linear(3, 2).bias
    params = nn.ParameterDict([("w", weight)])
    params.update({"b": bias})
    params["w2"] = nn.Linear(2, 2).weight
    assert list(params) == ["w", "b", "w2"] and len(params) == 3 and "b" in params
    assert params["w"] is weight and list(params.keys()) == ["w", "b", "w2"]
    assert [p.shape for p in params.parameters()] == [[3, 2], [2], [2, 2]]
    assert list(params.state_dict()) == ["w", "b", "w2"]
    with pytest.raises(ArgumentError, match="ParameterDict"):
        params["x"] = oar.ones([2])
    with pytest.raises(ArgumentError, match="ParameterDict.update"):
        params.update([("a", weight, 1)])


# -- SyncBatchNorm -----------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, data_format", [((4, 3), "NC"), ((4, 3, 5), "NCL"), ((2, 3, 4, 4), "NCHW"),
                                                ((2, 4, 4, 3), "NHWC"), ((2, 3, 2, 2, 2), "NCDHW")])
def test_sync_batch_norm_is_batch_norm_in_one_process(shape, data_format):
    x = oar.to_tensor(rand(*shape).astype(np.float32))
    channel_axis = 1 if data_format[1] == "C" else len(shape) - 1
    sync = nn.SyncBatchNorm(3, momentum=0.8, data_format=data_format)
    y = sync(x)
    expected = F.batch_norm(x, oar.zeros([3]), oar.ones([3]), training=True, momentum=0.8, data_format=data_format)
    np.testing.assert_allclose(y.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
    axes = tuple(i for i in range(len(shape)) if i != channel_axis)
    np.testing.assert_allclose(sync._mean.numpy(), 0.2 * x.numpy().mean(axes), rtol=1e-5, atol=1e-6)
    sync.eval()
    running = F.batch_norm(x, sync._mean, sync._variance, training=False, data_format=data_format)
    np.testing.assert_allclose(sync(x).numpy(), running.numpy(), rtol=1e-5, atol=1e-6)


def test_convert_sync_batchnorm_shares_parameters_and_statistics():
    net = nn.Sequential(nn.Conv2D(2, 3, 1), nn.BatchNorm2D(3), nn.Sequential(nn.BatchNorm1D(3)))
    bn = net[1]
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert isinstance(converted[1], nn.SyncBatchNorm) and isinstance(converted[2][0], nn.SyncBatchNorm)
    assert converted[1].weight is bn.weight and converted[1]._mean is bn._mean
    assert isinstance(converted[0], nn.Conv2D)
    assert isinstance(nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm3D(2)), nn.SyncBatchNorm)
    with pytest.raises(ArgumentError, match="SyncBatchNorm: data_format"):
        nn.SyncBatchNorm(3, data_format="CHW")


# -- LayerNorm's Paddle 3.3 keywords --------------------------------------------------------------------
def test_layer_norm_elementwise_affine_bias_and_dtype():
    x = oar.to_tensor(rand(2, 3, 4))
    plain = nn.LayerNorm([3, 4], elementwise_affine=False)
    assert plain.weight is None and plain.bias is None and plain.parameters() == []
    np.testing.assert_allclose(plain(x).numpy(), F.layer_norm(x, [3, 4]).numpy(), rtol=1e-6)
    no_bias = nn.LayerNorm(4, bias=False, dtype="float64")
    assert no_bias.bias is None and no_bias.weight.dtype == oar.float64
    assert no_bias(x).shape == [2, 3, 4]
    with pytest.raises(TypeError):
        nn.LayerNorm(4, 1e-5, None)  # weight_attr is keyword-only, as in Paddle 3.3


def test_group_norm_affine_and_dtype_keywords():
    x = oar.to_tensor(rand(2, 4, 3))
    plain = nn.GroupNorm(2, 4, affine=False)
    assert plain.weight is None and plain.bias is None and plain.parameters() == []
    np.testing.assert_allclose(plain(x).numpy(), F.group_norm(x, 2).numpy(), rtol=1e-6)
    assert nn.GroupNorm(2, 4, dtype="float64").weight.dtype == oar.float64


def test_normalize_out_and_rms_norm_paddle_3_3_names():
    x = rand(2, 3)
    out = oar.zeros([2, 3], dtype="float64")
    result = F.normalize(oar.to_tensor(x), out=out)
    assert result is out
    np.testing.assert_allclose(out.numpy(), x / np.linalg.norm(x, axis=1, keepdims=True), rtol=RTOL)
    expected = x / np.sqrt((x * x).mean(-1, keepdims=True) + 0.1)
    np.testing.assert_allclose(F.rms_norm(input=oar.to_tensor(x), normalized_shape=3, eps=0.1).numpy(), expected,
                               rtol=RTOL)
    np.testing.assert_allclose(F.rms_norm(oar.to_tensor(x), 3, epsilon=0.1).numpy(), expected, rtol=RTOL)


# -- local response norm ------------------------------------------------------------------------------
def ref_local_response_norm(x, size, alpha, beta, k):
    """Channel-first: each channel divided by (k + alpha / size * sum of squares of its window) ** beta."""
    channels = x.shape[1]
    out = np.empty_like(x)
    for c in range(channels):
        low, high = max(c - size // 2, 0), min(c + (size - 1) // 2, channels - 1)
        total = (x[:, low:high + 1] ** 2).sum(axis=1)
        out[:, c] = x[:, c] / (k + alpha * total / size) ** beta
    return out


@pytest.mark.parametrize("shape, data_format, size", [((2, 5, 3, 2), "NCHW", 3), ((2, 4, 3), "NCL", 2),
                                                      ((1, 3, 2, 2, 2), "NCDHW", 4), ((2, 2, 3, 5), "NHWC", 3),
                                                      ((2, 3, 4), "NLC", 5)])
def test_local_response_norm_matches_the_channel_windows(shape, data_format, size):
    x = rand(*shape)
    last = data_format[-1] == "C"
    first = np.moveaxis(x, -1, 1) if last else x
    ref = ref_local_response_norm(first, size, 0.3, 0.75, 2.0)
    ref = np.moveaxis(ref, 1, -1) if last else ref
    fn = lambda t: F.local_response_norm(t, size, 0.3, 0.75, 2.0, data_format)  # noqa: E731
    np.testing.assert_allclose(fn(oar.to_tensor(x)).numpy(), ref, rtol=RTOL, atol=ATOL)
    check_gradient(fn, x)
    layer = nn.LocalResponseNorm(size, 0.3, 0.75, 2.0, data_format)
    np.testing.assert_allclose(layer(oar.to_tensor(x)).numpy(), ref, rtol=RTOL, atol=ATOL)


def test_local_response_norm_checks_its_arguments():
    with pytest.raises(ShapeError, match="local_response_norm"):
        F.local_response_norm(oar.ones([2, 3]), 2)
    with pytest.raises(ArgumentError, match="local_response_norm: data_format"):
        F.local_response_norm(oar.ones([2, 3, 4]), 2, data_format="NHWC ")
    with pytest.raises(DTypeError, match="local_response_norm"):
        F.local_response_norm(oar.ones([2, 3, 4], dtype="int32"), 2)


# -- pairwise distance ---------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.5, math.inf, -math.inf])
@pytest.mark.parametrize("keepdim", [False, True])
def test_pairwise_distance_is_the_p_norm_of_the_difference(p, keepdim):
    x, y = rand(3, 4), rand(3, 4)
    diff = np.abs(x - y + 1e-6)
    if p == math.inf:
        ref = diff.max(-1, keepdims=keepdim)
    elif p == -math.inf:
        ref = diff.min(-1, keepdims=keepdim)
    else:
        ref = (diff ** p).sum(-1, keepdims=keepdim) ** (1 / p)
    out = nn.PairwiseDistance(p, keepdim=keepdim)(oar.to_tensor(x), oar.to_tensor(y))
    np.testing.assert_allclose(out.numpy(), ref, rtol=RTOL, atol=ATOL)
    check_gradient(lambda a, b: F.pairwise_distance(a, b, p, keepdim=keepdim), x, y)


def test_pairwise_distance_counts_nonzeros_and_broadcasts():
    x = oar.to_tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    y = oar.to_tensor([1.0, 0.0, 3.0])
    assert F.pairwise_distance(x, y, p=0, epsilon=0).tolist() == [1.0, 2.0]
    assert F.pairwise_distance(x[0], y).shape == []
    with pytest.raises(ArgumentError, match="pairwise_distance: p"):
        F.pairwise_distance(x, y, p="2")


# -- Unflatten and Softmax2D --------------------------------------------------------------------------
def test_unflatten_splits_one_axis():
    x = rand(2, 12, 3)
    out = nn.Unflatten(1, [3, -1])(oar.to_tensor(x))
    np.testing.assert_array_equal(out.numpy(), x.reshape(2, 3, 4, 3))
    assert nn.Unflatten(-1, (3, 1))(oar.to_tensor(x)).shape == [2, 12, 3, 1]
    weights = oar.to_tensor(rand(2, 3, 4, 3))
    check_gradient(lambda t: nn.Unflatten(1, [3, 4])(t) * weights, x)
    with pytest.raises(ArgumentError, match="Unflatten: shape"):
        nn.Unflatten(1, 6)


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (3, 2, 2)])
def test_softmax2d_normalises_the_channels_of_each_pixel(shape):
    x = rand(*shape)
    e = np.exp(x - x.max(axis=-3, keepdims=True))
    np.testing.assert_allclose(nn.Softmax2D()(oar.to_tensor(x)).numpy(), e / e.sum(axis=-3, keepdims=True),
                               rtol=RTOL, atol=ATOL)
    check_gradient(nn.Softmax2D(), x)
    with pytest.raises(ShapeError, match="Softmax2D"):
        nn.Softmax2D()(oar.ones([2, 3]))
