"""Op cases of the conv family: conv, conv_transpose and conv_weight_grad.

The references are naive loops over every output (or input) element, written from the
definitions: ``out[n, o, p] = sum_{c, k} x_pad[n, c, p * stride + k * dilation] * w[o, c, k]``
within a group, and the transposed convolution scatters each input element through the kernel.
"""

from __future__ import annotations

import numpy as np

import oar.nn.functional as F
from oar.nn.functional.conv import conv_op, conv_transpose_op, conv_weight_grad_op
from oar.ops import dispatch
from oar.testing import OpCase

_rng = np.random.default_rng(7)


def rand(*shape):
    return _rng.standard_normal(shape)


def _pairs(padding, nd):
    if isinstance(padding, int):
        return [padding] * (2 * nd)
    if len(padding) == nd:
        return [p for p in padding for _ in range(2)]
    return list(padding)


def ref_conv(x, w, stride=1, padding=0, dilation=1, groups=1):
    """Channel-first convolution; a negative ``after`` padding crops."""
    nd = x.ndim - 2
    stride = [stride] * nd if isinstance(stride, int) else stride
    dilation = [dilation] * nd if isinstance(dilation, int) else dilation
    pads = _pairs(padding, nd)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[2 * i], max(pads[2 * i + 1], 0)) for i in range(nd)])
    xp = xp[(slice(None), slice(None)) + tuple(slice(0, xp.shape[2 + i] + min(pads[2 * i + 1], 0)) for i in range(nd))]
    kernel = w.shape[2:]
    out = [(xp.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    c_group, o_group = x.shape[1] // groups, w.shape[0] // groups
    y = np.zeros((x.shape[0], w.shape[0], *out))
    for index in np.ndindex(*y.shape):
        n, o, pos = index[0], index[1], index[2:]
        first = (o // o_group) * c_group
        total = 0.0
        for c in range(c_group):
            for k in np.ndindex(*kernel):
                src = tuple(pos[i] * stride[i] + k[i] * dilation[i] for i in range(nd))
                total += xp[(n, first + c) + src] * w[(o, c) + k]
        y[index] = total
    return y


def ref_conv_transpose(x, w, stride=1, padding=0, output_padding=0, dilation=1, groups=1):
    """Scatter every input element through the kernel, then cut the padding away."""
    nd = x.ndim - 2
    stride = [stride] * nd if isinstance(stride, int) else stride
    dilation = [dilation] * nd if isinstance(dilation, int) else dilation
    output_padding = [output_padding] * nd if isinstance(output_padding, int) else output_padding
    pads = _pairs(padding, nd)
    kernel, c_group = w.shape[2:], x.shape[1] // groups
    o_group = w.shape[1]
    out = [(x.shape[2 + i] - 1) * stride[i] - pads[2 * i] - pads[2 * i + 1] + dilation[i] * (kernel[i] - 1) + 1
           + output_padding[i] for i in range(nd)]
    big = [pads[2 * i] + out[i] + (x.shape[2 + i] - 1) * stride[i] + dilation[i] * kernel[i] for i in range(nd)]
    canvas = np.zeros((x.shape[0], o_group * groups, *big))
    for index in np.ndindex(*x.shape):
        n, c, pos = index[0], index[1], index[2:]
        group = c // c_group
        for o in range(o_group):
            for k in np.ndindex(*kernel):
                dst = tuple(pos[i] * stride[i] + k[i] * dilation[i] for i in range(nd))
                canvas[(n, group * o_group + o) + dst] += x[index] * w[(c, o) + k]
    return canvas[(slice(None), slice(None)) + tuple(slice(pads[2 * i], pads[2 * i] + out[i]) for i in range(nd))]


def ref_conv_weight_grad(x, g, kernel, stride, padding, dilation, groups):
    """``dw[o, c, k] = sum_{n, p} g[n, o, p] * x_pad[n, c, p * stride + k * dilation]`` in a group."""
    nd = x.ndim - 2
    pads = _pairs(padding, nd)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[2 * i], max(pads[2 * i + 1], 0)) for i in range(nd)])
    c_group, o_group = x.shape[1] // groups, g.shape[1] // groups
    dw = np.zeros((g.shape[1], c_group, *kernel))
    for index in np.ndindex(*dw.shape):
        o, c, k = index[0], index[1], index[2:]
        first = (o // o_group) * c_group
        for n in range(x.shape[0]):
            for pos in np.ndindex(*g.shape[2:]):
                src = tuple(pos[i] * stride[i] + k[i] * dilation[i] for i in range(nd))
                dw[index] += g[(n, o) + pos] * xp[(n, first + c) + src]
    return dw


def _with_bias(y, b, nd):
    return y + b.reshape([-1] + [1] * nd)


def _nhwc(fn, nd):
    """A channel-first reference run on channel-last data."""
    def ref(x, *rest):
        y = fn(np.moveaxis(x, -1, 1), *rest)
        return np.moveaxis(y, 1, -1)
    return ref


def _op(op, **attrs):
    return lambda *tensors: dispatch(op, tensors, attrs)


CASES = [
    # conv through conv1d/2d/3d: strides, every padding form, dilation, groups, bias, layouts
    OpCase("conv", lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=[1, 2]),
           lambda x, w, b: _with_bias(ref_conv(x, w, 2, [1, 2]), b, 1),
           [rand(2, 2, 6), rand(3, 2, 3), rand(3)], id="conv1d_stride_asymmetric_padding_bias"),
    OpCase("conv", lambda x, w: F.conv1d(x, w, padding="same", dilation=2, groups=2),
           lambda x, w: ref_conv(x, w, 1, [1, 1], 1, 2),  # 'SAME' ignores the dilation (Paddle)
           [rand(1, 4, 5), rand(2, 2, 3)], id="conv1d_same_groups"),
    OpCase("conv", lambda x, w: F.conv1d(x, w, data_format="NLC", padding=1),
           _nhwc(lambda x, w: ref_conv(x, w, 1, 1), 1), [rand(2, 5, 3), rand(2, 3, 2)], id="conv1d_nlc"),
    OpCase("conv", lambda x, w, b: F.conv2d(x, w, b, stride=[2, 1], padding=[1, 0, 0, 1], dilation=[1, 2], groups=2),
           lambda x, w, b: _with_bias(ref_conv(x, w, [2, 1], [1, 0, 0, 1], [1, 2], 2), b, 2),
           [rand(1, 2, 5, 4), rand(4, 1, 2, 2), rand(4)], id="conv2d_groups_dilation_asymmetric"),
    OpCase("conv", lambda x, w: F.conv2d(x, w, padding=[[0, 0], [0, 0], [1, 0], [2, 1]]),
           lambda x, w: ref_conv(x, w, 1, [1, 0, 2, 1]), [rand(1, 2, 3, 4), rand(2, 2, 2, 3)],
           id="conv2d_padding_pairs"),
    OpCase("conv", lambda x, w: F.conv2d(x, w, stride=2, padding="SAME", data_format="NHWC"),
           _nhwc(lambda x, w: ref_conv(x, w, 2, [0, 0, 0, 1]), 2), [rand(1, 4, 4, 2), rand(2, 2, 2, 3)],
           id="conv2d_nhwc_same"),
    OpCase("conv", lambda x, w: F.conv2d(x, w, padding="valid", stride=[1, 2]),
           lambda x, w: ref_conv(x, w, [1, 2]), [rand(2, 1, 4, 5), rand(3, 1, 3, 2)], id="conv2d_valid"),
    OpCase("conv", lambda x, w: F.conv2d(x, w, padding=1), lambda x, w: ref_conv(x, w, 1, 1),
           [rand(1, 2, 3, 3), rand(2, 2, 2, 2)], dtypes=("float16", "bfloat16", "float32"), grad=False,
           id="conv2d_half_precision"),
    OpCase("conv", lambda x, w, b: F.conv3d(x, w, b, stride=2, padding=1),
           lambda x, w, b: _with_bias(ref_conv(x, w, 2, 1), b, 3),
           [rand(1, 1, 3, 3, 4), rand(2, 1, 2, 2, 2), rand(2)], id="conv3d_stride_padding_bias"),
    OpCase("conv", lambda x, w: F.conv3d(x, w, data_format="NDHWC", dilation=[1, 2, 1]),
           _nhwc(lambda x, w: ref_conv(x, w, 1, 0, [1, 2, 1]), 3), [rand(1, 2, 3, 3, 2), rand(2, 2, 2, 2, 1)],
           id="conv3d_ndhwc_dilation"),
    # what the gradient rules dispatch: a negative after-padding crops the input
    OpCase("conv", _op(conv_op, stride=[2], padding=[1, -2], dilation=[1], groups=1),
           lambda x, w: ref_conv(x, w, 2, [1, -2]), [rand(2, 2, 7), rand(3, 2, 2)], id="conv_op_cropping_padding"),

    # conv_transpose through conv1d/2d/3d_transpose
    OpCase("conv_transpose", lambda x, w: F.conv1d_transpose(x, w), ref_conv_transpose,
           [np.array([[[4., 0, 9, 7], [8., 0, 9, 2]]]), np.array([[[7., 0]], [[4., 2]]])], id="conv1d_transpose_paddle_example"),
    OpCase("conv_transpose", lambda x, w, b: F.conv1d_transpose(x, w, b, stride=2, padding=1, output_padding=1, groups=2),
           lambda x, w, b: _with_bias(ref_conv_transpose(x, w, 2, 1, 1, 1, 2), b, 1),
           [rand(2, 4, 3), rand(4, 2, 3), rand(4)], id="conv1d_transpose_groups_output_padding"),
    OpCase("conv_transpose", lambda x, w: F.conv1d_transpose(x, w, dilation=2, output_padding=1, data_format="NLC"),
           _nhwc(lambda x, w: ref_conv_transpose(x, w, 1, 0, 1, 2), 1), [rand(1, 4, 2), rand(2, 3, 2)],
           id="conv1d_transpose_nlc_output_padding_below_dilation"),
    OpCase("conv_transpose", lambda x, w, b: F.conv2d_transpose(x, w, b, stride=2, padding=1, output_size=[6, 5]),
           lambda x, w, b: _with_bias(ref_conv_transpose(x, w, 2, 1, [1, 0]), b, 2),
           [rand(1, 2, 3, 3), rand(2, 2, 3, 3), rand(2)], id="conv2d_transpose_output_size"),
    OpCase("conv_transpose", lambda x, w: F.conv2d_transpose(x, w, padding=[0, 1, 1, 0], dilation=2, groups=2,
                                                              data_format="NHWC"),
           _nhwc(lambda x, w: ref_conv_transpose(x, w, 1, [0, 1, 1, 0], 0, 2, 2), 2),
           [rand(1, 3, 3, 2), rand(2, 2, 2, 2)], id="conv2d_transpose_nhwc_groups_dilation"),
    OpCase("conv_transpose", lambda x, w: F.conv2d_transpose(x, w, stride=2, padding="SAME"),
           lambda x, w: ref_conv_transpose(x, w, 2, [1, 1, 1, 1]), [rand(1, 1, 3, 3), rand(1, 2, 3, 3)],
           id="conv2d_transpose_same"),
    OpCase("conv_transpose", lambda x, w: F.conv3d_transpose(x, w, stride=[2, 1, 1], padding=[1, 0, 0]),
           lambda x, w: ref_conv_transpose(x, w, [2, 1, 1], [1, 0, 0]), [rand(1, 2, 2, 2, 2), rand(2, 1, 3, 2, 2)],
           id="conv3d_transpose"),
    OpCase("conv_transpose", _op(conv_transpose_op, stride=[2], padding=[1, -1], output_padding=[0], dilation=[1],
                                 groups=1),
           lambda x, w: ref_conv_transpose(x, w, 2, [1, -1]), [rand(1, 2, 3), rand(2, 2, 3)],
           id="conv_transpose_op_negative_after_padding"),

    # conv_weight_grad: what conv's and conv_transpose's gradient rules dispatch
    OpCase("conv_weight_grad", _op(conv_weight_grad_op, kernel_size=[3], stride=[2], padding=[1, 0], dilation=[1],
                                   groups=2),
           lambda x, g: ref_conv_weight_grad(x, g, [3], [2], [1, 0], [1], 2), [rand(2, 2, 5), rand(2, 4, 2)],
           id="conv_weight_grad_1d_groups"),
    OpCase("conv_weight_grad", _op(conv_weight_grad_op, kernel_size=[2, 2], stride=[2, 1], padding=[0, 0, 1, 0],
                                   dilation=[1, 2], groups=1),
           lambda x, g: ref_conv_weight_grad(x, g, [2, 2], [2, 1], [0, 0, 1, 0], [1, 2], 1),
           [rand(1, 2, 4, 4), rand(1, 3, 2, 3)], id="conv_weight_grad_2d_dilation"),
    OpCase("conv_weight_grad", _op(conv_weight_grad_op, kernel_size=[2], stride=[1], padding=[0, -2], dilation=[1],
                                   groups=1),
           lambda x, g: ref_conv_weight_grad(x, g, [2], [1], [0, -2], [1], 1), [rand(1, 2, 6), rand(1, 2, 3)],
           id="conv_weight_grad_cropping_padding"),
]

# Zero-size batches (issue #24): an empty batch gives an empty output of the right shape, and
# the weight's gradient is zeros of its shape (the references' loops run zero times).
CASES += [
    OpCase("conv", lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1),
           lambda x, w, b: _with_bias(ref_conv(x, w, 2, 1), b, 1), [rand(0, 2, 6), rand(3, 2, 3), rand(3)],
           id="conv1d_empty"),
    OpCase("conv", lambda x, w, b: F.conv2d(x, w, b, padding=1), lambda x, w, b: _with_bias(ref_conv(x, w, 1, 1), b, 2),
           [rand(0, 2, 4, 4), rand(3, 2, 3, 3), rand(3)], id="conv2d_empty"),
    OpCase("conv", lambda x, w: F.conv2d(x, w, groups=2, data_format="NHWC"),
           _nhwc(lambda x, w: ref_conv(x, w, 1, 0, 1, 2), 2), [rand(0, 4, 4, 4), rand(4, 2, 3, 3)],
           id="conv2d_groups_nhwc_empty"),
    OpCase("conv", lambda x, w: F.conv3d(x, w, stride=2), lambda x, w: ref_conv(x, w, 2),
           [rand(0, 2, 3, 3, 3), rand(2, 2, 2, 2, 2)], id="conv3d_empty"),
    OpCase("conv_transpose", lambda x, w, b: F.conv1d_transpose(x, w, b, stride=2),
           lambda x, w, b: _with_bias(ref_conv_transpose(x, w, 2), b, 1), [rand(0, 2, 3), rand(2, 3, 3), rand(3)],
           id="conv1d_transpose_empty"),
    OpCase("conv_transpose", lambda x, w: F.conv2d_transpose(x, w, stride=2, padding=1, groups=2),
           lambda x, w: ref_conv_transpose(x, w, 2, 1, 0, 1, 2), [rand(0, 4, 3, 3), rand(4, 1, 3, 3)],
           id="conv2d_transpose_groups_empty"),
    OpCase("conv_transpose", lambda x, w: F.conv3d_transpose(x, w), ref_conv_transpose,
           [rand(0, 2, 2, 2, 2), rand(2, 3, 2, 2, 2)], id="conv3d_transpose_empty"),
    OpCase("conv_weight_grad", _op(conv_weight_grad_op, kernel_size=[2, 2], stride=[1, 1], padding=[0, 0, 0, 0],
                                   dilation=[1, 1], groups=1),
           lambda x, g: ref_conv_weight_grad(x, g, [2, 2], [1, 1], [0, 0, 0, 0], [1, 1], 1),
           [rand(0, 2, 3, 3), rand(0, 3, 2, 2)], id="conv_weight_grad_empty"),
]
