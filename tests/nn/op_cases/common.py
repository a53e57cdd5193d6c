"""Op cases of the common family: embedding and interpolate (with their gradient ops, checked
against independent numpy references), and the functions composed from core ops (linear,
bilinear, pad, cosine similarity, label smoothing)."""

from __future__ import annotations

import itertools
import math

import numpy as np

import oar.nn.functional as F
from oar.nn.functional import common as C
from oar.ops import dispatch
from oar.testing import OpCase

_rng = np.random.default_rng(606)


def rand(*shape, low=-1.0, high=1.0) -> np.ndarray:
    return _rng.uniform(low, high, size=shape)


# -- embedding ------------------------------------------------------------------------------------
IDS = np.array([[0, 3, 1], [3, 3, 2]])


def _embedding_ref(w, ids, padding_idx=None):
    out = w[ids]
    if padding_idx is not None:
        out[ids == padding_idx] = 0.0
    return out


def _embedding_grad_ref(g, ids, num, padding_idx):
    out = np.zeros((num, g.shape[-1]))
    for index in np.ndindex(*ids.shape):
        out[ids[index]] += g[index]
    if padding_idx >= 0:
        out[padding_idx] = 0.0
    return out


# -- interpolate: direct per-pixel references with Paddle's source-coordinate rules ------------------
def _ratio(n_in, n_out, align_corners, scale=None):
    if align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return 1.0 / scale if scale else n_in / n_out


def _linear_source(k, n_in, ratio, align_corners, align_mode):
    """(low index, high index, weight of high) of output position k."""
    if align_mode == 0 and not align_corners:
        src = max(ratio * (k + 0.5) - 0.5, 0.0)
    else:
        src = ratio * k
    low = min(int(math.floor(src)), n_in - 1)
    return low, min(low + 1, n_in - 1), src - low


def _bilinear_ref(x, out_hw, align_corners=False, align_mode=0, scales=(None, None)):
    n, c, h, w = x.shape
    oh, ow = out_hw
    rh, rw = _ratio(h, oh, align_corners, scales[0]), _ratio(w, ow, align_corners, scales[1])
    out = np.zeros((n, c, oh, ow))
    for i, j in itertools.product(range(oh), range(ow)):
        y0, y1, ly = _linear_source(i, h, rh, align_corners, align_mode)
        x0, x1, lx = _linear_source(j, w, rw, align_corners, align_mode)
        out[:, :, i, j] = ((1 - ly) * (1 - lx) * x[:, :, y0, x0] + (1 - ly) * lx * x[:, :, y0, x1]
                           + ly * (1 - lx) * x[:, :, y1, x0] + ly * lx * x[:, :, y1, x1])
    return out


def _linear_ref(x, n_out, align_corners=False, align_mode=0):
    n_in = x.shape[-1]
    ratio = _ratio(n_in, n_out, align_corners)
    out = np.zeros(x.shape[:-1] + (n_out,))
    for k in range(n_out):
        lo, hi, lam = _linear_source(k, n_in, ratio, align_corners, align_mode)
        out[..., k] = (1 - lam) * x[..., lo] + lam * x[..., hi]
    return out


def _along(x, axis, n_out):
    """Linear resampling (half-pixel) of one axis: trilinear is this along each spatial axis."""
    return np.moveaxis(_linear_ref(np.moveaxis(x, axis, -1), n_out), -1, axis)


def _nearest_ref(x, out_sizes, scales=None):
    axes = range(2, x.ndim)
    index = []
    for a, n_out, s in zip(axes, out_sizes, scales or [None] * len(out_sizes)):
        ratio = _ratio(x.shape[a], n_out, False, s)
        index.append([min(int(ratio * k), x.shape[a] - 1) for k in range(n_out)])
    return x[np.ix_(range(x.shape[0]), range(x.shape[1]), *index)]


def _cubic(t, a=-0.75):
    t = abs(t)
    if t <= 1:
        return (a + 2) * t ** 3 - (a + 3) * t ** 2 + 1
    if t < 2:
        return a * t ** 3 - 5 * a * t ** 2 + 8 * a * t - 4 * a
    return 0.0


def _bicubic_ref(x, out_hw, align_corners=False):
    n, c, h, w = x.shape
    oh, ow = out_hw
    rh, rw = _ratio(h, oh, align_corners), _ratio(w, ow, align_corners)
    out = np.zeros((n, c, oh, ow))
    for i, j in itertools.product(range(oh), range(ow)):
        sy = rh * i if align_corners else rh * (i + 0.5) - 0.5
        sx = rw * j if align_corners else rw * (j + 0.5) - 0.5
        fy, fx = math.floor(sy), math.floor(sx)
        for dy, dx in itertools.product(range(-1, 3), range(-1, 3)):
            weight = _cubic(sy - (fy + dy)) * _cubic(sx - (fx + dx))
            yy, xx = min(max(fy + dy, 0), h - 1), min(max(fx + dx, 0), w - 1)
            out[:, :, i, j] += weight * x[:, :, yy, xx]
    return out


def _area_ref(x, out_hw):
    n, c, h, w = x.shape
    out = np.zeros((n, c) + tuple(out_hw))
    for i, j in itertools.product(range(out_hw[0]), range(out_hw[1])):
        h0, h1 = (i * h) // out_hw[0], -(-((i + 1) * h) // out_hw[0])
        w0, w1 = (j * w) // out_hw[1], -(-((j + 1) * w) // out_hw[1])
        out[:, :, i, j] = x[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
    return out


def _interp_attrs(mode, in_sizes, out_sizes, axes=(2, 3), align_corners=False, align_mode=0, scales=None):
    return {"axes": list(axes), "in_sizes": list(in_sizes), "out_sizes": list(out_sizes), "mode": mode,
            "scales": list(scales or [None] * len(axes)), "align_corners": align_corners, "align_mode": align_mode}


def _transpose_ref(forward, in_shape):
    """The transposed map of the linear ``forward``, built column by column from unit inputs."""
    size = int(np.prod(in_shape))
    columns = [forward(np.eye(size)[i].reshape(in_shape)).ravel() for i in range(size)]
    matrix = np.stack(columns, axis=1)  # out_size x in_size

    def ref(g):
        return (matrix.T @ g.ravel()).reshape(in_shape)

    return ref


X4 = rand(1, 2, 3, 3)
_BILINEAR_ATTRS = _interp_attrs("bilinear", (3, 3), (5, 4))
_BICUBIC_ATTRS = _interp_attrs("bicubic", (3, 4), (5, 3), align_corners=True)


def _pad_ref(x, pairs, mode="constant", value=0.0):
    if mode == "constant":
        return np.pad(x, pairs, mode="constant", constant_values=value)
    return np.pad(x, pairs, mode={"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode])


CASES = [
    # -- embedding ----------------------------------------------------------------------------------
    OpCase("embedding", lambda w, ids: F.embedding(ids, w), _embedding_ref, [rand(4, 3), IDS], grad_inputs=[0],
           dtypes=("float32", "float64", "float16", "bfloat16")),
    OpCase("embedding", lambda w, ids: F.embedding(ids, w, padding_idx=3), lambda w, ids: _embedding_ref(w, ids, 3),
           [rand(4, 3), IDS], grad_inputs=[0], id="embedding_padding"),
    OpCase("embedding", lambda w, ids: F.embedding(ids, w, padding_idx=-4), lambda w, ids: _embedding_ref(w, ids, 0),
           [rand(4, 2), IDS.astype(np.int32)], grad_inputs=[0], id="embedding_negative_padding_int32"),
    OpCase("embedding_grad", lambda g, ids: dispatch(C.embedding_grad_op, (g, ids), {"num_embeddings": 5, "padding_idx": 1}),
           lambda g, ids: _embedding_grad_ref(g, ids, 5, 1), [rand(2, 3, 2), np.array([[1, 4, 0], [4, 2, 4]])],
           grad_inputs=[0]),
    OpCase("embedding_grad", lambda g, ids: dispatch(C.embedding_grad_op, (g, ids), {"num_embeddings": 3, "padding_idx": -1}),
           lambda g, ids: _embedding_grad_ref(g, ids, 3, -1), [rand(0, 2), np.zeros([0], np.int64)], grad=False,
           id="embedding_grad_empty"),
    # -- linear_grad: the eager backward of linear in one op ------------------------------------------
    OpCase("linear_grad", lambda g, x, w: dispatch(C.linear_grad_op, (g, x, w), {"x_grad": True}),
           lambda g, x, w: (g @ w.T, x.reshape(-1, 3).T @ g.reshape(-1, 4), g.reshape(-1, 4).sum(0)),
           [rand(2, 5, 4), rand(2, 5, 3), rand(3, 4)], grad=False),
    OpCase("linear_grad", lambda g, x, w: dispatch(C.linear_grad_op, (g, x, w), {"x_grad": False}),
           lambda g, x, w: (x.T @ g, g.sum(0)), [rand(2, 4), rand(2, 3), rand(3, 4)], grad=False,
           id="linear_grad_no_x"),
    # -- interpolate ---------------------------------------------------------------------------------
    OpCase("interpolate", lambda x: F.interpolate(x, size=[5, 4], mode="bilinear"), lambda x: _bilinear_ref(x, (5, 4)),
           [X4], dtypes=("float32", "float64", "float16")),
    OpCase("interpolate", lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True),
           lambda x: _bilinear_ref(x, (6, 6), align_corners=True), [X4], id="bilinear_align_corners"),
    OpCase("interpolate", lambda x: F.interpolate(x, size=[2, 5], mode="bilinear", align_mode=1),
           lambda x: _bilinear_ref(x, (2, 5), align_mode=1), [X4], id="bilinear_align_mode1"),
    OpCase("interpolate", lambda x: F.interpolate(x, scale_factor=[1.7, 0.8], mode="bilinear"),
           lambda x: _bilinear_ref(x, (5, 2), scales=(1.7, 0.8)), [rand(1, 1, 3, 3)], id="bilinear_fractional_scale"),
    OpCase("interpolate", lambda x: F.interpolate(x, scale_factor=2), lambda x: _nearest_ref(x, (6, 6)), [X4],
           id="nearest_scale"),
    OpCase("interpolate", lambda x: F.interpolate(x, size=[2, 5]), lambda x: _nearest_ref(x, (2, 5)), [X4],
           id="nearest_size"),
    OpCase("interpolate", lambda x: F.interpolate(x, scale_factor=1.5, data_format="NHWC"),
           lambda x: np.moveaxis(_nearest_ref(np.moveaxis(x, -1, 1), (4, 4), (1.5, 1.5)), 1, -1), [rand(1, 3, 3, 2)],
           id="nearest_nhwc"),
    OpCase("interpolate", lambda x: F.interpolate(x, size=[5, 3], mode="bicubic", align_corners=True),
           lambda x: _bicubic_ref(x, (5, 3), align_corners=True), [rand(1, 1, 3, 4)], id="bicubic_align_corners"),
    OpCase("interpolate", lambda x: F.interpolate(x, size=[4, 5], mode="bicubic"), lambda x: _bicubic_ref(x, (4, 5)),
           [rand(1, 2, 3, 3)], id="bicubic"),
    OpCase("interpolate", lambda x: F.interpolate(x, size=[2, 3], mode="area"), lambda x: _area_ref(x, (2, 3)),
           [rand(1, 2, 3, 4)], id="area"),
    OpCase("interpolate", lambda x: F.interpolate(x, size=7, mode="linear"), lambda x: _linear_ref(x, 7),
           [rand(2, 2, 4)], id="linear"),
    OpCase("interpolate", lambda x: F.interpolate(x, size=3, mode="linear", align_corners=True),
           lambda x: _linear_ref(x, 3, align_corners=True), [rand(1, 2, 5)], id="linear_down_align_corners"),
    OpCase("interpolate", lambda x: F.interpolate(x, size=[3, 4, 2], mode="trilinear"),
           lambda x: _along(_along(_along(x, 2, 3), 3, 4), 4, 2), [rand(1, 1, 2, 2, 3)], id="trilinear"),
    OpCase("interpolate_grad", lambda g: dispatch(C.interpolate_grad_op, (g,), _BILINEAR_ATTRS),
           _transpose_ref(lambda x: _bilinear_ref(x, (5, 4)), (1, 1, 3, 3)), [rand(1, 1, 5, 4)]),
    OpCase("interpolate_grad", lambda g: dispatch(C.interpolate_grad_op, (g,), _BICUBIC_ATTRS),
           _transpose_ref(lambda x: _bicubic_ref(x, (5, 3), align_corners=True), (1, 1, 3, 4)), [rand(1, 1, 5, 3)],
           id="interpolate_grad_bicubic"),
    OpCase("interpolate_grad",
           lambda g: dispatch(C.interpolate_grad_op, (g,), _interp_attrs("nearest", (5, 4), (2, 3), scales=[0.5, 0.8])),
           _transpose_ref(lambda x: _nearest_ref(x, (2, 3), (0.5, 0.8)), (1, 1, 5, 4)), [rand(1, 1, 2, 3)],
           id="interpolate_grad_nearest_down"),
    OpCase("interpolate_grad",
           lambda g: dispatch(C.interpolate_grad_op, (g,), _interp_attrs("area", (3, 4), (2, 3))),
           _transpose_ref(lambda x: _area_ref(x, (2, 3)), (1, 1, 3, 4)), [rand(1, 1, 2, 3)], id="interpolate_grad_area"),
    # -- compositions of core ops ------------------------------------------------------------------
    OpCase("linear", F.linear, lambda x, w, b: x @ w + b, [rand(3, 4), rand(4, 2), rand(2)],
           dtypes=("float32", "float64", "float16", "bfloat16")),
    OpCase("linear", F.linear, lambda x, w, b: x @ w + b, [rand(2, 3, 4), rand(4, 2), rand(2)], id="linear_3d"),
    OpCase("matmul", F.linear, lambda x, w, b: x @ w + b, [rand(3, 4), rand(4, 2), rand(1, 2)], id="linear_2d_bias"),
    OpCase("matmul", lambda x, w: F.linear(x, w), lambda x, w: x @ w, [rand(3, 4), rand(4, 2)], id="linear_no_bias"),
    OpCase("matmul", F.bilinear, lambda a, b, w, bias: np.einsum("ni,oij,nj->no", a, w, b) + bias,
           [rand(3, 2), rand(3, 3), rand(2, 2, 3), rand(1, 2)], id="bilinear"),
    OpCase("pad", lambda x: F.pad(x, [1, 2, 0, 1]), lambda x: _pad_ref(x, [(0, 0), (0, 0), (0, 1), (1, 2)]),
           [rand(1, 2, 2, 3)], id="pad_nchw_spatial"),
    OpCase("pad", lambda x: F.pad(x, [1, 0, 2, 1], mode="reflect", data_format="NHWC"),
           lambda x: _pad_ref(x, [(0, 0), (2, 1), (1, 0), (0, 0)], "reflect"), [rand(1, 3, 3, 2)], id="pad_reflect_nhwc"),
    OpCase("pad", lambda x: F.pad(x, [2, 1], mode="replicate"), lambda x: _pad_ref(x, [(0, 0), (0, 0), (2, 1)], "replicate"),
           [rand(2, 2, 3)], id="pad_replicate_ncl"),
    OpCase("pad", lambda x: F.pad(x, [1, 1, 1, 0, 0, 1], mode="circular"),
           lambda x: _pad_ref(x, [(0, 0), (0, 0), (0, 1), (1, 0), (1, 1)], "circular"), [rand(1, 1, 2, 2, 3)],
           id="pad_circular_ncdhw"),
    OpCase("pad", lambda x: F.pad(x, [1, 0, 0, 2], value=3.0), lambda x: _pad_ref(x, [(1, 0), (0, 2)], value=3.0),
           [rand(2, 3)], id="pad_all_axes_from_left"),
    OpCase("pad", lambda x: F.pad(x, [1, 0, 0, 2], pad_from_left_axis=False),
           lambda x: _pad_ref(x, [(0, 2), (1, 0)]), [rand(2, 3)], id="pad_all_axes_from_right"),
    OpCase("pad", lambda x: F.pad(x, [1, 2, 3]), lambda x: _pad_ref(x, [(0, 0), (3, 0), (1, 2)]), [rand(2, 2, 2)],
           id="pad_odd_length_from_last"),
    OpCase("pad", lambda x: F.zeropad2d(x, [0, 1, 1, 0]), lambda x: _pad_ref(x, [(0, 0), (0, 0), (1, 0), (0, 1)]),
           [rand(1, 1, 2, 2)], id="zeropad2d"),
    OpCase("sqrt", F.cosine_similarity,
           lambda a, b: (a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1)), [rand(3, 4), rand(3, 4)],
           id="cosine_similarity"),
    OpCase("multiply", lambda x: F.label_smooth(x, epsilon=0.2), lambda x: 0.8 * x + 0.2 / 4, [rand(2, 4)],
           id="label_smooth"),
]

# Zero-size batches (issue #24): an empty batch gives an empty output, and zero gradients for the
# weights.
CASES += [
    OpCase("linear", F.linear, lambda x, w, b: x @ w + b, [rand(0, 4), rand(4, 2), rand(2)], id="linear_empty"),
    OpCase("embedding", lambda w, ids: F.embedding(ids, w), _embedding_ref, [rand(4, 3), np.zeros((0, 2), np.int64)],
           grad_inputs=[0], id="embedding_empty"),
]
