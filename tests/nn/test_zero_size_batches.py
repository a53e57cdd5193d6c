"""A batch of 0 samples (issue #24): every layer that maps samples gives an empty output of the
shape a larger batch would have with N = 0, forward and backward (the parameters' gradients are
zeros of their shape), in training and in evaluation, eagerly and through to_static. With
oar-numba installed (this environment) the layers run its kernels, which hand empty inputs to the
references; the op table's ``*_empty`` rows check the ops themselves (tests/nn/op_cases)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar import nn

LAYERS = [
    (lambda: nn.Conv1D(2, 3, 3, padding=1), [2, 6]),
    (lambda: nn.Conv2D(2, 3, 3, stride=2), [2, 5, 5]),
    (lambda: nn.Conv2D(4, 4, 3, groups=2, data_format="NHWC"), [5, 5, 4]),
    (lambda: nn.Conv2D(4, 4, 3, groups=4), [4, 6, 6]),  # depthwise
    (lambda: nn.Conv3D(2, 3, 2), [2, 3, 3, 3]),
    (lambda: nn.Conv1DTranspose(2, 3, 3, stride=2), [2, 4]),
    (lambda: nn.Conv2DTranspose(2, 3, 3, padding=1), [2, 4, 4]),
    (lambda: nn.Conv3DTranspose(2, 2, 2), [2, 2, 2, 2]),
    (lambda: nn.MaxPool1D(2), [2, 6]),
    (lambda: nn.MaxPool2D(3, stride=2, padding=1), [2, 5, 5]),
    (lambda: nn.AvgPool1D(2), [2, 6]),
    (lambda: nn.AvgPool2D(2), [2, 4, 4]),
    (lambda: nn.AdaptiveAvgPool1D(3), [2, 7]),
    (lambda: nn.AdaptiveAvgPool2D(2), [2, 5, 5]),
    (lambda: nn.AdaptiveMaxPool1D(3), [2, 7]),
    (lambda: nn.AdaptiveMaxPool2D([2, 3]), [2, 5, 5]),
    (lambda: nn.BatchNorm1D(3), [3]),
    (lambda: nn.BatchNorm1D(3), [3, 4]),
    (lambda: nn.BatchNorm2D(2), [2, 3, 3]),
    (lambda: nn.BatchNorm2D(2, data_format="NHWC"), [3, 3, 2]),
    (lambda: nn.BatchNorm3D(2), [2, 2, 2, 2]),
    (lambda: nn.LayerNorm(4), [3, 4]),
    (lambda: nn.GroupNorm(2, 4), [4, 3, 3]),
    (lambda: nn.InstanceNorm1D(3), [3, 5]),
    (lambda: nn.InstanceNorm2D(3), [3, 4, 4]),
    (lambda: nn.InstanceNorm3D(2), [2, 2, 2, 2]),
    (lambda: nn.Linear(4, 3), [4]),
    (lambda: nn.Linear(4, 3), [5, 4]),
]


def _ids(rows):
    return [f"{type(make()).__name__}{sample}" for make, sample in rows]


def _run(layer, x):
    y = layer(x)
    return y[0] if isinstance(y, tuple) else y


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("make, sample", LAYERS, ids=_ids(LAYERS))
def test_a_batch_of_zero_gives_an_empty_output_and_zero_parameter_gradients(make, sample, training):
    layer = make()
    layer.train() if training else layer.eval()
    expected = _run(layer, oar.rand([2, *sample])).shape
    x = oar.zeros([0, *sample])
    x.stop_gradient = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy warning about means or divisions over nothing
        y = _run(layer, x)
        assert y.shape == [0, *expected[1:]] and y.dtype == oar.float32
        y.sum().backward()
    assert x.grad is not None and x.grad.shape == x.shape
    for name, p in layer.named_parameters():
        assert p.grad is not None and p.grad.shape == p.shape, name
        np.testing.assert_array_equal(p.grad.numpy(), np.zeros(p.shape), err_msg=name)


def test_an_empty_training_batch_leaves_the_running_statistics_as_they_were():
    # Paddle's kernel returns before touching them; a mean over no sample would make them NaN.
    bn = nn.BatchNorm2D(3)
    bn.train()
    bn(oar.rand([4, 3, 2, 2]) * 5 + 2)
    mean, var = bn._mean.numpy().copy(), bn._variance.numpy().copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bn(oar.zeros([0, 3, 2, 2])).shape == [0, 3, 2, 2]
    np.testing.assert_array_equal(bn._mean.numpy(), mean)
    np.testing.assert_array_equal(bn._variance.numpy(), var)
    running_mean, running_var = oar.zeros([2]), oar.ones([2])
    F.batch_norm(oar.zeros([0, 2]), running_mean, running_var, training=True)
    assert running_mean.tolist() == [0.0, 0.0] and running_var.tolist() == [1.0, 1.0]


def test_embedding_of_no_ids():
    emb = nn.Embedding(5, 3)
    out = emb(oar.to_tensor(np.zeros((0, 4), np.int64)))
    assert out.shape == [0, 4, 3]
    out.sum().backward()
    np.testing.assert_array_equal(emb.weight.grad.numpy(), np.zeros([5, 3]))


class _SmallCNN(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2D(4)
        self.conv2 = nn.Conv2D(4, 4, 3)
        self.fc = nn.Linear(4 * 2 * 2, 3)

    def forward(self, x):
        y = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        y = F.max_pool2d(F.relu(self.conv2(y)), 2)
        return self.fc(oar.flatten(y, 1))


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_a_batch_of_zero_through_to_static(training):
    # The program runs the fused kernels of its passes (conv + bias + relu + max_pool, numba's too).
    oar.seed(3)
    net = _SmallCNN()
    net.train() if training else net.eval()
    static = oar.jit.to_static(net)
    static(oar.rand([2, 1, 12, 12]))
    for _ in range(2):  # the first call captures the N = 0 program, the second runs it
        x = oar.zeros([0, 1, 12, 12])
        x.stop_gradient = False
        y = static(x)
        assert y.shape == [0, 3]
        y.sum().backward()
        assert x.grad.shape == [0, 1, 12, 12]
        for name, p in net.named_parameters():
            assert p.grad is not None and not np.any(p.grad.numpy()), name
    assert len(static.forward.program_cache) == 2


@pytest.mark.parametrize("reduction, expected", [("mean", "nan"), ("sum", 0.0), ("none", [0])])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_cross_entropy_of_an_empty_batch(reduction, expected, weighted):
    # Paddle 3: the mean over no sample is NaN (mean_all of an empty loss); the sum is 0; 'none'
    # is the empty per-sample loss. oar gives NaN with a weight too (Paddle: 0 / (0 + 1) = 0).
    x = oar.zeros([0, 3])
    x.stop_gradient = False
    weight = oar.to_tensor([1.0, 2.0, 3.0]) if weighted else None
    loss = nn.CrossEntropyLoss(weight=weight, reduction=reduction)(x, oar.to_tensor(np.zeros(0, np.int64)))
    if expected == "nan":
        assert loss.shape == [] and np.isnan(float(loss))
    elif isinstance(expected, list):
        assert loss.shape == expected
    else:
        assert float(loss) == expected
    loss.sum().backward()
    assert x.grad.shape == [0, 3]


def test_cross_entropy_of_soft_labels_over_an_empty_batch_is_nan():
    loss = F.cross_entropy(oar.zeros([0, 3]), oar.zeros([0, 3]), soft_label=True)
    assert np.isnan(float(loss))


def test_cross_entropy_with_every_label_ignored_stays_zero():
    # A batch with samples, all ignored, is not an empty batch: 0, as Paddle with ignore_index >= 0.
    assert float(F.cross_entropy(oar.rand([3, 4]), oar.to_tensor([1, 1, 1]), ignore_index=1)) == 0.0
