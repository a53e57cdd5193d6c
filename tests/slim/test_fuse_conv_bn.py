"""``oar.quantization.fuse_conv_bn``: batch norms folded into the convs they follow, paired from
the captured program (not by registration order), computing what the unfused model computes."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import oar
from oar import nn
from oar.errors import ArgumentError
from oar.nn import functional as F
from oar.quantization import PTQ, QuantConfig, conv_bn_pairs, fuse_conv_bn
from oar.quantization.observers import AbsMaxChannelWiseWeightObserver, AbsmaxObserver
from oar.static import InputSpec
from oar.testing import sum_tolerance

from .test_quantized_ops import randomize_batch_norms

SHAPE = [2, 3, 8, 8]


@pytest.fixture(autouse=True)
def seeded():
    oar.seed(0)  # the layers' initial weights and the inputs


def prepared(model: nn.Layer) -> nn.Layer:
    randomize_batch_norms(model)  # statistics that change the result, so a wrong fold shows
    return model.eval()


def assert_same_outputs(fused, model, x, terms: int) -> None:
    with oar.no_grad():
        expected, got = model(x).numpy(), fused(x).numpy()
    rtol, atol = sum_tolerance("float32", terms=terms, scale=np.abs(expected).max())
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


def folded_reference(conv: nn.Conv2D, bn: nn.BatchNorm2D) -> tuple[np.ndarray, np.ndarray]:
    """numpy's fold: ``w * gamma / sqrt(var + eps)`` per output channel, ``beta + (b - mean) * ...``."""
    scale = bn.weight.numpy() / np.sqrt(bn._variance.numpy() + bn._epsilon)
    bias = conv.bias.numpy() if conv.bias is not None else 0.0
    return conv.weight.numpy() * scale[:, None, None, None], bn.bias.numpy() + (bias - bn._mean.numpy()) * scale


def ops_of(model, shape=SHAPE) -> list[str]:
    from oar.slim.prune import capture

    return [n.op for n in capture(model, shape).nodes]


class BasicBlock(nn.Layer):
    """ResNet's block with a projection shortcut: conv1/bn1/relu/conv2/bn2 + shortcut conv and bn."""

    def __init__(self, cin: int = 3, cout: int = 8):
        super().__init__()
        self.conv1 = nn.Conv2D(cin, cout, 3, stride=2, padding=1, bias_attr=False)
        self.bn1 = nn.BatchNorm2D(cout)
        self.conv2 = nn.Conv2D(cout, cout, 3, padding=1, bias_attr=False)
        self.bn2 = nn.BatchNorm2D(cout)
        self.shortcut = nn.Sequential(nn.Conv2D(cin, cout, 1, stride=2, bias_attr=False), nn.BatchNorm2D(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


@pytest.mark.parametrize("bias", [True, False], ids=["conv-bias", "no-bias"])
def test_sequential_pairs_fold_into_the_numpy_weights_and_compute_the_same(bias):
    model = prepared(nn.Sequential(nn.Conv2D(3, 8, 3, padding=1, bias_attr=None if bias else False),
                                   nn.BatchNorm2D(8), nn.ReLU(),
                                   nn.Conv2D(8, 4, 3, bias_attr=None if bias else False), nn.BatchNorm2D(4)))
    if bias:
        for conv in (model[0], model[3]):
            conv.bias.set_value(np.linspace(-1, 1, conv.bias.shape[0]).astype(np.float32))
    expected = {i: folded_reference(model[i], model[i + 1]) for i in (0, 3)}
    fused = fuse_conv_bn(model, SHAPE)
    assert [type(layer).__name__ for layer in fused] == ["Conv2D", "Identity", "ReLU", "Conv2D", "Identity"]
    assert isinstance(model[1], nn.BatchNorm2D) and model[0].bias is not fused[0].bias  # a copy was fused
    for i, (weight, shift) in expected.items():
        for got, want in ((fused[i].weight, weight), (fused[i].bias, shift)):
            rtol, atol = sum_tolerance("float32", terms=1, scale=np.abs(want).max())
            np.testing.assert_allclose(got.numpy(), want, rtol=rtol, atol=atol)
    assert [name for name, _ in fused.named_parameters()] == ["0.weight", "0.bias", "3.weight", "3.bias"]
    assert_same_outputs(fused, model, oar.randn(SHAPE), terms=8 * 9)
    assert "batch_norm_infer" not in ops_of(fused)


def test_a_basic_block_folds_all_three_pairs_in_program_order():
    model = prepared(BasicBlock())
    assert conv_bn_pairs(model, SHAPE) == [("conv1", "bn1"), ("conv2", "bn2"), ("shortcut.0", "shortcut.1")]
    fused = fuse_conv_bn(model, [InputSpec([None, 3, 8, 8], "float32", "x")])
    assert_same_outputs(fused, model, oar.randn(SHAPE), terms=8 * 9)
    unfused_ops = ops_of(model)
    assert unfused_ops.count("batch_norm_infer") == 3
    # each batch norm becomes the conv's new bias add (the reshape of a parameter runs once per update)
    assert ops_of(fused) == [op for name in unfused_ops
                             for op in (["reshape", "add"] if name == "batch_norm_infer" else [name])]


def test_a_conv_output_read_elsewhere_is_not_fused():
    class Shared(nn.Layer):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2D(3, 4, 3)
            self.bn = nn.BatchNorm2D(4)

        def forward(self, x):
            y = self.conv(x)
            return self.bn(y) + y  # folding would change y for the add

    model = prepared(Shared())
    assert conv_bn_pairs(model, SHAPE) == []
    fused = fuse_conv_bn(model, oar.randn(SHAPE))
    assert isinstance(fused.bn, nn.BatchNorm2D)
    x = oar.randn(SHAPE)
    np.testing.assert_array_equal(fused(x).numpy(), model(x).numpy())


def test_a_batch_norm_is_paired_with_the_conv_it_follows_not_the_one_registered_before_it():
    class Trap(nn.Layer):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2D(3, 4, 3, padding=1)
            self.bn = nn.BatchNorm2D(4)  # Paddle's fuse_utils pairs it with conv1: registered right after it
            self.conv2 = nn.Conv2D(4, 4, 3, padding=1)
            self.after_relu = nn.BatchNorm2D(4)  # follows conv1's relu, so no conv at all

        def forward(self, x):
            return self.bn(self.conv2(self.after_relu(F.relu(self.conv1(x)))))

    model = prepared(Trap())
    assert conv_bn_pairs(model, SHAPE) == [("conv2", "bn")]
    fused = fuse_conv_bn(model, SHAPE)
    assert isinstance(fused.bn, nn.Identity) and isinstance(fused.after_relu, nn.BatchNorm2D)
    np.testing.assert_array_equal(fused.conv1.weight.numpy(), model.conv1.weight.numpy())
    assert_same_outputs(fused, model, oar.randn(SHAPE), terms=4 * 9)


class ConvBN(nn.Layer):
    def __init__(self, forward):
        super().__init__()
        self.conv = nn.Conv2D(3, 3, 3, padding=1, bias_attr=False)
        self.bn = nn.BatchNorm2D(3)
        self._forward = forward

    def forward(self, x):
        return self._forward(self, x)


NOT_A_PAIR = {
    # the weight used by F.conv2d, the layer never runs: a bias made for the conv would not be added
    "functional conv": lambda m, x: m.bn(F.conv2d(x, m.conv.weight, padding=1)),
    "conv run twice": lambda m, x: m.bn(m.conv(m.conv(x))),
    "weight also read elsewhere": lambda m, x: m.bn(m.conv(x)) + F.conv2d(x, m.conv.weight, padding=1),
    "bn weight also read elsewhere": lambda m, x: m.bn(m.conv(x)) * m.bn.weight.reshape([1, 3, 1, 1]),
    "conv output returned too": lambda m, x: (m.bn(y := m.conv(x)), y),
}


@pytest.mark.parametrize("forward", NOT_A_PAIR.values(), ids=NOT_A_PAIR.keys())
def test_layers_whose_forward_does_not_make_the_pair_are_not_fused(forward):
    model = prepared(ConvBN(forward))
    assert "batch_norm_infer" in ops_of(model) and conv_bn_pairs(model, SHAPE) == []


def test_a_model_in_train_mode_is_refused_naming_the_layer():
    model = BasicBlock()
    with pytest.raises(ArgumentError, match="the model is in train mode.*model.eval"):
        fuse_conv_bn(model, SHAPE)
    model.eval()
    model.bn2.train()
    with pytest.raises(ArgumentError, match=r"layer 'bn2' \(BatchNorm2D\) is in train mode"):
        fuse_conv_bn(model, SHAPE)
    with pytest.raises(ArgumentError, match="expected an oar.nn.Layer"):
        fuse_conv_bn(lambda x: x, SHAPE)


def test_inplace_fuses_the_model_itself():
    model = prepared(BasicBlock())
    reference = copy.deepcopy(model)
    assert fuse_conv_bn(model, SHAPE, inplace=True) is model
    assert isinstance(model.shortcut[1], nn.Identity) and not model.shortcut[1].training
    assert_same_outputs(model, reference, oar.randn(SHAPE), terms=8 * 9)


def ptq(model, calibration):
    config = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=AbsMaxChannelWiseWeightObserver()))
    observed = config.quantize(model)
    with oar.no_grad():
        observed(calibration)
    return config.convert(observed)


def test_the_fused_int8_model_saves_without_batch_norms_and_loads_back(tmp_path):
    model = prepared(BasicBlock())
    calibration = oar.randn([16, 3, 8, 8])
    spec = [InputSpec([None, 3, 8, 8], "float32", "x")]
    unfused, fused = ptq(model, calibration), ptq(fuse_conv_bn(model, spec), calibration)
    for a, b in ((unfused.conv1, fused.conv1), (unfused.conv2, fused.conv2)):
        # per-channel steps: the fold scales a whole channel, so its int8 weights only change sign with gamma
        sign = np.sign(model.bn1.weight.numpy() if a is unfused.conv1 else model.bn2.weight.numpy())
        np.testing.assert_array_equal(b.weight.numpy(), a.weight.numpy() * sign[:, None, None, None].astype(np.int8))
    prefixes = {name: str(tmp_path / name) for name in ("unfused", "fused")}
    for name, int8_model in (("unfused", unfused), ("fused", fused)):
        oar.jit.save(int8_model, prefixes[name], input_spec=spec)
    sizes = {name: (tmp_path / f"{name}.pdiparams").stat().st_size for name in prefixes}
    assert sizes["fused"] < sizes["unfused"]
    assert not any("_mean" in key or "_variance" in key for key in fused.state_dict())
    loaded = oar.jit.load(prefixes["fused"])
    x = oar.randn([4, 3, 8, 8])
    with oar.no_grad():
        eager, again, before = fused(x).numpy(), loaded(x).numpy(), unfused(x).numpy()
    # the loaded program's conv, bias add and relu run as one fused_conv2d: the same sums, rounded once
    rtol, atol = sum_tolerance("float32", terms=8 * 9, scale=np.abs(eager).max())
    np.testing.assert_allclose(again, eager, rtol=rtol, atol=atol)
    # The two int8 models differ by float rounding only where they add the bias (or batch norm) and
    # where a value on a rounding tie of the next layer's quantization moves one step.
    assert np.linalg.norm(eager - before) / np.linalg.norm(before) < 1e-2
