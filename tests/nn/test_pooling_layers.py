"""MaxPool1D/2D, AvgPool1D/2D and the adaptive pools: forward and gradients against numpy, Paddle's
defaults, second derivatives, and errors."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar.errors import ArgumentError, DTypeError, ShapeError
from oar.nn import (
    AdaptiveAvgPool1D,
    AdaptiveAvgPool2D,
    AdaptiveMaxPool1D,
    AdaptiveMaxPool2D,
    AvgPool1D,
    AvgPool2D,
    MaxPool1D,
    MaxPool2D,
)
from oar.testing import OpCase, check_grad, check_output

from .op_cases.pooling import ref_adaptive, ref_avg_pool, ref_max_pool

rng = np.random.default_rng(5)


def _last(fn):
    return lambda x: np.moveaxis(fn(np.moveaxis(x, -1, 1)), 1, -1)


LAYERS = [
    ("max_pool1d", "max_pool", lambda: MaxPool1D(3, stride=2, padding=1), (2, 2, 7),
     lambda x: ref_max_pool(x, [3], [2], [1, 1])[0]),
    ("max_pool1d_mask_ceil", "max_pool", lambda: MaxPool1D(2, return_mask=True, ceil_mode=True), (1, 3, 5),
     lambda x: ref_max_pool(x, [2], None, [0, 0], True)),
    ("max_pool2d", "max_pool", lambda: MaxPool2D(2), (1, 2, 4, 5), lambda x: ref_max_pool(x, [2, 2])[0]),
    ("max_pool2d_nhwc", "max_pool", lambda: MaxPool2D(3, stride=1, padding=1, data_format="NHWC"), (1, 3, 4, 2),
     _last(lambda x: ref_max_pool(x, [3, 3], [1, 1], [1, 1, 1, 1])[0])),
    ("avg_pool1d", "avg_pool", lambda: AvgPool1D(3, stride=2, padding=1, exclusive=False), (2, 2, 6),
     lambda x: ref_avg_pool(x, [3], [2], [1, 1], False, False)),
    ("avg_pool2d", "avg_pool", lambda: AvgPool2D(2, padding=1, ceil_mode=True), (1, 2, 5, 4),
     lambda x: ref_avg_pool(x, [2, 2], None, [1, 1, 1, 1], True)),
    ("avg_pool2d_divisor_nhwc", "avg_pool", lambda: AvgPool2D(2, divisor_override=2.5, data_format="NHWC"),
     (1, 4, 4, 2), _last(lambda x: ref_avg_pool(x, [2, 2]) * 4 / 2.5)),
    ("adaptive_avg_pool1d", "adaptive_avg_pool", lambda: AdaptiveAvgPool1D(3), (2, 2, 8),
     lambda x: ref_adaptive(x, [3], "avg")),
    ("adaptive_avg_pool2d", "adaptive_avg_pool", lambda: AdaptiveAvgPool2D([None, 2]), (1, 2, 3, 5),
     lambda x: ref_adaptive(x, [3, 2], "avg")),
    ("adaptive_avg_pool2d_nhwc", "adaptive_avg_pool", lambda: AdaptiveAvgPool2D(1, data_format="NHWC"), (2, 3, 3, 2),
     _last(lambda x: ref_adaptive(x, [1, 1], "avg"))),
    ("adaptive_max_pool1d", "adaptive_max_pool", lambda: AdaptiveMaxPool1D(3, return_mask=True), (2, 2, 7),
     lambda x: ref_adaptive(x, [3], "max")),
    ("adaptive_max_pool2d", "adaptive_max_pool", lambda: AdaptiveMaxPool2D([2, 3], return_mask=True), (1, 2, 5, 4),
     lambda x: ref_adaptive(x, [2, 3], "max")),
]


@pytest.mark.parametrize("op, make, shape, ref", [c[1:] for c in LAYERS], ids=[c[0] for c in LAYERS])
def test_layer_forward_and_gradient(op, make, shape, ref):
    case = OpCase(op, make(), ref, [rng.standard_normal(shape)])
    for dtype in ("float32", "float64"):
        check_output(case, dtype)
    check_grad(case)


def test_layers_have_no_parameters():
    for _, _, make, _, _ in LAYERS:
        assert make().parameters() == []


# -- Paddle's defaults --------------------------------------------------------------------------
def test_stride_defaults_to_kernel_size_and_floor_mode():
    x = oar.randn([1, 1, 7, 7])
    assert MaxPool2D(3)(x).shape == [1, 1, 2, 2]
    assert AvgPool2D(3)(x).shape == [1, 1, 2, 2]
    assert MaxPool2D(3, ceil_mode=True)(x).shape == [1, 1, 3, 3]
    assert MaxPool1D(2)(oar.randn([1, 1, 7])).shape == [1, 1, 3]


def test_avg_pool_is_exclusive_by_default():
    x = oar.ones([1, 1, 4])
    assert AvgPool1D(2, padding=1)(x).tolist() == [[[1.0, 1.0, 1.0]]]
    assert AvgPool1D(2, padding=1, exclusive=False)(x).tolist() == [[[0.5, 1.0, 0.5]]]
    assert F.avg_pool2d(oar.ones([1, 1, 2, 2]), 2, padding=1).tolist() == [[[[1.0, 1.0], [1.0, 1.0]]]]


def test_divisor_override_rescales_the_average_as_paddle_does():
    # Paddle: out = average * kh * kw / divisor_override; on a border window with exclusive=True
    # that is not sum / divisor_override
    x = oar.ones([1, 1, 2, 2])
    out = F.avg_pool2d(x, 2, padding=1, divisor_override=2)
    np.testing.assert_allclose(out.numpy(), np.full([1, 1, 2, 2], 2.0))


def test_attributes_and_repr():
    pool = MaxPool2D(2)
    assert (pool.ksize, pool.stride, pool.padding, pool.return_mask, pool.ceil_mode, pool.data_format) == (
        2, None, 0, False, False, "NCHW")
    assert repr(pool) == "MaxPool2D(kernel_size=2, stride=None, padding=0)"
    avg = AvgPool2D(3, 1, 1)
    assert (avg.ceil_mode, avg.exclusive, avg.divisor, avg.data_format) == (False, True, None, "NCHW")
    assert avg.extra_repr() == "kernel_size=3, stride=1, padding=1"
    assert AvgPool1D(2).extra_repr() == "kernel_size=2, stride=None, padding=0"
    assert MaxPool1D(2).return_mask is False
    assert AdaptiveAvgPool2D(3).extra_repr() == "output_size=3"
    assert AdaptiveAvgPool1D(3).extra_repr() == "output_size=3"
    assert AdaptiveMaxPool2D(3).extra_repr() == "output_size=3, return_mask=False"


def test_masks_are_int32_flat_indices_into_the_input_plane():
    x = oar.to_tensor(np.array([[[[1., 9, 2], [3, 4, 8], [7, 5, 6]]]]))
    out, mask = F.max_pool2d(x, 2, stride=1, return_mask=True)
    assert mask.dtype == oar.int32 and mask.tolist() == [[[[1, 1], [6, 5]]]]
    assert out.tolist() == [[[[9.0, 9.0], [7.0, 8.0]]]]
    out, mask = F.adaptive_max_pool2d(x, 1, return_mask=True)
    assert mask.tolist() == [[[[1]]]] and out.tolist() == [[[[9.0]]]]


def test_max_pool_gradient_goes_to_the_first_maximum_and_accumulates():
    x = oar.to_tensor(np.array([[[2.0, 5.0, 5.0, 1.0]]]), stop_gradient=False)
    F.max_pool1d(x, 2, stride=1).sum().backward()  # windows [2, 5], [5, 5], [5, 1]
    assert x.grad.tolist() == [[[0.0, 2.0, 1.0, 0.0]]]


def test_nan_propagates_through_max_pool():
    x = oar.to_tensor(np.array([[[1.0, np.nan, 3.0, 2.0]]]))
    out, mask = F.max_pool1d(x, 2, return_mask=True)
    assert np.isnan(out.numpy()[0, 0, 0]) and out.numpy()[0, 0, 1] == 3.0
    assert mask.tolist() == [[[1, 2]]]


def test_pooled_output_changed_in_place_still_differentiates():
    # max pooling's gradient reads only its mask, not the pooled output
    x = oar.to_tensor(rng.standard_normal((1, 1, 4, 4)), stop_gradient=False)
    y = F.max_pool2d(x, 2)
    y += 1.0
    y.sum().backward()
    assert x.grad.numpy().sum() == 4.0


@pytest.mark.parametrize("pool", [
    lambda x: F.max_pool2d(x, 3, stride=2, padding=1),
    lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, exclusive=False, ceil_mode=True),
    lambda x: F.adaptive_avg_pool2d(x, [2, 3]),
    lambda x: F.adaptive_max_pool2d(x, [3, 2]),
], ids=["max", "avg", "adaptive_avg", "adaptive_max"])
def test_gradient_of_the_gradient(pool):
    """d/dx of sum(dL/dx * v) for L = sum(pool(x)^3): each pooling gradient op's own rule,
    against central differences of the first gradient."""
    x_np = rng.standard_normal((1, 2, 4, 5))
    v = rng.standard_normal(x_np.shape)

    def first_gradient(x, create_graph):
        (dx,) = oar.grad((pool(x) ** 3).sum(), x, create_graph=create_graph)
        return dx

    x = oar.to_tensor(x_np, stop_gradient=False)
    (first_gradient(x, True) * oar.to_tensor(v)).sum().backward()
    numeric = np.zeros_like(x_np)
    for k in range(x_np.size):
        values = []
        for sign in (1, -1):
            shifted = x_np.copy()
            shifted.reshape(-1)[k] += sign * 1e-6
            dx = first_gradient(oar.to_tensor(shifted, stop_gradient=False), False)
            values.append(float((dx.numpy() * v).sum()))
        numeric.reshape(-1)[k] = (values[0] - values[1]) / 2e-6
    np.testing.assert_allclose(x.grad.numpy(), numeric, rtol=1e-5, atol=1e-7)


# -- errors -------------------------------------------------------------------------------------
def test_layer_argument_errors():
    with pytest.raises(ArgumentError, match="kernel_size must be >= 1"):
        MaxPool2D(0)
    with pytest.raises(ArgumentError, match="kernel_size must be an int or a list of 2 ints"):
        AvgPool2D([2, 2, 2])
    with pytest.raises(ArgumentError, match="'SAME', 'VALID'"):
        MaxPool1D(2, padding="full")
    with pytest.raises(ArgumentError, match="data_format"):
        AvgPool2D(2, data_format="NCL")
    with pytest.raises(ArgumentError, match="output_size"):
        AdaptiveAvgPool2D([1, 2, 3])
    with pytest.raises(ArgumentError, match="output_size must be >= 1"):
        AdaptiveMaxPool2D(0)


def test_functional_errors():
    x = oar.ones([1, 2, 4, 4])
    with pytest.raises(ArgumentError, match="max_pool2d: padding='VALID' needs ceil_mode=False"):
        F.max_pool2d(x, 2, padding="VALID", ceil_mode=True)
    with pytest.raises(ArgumentError, match="return_mask=True needs data_format 'NCHW'"):
        F.max_pool2d(x, 2, return_mask=True, data_format="NHWC")
    with pytest.raises(ArgumentError, match="divisor_override must be a non-zero"):
        F.avg_pool2d(x, 2, divisor_override=0)
    with pytest.raises(ShapeError, match=r"avg_pool1d: x must be a 3-d tensor in NCL layout, got shape \[1, 2, 4, 4\]"):
        F.avg_pool1d(x, 2)
    with pytest.raises(ShapeError, match="smaller than the kernel 5"):
        F.max_pool2d(x, 5)
    with pytest.raises(DTypeError, match="adaptive_avg_pool2d: x must be a floating tensor"):
        F.adaptive_avg_pool2d(oar.ones([1, 1, 2, 2], dtype="int32"), 1)
    with pytest.raises(ArgumentError, match="output_size must be an int or a list of 2 ints"):
        F.adaptive_max_pool2d(x, [1, 2, 3])
    with pytest.raises(ArgumentError, match="stride must be >= 1"):
        F.avg_pool2d(x, 2, stride=[1, 0])


def test_docstring_examples_run():
    from oar.nn.functional import pooling as functional_pooling
    from oar.nn.layer import pooling as layer_pooling

    for module in (functional_pooling, layer_pooling):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__
