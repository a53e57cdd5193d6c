"""Every public layer round-trips exactly through ``oar.save`` / ``oar.load`` / ``set_state_dict``.

A second instance built under another seed loads the first one's saved state and then holds
bit-identical parameters and buffers and gives bit-identical outputs.
"""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar import nn
from oar.nn.layer import public_layers

R = np.random.default_rng(0)


def x(*shape):
    return oar.to_tensor(R.standard_normal(shape).astype(np.float32))


# name -> (constructor, inputs for forward or None when forward needs more than tensors we build here)
LAYERS = {
    "AdaptiveAvgPool1D": (lambda: nn.AdaptiveAvgPool1D(2), lambda: [x(1, 2, 6)]),
    "AdaptiveAvgPool2D": (lambda: nn.AdaptiveAvgPool2D(2), lambda: [x(1, 2, 6, 6)]),
    "AdaptiveMaxPool1D": (lambda: nn.AdaptiveMaxPool1D(2), lambda: [x(1, 2, 6)]),
    "AdaptiveMaxPool2D": (lambda: nn.AdaptiveMaxPool2D(2), lambda: [x(1, 2, 6, 6)]),
    "AlphaDropout": (lambda: nn.AlphaDropout(0.5).eval(), lambda: [x(2, 3)]),
    "AvgPool1D": (lambda: nn.AvgPool1D(2), lambda: [x(1, 2, 6)]),
    "AvgPool2D": (lambda: nn.AvgPool2D(2), lambda: [x(1, 2, 6, 6)]),
    "BCELoss": (lambda: nn.BCELoss(), lambda: [oar.to_tensor([0.2, 0.7]), oar.to_tensor([0.0, 1.0])]),
    "BCEWithLogitsLoss": (lambda: nn.BCEWithLogitsLoss(), lambda: [x(3), oar.to_tensor([0.0, 1.0, 1.0])]),
    "BatchNorm": (lambda: nn.BatchNorm(3), lambda: [x(2, 3, 4, 4)]),
    "BatchNorm1D": (lambda: nn.BatchNorm1D(3), lambda: [x(4, 3)]),
    "BatchNorm2D": (lambda: nn.BatchNorm2D(3), lambda: [x(2, 3, 4, 4)]),
    "BatchNorm3D": (lambda: nn.BatchNorm3D(3), lambda: [x(2, 3, 2, 2, 2)]),
    "BiRNN": (lambda: nn.BiRNN(nn.SimpleRNNCell(3, 4), nn.SimpleRNNCell(3, 4)), lambda: [x(2, 5, 3)]),
    "Bilinear": (lambda: nn.Bilinear(3, 4, 5), lambda: [x(2, 3), x(2, 4)]),
    "CELU": (lambda: nn.CELU(), lambda: [x(2, 3)]),
    "CTCLoss": (lambda: nn.CTCLoss(), None),
    "ChannelShuffle": (lambda: nn.ChannelShuffle(2), lambda: [x(1, 4, 2, 2)]),
    "Conv1D": (lambda: nn.Conv1D(2, 3, 3), lambda: [x(1, 2, 8)]),
    "Conv1DTranspose": (lambda: nn.Conv1DTranspose(2, 3, 3), lambda: [x(1, 2, 5)]),
    "Conv2D": (lambda: nn.Conv2D(2, 3, 3, padding=1), lambda: [x(1, 2, 5, 5)]),
    "Conv2DTranspose": (lambda: nn.Conv2DTranspose(2, 3, 3, stride=2), lambda: [x(1, 2, 3, 3)]),
    "Conv3D": (lambda: nn.Conv3D(2, 3, 2), lambda: [x(1, 2, 3, 3, 3)]),
    "Conv3DTranspose": (lambda: nn.Conv3DTranspose(2, 3, 2), lambda: [x(1, 2, 2, 2, 2)]),
    "CosineSimilarity": (lambda: nn.CosineSimilarity(), lambda: [x(2, 3), x(2, 3)]),
    "CrossEntropyLoss": (lambda: nn.CrossEntropyLoss(), lambda: [x(3, 4), oar.to_tensor([0, 3, 1])]),
    "Dropout": (lambda: nn.Dropout(0.5).eval(), lambda: [x(2, 3)]),
    "Dropout2D": (lambda: nn.Dropout2D(0.5).eval(), lambda: [x(1, 2, 3, 3)]),
    "Dropout3D": (lambda: nn.Dropout3D(0.5).eval(), lambda: [x(1, 2, 2, 2, 2)]),
    "ELU": (lambda: nn.ELU(), lambda: [x(2, 3)]),
    "Embedding": (lambda: nn.Embedding(10, 4, padding_idx=0), lambda: [oar.to_tensor([[1, 0, 9]])]),
    "Flatten": (lambda: nn.Flatten(), lambda: [x(2, 3, 4)]),
    "GELU": (lambda: nn.GELU(), lambda: [x(2, 3)]),
    "GLU": (lambda: nn.GLU(), lambda: [x(2, 4)]),
    "GRU": (lambda: nn.GRU(3, 4, num_layers=2, direction="bidirect"), lambda: [x(2, 5, 3)]),
    "GRUCell": (lambda: nn.GRUCell(3, 4), lambda: [x(2, 3)]),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), lambda: [x(2, 4, 3, 3)]),
    "Hardshrink": (lambda: nn.Hardshrink(), lambda: [x(2, 3)]),
    "Hardsigmoid": (lambda: nn.Hardsigmoid(), lambda: [x(2, 3)]),
    "Hardswish": (lambda: nn.Hardswish(), lambda: [x(2, 3)]),
    "Hardtanh": (lambda: nn.Hardtanh(), lambda: [x(2, 3)]),
    "Identity": (lambda: nn.Identity(), lambda: [x(2, 3)]),
    "InstanceNorm1D": (lambda: nn.InstanceNorm1D(3), lambda: [x(2, 3, 5)]),
    "InstanceNorm2D": (lambda: nn.InstanceNorm2D(3), lambda: [x(2, 3, 4, 4)]),
    "InstanceNorm3D": (lambda: nn.InstanceNorm3D(3), lambda: [x(2, 3, 2, 2, 2)]),
    "KLDivLoss": (lambda: nn.KLDivLoss(), lambda: [x(2, 3), oar.to_tensor(np.full((2, 3), 0.3, np.float32))]),
    "L1Loss": (lambda: nn.L1Loss(), lambda: [x(2, 3), x(2, 3)]),
    "LSTM": (lambda: nn.LSTM(3, 4, num_layers=2), lambda: [x(2, 5, 3)]),
    "LSTMCell": (lambda: nn.LSTMCell(3, 4), lambda: [x(2, 3)]),
    "LayerNorm": (lambda: nn.LayerNorm([3, 4]), lambda: [x(2, 3, 4)]),
    "LeakyReLU": (lambda: nn.LeakyReLU(), lambda: [x(2, 3)]),
    "Linear": (lambda: nn.Linear(3, 4), lambda: [x(2, 3)]),
    "LogSigmoid": (lambda: nn.LogSigmoid(), lambda: [x(2, 3)]),
    "LogSoftmax": (lambda: nn.LogSoftmax(), lambda: [x(2, 3)]),
    "MSELoss": (lambda: nn.MSELoss(), lambda: [x(2, 3), x(2, 3)]),
    "MarginRankingLoss": (lambda: nn.MarginRankingLoss(), lambda: [x(3), x(3), oar.to_tensor([1.0, -1.0, 1.0])]),
    "MaxPool1D": (lambda: nn.MaxPool1D(2), lambda: [x(1, 2, 6)]),
    "MaxPool2D": (lambda: nn.MaxPool2D(2), lambda: [x(1, 2, 6, 6)]),
    "Maxout": (lambda: nn.Maxout(2), lambda: [x(1, 4, 2, 2)]),
    "Mish": (lambda: nn.Mish(), lambda: [x(2, 3)]),
    "MultiHeadAttention": (lambda: nn.MultiHeadAttention(8, 2), lambda: [x(2, 3, 8)]),
    "NLLLoss": (lambda: nn.NLLLoss(), lambda: [x(3, 4), oar.to_tensor([0, 3, 1])]),
    "PReLU": (lambda: nn.PReLU(3), lambda: [x(2, 3, 2, 2)]),
    "Pad1D": (lambda: nn.Pad1D([1, 2]), lambda: [x(1, 2, 3)]),
    "Pad2D": (lambda: nn.Pad2D([1, 2, 0, 1]), lambda: [x(1, 2, 3, 3)]),
    "Pad3D": (lambda: nn.Pad3D(1), lambda: [x(1, 1, 2, 2, 2)]),
    "PixelShuffle": (lambda: nn.PixelShuffle(2), lambda: [x(1, 4, 2, 2)]),
    "PixelUnshuffle": (lambda: nn.PixelUnshuffle(2), lambda: [x(1, 1, 4, 4)]),
    "RMSNorm": (lambda: nn.RMSNorm(4), lambda: [x(2, 4)]),
    "RNN": (lambda: nn.RNN(nn.LSTMCell(3, 4)), lambda: [x(2, 5, 3)]),
    "ReLU": (lambda: nn.ReLU(), lambda: [x(2, 3)]),
    "ReLU6": (lambda: nn.ReLU6(), lambda: [x(2, 3)]),
    "SELU": (lambda: nn.SELU(), lambda: [x(2, 3)]),
    "Sigmoid": (lambda: nn.Sigmoid(), lambda: [x(2, 3)]),
    "Silu": (lambda: nn.Silu(), lambda: [x(2, 3)]),
    "SimpleRNN": (lambda: nn.SimpleRNN(3, 4), lambda: [x(2, 5, 3)]),
    "SimpleRNNCell": (lambda: nn.SimpleRNNCell(3, 4), lambda: [x(2, 3)]),
    "SmoothL1Loss": (lambda: nn.SmoothL1Loss(), lambda: [x(2, 3), x(2, 3)]),
    "Softmax": (lambda: nn.Softmax(), lambda: [x(2, 3)]),
    "Softplus": (lambda: nn.Softplus(), lambda: [x(2, 3)]),
    "Softshrink": (lambda: nn.Softshrink(), lambda: [x(2, 3)]),
    "Softsign": (lambda: nn.Softsign(), lambda: [x(2, 3)]),
    "SpectralNorm": (lambda: nn.SpectralNorm([2, 8, 3, 3], dim=1, power_iters=2), lambda: [x(2, 8, 3, 3)]),
    "Swish": (lambda: nn.Swish(), lambda: [x(2, 3)]),
    "Tanh": (lambda: nn.Tanh(), lambda: [x(2, 3)]),
    "Tanhshrink": (lambda: nn.Tanhshrink(), lambda: [x(2, 3)]),
    "ThresholdedReLU": (lambda: nn.ThresholdedReLU(), lambda: [x(2, 3)]),
    "Transformer": (lambda: nn.Transformer(8, 2, 1, 1, 16, dropout=0.0), lambda: [x(2, 3, 8), x(2, 4, 8)]),
    "TransformerDecoder": (lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), 2), lambda: [x(2, 4, 8), x(2, 3, 8)]),
    "TransformerDecoderLayer": (lambda: nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), lambda: [x(2, 4, 8), x(2, 3, 8)]),
    "TransformerEncoder": (lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2), lambda: [x(2, 3, 8)]),
    "TransformerEncoderLayer": (lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), lambda: [x(2, 3, 8)]),
    "Upsample": (lambda: nn.Upsample(scale_factor=2, mode="bilinear"), lambda: [x(1, 1, 2, 2)]),
    "UpsamplingBilinear2D": (lambda: nn.UpsamplingBilinear2D(scale_factor=2), lambda: [x(1, 1, 2, 2)]),
    "UpsamplingNearest2D": (lambda: nn.UpsamplingNearest2D(scale_factor=2), lambda: [x(1, 1, 2, 2)]),
    "ZeroPad2D": (lambda: nn.ZeroPad2D(1), lambda: [x(1, 1, 2, 2)]),
    # containers and the base class, with a parametrised layer inside
    "Sequential": (lambda: nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1D(4)), lambda: [x(5, 3)]),
    "LayerList": (lambda: nn.LayerList([nn.Linear(3, 4), nn.Linear(4, 2)]), None),
    "LayerDict": (lambda: nn.LayerDict({"a": nn.Linear(3, 4)}), None),
    "ParameterList": (lambda: nn.ParameterList([nn.Linear(3, 4).weight]), None),
}
# pooling, padding, folding, containers and norms of the Paddle API breadth work (issue #19)
LAYERS.update({
    "AdaptiveAvgPool3D": (lambda: nn.AdaptiveAvgPool3D(2), lambda: [x(1, 2, 4, 4, 4)]),
    "AdaptiveMaxPool3D": (lambda: nn.AdaptiveMaxPool3D(2), lambda: [x(1, 2, 4, 4, 4)]),
    "AvgPool3D": (lambda: nn.AvgPool3D(2), lambda: [x(1, 2, 4, 4, 4)]),
    "MaxPool3D": (lambda: nn.MaxPool3D(2), lambda: [x(1, 2, 4, 4, 4)]),
    "LPPool1D": (lambda: nn.LPPool1D(2, 2), lambda: [x(1, 2, 6)]),
    "LPPool2D": (lambda: nn.LPPool2D(2, 2), lambda: [x(1, 2, 4, 4)]),
    "MaxUnPool1D": (lambda: nn.MaxUnPool1D(2), None),
    "MaxUnPool2D": (lambda: nn.MaxUnPool2D(2), None),
    "MaxUnPool3D": (lambda: nn.MaxUnPool3D(2), None),
    "FractionalMaxPool2D": (lambda: nn.FractionalMaxPool2D(3, random_u=0.3), lambda: [x(1, 2, 7, 7)]),
    "FractionalMaxPool3D": (lambda: nn.FractionalMaxPool3D(2, random_u=0.3), lambda: [x(1, 2, 5, 5, 5)]),
    "ZeroPad1D": (lambda: nn.ZeroPad1D(1), lambda: [x(1, 2, 3)]),
    "ZeroPad3D": (lambda: nn.ZeroPad3D(1), lambda: [x(1, 1, 2, 2, 2)]),
    "ConstantPad1D": (lambda: nn.ConstantPad1D(1, 2.0), lambda: [x(1, 2, 3)]),
    "ConstantPad2D": (lambda: nn.ConstantPad2D(1, 2.0), lambda: [x(1, 2, 3, 3)]),
    "ConstantPad3D": (lambda: nn.ConstantPad3D(1, 2.0), lambda: [x(1, 1, 2, 2, 2)]),
    "CircularPad1D": (lambda: nn.CircularPad1D(1), lambda: [x(1, 2, 3)]),
    "CircularPad2D": (lambda: nn.CircularPad2D(1), lambda: [x(1, 2, 3, 3)]),
    "CircularPad3D": (lambda: nn.CircularPad3D(1), lambda: [x(1, 1, 2, 2, 2)]),
    "ReflectionPad1D": (lambda: nn.ReflectionPad1D(1), lambda: [x(1, 2, 3)]),
    "ReflectionPad2D": (lambda: nn.ReflectionPad2D(1), lambda: [x(1, 2, 3, 3)]),
    "ReflectionPad3D": (lambda: nn.ReflectionPad3D(1), lambda: [x(1, 1, 2, 2, 2)]),
    "ReplicationPad1D": (lambda: nn.ReplicationPad1D(1), lambda: [x(1, 2, 3)]),
    "ReplicationPad2D": (lambda: nn.ReplicationPad2D(1), lambda: [x(1, 2, 3, 3)]),
    "ReplicationPad3D": (lambda: nn.ReplicationPad3D(1), lambda: [x(1, 1, 2, 2, 2)]),
    "Fold": (lambda: nn.Fold([3, 3], 2), lambda: [x(1, 8, 4)]),
    "Unfold": (lambda: nn.Unfold(2), lambda: [x(1, 2, 3, 3)]),
    "Unflatten": (lambda: nn.Unflatten(1, [2, 3]), lambda: [x(2, 6)]),
    "PairwiseDistance": (lambda: nn.PairwiseDistance(), lambda: [x(2, 3), x(2, 3)]),
    "Softmax2D": (lambda: nn.Softmax2D(), lambda: [x(1, 3, 2, 2)]),
    "LocalResponseNorm": (lambda: nn.LocalResponseNorm(3), lambda: [x(1, 4, 2, 2)]),
    "SyncBatchNorm": (lambda: nn.SyncBatchNorm(3), lambda: [x(2, 3, 4, 4)]),
    "ParameterDict": (lambda: nn.ParameterDict({"w": nn.Linear(3, 4).weight}), None),
})
# Paddle 3.3's lower-case and torch-style aliases are the same classes as the names above
LAYERS.update({alias: LAYERS[name] for alias, name in [
    ("AdaptiveMaxPool1d", "AdaptiveMaxPool1D"), ("AdaptiveMaxPool2d", "AdaptiveMaxPool2D"),
    ("AdaptiveMaxPool3d", "AdaptiveMaxPool3D"), ("LPPool1d", "LPPool1D"), ("LPPool2d", "LPPool2D"),
    ("ConstantPad1d", "ConstantPad1D"), ("ConstantPad2d", "ConstantPad2D"), ("ConstantPad3d", "ConstantPad3D"),
    ("CircularPad1d", "CircularPad1D"), ("CircularPad2d", "CircularPad2D"), ("CircularPad3d", "CircularPad3D"),
    ("ReflectionPad1d", "ReflectionPad1D"), ("ReflectionPad2d", "ReflectionPad2D"),
    ("ReflectionPad3d", "ReflectionPad3D"), ("ReplicationPad1d", "ReplicationPad1D"),
    ("ReplicationPad2d", "ReplicationPad2D"), ("ReplicationPad3d", "ReplicationPad3D"),
    ("ModuleList", "LayerList"), ("ModuleDict", "LayerDict"),
]})
LAYERS["Module"] = (lambda: nn.Module(), None)
# losses, activations and aliases of the Paddle API breadth work (issue #19)
LAYERS.update({
    "SoftMarginLoss": (lambda: nn.SoftMarginLoss(), lambda: [x(2, 3), oar.to_tensor([[1.0, -1.0, 1.0]] * 2)]),
    "HingeEmbeddingLoss": (lambda: nn.HingeEmbeddingLoss(), lambda: [x(2, 3), oar.to_tensor([[1.0, -1.0, 1.0]] * 2)]),
    "CosineEmbeddingLoss": (lambda: nn.CosineEmbeddingLoss(), lambda: [x(2, 3), x(2, 3), oar.to_tensor([1, -1])]),
    "TripletMarginLoss": (lambda: nn.TripletMarginLoss(), lambda: [x(2, 3), x(2, 3), x(2, 3)]),
    "TripletMarginWithDistanceLoss": (lambda: nn.TripletMarginWithDistanceLoss(), lambda: [x(2, 3), x(2, 3), x(2, 3)]),
    "MultiMarginLoss": (lambda: nn.MultiMarginLoss(), lambda: [x(2, 3), oar.to_tensor([0, 2])]),
    "MultiLabelMarginLoss": (lambda: nn.MultiLabelMarginLoss(), lambda: [x(2, 3), oar.to_tensor([[0, -1, 0], [2, 1, -1]])]),
    "MultiLabelSoftMarginLoss": (lambda: nn.MultiLabelSoftMarginLoss(), lambda: [x(2, 3), oar.to_tensor([[0.0, 1.0, 1.0]] * 2)]),
    "PoissonNLLLoss": (lambda: nn.PoissonNLLLoss(), lambda: [x(2, 3), oar.to_tensor([[0.0, 1.0, 3.0]] * 2)]),
    "GaussianNLLLoss": (lambda: nn.GaussianNLLLoss(), lambda: [x(2, 3), x(2, 3), oar.ones([2, 3])]),
    "HSigmoidLoss": (lambda: nn.HSigmoidLoss(3, 5), lambda: [x(2, 3), oar.to_tensor([0, 4])]),
    "AdaptiveLogSoftmaxWithLoss": (lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 6, [2, 4]),
                                   lambda: [x(3, 8), oar.to_tensor([0, 3, 5])]),
    "RNNTLoss": (lambda: nn.RNNTLoss(), None),
    "SiLU": (lambda: nn.SiLU(), lambda: [x(2, 3)]),
    "RReLU": (lambda: nn.RReLU().eval(), lambda: [x(2, 3)]),
    "FeatureAlphaDropout": (lambda: nn.FeatureAlphaDropout(0.5).eval(), lambda: [x(2, 3, 4)]),
    "Conv1d": (lambda: nn.Conv1d(2, 3, 3), lambda: [x(1, 2, 8)]),
    "Conv2d": (lambda: nn.Conv2d(2, 3, 3, padding=1), lambda: [x(1, 2, 5, 5)]),
    "Conv3d": (lambda: nn.Conv3d(2, 3, 2), lambda: [x(1, 2, 3, 3, 3)]),
})
ABSTRACT = {"Layer", "RNNCellBase"}


def test_the_table_covers_every_public_layer():
    assert set(public_layers()) - ABSTRACT == set(LAYERS)


def _outputs(layer, inputs):
    out = layer(*inputs)
    flat = []

    def walk(o):
        if isinstance(o, oar.Tensor):
            flat.append(o.numpy())
        elif isinstance(o, (list, tuple)):
            for item in o:
                walk(item)

    walk(out)
    return flat


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_state_round_trips_exactly(name, tmp_path):
    make, inputs = LAYERS[name]
    oar.seed(1)
    original = make()
    if inputs is not None:  # a forward pass first, so BatchNorm's running stats are not fresh
        original.train()
        _outputs(original, inputs())
    path = tmp_path / "layer.pdparams"
    oar.save(original.state_dict(), str(path))

    oar.seed(2)
    restored = make()
    restored.set_state_dict(oar.load(str(path)))

    saved, loaded = original.state_dict(), restored.state_dict()
    assert list(saved) == list(loaded)
    for key in saved:
        assert saved[key].dtype == loaded[key].dtype, key
        np.testing.assert_array_equal(saved[key].numpy(), loaded[key].numpy(), err_msg=f"{name}: {key}")
    if inputs is not None:
        original.eval()
        restored.eval()
        batch = inputs()
        for a, b in zip(_outputs(original, batch), _outputs(restored, batch)):
            np.testing.assert_array_equal(a, b, err_msg=name)
