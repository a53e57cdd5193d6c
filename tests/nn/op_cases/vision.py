"""Op cases of the vision family: pixel_shuffle, pixel_unshuffle and channel_shuffle, against
numpy references written with explicit index arithmetic."""

from __future__ import annotations

import numpy as np

import oar.nn.functional as F
from oar.testing import OpCase

_rng = np.random.default_rng(707)


def rand(*shape) -> np.ndarray:
    return _rng.uniform(-1.0, 1.0, size=shape)


def _pixel_shuffle_ref(x, r):
    n, c, h, w = x.shape
    out = np.zeros((n, c // (r * r), h * r, w * r))
    for ch in range(c):
        oc, rest = divmod(ch, r * r)
        i, j = divmod(rest, r)
        out[:, oc, i::r, j::r] = x[:, ch]
    return out


def _pixel_unshuffle_ref(x, r):
    n, c, h, w = x.shape
    out = np.zeros((n, c * r * r, h // r, w // r))
    for ch in range(c * r * r):
        ic, rest = divmod(ch, r * r)
        i, j = divmod(rest, r)
        out[:, ch] = x[:, ic, i::r, j::r]
    return out


def _channel_shuffle_ref(x, groups):
    c = x.shape[1]
    k = c // groups
    order = [g * k + i for i in range(k) for g in range(groups)]
    return x[:, order]


def _nhwc(ref):
    return lambda x, *args: np.moveaxis(ref(np.moveaxis(x, -1, 1), *args), 1, -1)


CASES = [
    OpCase("transpose", lambda x: F.pixel_shuffle(x, 2), lambda x: _pixel_shuffle_ref(x, 2), [rand(1, 8, 2, 2)],
           id="pixel_shuffle"),
    OpCase("transpose", lambda x: F.pixel_shuffle(x, 2, data_format="NHWC"), lambda x: _nhwc(_pixel_shuffle_ref)(x, 2),
           [rand(1, 2, 2, 4)], id="pixel_shuffle_nhwc"),
    OpCase("transpose", lambda x: F.pixel_unshuffle(x, 2), lambda x: _pixel_unshuffle_ref(x, 2), [rand(1, 2, 4, 4)],
           id="pixel_unshuffle"),
    OpCase("transpose", lambda x: F.pixel_unshuffle(x, 2, data_format="NHWC"),
           lambda x: _nhwc(_pixel_unshuffle_ref)(x, 2), [rand(1, 4, 2, 3)], id="pixel_unshuffle_nhwc"),
    OpCase("transpose", lambda x: F.channel_shuffle(x, 3), lambda x: _channel_shuffle_ref(x, 3), [rand(1, 6, 2, 2)],
           id="channel_shuffle"),
    OpCase("transpose", lambda x: F.channel_shuffle(x, 2, data_format="NHWC"),
           lambda x: _nhwc(_channel_shuffle_ref)(x, 2), [rand(1, 2, 2, 4)], id="channel_shuffle_nhwc"),
]
