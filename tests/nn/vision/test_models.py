"""oar.vision.models: output shapes on small inputs, parameter counts equal to Paddle's (each
derived here from the architecture by arithmetic, and equal to the published figure), state
dict keys in Paddle's naming, the pretrained=True error, and the docstring examples."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import oar
import oar.vision.models
import oar.vision.models._pretrained
import oar.vision.models.lenet
import oar.vision.models.mlp
import oar.vision.models.mobilenetv2
import oar.vision.models.resnet
import oar.vision.models.vgg
from oar.errors import ArgumentError, ShapeError
from oar.nn.initializer import Constant, set_global_initializer
from oar.vision import models
from oar.vision.models import MLP, VGG, BasicBlock, BottleneckBlock, LeNet, MobileNetV2, ResNet
from oar.vision.models.vgg import make_layers

from .test_model_zoo import NEW_CONSTRUCTORS


def count(model) -> int:
    return sum(p.size for p in model.parameters())


@pytest.fixture
def cheap_init():
    """Constant initial values: building VGG's 102M-weight classifier with random numbers takes
    seconds; its parameter count and output shape do not depend on the values."""
    set_global_initializer(Constant(0.01), Constant(0.0))
    yield
    set_global_initializer(None)


# -- parameter counts from the architecture, by arithmetic --------------------------------------
def conv(c_in, c_out, k, groups=1, bias=True):
    return c_out * (c_in // groups) * k * k + (c_out if bias else 0)


def linear(n_in, n_out):
    return n_in * n_out + n_out


def bn(c):
    return 2 * c  # weight and bias; the running mean and variance are buffers, not parameters


def resnet_params(block, blocks, width=64, groups=1, num_classes=1000):
    total = conv(3, 64, 7, bias=False) + bn(64)
    inplanes = 64
    for stage, planes in enumerate((64, 128, 256, 512)):
        for i in range(blocks[stage]):
            if block == "basic":
                out = planes
                total += conv(inplanes, planes, 3, bias=False) + bn(planes) + conv(planes, planes, 3, bias=False) + bn(planes)
            else:
                inner, out = int(planes * width / 64) * groups, planes * 4
                total += (conv(inplanes, inner, 1, bias=False) + bn(inner) + conv(inner, inner, 3, groups, bias=False)
                          + bn(inner) + conv(inner, out, 1, bias=False) + bn(out))
            if i == 0 and (stage > 0 or inplanes != out):
                total += conv(inplanes, out, 1, bias=False) + bn(out)  # the downsample shortcut
            inplanes = out
    return total + linear(inplanes, num_classes)


def vgg_params(cfg, batch_norm=False, num_classes=1000):
    total, c_in = 0, 3
    for v in cfg:
        if v != "M":
            total += conv(c_in, v, 3) + (bn(v) if batch_norm else 0)
            c_in = v
    return total + linear(512 * 7 * 7, 4096) + linear(4096, 4096) + linear(4096, num_classes)


def mobilenet_v2_params(num_classes=1000):
    """At scale 1.0 every channel count is already a multiple of 8, so nothing is rounded."""
    total, c_in = conv(3, 32, 3, bias=False) + bn(32), 32
    for t, c, n, _ in [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1], [6, 160, 3, 2],
                       [6, 320, 1, 1]]:
        for _ in range(n):
            hidden = c_in * t
            if t != 1:
                total += conv(c_in, hidden, 1, bias=False) + bn(hidden)
            total += conv(hidden, hidden, 3, groups=hidden, bias=False) + bn(hidden)
            total += conv(hidden, c, 1, bias=False) + bn(c)
            c_in = c
    return total + conv(c_in, 1280, 1, bias=False) + bn(1280) + linear(1280, num_classes)


VGG_A = [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"]
VGG_D = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]


def test_lenet_parameter_count():
    expected = conv(1, 6, 3) + conv(6, 16, 5) + linear(400, 120) + linear(120, 84) + linear(84, 10)
    assert expected == 61_610  # paddle.summary(LeNet()) reports "Total params: 61,610"
    assert count(LeNet()) == expected
    assert count(LeNet(num_classes=3)) == expected - linear(84, 10) + linear(84, 3)


@pytest.mark.parametrize(("name", "block", "blocks", "published"), [
    ("resnet18", "basic", [2, 2, 2, 2], 11_689_512),
    ("resnet34", "basic", [3, 4, 6, 3], 21_797_672),
    ("resnet50", "bottleneck", [3, 4, 6, 3], 25_557_032),
])
def test_resnet_parameter_counts(name, block, blocks, published):
    assert resnet_params(block, blocks) == published
    assert count(getattr(models, name)()) == published


@pytest.mark.parametrize(("name", "kwargs", "published"), [
    ("resnext50_32x4d", {"width": 4, "groups": 32}, 25_028_904),
    ("wide_resnet50_2", {"width": 128}, 68_883_240),
])
def test_resnext_and_wide_resnet_parameter_counts(cheap_init, name, kwargs, published):
    assert resnet_params("bottleneck", [3, 4, 6, 3], **kwargs) == published
    assert count(getattr(models, name)()) == published


@pytest.mark.parametrize(("batch_norm", "published"), [(False, 138_357_544), (True, 138_365_992)])
def test_vgg16_parameter_count(cheap_init, batch_norm, published):
    assert vgg_params(VGG_D, batch_norm) == published
    model = models.vgg16(batch_norm=batch_norm)
    assert count(model) == published
    keys = list(model.state_dict())
    assert keys[:2] == ["features.0.weight", "features.0.bias"]
    assert keys[-6:] == ["classifier.0.weight", "classifier.0.bias", "classifier.3.weight", "classifier.3.bias",
                         "classifier.6.weight", "classifier.6.bias"]
    if batch_norm:
        assert keys[2:6] == ["features.1.weight", "features.1.bias", "features.1._mean", "features.1._variance"]


def test_vgg11_parameter_count():
    """The features are built; the classifier, the same as VGG-16's (tested above), is added by arithmetic."""
    classifier = linear(512 * 7 * 7, 4096) + linear(4096, 4096) + linear(4096, 1000)
    assert vgg_params(VGG_A) == 132_863_336
    assert count(models.vgg11(num_classes=0)) + classifier == 132_863_336


def test_mobilenet_v2_parameter_count():
    assert mobilenet_v2_params() == 3_504_872
    assert count(models.mobilenet_v2()) == 3_504_872
    assert count(MobileNetV2(num_classes=10)) == 3_504_872 - linear(1280, 1000) + linear(1280, 10)


# -- output shapes ---------------------------------------------------------------------------------
def test_lenet_shapes():
    x = oar.rand([2, 1, 28, 28])
    assert LeNet()(x).shape == [2, 10]
    assert LeNet(num_classes=4)(x).shape == [2, 4]
    features_only = LeNet(num_classes=0)
    assert not hasattr(features_only, "fc") and features_only(x).shape == [2, 16, 5, 5]


def test_mlp_shapes_and_errors():
    model = MLP()
    assert model(oar.rand([3, 1, 28, 28])).shape == [3, 10]
    assert model(oar.rand([3, 784])).shape == [3, 10]
    assert count(model) == linear(784, 512) + linear(512, 512) + linear(512, 10)
    assert MLP(input_size=12, hidden_sizes=(5,), num_classes=0)(oar.rand([2, 3, 4])).shape == [2, 5]
    assert MLP(input_size=12, hidden_sizes=(), num_classes=3)(oar.rand([2, 12])).shape == [2, 3]
    with pytest.raises(ShapeError, match=r"MLP: expected inputs .* 784 values .* \[3, 1, 8, 8\]"):
        model(oar.rand([3, 1, 8, 8]))
    with pytest.raises(ArgumentError, match="hidden_sizes"):
        MLP(hidden_sizes=(512, 0))


def test_resnet_shapes(cheap_init):
    with oar.no_grad():
        assert models.resnet18()(oar.rand([1, 3, 32, 32])).shape == [1, 1000]
        assert models.resnet18(num_classes=0)(oar.rand([1, 3, 64, 64])).shape == [1, 512, 1, 1]
        assert models.resnet18(num_classes=0, with_pool=False)(oar.rand([1, 3, 64, 64])).shape == [1, 512, 2, 2]
        assert models.resnet50(num_classes=10)(oar.rand([1, 3, 64, 64])).shape == [1, 10]
        assert models.resnext50_32x4d(num_classes=10)(oar.rand([1, 3, 32, 32])).shape == [1, 10]


def test_resnet_blocks():
    x = oar.rand([2, 16, 8, 8])
    downsample = oar.nn.Sequential(oar.nn.Conv2D(16, 32, 1, stride=2, bias_attr=False), oar.nn.BatchNorm2D(32))
    assert BasicBlock(16, 32, stride=2, downsample=downsample)(x).shape == [2, 32, 4, 4]
    assert BottleneckBlock(16, 4)(x).shape == [2, 16, 8, 8]
    with pytest.raises(ArgumentError, match="dilation"):
        BasicBlock(16, 16, dilation=2)
    with pytest.raises(ArgumentError, match=r"depth must be one of \[18, 34, 50, 101, 152\], got 20"):
        ResNet(BasicBlock, 20)


def test_basic_block_adds_its_input():
    """With both convolutions' weights zero the residual branch is zero (after batch norm, beta
    = 0), so the block returns relu(x)."""
    block = BasicBlock(4, 4).eval()
    for conv_layer in (block.conv1, block.conv2):
        Constant(0.0)(conv_layer.weight)
    x = oar.randn([2, 4, 5, 5])
    np.testing.assert_allclose(block(x).numpy(), np.maximum(x.numpy(), 0), atol=1e-6)


def test_mobilenet_v2_shapes():
    x = oar.rand([1, 3, 32, 32])
    with oar.no_grad():
        assert models.mobilenet_v2().eval()(x).shape == [1, 1000]
        assert MobileNetV2(scale=0.5, num_classes=10)(x).shape == [1, 10]
        assert MobileNetV2(num_classes=0, with_pool=False)(x).shape == [1, 1280, 1, 1]
    # scale rounds channels to multiples of 8; the last layer never goes below 1280
    small = MobileNetV2(scale=0.35, num_classes=0)
    assert small.features[0][0].weight.shape == [16, 3, 3, 3] and small.last_channel == 1280
    assert MobileNetV2(scale=1.4, num_classes=0).last_channel == 1792


def test_vgg_shapes(cheap_init):
    x = oar.rand([1, 3, 32, 32])
    with oar.no_grad():
        assert models.vgg11(num_classes=10)(x).shape == [1, 10]
        assert models.vgg16(batch_norm=True, num_classes=0)(x).shape == [1, 512, 7, 7]
        assert models.vgg16(num_classes=0, with_pool=False)(x).shape == [1, 512, 1, 1]
        assert VGG(make_layers([8, "M"]), num_classes=0)(x).shape == [1, 8, 7, 7]
    with pytest.raises(ArgumentError, match="cfg entry"):
        make_layers([8, "A"])


# -- Paddle's state dict names ---------------------------------------------------------------------
def test_lenet_state_dict_keys_are_paddles():
    state = LeNet().state_dict()
    assert list(state) == ["features.0.weight", "features.0.bias", "features.3.weight", "features.3.bias",
                           "fc.0.weight", "fc.0.bias", "fc.1.weight", "fc.1.bias", "fc.2.weight", "fc.2.bias"]
    assert state["features.0.weight"].shape == [6, 1, 3, 3]
    assert state["fc.0.weight"].shape == [400, 120]  # Paddle's Linear layout, [in, out]


def test_resnet_state_dict_keys_are_paddles():
    bn_keys = ["weight", "bias", "_mean", "_variance"]
    assert list(BasicBlock(64, 64).state_dict()) == (
        ["conv1.weight"] + [f"bn1.{k}" for k in bn_keys] + ["conv2.weight"] + [f"bn2.{k}" for k in bn_keys])
    state = models.resnet18().state_dict()
    keys = list(state)
    assert keys[:5] == ["conv1.weight"] + [f"bn1.{k}" for k in bn_keys]
    assert keys[-2:] == ["fc.weight", "fc.bias"]
    assert "layer2.0.downsample.0.weight" in state and "layer2.0.downsample.1._variance" in state
    assert not any(k.startswith("layer1.0.downsample") for k in keys)  # layer1 keeps 64 channels
    assert state["conv1.weight"].shape == [64, 3, 7, 7] and state["fc.weight"].shape == [512, 1000]
    assert len(keys) == 1 + 4 + 8 * 10 + 3 * 5 + 2  # stem, 8 blocks, 3 downsamples, fc
    bottleneck = list(models.resnet50(num_classes=0).state_dict())
    assert "layer1.0.conv3.weight" in bottleneck and "layer1.0.downsample.0.weight" in bottleneck


def test_mobilenet_v2_state_dict_keys_are_paddles():
    state = models.mobilenet_v2().state_dict()
    for key in ["features.0.0.weight", "features.0.1._mean", "features.1.conv.0.0.weight",
                "features.1.conv.1.weight", "features.1.conv.2._variance", "features.2.conv.0.0.weight",
                "features.18.0.weight", "classifier.1.weight", "classifier.1.bias"]:
        assert key in state, key
    assert state["features.1.conv.0.0.weight"].shape == [32, 1, 3, 3]  # depthwise


def test_weights_load_with_set_state_dict(tmp_path):
    oar.seed(1)
    trained = LeNet()
    oar.save(trained.state_dict(), str(tmp_path / "lenet.pdparams"))
    fresh = LeNet()
    fresh.set_state_dict(oar.load(str(tmp_path / "lenet.pdparams")))
    x = oar.rand([2, 1, 28, 28])
    np.testing.assert_array_equal(fresh(x).numpy(), trained(x).numpy())


# -- pretrained=True ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "resnext50_32x4d",
                                  "wide_resnet50_2", "mobilenet_v2", "vgg11", "vgg13", "vgg16", "vgg19",
                                  *NEW_CONSTRUCTORS])
def test_pretrained_is_a_clear_error(name):
    with pytest.raises(ArgumentError) as info:
        getattr(models, name)(pretrained=True)
    message = str(info.value)
    assert message.startswith(f"{name}(pretrained=True): pretrained weights cannot be downloaded")
    assert f"model = {name}(); model.set_state_dict(oar.load(path))" in message
    with pytest.raises(ArgumentError, match=r"vgg16_bn\(pretrained=True\)"):
        models.vgg16(pretrained=True, batch_norm=True)


def test_exports():
    assert oar.vision.models is models
    assert set(models.__all__) >= {"LeNet", "MLP", "ResNet", "BasicBlock", "BottleneckBlock", "resnet18", "resnet34",
                                   "resnet50", "MobileNetV2", "mobilenet_v2", "VGG", "vgg11", "vgg16"}
    assert all(hasattr(models, name) for name in models.__all__)


@pytest.mark.parametrize("module", [oar.vision.models, oar.vision.models._pretrained, oar.vision.models.lenet,
                                    oar.vision.models.mlp, oar.vision.models.resnet, oar.vision.models.mobilenetv2,
                                    oar.vision.models.vgg], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_models_are_reexported_at_oar_vision_like_paddle_vision():
    # Paddle code writes ``paddle.vision.LeNet()`` as often as ``paddle.vision.models.LeNet()``.
    for name in oar.vision.models.__all__:
        assert getattr(oar.vision, name) is getattr(oar.vision.models, name)
    assert "resnet18" in oar.vision.__all__
