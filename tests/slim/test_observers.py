"""Every observer and quanter against a numpy reference written here from its definition."""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar import nn
from oar.quantization import absmax_to_step, qmax
from oar.quantization.observers import (
    AbsMaxChannelWiseWeightObserver,
    AbsmaxObserver,
    HistObserver,
    KLObserver,
    MovingAverageAbsmaxObserver,
    MSEObserver,
)
from oar.quantization.quanters import FakeQuanterChannelWiseAbsMaxObserver, FakeQuanterWithAbsMaxObserver

RNG = np.random.default_rng(0)
BATCHES = [RNG.normal(0, s, (32, 16)).astype(np.float32) for s in (1.0, 3.0, 0.5, 2.0)]


def observe(factory, layer=None, data=BATCHES):
    observer = factory._instance(layer)
    for x in data:
        observer(oar.to_tensor(x))
    if hasattr(observer, "cal_thresholds"):
        observer.cal_thresholds()
    return observer


def np_fake_quant(x, absmax, bits=8, axis=None):
    """round(x / absmax * qmax) * absmax / qmax, clipped to the signed range: Paddle's formula."""
    q = 2 ** (bits - 1) - 1
    if axis is not None:
        shape = [1] * x.ndim
        shape[axis] = -1
        absmax = absmax.reshape(shape)
    return np.clip(np.rint(x / absmax * q), -q - 1, q) * absmax / q


def test_scale_convention_is_one_function():
    assert qmax(8) == 127 and qmax(4) == 7
    assert absmax_to_step(12.7) == pytest.approx(0.1)
    assert absmax_to_step(7.0, 4) == pytest.approx(1.0)
    t = absmax_to_step(oar.to_tensor([2.54, 0.0]))
    np.testing.assert_allclose(t.numpy(), [0.02, 1e-8 / 127], rtol=1e-6)


def test_absmax_observer_keeps_the_largest_abs_value():
    observer = observe(AbsmaxObserver())
    assert float(observer.scales()) == pytest.approx(max(np.abs(x).max() for x in BATCHES))
    assert observer.quant_axis() == -1 and observer.bit_length() == 8 and observer.zero_points() is None
    x = oar.to_tensor(BATCHES[0])
    assert observer(x) is x  # it only watches


def test_absmax_observer_before_any_data_holds_paddles_initial_value():
    observer = AbsmaxObserver(quant_bits=4)._instance(None)
    assert float(observer.scales()) == pytest.approx(1e-7) and not observer.observed()
    assert observer.bit_length() == 4


@pytest.mark.parametrize("layer, axis", [(nn.Conv2D(3, 5, 3), 0), (nn.Linear(6, 4), 1)])
def test_channel_wise_observer_takes_each_output_channel(layer, axis):
    w = layer.weight.numpy()
    observer = observe(AbsMaxChannelWiseWeightObserver(), layer, [w])
    other = tuple(d for d in range(w.ndim) if d != axis)
    np.testing.assert_allclose(observer.scales().numpy(), np.abs(w).max(axis=other), rtol=1e-7)
    assert observer.quant_axis() == axis and observer.scales().shape == [w.shape[axis]]


def test_channel_wise_observer_refuses_a_layer_without_a_known_weight_layout():
    with pytest.raises(ValueError, match="channel-wise .* Embedding"):
        AbsMaxChannelWiseWeightObserver()._instance(nn.Embedding(4, 2))


def test_moving_average_observer_matches_the_recurrence():
    rate = 0.9
    observer = observe(MovingAverageAbsmaxObserver(moving_rate=rate))
    state = accum = 0.0
    for x in BATCHES:
        state = rate * state + 1
        accum = rate * accum + np.abs(x).max()
    assert float(observer.scales()) == pytest.approx(accum / state, rel=1e-6)


def test_hist_observer_is_the_percentile_to_a_bin():
    data = [RNG.standard_t(3, 4000).astype(np.float32) for _ in range(3)]
    data[0][0] = 40.0  # the first batch holds the overall max: one range, no rebinning
    observer = observe(HistObserver(percent=0.99, bins_count=2048), None, data)
    a = np.abs(np.concatenate(data))
    width = 40.0 / 2048
    assert abs(float(observer.scales()) - np.quantile(a, 0.99)) <= 1.01 * width


def test_hist_observer_rebins_when_the_range_grows():
    small, large = RNG.normal(0, 1, 5000).astype(np.float32), RNG.normal(0, 4, 5000).astype(np.float32)
    observer = observe(HistObserver(percent=0.95, bins_count=512), None, [small, large])
    a = np.abs(np.concatenate([small, large]))
    assert observer._hist.sum() == a.size
    assert abs(float(observer.scales()) - np.quantile(a, 0.95)) <= 2 * a.max() / 512


def np_kl_threshold(a: np.ndarray, bins: int, levels: int) -> float:
    """The entropy calibration, written as loops: P = the first i bins, outliers in the last;
    Q = P's bins merged into ``levels`` groups, each group's count spread over its non-empty bins."""
    hist, edges = np.histogram(a, bins=bins, range=(0, a.max()))
    best, best_kl = bins, np.inf
    for i in range(max(levels, bins // 2), bins + 1):
        if hist[i - 1] == 0:
            continue
        p = hist[:i].astype(float)
        p[-1] += hist[i:].sum()
        q = np.zeros(i)
        groups = [[j for j in range(i) if j * levels // i == g] for g in range(levels)]
        for members in groups:
            nonzero = [j for j in members if hist[j] > 0]
            for j in nonzero:
                q[j] = hist[members].sum() / len(nonzero)
        p, q = p / p.sum(), q / q.sum()
        m = p > 0
        kl = np.sum(p[m] * np.log(p[m] / np.maximum(q[m], 1e-12)))
        if kl < best_kl:
            best, best_kl = i, kl
    return best * edges[1]


def test_kl_observer_matches_the_loop_reference():
    x = RNG.normal(0, 1, 20000).astype(np.float32)
    x[:60] = RNG.uniform(5, 10, 60)  # a sparse tail
    observer = observe(KLObserver(bins_count=512), None, [x])
    reference = np_kl_threshold(np.abs(x), 512, 127)
    assert float(observer.scales()) == pytest.approx(reference, rel=1e-5)
    assert np.abs(x).max() / 2 <= float(observer.scales()) <= np.abs(x).max()  # Paddle's search range


def test_mse_observer_reaches_the_least_squared_error_over_the_candidates():
    x = RNG.laplace(0, 1, 20000).astype(np.float32)
    observer = observe(MSEObserver(bins_count=2048), None, [x])
    chosen = float(observer.scales())
    candidates = np.abs(x).max() * np.arange(1, 201) / 200
    errors = [np.mean((x - np_fake_quant(x, t)) ** 2) for t in candidates]
    best = candidates[int(np.argmin(errors))]
    assert np.mean((x - np_fake_quant(x, chosen)) ** 2) <= 1.02 * min(errors)
    assert chosen == pytest.approx(best, rel=0.05)


def test_histogram_observers_calibrate_eagerly_under_to_static():
    """They read values, so to_static cannot capture them: it warns, naming the line, and runs
    the function eagerly, which calibrates as in eager mode."""
    observer = HistObserver(percent=1.0, bins_count=64)._instance(None)
    f = oar.jit.to_static(lambda x: observer(x) * 2.0, input_spec=[oar.static.InputSpec([None, 4])])
    with pytest.warns(UserWarning, match="runs eagerly"):
        f(oar.to_tensor(np.full((2, 4), 3.0, np.float32)))
    observer.cal_thresholds()
    assert float(observer.scales()) == pytest.approx(3.0)


def test_fake_quanter_follows_paddles_moving_average_and_rounds():
    quanter = FakeQuanterWithAbsMaxObserver(moving_rate=0.9)._instance(None)
    quanter.train()
    state, accum = 1.0, 1.0  # Paddle's initial state and accumulator
    for x in BATCHES[:3]:
        out = quanter(oar.to_tensor(x)).numpy()
        state, accum = 0.9 * state + 1, 0.9 * accum + np.abs(x).max()
        np.testing.assert_allclose(out, np_fake_quant(x, np.float32(accum / state)), rtol=1e-5, atol=1e-6)
    assert float(quanter.scales()) == pytest.approx(accum / state, rel=1e-6)
    quanter.eval()  # eval: the stored scale, no update
    before = float(quanter.scales())
    quanter(oar.to_tensor(BATCHES[3] * 10))
    assert float(quanter.scales()) == before


def test_fake_quanter_gradient_is_straight_through():
    quanter = FakeQuanterWithAbsMaxObserver()._instance(None)
    quanter.eval()
    quanter._scale.set_value(oar.to_tensor(1.0))
    x = oar.to_tensor([0.2, -0.7, 0.99, 3.0, -5.0], stop_gradient=False)
    (quanter(x) * oar.to_tensor([1.0, 2.0, 3.0, 4.0, 5.0])).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 2.0, 3.0, 0.0, 0.0])  # clipped values get none


@pytest.mark.parametrize("layer, axis", [(nn.Conv2D(2, 4, 3), 0), (nn.Linear(5, 3), 1)])
def test_channel_wise_quanter_uses_each_channels_abs_max(layer, axis):
    quanter = FakeQuanterChannelWiseAbsMaxObserver()._instance(layer)
    w = layer.weight.numpy()
    out = quanter(oar.to_tensor(w)).numpy()
    absmax = np.abs(w).max(axis=tuple(d for d in range(w.ndim) if d != axis))
    np.testing.assert_allclose(out, np_fake_quant(w, absmax, axis=axis), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(quanter.scales().numpy(), absmax)
