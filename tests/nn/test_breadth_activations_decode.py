"""The activations, dropouts, decoding helpers and signature details Paddle 3.3 added to oar.nn:
forward against numpy references, gradients against finite differences in float64, the
in-place variants, the random ones by their properties (seeded), beam search against values
recorded from Paddle 3.3.1, and the Paddle 3.3 keywords (``Layer.train(mode)``, ``Conv*D(bias=,
dtype=)``, ``Conv2d``)."""

from __future__ import annotations

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar.errors import ArgumentError, ShapeError
from oar.testing import OpCase, check_grad, check_output

from .op_cases.attention import np_sdpa

RNG = np.random.default_rng(31)
X = RNG.standard_normal((3, 4)) + np.where(RNG.random((3, 4)) > 0.5, 0.2, -0.2)  # away from the kink at 0
SELU_ALPHA_P = -1.6732632423543772848170429916717 * 1.0507009873554804934193349852946


def _t(a, grad=False):
    return oar.to_tensor(np.asarray(a), stop_gradient=not grad)


def _silu(x):
    return x / (1 + np.exp(-x))


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ------------------------------------------------------------------------------------------
# activations: numpy references and finite differences
# ------------------------------------------------------------------------------------------
CASES = [
    OpCase("softplus", F.logsigmoid, lambda x: -np.log1p(np.exp(-x)), [X], id="logsigmoid"),
    OpCase("where", lambda x: F.rrelu(x, 0.1, 0.3, training=False), lambda x: np.where(x >= 0, x, 0.2 * x), [X],
           id="rrelu_eval"),
    OpCase("silu", F.swiglu, lambda x: _silu(x[:, :2]) * x[:, 2:], [X], id="swiglu_halves"),
    OpCase("silu", F.swiglu, lambda x, y: _silu(x) * y, [X, RNG.standard_normal((3, 4))], id="swiglu_pair"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_activation_forward_and_gradient(case):
    for dtype in case.dtypes:
        check_output(case, dtype)
    check_grad(case)


def test_rrelu_training_draws_a_slope_per_negative_element():
    oar.seed(5)
    x = _t(-np.ones((200,)), grad=True)
    y = F.rrelu(x, lower=0.1, upper=0.3)
    slopes = -y.numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and len(np.unique(slopes)) > 100
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), slopes, rtol=1e-6)  # the gradient is the slope drawn
    assert F.rrelu(_t([2.0, 0.0])).tolist() == [2.0, 0.0]
    with pytest.raises(ArgumentError, match="rrelu"):
        F.rrelu(_t([1.0]), lower=0.5, upper=0.2)


def test_rrelu_and_silu_layers():
    layer = oar.nn.RReLU(0.1, 0.3)
    assert layer.eval()(_t([-1.0])).numpy()[0] == pytest.approx(-0.2)
    assert layer.train()(_t(-np.ones(50))).numpy().std() > 0  # random in training
    x = _t(X)
    np.testing.assert_allclose(oar.nn.SiLU()(x).numpy(), _silu(X), rtol=1e-12)
    y = _t(X.copy())
    assert oar.nn.SiLU(inplace=True)(y) is y
    np.testing.assert_allclose(y.numpy(), _silu(X), rtol=1e-12)
    leaf = _t(X, grad=True)
    oar.nn.SiLU(inplace=True)(leaf * 1.0).sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), F.sigmoid(x).numpy() * (1 + X * (1 - F.sigmoid(x).numpy())),
                               rtol=1e-12)


def _gumbel(x, seed, **kw):
    oar.seed(seed)  # the same noise for every call: a deterministic function of x
    return F.gumbel_softmax(x, **kw)


def test_gumbel_softmax_samples():
    x = _t(X)
    soft = _gumbel(x, 3).numpy()
    np.testing.assert_allclose(soft.sum(axis=-1), np.ones(3), rtol=1e-12)
    # the same noise at temperature 2: log-probabilities halve, up to a per-row constant
    half = _gumbel(x, 3, temperature=2.0).numpy()
    gap = np.log(half) - np.log(soft) / 2
    np.testing.assert_allclose(gap - gap[:, :1], 0.0, atol=1e-12)
    hard = _gumbel(x, 3, hard=True, axis=0).numpy()
    assert set(np.unique(hard)) == {0.0, 1.0} and (hard.sum(axis=0) == 1).all()
    with pytest.raises(ArgumentError, match="gumbel_softmax: temperature"):
        F.gumbel_softmax(x, temperature=0.0)


def test_gumbel_softmax_gradients():
    weights = RNG.standard_normal((3, 4))
    soft = OpCase("softmax", lambda x: _gumbel(x, 7) * _t(weights), lambda x: 0.0, [X], id="gumbel_soft")
    check_grad(soft)
    # hard: the one-hot forward, the soft sample's gradient (straight through)
    grads = []
    for hard in (False, True):
        x = _t(X, grad=True)
        (_gumbel(x, 7, hard=hard) * _t(weights)).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)


INPLACE = [
    ("elu_", F.elu, {"alpha": 0.5}),
    ("hardtanh_", F.hardtanh, {"min": -0.5, "max": 0.7}),
    ("leaky_relu_", F.leaky_relu, {"negative_slope": 0.2}),
    ("softmax_", F.softmax, {"axis": 0}),
    ("tanh_", F.tanh, {}),
    ("thresholded_relu_", F.thresholded_relu, {"threshold": 0.3, "value": -1.0}),
]


@pytest.mark.parametrize("name,fn,kw", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_activations(name, fn, kw):
    x = _t(X.copy())
    assert getattr(F, name)(x, **kw) is x
    np.testing.assert_allclose(x.numpy(), fn(_t(X), **kw).numpy(), rtol=1e-12)
    # through the tape: an in-place activation of an intermediate has the out-of-place gradient
    weights = _t(RNG.standard_normal((3, 4)))
    grads = []
    for apply in (lambda h: getattr(F, name)(h, **kw), lambda h: fn(h, **kw)):
        leaf = _t(X, grad=True)
        (apply(leaf * 1.0) * weights).sum().backward()
        grads.append(leaf.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


# ------------------------------------------------------------------------------------------
# channel dropouts
# ------------------------------------------------------------------------------------------
def test_feature_alpha_dropout_drops_whole_channels():
    oar.seed(11)
    x = _t(np.ones((4, 6, 5)))
    y = F.feature_alpha_dropout(x, p=0.5).numpy()
    p = 0.5
    a = ((1 - p) * (1 + p * SELU_ALPHA_P ** 2)) ** -0.5
    kept, dropped = a * 1 + (-a * SELU_ALPHA_P * p), a * SELU_ALPHA_P + (-a * SELU_ALPHA_P * p)
    per_channel = y[:, :, 0]
    assert (y == per_channel[:, :, None]).all()  # one draw per (sample, channel)
    assert np.isin(np.round(per_channel, 12), np.round([kept, dropped], 12)).all()
    assert len(np.unique(np.round(per_channel, 12))) == 2
    assert F.feature_alpha_dropout(x, training=False) is x
    layer = oar.nn.FeatureAlphaDropout(0.5)
    assert layer.eval()(x) is x
    with pytest.raises(ShapeError, match="feature_alpha_dropout"):
        F.feature_alpha_dropout(_t(np.ones(3)))


def test_dropout1d_zeroes_channels_of_2d_and_3d_inputs():
    oar.seed(13)
    for shape in ((4, 8, 5), (8, 5)):
        y = F.dropout1d(_t(np.ones(shape)), p=0.5).numpy()
        rows = y.reshape(-1, shape[-1])
        assert ((rows == 0) | (rows == 2.0)).all() and (rows == rows[:, :1]).all()
    with pytest.raises(ShapeError, match="dropout1d"):
        F.dropout1d(_t(np.ones((2, 3, 4, 5))))


# ------------------------------------------------------------------------------------------
# decoding
# ------------------------------------------------------------------------------------------
def test_sequence_mask():
    lengths = np.array([[3, 0], [1, 5]])
    expected = (np.arange(5) < lengths[..., None]).astype(np.int64)
    got = F.sequence_mask(_t(lengths))
    assert got.dtype == oar.int64
    np.testing.assert_array_equal(got.numpy(), expected)
    np.testing.assert_array_equal(F.sequence_mask(_t(lengths), maxlen=7, dtype="float32").numpy(),
                                  (np.arange(7) < lengths[..., None]).astype(np.float32))


# Paddle 3.3.1's dynamic_decode of a BeamSearchDecoder (LSTMCell(4, 4), Embedding(6, 4),
# Linear(4, 6), beam 3, start 0, end 1, max_step_num=5) with the weights below:
PADDLE_BEAM_IDS = [[[5, 5, 5], [1, 5, 5], [1, 1, 5], [1, 1, 5], [1, 1, 5], [1, 1, 5]],
                   [[1, 2, 2], [1, 1, 5], [1, 1, 5], [1, 1, 5], [1, 1, 5], [1, 1, 5]]]
PADDLE_BEAM_LENGTHS = [[2, 3, 6], [1, 2, 6]]
PADDLE_BEAM_LOG_PROBS = [[-1.1684099435806274, -1.8782399892807007, -4.033229827880859],
                         [-0.4331200122833252, -2.5912599563598633, -5.325689792633057]]


def test_beam_search_matches_paddle():
    rng = np.random.default_rng(2)
    cell, embedding, project = oar.nn.LSTMCell(4, 4), oar.nn.Embedding(6, 4), oar.nn.Linear(4, 6)
    for layer in (cell, embedding, project):  # Paddle's parameter order, drawn in the same order
        for _, p in layer.named_parameters():
            p.set_value(_t((rng.standard_normal(p.shape) * 1.5).astype("float32")))
    h0 = _t(rng.standard_normal((2, 4)).astype("float32"))
    decoder = oar.nn.BeamSearchDecoder(cell, 0, 1, 3, embedding_fn=embedding, output_fn=project)
    ids, states, lengths = oar.nn.dynamic_decode(decoder, [h0, h0], max_step_num=5, return_length=True)
    np.testing.assert_array_equal(ids.numpy(), PADDLE_BEAM_IDS)
    np.testing.assert_array_equal(lengths.numpy(), PADDLE_BEAM_LENGTHS)
    np.testing.assert_allclose(states.log_probs.numpy(), PADDLE_BEAM_LOG_PROBS, rtol=1e-5)
    time_major, _ = oar.nn.dynamic_decode(decoder, [h0, h0], max_step_num=5, output_time_major=True)
    np.testing.assert_array_equal(time_major.numpy(), np.transpose(PADDLE_BEAM_IDS, (1, 0, 2)))


class _CountingDecoder:
    """A decoder that does not track finished sequences: sample ``b`` finishes at step ``b``."""

    tracks_own_finished = False

    def initialize(self, inits):
        return oar.zeros([3]), oar.zeros([3]), oar.to_tensor([False, False, False])

    def step(self, time, inputs, states, **kwargs):
        step = int(time.item())
        finished = oar.to_tensor(np.arange(3) <= step)
        return inputs + 1.0, states + 1.0, inputs + 1.0, finished

    def finalize(self, outputs, final_states, sequence_lengths):
        raise NotImplementedError


def test_dynamic_decode_with_a_decoder_that_does_not_track_finished():
    outputs, states, lengths = oar.nn.dynamic_decode(_CountingDecoder(), impute_finished=True, return_length=True)
    assert outputs.shape == [3, 3]  # batch-major: 3 samples, 3 steps
    np.testing.assert_array_equal(lengths.numpy(), [1, 2, 3])
    np.testing.assert_array_equal(states.numpy(), [1.0, 2.0, 3.0])  # imputed: frozen once finished


def test_tile_beam_merge_with_batch():
    x = np.arange(6).reshape(2, 3)
    got = oar.nn.BeamSearchDecoder.tile_beam_merge_with_batch(_t(x), 2).numpy()
    np.testing.assert_array_equal(got, np.repeat(x, 2, axis=0))


# ------------------------------------------------------------------------------------------
# attention with packed qkv
# ------------------------------------------------------------------------------------------
def test_flash_attn_qkvpacked_is_sdpa_of_the_unpacked_tensors():
    qkv = RNG.standard_normal((2, 5, 3, 2, 4))
    for causal in (False, True):
        out, weights = F.flash_attn_qkvpacked(_t(qkv), causal=causal, return_softmax=True)
        expected = np_sdpa(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], is_causal=causal)
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-10)
        assert weights.shape == [2, 2, 5, 5]
    # grouped heads: 4 query heads over 2 key heads, query head h reads key head h // 2
    grouped = RNG.standard_normal((1, 3, 4, 2, 4))
    out, none = F.flash_attn_qkvpacked(_t(grouped))
    query = grouped[:, :, :2].reshape(1, 3, 4, 4)
    key, value = (np.repeat(grouped[:, :, i], 2, axis=2) for i in (2, 3))
    np.testing.assert_allclose(out.numpy(), np_sdpa(query, key, value), rtol=1e-10)
    assert none is None
    check_grad(OpCase("matmul", lambda t: F.flash_attn_qkvpacked(t, causal=True)[0], lambda t: 0.0,
                      [RNG.standard_normal((1, 3, 3, 1, 2))]))


def test_flash_attn_varlen_qkvpacked_attends_within_each_sequence():
    lengths, scale = [2, 3], 0.7
    packed = RNG.standard_normal((5, 3, 2, 4))
    cu = _t(np.array([0, 2, 5], np.int32))
    out, _ = F.flash_attn_varlen_qkvpacked(_t(packed), cu, cu, 3, 3, scale, causal=True, varlen_padded=False)
    start = 0
    for n in lengths:
        seq = packed[start:start + n][None]
        q = seq[:, :, 0] * (scale * 2.0)  # np_sdpa scales by 1 / sqrt(4)
        np.testing.assert_allclose(out.numpy()[start:start + n], np_sdpa(q, seq[:, :, 1], seq[:, :, 2],
                                                                         is_causal=True)[0], rtol=1e-10)
        start += n
    # padded layout: sequence i at rows i * max_seqlen, its padding rows zero in the output
    padded = np.zeros((6, 3, 2, 4))
    padded[0:2], padded[3:6] = packed[0:2], packed[2:5]
    out_padded, _ = F.flash_attn_varlen_qkvpacked(_t(padded), cu, cu, 3, 3, scale, causal=True)
    np.testing.assert_allclose(out_padded.numpy()[[0, 1, 3, 4, 5]], out.numpy(), rtol=1e-12)
    assert not out_padded.numpy()[2].any()
    with pytest.raises(ArgumentError, match="return_softmax"):
        F.flash_attn_varlen_qkvpacked(_t(packed), cu, cu, 3, 3, scale, return_softmax=True)


# ------------------------------------------------------------------------------------------
# Paddle 3.3 signature details
# ------------------------------------------------------------------------------------------
def test_layer_train_takes_a_mode():
    net = oar.nn.Sequential(oar.nn.Linear(2, 2), oar.nn.Dropout(0.5))
    assert net.train(False) is net and not any(layer.training for layer in net.sublayers(include_self=True))
    assert all(layer.training for layer in net.train().sublayers(include_self=True))


def test_conv_lower_case_names_and_keywords():
    assert oar.nn.Conv1d is oar.nn.Conv1D and oar.nn.Conv2d is oar.nn.Conv2D and oar.nn.Conv3d is oar.nn.Conv3D
    conv = oar.nn.Conv2d(2, 3, 3, bias=False, dtype="float64", padding_mode="reflect", padding=1)
    assert conv.bias is None and conv.weight.dtype == oar.float64
    assert conv(oar.ones([1, 2, 4, 4], dtype="float64")).shape == [1, 3, 4, 4]
    assert oar.nn.Conv1d(2, 3, 3, device="cpu").bias.shape == [3]
    with pytest.raises(TypeError):
        oar.nn.Conv2D(2, 3, 3, 1, 0, 1, 1, "zeros")  # padding_mode is keyword-only in Paddle 3.3


def test_embedding_max_norm_and_scale_grad_by_freq():
    table = np.array([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0], [1.0, 1.0]])
    ids = _t([0, 1, 0, 2])
    weight = _t(table)
    out = F.embedding(ids, weight, max_norm=2.0)
    # Paddle 3.3.1: the rows read (0, 2) are scaled to norm 2 in the table itself, row 3 (unread) is not
    scaled = table * np.array([[2.0 / (5.0 + 1e-7)], [1.0], [2.0 / (10.0 + 1e-7)], [1.0]])
    np.testing.assert_allclose(weight.numpy(), scaled, rtol=1e-12)
    np.testing.assert_allclose(out.numpy(), scaled[[0, 1, 0, 2]], rtol=1e-12)
    l1 = F.embedding(_t([3]), _t(table), max_norm=1.5, norm_type=1.0).numpy()
    np.testing.assert_allclose(l1, [[0.75, 0.75]], rtol=1e-6)
    weight = _t(table, grad=True)
    out = F.embedding(ids, weight, scale_grad_by_freq=True)
    np.testing.assert_array_equal(out.numpy(), table[[0, 1, 0, 2]])
    out.sum().backward()
    np.testing.assert_allclose(weight.grad.numpy(), [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [0.0, 0.0]])  # Paddle 3.3.1
    layer = oar.nn.Embedding(4, 2, None, 2.0, _weight=_t(table), _freeze=True)
    np.testing.assert_allclose(layer(ids).numpy(), scaled[[0, 1, 0, 2]], rtol=1e-6)
    assert layer.weight.stop_gradient and not layer.parameters()[0].trainable
    with pytest.raises(ShapeError, match="Embedding: _weight"):
        oar.nn.Embedding(3, 2, _weight=_t(table))


def test_dropout_inplace():
    oar.seed(3)
    x = _t(np.ones(8))
    assert oar.nn.Dropout(0.5, inplace=True)(x) is x
    assert set(np.unique(x.numpy())) <= {0.0, 2.0}
    leaf = _t(np.ones(8), grad=True)
    oar.seed(4)
    y = leaf * 1.0
    F.dropout(y, 0.5, inplace=True).sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), y.numpy())  # the kept mask scaled by 2, as y's values


def ref_antialias_axis(x, n_out, mode):
    """One axis (the last) resized with the stretched filter, output by output, border-normalised."""
    n_in = x.shape[-1]
    ratio = n_in / n_out
    stretch, half = (1 / ratio, (2 if mode == "bilinear" else 4) / 2 * ratio) if ratio >= 1 else \
        (1.0, (2 if mode == "bilinear" else 4) / 2)

    def kernel(t):
        t = abs(t)
        if mode == "bilinear":
            return max(0.0, 1 - t)
        a = -0.5
        return ((a + 2) * t - (a + 3)) * t * t + 1 if t < 1 else ((((t - 5) * t + 8) * t - 4) * a if t < 2 else 0.0)

    out = np.zeros(x.shape[:-1] + (n_out,))
    for k in range(n_out):
        center = ratio * (k + 0.5)
        taps = range(max(int(center - half + 0.5), 0), min(int(center + half + 0.5), n_in))
        w = np.array([kernel((j - center + 0.5) * stretch) for j in taps])
        out[..., k] = x[..., list(taps)] @ (w / w.sum())
    return out


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_interpolate_antialias(mode):
    x = RNG.standard_normal((1, 2, 9, 7))
    for size in ((4, 3), (14, 5)):
        expected = np.swapaxes(ref_antialias_axis(np.swapaxes(ref_antialias_axis(x, size[1], mode), 2, 3),
                                                  size[0], mode), 2, 3)
        got = F.interpolate(_t(x), size=list(size), mode=mode, antialias=True)
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10)
    check_grad(OpCase("matmul", lambda t: F.interpolate(t, size=[3, 2], mode=mode, antialias=True), lambda t: 0.0,
                      [RNG.standard_normal((1, 1, 5, 4))]))
    # Paddle 3.3.1's values for arange(16).reshape(1, 1, 4, 4), scale_factor=0.5
    paddle_values = {"bilinear": [[3.5714288, 5.142857], [9.857143, 11.428572]],
                     "bicubic": [[2.9338841, 4.760331], [10.23967, 12.066116]]}[mode]
    grid = F.interpolate(oar.reshape(oar.arange(16, dtype="float32"), [1, 1, 4, 4]), scale_factor=0.5, mode=mode,
                         antialias=True)
    np.testing.assert_allclose(grid.numpy()[0, 0], paddle_values, rtol=1e-6)
    with pytest.raises(ArgumentError, match="interpolate: antialias"):
        F.interpolate(oar.ones([1, 1, 4]), scale_factor=0.5, mode="linear", antialias=True)


def test_silu_inplace_and_the_silu_alias():
    assert oar.nn.Silu is oar.nn.SiLU
    x = _t(X.copy())
    assert F.silu(x, inplace=True) is x
    np.testing.assert_allclose(x.numpy(), _silu(X), rtol=1e-12)


def test_sdpa_scale_and_grouped_heads():
    q, k, v = RNG.standard_normal((2, 5, 4, 8)), RNG.standard_normal((2, 6, 2, 8)), RNG.standard_normal((2, 6, 2, 8))
    got = F.scaled_dot_product_attention(_t(q), _t(k), _t(v), scale=0.3, backend="math")
    # np_sdpa scales by 1 / sqrt(8); key head h // 2 serves query head h
    expected = np_sdpa(q * 0.3 * np.sqrt(8), np.repeat(k, 2, axis=2), np.repeat(v, 2, axis=2))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10)
    with pytest.raises(ShapeError, match="num_heads"):
        F.scaled_dot_product_attention(_t(q), _t(k), _t(v), enable_gqa=False)
    with pytest.raises(ArgumentError, match="backend"):
        F.scaled_dot_product_attention(_t(q), _t(q), _t(q), backend="cudnn")


def test_smooth_l1_is_huber_and_ctc_zero_infinity():
    x, y = _t([0.5, 3.0]), oar.zeros([2])
    huber = F.smooth_l1_loss(x, y, reduction="none", delta=2.0).numpy()
    np.testing.assert_allclose(F.smooth_l1_loss(x, y, reduction="none", delta=2.0, is_huber=False).numpy(),
                               huber / 2.0, rtol=1e-12)
    assert oar.nn.SmoothL1Loss(delta=2.0, is_huber=False)(x, y).item() == pytest.approx(huber.mean() / 2.0)
    # one step cannot emit the two labels: an infinite loss, 0 with zero_infinity
    logits, labels = oar.zeros([1, 2, 3]), _t([[1, 2], [1, 0]])
    lengths, label_lengths = _t([1, 1]), _t([2, 1])
    loss = F.ctc_loss(logits, labels, lengths, label_lengths, reduction="none")
    assert np.isinf(loss.numpy()[0])
    zeroed = oar.nn.CTCLoss(reduction="none", zero_infinity=True)(logits, labels, lengths, label_lengths).numpy()
    np.testing.assert_array_equal(zeroed, [0.0, loss.numpy()[1]])
