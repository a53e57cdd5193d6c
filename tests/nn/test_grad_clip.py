"""oar.nn.ClipGradByValue / ClipGradByNorm / ClipGradByGlobalNorm against numpy, alone and as an
optimizer's grad_clip (applied before weight decay, per parameter group, need_clip respected)."""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar.errors import ArgumentError
from oar.nn import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue, Parameter

RNG = np.random.default_rng(7)
G = {"a": RNG.normal(size=(3, 4)) * 3, "b": RNG.normal(size=(5,)), "c": RNG.normal(size=(2, 2)) * 10}


def pairs(dtype="float64", no_clip=()):
    out = []
    for name, g in G.items():
        p = Parameter(np.zeros(g.shape, dtype), name=name, need_clip=name not in no_clip)
        out.append((p, oar.to_tensor(g.astype(dtype))))
    return out


def as_dict(clipped):
    return {p.name: g.numpy() for p, g in clipped}


def test_clip_by_value():
    got = as_dict(ClipGradByValue(max=1.0, min=-0.5)(pairs()))
    for name, g in G.items():
        np.testing.assert_array_equal(got[name], np.clip(g, -0.5, 1.0))
    default_min = as_dict(ClipGradByValue(0.7)(pairs()))
    np.testing.assert_array_equal(default_min["c"], np.clip(G["c"], -0.7, 0.7))


def test_clip_by_norm_scales_each_gradient_alone():
    got = as_dict(ClipGradByNorm(clip_norm=2.0)(pairs()))
    for name, g in G.items():
        norm = np.linalg.norm(g)
        want = g * 2.0 / norm if norm > 2.0 else g
        np.testing.assert_allclose(got[name], want, rtol=1e-12)
    assert np.linalg.norm(G["b"]) < 10.0  # below the bound: unchanged
    np.testing.assert_array_equal(as_dict(ClipGradByNorm(10.0)(pairs()))["b"], G["b"])


def test_clip_by_global_norm_scales_all_gradients_together():
    got = as_dict(ClipGradByGlobalNorm(clip_norm=5.0)(pairs()))
    global_norm = np.sqrt(sum(np.sum(g * g) for g in G.values()))
    assert global_norm > 5.0
    for name, g in G.items():
        np.testing.assert_allclose(got[name], g * 5.0 / global_norm, rtol=1e-12)
    joint = np.sqrt(sum(np.sum(v * v) for v in got.values()))
    assert joint == pytest.approx(5.0, rel=1e-12)


def test_global_norm_within_bound_leaves_gradients_unchanged():
    for skip in (False, True):
        got = as_dict(ClipGradByGlobalNorm(clip_norm=1e6, auto_skip_clip=skip)(pairs()))
        for name, g in G.items():
            np.testing.assert_allclose(got[name], g, rtol=1e-15)


def test_need_clip_false_is_untouched_and_left_out_of_the_norm():
    clipped = as_dict(ClipGradByGlobalNorm(clip_norm=1.0)(pairs(no_clip=("c",))))
    np.testing.assert_array_equal(clipped["c"], G["c"])
    norm_ab = np.sqrt(np.sum(G["a"] ** 2) + np.sum(G["b"] ** 2))
    np.testing.assert_allclose(clipped["a"], G["a"] / norm_ab, rtol=1e-12)
    for clip in (ClipGradByValue(0.1), ClipGradByNorm(0.1)):
        np.testing.assert_array_equal(as_dict(clip(pairs(no_clip=("c",))))["c"], G["c"])


def test_float32_and_float16_gradients_keep_their_dtype():
    for dtype, rtol in (("float32", 1e-6), ("float16", 2e-3)):
        clipped = ClipGradByGlobalNorm(clip_norm=5.0)(pairs(dtype))
        global_norm = np.sqrt(sum(np.sum(g.astype(dtype).astype(np.float64) ** 2) for g in G.values()))
        for p, g in clipped:
            assert g.dtype.name == dtype
            want = G[p.name].astype(dtype).astype(np.float64) * 5.0 / global_norm
            np.testing.assert_allclose(g.numpy().astype(np.float64), want, rtol=rtol, atol=rtol)


def test_none_gradients_pass_through():
    p = Parameter(np.zeros(2), name="p")
    q = Parameter(np.zeros(2), name="q")
    out = ClipGradByGlobalNorm(1.0)([(p, None), (q, oar.to_tensor([3.0, 4.0], dtype="float64"))])
    assert out[0] == (p, None)
    np.testing.assert_allclose(out[1][1].numpy(), [0.6, 0.8])
    assert ClipGradByGlobalNorm(1.0)([(p, None)]) == [(p, None)]


def test_bad_arguments():
    with pytest.raises(ArgumentError, match="max must be positive"):
        ClipGradByValue(-1.0)
    with pytest.raises(ArgumentError, match="must not exceed"):
        ClipGradByValue(max=0.1, min=0.5)
    with pytest.raises(ArgumentError, match="clip_norm must be >= 0"):
        ClipGradByNorm(-1.0)
    with pytest.raises(ArgumentError, match="clip_norm must be a number"):
        ClipGradByGlobalNorm("big")


# -- inside the optimizer ------------------------------------------------------------------------
def _quadratic_params(no_clip=()):
    values = {name: RNG.normal(size=g.shape) for name, g in G.items()}
    params = [Parameter(v.copy(), name=name, need_clip=name not in no_clip) for name, v in values.items()]
    return values, params


def _loss(params):
    # d/dp of sum(G * p) is G: the gradients are known exactly.
    return sum((p * oar.to_tensor(G[p.name])).sum() for p in params)


def test_optimizer_clips_before_weight_decay():
    values, params = _quadratic_params(no_clip=("b",))
    opt = oar.optimizer.SGD(0.1, parameters=params, weight_decay=0.5, grad_clip=ClipGradByGlobalNorm(1.0))
    _loss(params).backward()
    opt.step()
    norm_ac = np.sqrt(np.sum(G["a"] ** 2) + np.sum(G["c"] ** 2))
    for p in params:
        g = G[p.name] if p.name == "b" else G[p.name] / norm_ac
        np.testing.assert_allclose(p.numpy(), values[p.name] - 0.1 * (g + 0.5 * values[p.name]), rtol=1e-12)
        np.testing.assert_array_equal(p.grad.numpy(), G[p.name])  # the stored gradient is not clipped


def test_param_groups_clip_separately():
    values, params = _quadratic_params()
    a, b, c = params
    opt = oar.optimizer.SGD(1.0, parameters=[
        {"params": [a, b], "grad_clip": ClipGradByGlobalNorm(1.0)},
        {"params": [c]},
    ], grad_clip=ClipGradByValue(0.5))
    _loss(params).backward()
    opt.step()
    norm_ab = np.sqrt(np.sum(G["a"] ** 2) + np.sum(G["b"] ** 2))
    np.testing.assert_allclose(a.numpy(), values["a"] - G["a"] / norm_ab, rtol=1e-12)
    np.testing.assert_allclose(b.numpy(), values["b"] - G["b"] / norm_ab, rtol=1e-12)
    np.testing.assert_allclose(c.numpy(), values["c"] - np.clip(G["c"], -0.5, 0.5), rtol=1e-12)


def test_adam_with_clip_by_norm_matches_numpy():
    values, params = _quadratic_params()
    opt = oar.optimizer.Adam(0.01, parameters=params, grad_clip=ClipGradByNorm(1.0))
    state = {name: (np.zeros_like(v), np.zeros_like(v)) for name, v in values.items()}
    for t in range(1, 4):
        _loss(params).backward()
        opt.step()
        opt.clear_grad()
        for name, g in G.items():
            g = g / max(np.linalg.norm(g), 1.0)
            m, v = state[name]
            m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
            state[name] = (m, v)
            values[name] = values[name] - 0.01 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    for p in params:
        np.testing.assert_allclose(p.numpy(), values[p.name], rtol=1e-10)
