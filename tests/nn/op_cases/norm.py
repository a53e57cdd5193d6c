"""Op cases of the norm family: batch and layer normalisation (forward ops, their backward ops
checked against the textbook backward formulas, and the statistics outputs), and the norms
composed on top of them."""

from __future__ import annotations

import numpy as np

import oar
import oar.nn.functional as F
from oar.nn.functional import norm as N
from oar.ops import dispatch
from oar.testing import OpCase

_rng = np.random.default_rng(505)
EPS = 1e-5


def rand(*shape, low=-1.0, high=1.0) -> np.ndarray:
    return _rng.uniform(low, high, size=shape)


def positive(*shape) -> np.ndarray:
    return _rng.uniform(0.5, 1.5, size=shape)


def _normalized(x, axes, eps=EPS):
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps), mean, var


def _textbook_backward(x, w, g, axes, eps=EPS):
    """dx of y = w * (x - mean) / sqrt(var + eps) (+ b) by the chain rule through mean and var."""
    n = np.prod([x.shape[a] for a in axes])
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    dxhat = g * w
    dvar = (dxhat * (x - mean) * -0.5 * (var + eps) ** -1.5).sum(axis=axes, keepdims=True)
    dmean = (-dxhat / np.sqrt(var + eps)).sum(axis=axes, keepdims=True) + dvar * (-2 * (x - mean)).mean(
        axis=axes, keepdims=True)
    return dxhat / np.sqrt(var + eps) + dvar * 2 * (x - mean) / n + dmean / n


# -- layer_norm ---------------------------------------------------------------------------------
def _layer_norm_ref(x, w, b, k=1):
    axes = tuple(range(x.ndim - k, x.ndim))
    xh, _, _ = _normalized(x, axes)
    shape = x.shape[x.ndim - k:]
    return xh * w.reshape(shape) + b.reshape(shape)


def _layer_norm_all_ref(x, w, b):
    xh, mean, var = _normalized(x, (2,))
    return xh * w + b, mean.reshape(-1), var.reshape(-1)


def _layer_norm_all(x, w, b):
    return dispatch(N.layer_norm_op, (x, w, b), {"begin_norm_axis": 2, "epsilon": EPS})


LN_X = rand(2, 3, 4)
LN_G = rand(2, 3, 4)
LN_W = positive(4)
_LN_MEAN = LN_X.mean(axis=2).reshape(-1)
_LN_VAR = LN_X.var(axis=2).reshape(-1)


def _layer_norm_grad(x, w, m, v, g):
    return dispatch(N.layer_norm_grad_op, (x, w, m, v, g), {"begin_norm_axis": 2, "epsilon": EPS})


def _layer_norm_grad_ref(x, w, m, v, g):
    xh, _, _ = _normalized(x, (2,))
    dx = _textbook_backward(x, w, g, (2,))
    return dx, (g * xh).sum(axis=(0, 1)), g.sum(axis=(0, 1))


# -- batch_norm ---------------------------------------------------------------------------------
def _bn_ref(x, w, b, axis=1):
    axes = tuple(a for a in range(x.ndim) if a != axis)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    xh, _, _ = _normalized(x, axes)
    return xh * w.reshape(shape) + b.reshape(shape)


def _bn_train(data_format="NCHW"):
    def fn(x, w, b):
        c = x.shape[1] if data_format[1] == "C" else x.shape[-1]
        return F.batch_norm(x, oar.zeros([c], dtype=x.dtype), oar.ones([c], dtype=x.dtype), w, b, training=True,
                            data_format=data_format)

    return fn


def _bn_all(x, w, b):
    return dispatch(N.batch_norm_op, (x, w, b), {"channel_axis": 1, "epsilon": EPS})


def _bn_all_ref(x, w, b):
    xh, mean, var = _normalized(x, (0, 2))
    return xh * w.reshape(1, -1, 1) + b.reshape(1, -1, 1), mean.reshape(-1), var.reshape(-1)


BN_X = rand(3, 2, 2, 2) * 2 + 0.5
BN_G = rand(3, 2, 2, 2)
BN_W = positive(2)


def _bn_grad(x, w, m, v, g):
    return dispatch(N.batch_norm_grad_op, (x, w, m, v, g), {"channel_axis": 1, "epsilon": EPS})


def _bn_grad_ref(x, w, m, v, g):
    axes = (0, 2, 3)
    xh, _, _ = _normalized(x, axes)
    dx = _textbook_backward(x, w.reshape(1, -1, 1, 1), g, axes)
    return dx, (g * xh).sum(axis=axes), g.sum(axis=axes)


def _bn_infer(x, w, b, m, v):
    return F.batch_norm(x, m, v, w, b, training=False)


def _bn_infer_ref(x, w, b, m, v):
    s = (1, -1, 1)
    return (x - m.reshape(s)) / np.sqrt(v.reshape(s) + EPS) * w.reshape(s) + b.reshape(s)


# -- group, instance and rms norm ------------------------------------------------------------------
def _group_norm_ref(x, groups, w, b):
    n, c = x.shape[:2]
    xh, _, _ = _normalized(x.reshape(n, groups, -1), (2,))
    shape = (1, c) + (1,) * (x.ndim - 2)
    return xh.reshape(x.shape) * w.reshape(shape) + b.reshape(shape)


def _rms_ref(x, w, k=1):
    axes = tuple(range(x.ndim - k, x.ndim))
    return x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + EPS) * w.reshape(x.shape[x.ndim - k:])


CASES = [
    OpCase("layer_norm", lambda x, w, b: F.layer_norm(x, 4, w, b), _layer_norm_ref, [LN_X, LN_W, rand(4)],
           dtypes=("float32", "float64", "float16", "bfloat16")),
    OpCase("layer_norm", lambda x, w, b: F.layer_norm(x, [3, 4], w, b), lambda x, w, b: _layer_norm_ref(x, w, b, 2),
           [rand(2, 3, 4), positive(12), rand(12)], id="layer_norm_2d_shape"),
    OpCase("layer_norm", lambda x: F.layer_norm(x, [2, 3]), lambda x: _normalized(x, (1, 2))[0], [rand(3, 2, 3) * 5],
           id="layer_norm_no_affine"),
    OpCase("layer_norm", _layer_norm_all, _layer_norm_all_ref, [LN_X, LN_W, rand(4)], id="layer_norm_with_stats"),
    OpCase("layer_norm_grad", _layer_norm_grad, _layer_norm_grad_ref,
           [LN_X, LN_W, _LN_MEAN, _LN_VAR, LN_G], rtol=1e-4, atol=1e-5),
    OpCase("batch_norm", _bn_train(), _bn_ref, [BN_X, BN_W, rand(2)], dtypes=("float32", "float64", "float16")),
    OpCase("batch_norm", _bn_train("NHWC"), lambda x, w, b: _bn_ref(x, w, b, 3), [rand(2, 2, 2, 3), positive(3), rand(3)],
           id="batch_norm_nhwc"),
    OpCase("batch_norm", _bn_train("NC"), _bn_ref, [rand(5, 3), positive(3), rand(3)], id="batch_norm_2d"),
    OpCase("batch_norm", _bn_all, _bn_all_ref, [rand(3, 2, 4), BN_W, rand(2)], id="batch_norm_with_stats"),
    OpCase("batch_norm_grad", _bn_grad, _bn_grad_ref,
           [BN_X, BN_W, BN_X.mean(axis=(0, 2, 3)), BN_X.var(axis=(0, 2, 3)), BN_G], rtol=1e-4, atol=1e-5),
    OpCase("batch_norm_infer", _bn_infer, _bn_infer_ref, [rand(2, 3, 4), positive(3), rand(3), rand(3), positive(3)],
           dtypes=("float32", "float64", "float16")),
    OpCase("group_norm", lambda x, w, b: F.group_norm(x, 2, weight=w, bias=b), lambda x, w, b: _group_norm_ref(x, 2, w, b),
           [rand(2, 4, 2, 2), positive(4), rand(4)], id="group_norm"),
    OpCase("group_norm", lambda x, w, b: F.group_norm(x, 3, weight=w, bias=b, data_format="NHWC"),
           lambda x, w, b: np.moveaxis(_group_norm_ref(np.moveaxis(x, -1, 1), 3, w, b), 1, -1),
           [rand(2, 2, 2, 3), positive(3), rand(3)], id="group_norm_nhwc"),
    OpCase("layer_norm", lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
           lambda x, w, b: _group_norm_ref(x, 3, w, b), [rand(2, 3, 2, 3), positive(3), rand(3)], id="instance_norm"),
    OpCase("layer_norm", F.instance_norm, lambda x: _normalized(x, (2,))[0], [rand(2, 3, 5)], id="instance_norm_1d"),
    OpCase("rsqrt", lambda x, w: F.rms_norm(x, 4, w), _rms_ref, [rand(3, 4), positive(4)], id="rms_norm"),
    OpCase("rsqrt", lambda x, w: F.rms_norm(x, [2, 3], w), lambda x, w: _rms_ref(x, w, 2), [rand(2, 2, 3), positive(6)],
           id="rms_norm_2d_shape"),
    OpCase("p_norm", F.normalize, lambda x: x / np.maximum(np.sqrt((x * x).sum(axis=1, keepdims=True)), 1e-12),
           [rand(3, 4)], id="normalize"),
    OpCase("p_norm", lambda x: F.normalize(x, p=1, axis=-1),
           lambda x: x / np.maximum(np.abs(x).sum(axis=-1, keepdims=True), 1e-12), [rand(3, 4) + 1.5], id="normalize_l1"),
]


# -- group_norm and group_norm_grad, called directly: the statistics, and the backward op's own gradient
def _group_norm_all(x, w, b, groups=2):
    from oar.nn.functional.norm import group_norm_op

    return dispatch(group_norm_op, (x, w, b), {"num_groups": groups, "epsilon": EPS})


def _group_norm_all_ref(x, w, b, groups=2):
    n, c = x.shape[:2]
    xh, mean, var = _normalized(x.reshape(n, groups, -1), (2,))
    shape = (1, c) + (1,) * (x.ndim - 2)
    return xh.reshape(x.shape) * w.reshape(shape) + b.reshape(shape), mean.reshape(n, groups), var.reshape(n, groups)


def _group_norm_grad(x, w, m, v, g):
    from oar.nn.functional.norm import group_norm_grad_op

    return dispatch(group_norm_grad_op, (x, w, m, v, g), {"num_groups": 2, "epsilon": EPS})


def _group_norm_grad_ref(x, w, m, v, g):
    n, c = x.shape[:2]
    shape = (1, c) + (1,) * (x.ndim - 2)
    wx = np.broadcast_to(w.reshape(shape), x.shape).reshape(n, 2, -1)
    dx = _textbook_backward(x.reshape(n, 2, -1), wx, g.reshape(n, 2, -1), (2,)).reshape(x.shape)
    xh = _normalized(x.reshape(n, 2, -1), (2,))[0].reshape(x.shape)
    spatial = (0,) + tuple(range(2, x.ndim))
    return dx, (g * xh).sum(axis=spatial), g.sum(axis=spatial)


GN_X = rand(3, 4, 2, 3)
CASES += [
    OpCase("group_norm", _group_norm_all, _group_norm_all_ref, [GN_X, positive(4), rand(4)], id="group_norm_with_stats"),
    OpCase("group_norm", lambda x, w, b: _group_norm_all(x, w, b, 3), lambda x, w, b: _group_norm_all_ref(x, w, b, 3),
           [rand(2, 6, 5), positive(6), rand(6)], id="group_norm_1d_three_groups"),
    OpCase("group_norm", lambda x: F.group_norm(x, 1), lambda x: _normalized(x, (1, 2, 3))[0], [rand(2, 3, 2, 2)],
           id="group_norm_one_group_no_affine"),
    OpCase("group_norm_grad", _group_norm_grad, _group_norm_grad_ref,
           [GN_X, positive(4), GN_X.reshape(3, 2, -1).mean(axis=2), GN_X.reshape(3, 2, -1).var(axis=2), rand(3, 4, 2, 3)],
           rtol=1e-4, atol=1e-5),
]


def _empty_like(x, *_):
    return np.zeros_like(x)


# Zero-size batches (issue #24): empty outputs, and the affine parameters' gradients are zeros
# of their shape (sums over no sample), in training (batch statistics) and in evaluation.
CASES += [
    OpCase("batch_norm", _bn_train(), _empty_like, [rand(0, 2, 3, 3), positive(2), rand(2)], id="batch_norm_empty"),
    OpCase("batch_norm", _bn_train("NC"), _empty_like, [rand(0, 3), positive(3), rand(3)], id="batch_norm_2d_empty"),
    OpCase("batch_norm_infer", _bn_infer, _bn_infer_ref, [rand(0, 3, 4), positive(3), rand(3), rand(3), positive(3)],
           id="batch_norm_infer_empty"),
    OpCase("layer_norm", lambda x, w, b: F.layer_norm(x, 4, w, b), _layer_norm_ref, [rand(0, 4), positive(4), rand(4)],
           id="layer_norm_empty"),
    OpCase("group_norm", lambda x, w, b: F.group_norm(x, 2, weight=w, bias=b), _empty_like,
           [rand(0, 4, 2, 2), positive(4), rand(4)], id="group_norm_empty"),
    OpCase("layer_norm", lambda x, w, b: F.instance_norm(x, weight=w, bias=b), _empty_like,
           [rand(0, 3, 2, 3), positive(3), rand(3)], id="instance_norm_empty"),
]
