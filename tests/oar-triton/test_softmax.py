"""The softmax-family kernels beyond the op table: half dtypes against the cpu, rows longer than a
block, inner axes, strided inputs, extreme values, the cross-entropy label forms, nll_loss over
[N, C, d] inputs, empty inputs and the refusals.
"""

from __future__ import annotations

import numpy as np
import pytest
from oar_triton.backend import BACKEND
from oar_triton.kernels.softmax import KERNELS
from triton_test_support import assert_same

import oar
import oar.nn.functional as F
from oar.errors import DTypeError, ShapeError

RNG = np.random.default_rng(11)
BF16 = oar.ops.get_dtype("bfloat16").np


def device(a: np.ndarray):
    return BACKEND.from_numpy(a)


def host(d) -> np.ndarray:
    return BACKEND.to_numpy(d)


def ref_log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    x = x.astype(np.float64)
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def _on(place: str, fn, *arrays, dtype: str):
    previous = oar.get_device()
    oar.set_device(place)
    try:
        target = oar.ops.get_dtype(dtype).np
        tensors = [oar.to_tensor(a.astype(target) if a.dtype.kind == "f" else a) for a in arrays]
        out = fn(*tensors)
        return [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]
    finally:
        oar.set_device(previous)


LABELS = np.array([3, 0, 4, 1, 1, 2])
HALF_CASES = {
    "softmax": (lambda x: F.softmax(x, axis=1), [RNG.standard_normal((6, 5, 3)) * 3]),
    "log_softmax": (lambda x: F.log_softmax(x, axis=-1), [RNG.standard_normal((6, 5)) * 3]),
    "cross_entropy": (lambda x, y: F.softmax_with_cross_entropy(x, y, return_softmax=True),
                      [RNG.standard_normal((6, 5)) * 3, LABELS[:, None]]),
    "nll_loss": (lambda x, y: F.nll_loss(x, y, reduction="none"), [RNG.standard_normal((6, 5)), LABELS]),
}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", sorted(HALF_CASES))
def test_half_dtypes_match_the_cpu(op, dtype):
    fn, arrays = HALF_CASES[op]
    got, expected = _on("gpu", fn, *arrays, dtype=dtype), _on("cpu", fn, *arrays, dtype=dtype)
    assert_same(got, expected, dtype, f"{op} [{dtype}]", terms=5)


def test_rows_longer_than_a_block_use_the_online_pass():
    # 3000 columns: three BLOCK_N steps, the maximum in the last one and large values throughout
    x = (RNG.standard_normal((2, 3000)) * 30).astype(np.float32)
    x[0, 2999] = 500.0
    x[1, :] -= 1000.0
    expected = ref_log_softmax(x, 1)
    np.testing.assert_allclose(host(KERNELS["log_softmax"](device(x), axis=1)), expected, rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(host(KERNELS["softmax"](device(x), axis=-1)), np.exp(expected), rtol=1e-4, atol=1e-7)


def test_inner_axis_and_strided_input():
    x = RNG.standard_normal((40, 3, 6)).astype(np.float32)
    np.testing.assert_allclose(host(KERNELS["softmax"](device(x), axis=0)), np.exp(ref_log_softmax(x, 0)),
                               rtol=1e-5, atol=1e-7)
    d = device(x)
    view = d.view((6, 3, 40), d.strides[::-1])  # x transposed, read through a contiguous copy
    np.testing.assert_allclose(host(KERNELS["log_softmax"](view, axis=2)), ref_log_softmax(x.T, 2), rtol=1e-5,
                               atol=1e-5)


def test_infinite_logits_keep_finite_rows_right():
    x = np.array([[0.0, -np.inf, 1.0], [-np.inf, 2.0, -np.inf]], np.float32)
    got = host(KERNELS["softmax"](device(x), axis=1))
    e = np.exp(np.array([0.0, 1.0]))
    np.testing.assert_allclose(got, [[e[0] / e.sum(), 0.0, e[1] / e.sum()], [0.0, 1.0, 0.0]], rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, BF16])
def test_gradients_of_softmax_and_log_softmax(dtype):
    y = np.exp(ref_log_softmax(RNG.standard_normal((4, 7, 3)), 1)).astype(np.float32)
    g = RNG.standard_normal((4, 7, 3)).astype(np.float32)
    log_y = np.log(y)
    tolerance = {"rtol": 1e-5, "atol": 1e-6} if dtype == np.float32 else {"rtol": 3e-2, "atol": 2e-2}
    yd, ld, gd = (device(a.astype(dtype)) for a in (y, log_y, g))
    y, log_y, g = (a.astype(dtype).astype(np.float64) for a in (y, log_y, g))
    got = host(KERNELS["softmax_grad"](yd, gd, axis=1)).astype(np.float64)
    np.testing.assert_allclose(got, y * (g - (g * y).sum(1, keepdims=True)), **tolerance)
    got = host(KERNELS["log_softmax_grad"](ld, gd, axis=1)).astype(np.float64)
    np.testing.assert_allclose(got, g - np.exp(log_y) * g.sum(1, keepdims=True), **tolerance)


def test_cross_entropy_hard_labels_along_an_inner_axis_with_ignore_index():
    x = RNG.standard_normal((3, 5, 4)).astype(np.float32)
    label = RNG.integers(0, 5, (3, 1, 4))
    label[0, 0, 1] = label[2, 0, 3] = -100
    loss, prob = KERNELS["softmax_with_cross_entropy"](device(x), device(label), axis=1)
    log_p = ref_log_softmax(x, 1)
    picked = -np.take_along_axis(log_p, np.where(label == -100, 0, label), axis=1)
    np.testing.assert_allclose(host(loss), np.where(label == -100, 0.0, picked), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(host(prob), np.exp(log_p), rtol=1e-5, atol=1e-7)
    g = RNG.standard_normal((3, 1, 4)).astype(np.float32)
    dx = host(KERNELS["softmax_with_cross_entropy_grad"](prob, device(label), device(g), ignore_index=-100, axis=1))
    onehot = (np.arange(5).reshape(1, 5, 1) == label) & (label != -100)
    np.testing.assert_allclose(dx, (np.exp(log_p) * (label != -100) - onehot) * g, rtol=1e-5, atol=1e-6)


def test_cross_entropy_soft_labels_and_probabilities():
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    soft = np.exp(ref_log_softmax(RNG.standard_normal((4, 6)), 1)).astype(np.float32)
    soft[:, 2] = 0.0  # zero target mass adds nothing
    loss, _ = KERNELS["softmax_with_cross_entropy"](device(x), device(soft), soft_label=True)
    np.testing.assert_allclose(host(loss), -(soft * ref_log_softmax(x, 1)).sum(1, keepdims=True), rtol=1e-5)
    probs = np.exp(ref_log_softmax(x, 1)).astype(np.float32)
    probs[1, 3] = 0.0  # log(0) where the hard label does not point
    loss, prob = KERNELS["softmax_with_cross_entropy"](device(probs), device(np.array([[0], [1], [2], [3]])),
                                                       use_softmax=False)
    np.testing.assert_allclose(host(loss)[:, 0], -np.log(probs[np.arange(4), [0, 1, 2, 3]]), rtol=1e-5)
    np.testing.assert_array_equal(host(prob), probs)


def test_an_out_of_range_label_gives_nan_not_a_wrong_loss():
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    loss, _ = KERNELS["softmax_with_cross_entropy"](device(x), device(np.array([[5], [1]])))
    got = host(loss)
    assert np.isnan(got[0, 0]) and np.isfinite(got[1, 0])
    assert np.isnan(host(KERNELS["nll_loss"](device(x), device(np.array([-1, 2]))))[0])


def test_nll_loss_over_spatial_dims_with_ignore_index():
    x = RNG.standard_normal((2, 4, 3, 5)).astype(np.float32)
    label = RNG.integers(0, 4, (2, 3, 5))
    label[1, 2, 0] = 1
    got = host(KERNELS["nll_loss"](device(x), device(label), ignore_index=1))
    picked = -np.take_along_axis(x, label[:, None], axis=1)[:, 0]
    np.testing.assert_array_equal(got, np.where(label == 1, 0.0, picked))


def test_empty_inputs():
    assert host(KERNELS["softmax"](device(np.zeros((0, 4), np.float32)), axis=1)).shape == (0, 4)
    assert host(KERNELS["nll_loss"](device(np.zeros((0, 4), np.float32)), device(np.zeros(0, np.int64)))).shape == (0,)
    loss, prob = KERNELS["softmax_with_cross_entropy"](device(np.zeros((0, 3), np.float32)),
                                                       device(np.zeros((0, 1), np.int64)))
    assert host(loss).shape == (0, 1) and host(prob).shape == (0, 3)


def test_refusals_name_the_op_and_argument():
    with pytest.raises(DTypeError, match="softmax: x must be a floating tensor, got int32"):
        KERNELS["softmax"](device(np.ones((2, 3), np.int32)), axis=1)
    with pytest.raises(DTypeError, match="softmax_with_cross_entropy: label must be an integer tensor"):
        KERNELS["softmax_with_cross_entropy"](device(np.ones((2, 3), np.float32)), device(np.ones((2, 1), np.float32)))
    with pytest.raises(ShapeError, match=r"nll_loss: label shape \[3\] must be \[2\]"):
        KERNELS["nll_loss"](device(np.ones((2, 3), np.float32)), device(np.zeros(3, np.int64)))
    with pytest.raises(ShapeError, match=r"softmax_grad: the gradient has shape \[2, 2\], expected \[2, 3\]"):
        KERNELS["softmax_grad"](device(np.ones((2, 3), np.float32)), device(np.ones((2, 2), np.float32)), axis=1)


def test_cross_entropy_trains_on_the_gpu(gpu):
    x = oar.to_tensor(RNG.standard_normal((4, 3)).astype(np.float32), stop_gradient=False)
    loss = F.cross_entropy(x, oar.to_tensor(np.array([0, 2, 1, 2])), reduction="sum")
    loss.backward()
    assert loss.place.backend == "gpu" and x.grad.place.backend == "gpu"
    expected = np.exp(ref_log_softmax(x.numpy(), 1))
    expected[np.arange(4), [0, 2, 1, 2]] -= 1.0
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-5, atol=1e-6)
