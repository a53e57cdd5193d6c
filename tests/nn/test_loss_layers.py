"""Losses of oar.nn: the losses composed of core ops against numpy and finite differences, the
loss layers against their functions, Paddle's conventions (output shapes, ignore_index, smooth L1's
delta, ...), second-order gradients, and the errors a user can cause."""

from __future__ import annotations

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar.errors import ArgumentError, DTypeError, GradientError, ShapeError
from oar.plugins import registries
from oar.testing import OpCase, check_grad, check_output, record_ops

from .op_cases.loss import (
    CTC_INPUT_LENGTHS,
    CTC_LABEL_LENGTHS,
    CTC_LABELS,
    CTC_LOGITS,
    ref_cross_entropy,
    ref_ctc_loss,
)

RNG = np.random.default_rng(11)
REDUCTIONS = ("mean", "sum", "none")


def _t(a, grad=False, dtype=None):
    a = np.asarray(a)
    if dtype is not None:
        a = a.astype(dtype)
    return oar.to_tensor(a, stop_gradient=not grad)


def _reduce(loss, reduction):
    return {"mean": np.mean, "sum": np.sum, "none": lambda v: v}[reduction](loss)


# ------------------------------------------------------------------------------------------
# losses composed of core ops: forward against numpy, gradient against finite differences
# ------------------------------------------------------------------------------------------
X = RNG.standard_normal((3, 4))
Y = RNG.standard_normal((3, 4))
# |X - Y| away from 0 and from the smooth-L1 thresholds, so that finite differences are exact.
D = np.array([[0.3, -0.7, 1.6, -2.4], [0.05, 2.2, -0.45, 1.2], [-1.3, 0.8, -3.1, 0.55]])
LOGQ = np.log(RNG.uniform(0.1, 1.0, (3, 4)))
P = RNG.uniform(0.1, 1.0, (3, 4))
P_WITH_ZEROS = np.where(np.arange(12).reshape(3, 4) % 5 == 0, 0.0, P)
RANK_LABEL = np.array([[1.0, -1.0, 1.0, -1.0], [-1.0, -1.0, 1.0, 1.0], [1.0, 1.0, -1.0, 1.0]])
RANK_OTHER = X + np.array([[0.4, -0.3, 0.9, 1.1], [-0.6, 0.25, -1.2, 0.7], [0.35, -0.8, 0.5, -0.45]])


def ref_smooth_l1(x, y, delta=1.0):
    d = np.abs(x - y)
    return np.where(d < delta, 0.5 * d * d, delta * d - 0.5 * delta * delta)


def ref_kl_div(x, y, log_target=False):
    if log_target:
        return np.exp(y) * (y - x)
    out = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        if y[i] > 0:
            out[i] = y[i] * (np.log(y[i]) - x[i])
    return out


def _composed_cases():
    cases = []
    for r in REDUCTIONS:
        cases += [
            OpCase("pow", lambda x, y, r=r: F.mse_loss(x, y, reduction=r),
                   lambda x, y, r=r: _reduce((x - y) ** 2, r), [X, Y], id=f"mse_loss_{r}"),
            OpCase("abs", lambda x, y, r=r: F.l1_loss(x, y, reduction=r),
                   lambda x, y, r=r: _reduce(np.abs(x - y), r), [X + D, X], id=f"l1_loss_{r}"),
            OpCase("where", lambda x, y, r=r: F.smooth_l1_loss(x, y, reduction=r),
                   lambda x, y, r=r: _reduce(ref_smooth_l1(x, y), r), [X + D, X], id=f"smooth_l1_loss_{r}"),
            OpCase("where", lambda x, y, r=r: F.smooth_l1_loss(x, y, reduction=r, delta=2.0),
                   lambda x, y, r=r: _reduce(ref_smooth_l1(x, y, 2.0), r), [X + D, X], id=f"smooth_l1_loss_delta2_{r}"),
            OpCase("clip", lambda x, o, y, r=r: F.margin_ranking_loss(x, o, y, margin=0.2, reduction=r),
                   lambda x, o, y, r=r: _reduce(np.maximum(0, -y * (x - o) + 0.2), r), [X, RANK_OTHER, RANK_LABEL],
                   grad_inputs=[0, 1], id=f"margin_ranking_loss_{r}"),
        ]
    for r in REDUCTIONS + ("batchmean",):
        ref_r = (lambda v: np.sum(v) / v.shape[0]) if r == "batchmean" else (lambda v, r=r: _reduce(v, r))
        cases += [
            OpCase("where", lambda x, y, r=r: F.kl_div(x, y, reduction=r),
                   lambda x, y, f=ref_r: f(ref_kl_div(x, y)), [LOGQ, P_WITH_ZEROS], grad_inputs=[0], id=f"kl_div_{r}"),
            OpCase("exp", lambda x, y, r=r: F.kl_div(x, y, reduction=r, log_target=True),
                   lambda x, y, f=ref_r: f(ref_kl_div(x, y, log_target=True)), [LOGQ, np.log(P)],
                   id=f"kl_div_log_target_{r}"),
        ]
    # the target's gradient, where it is positive
    cases.append(OpCase("log", lambda x, y: F.kl_div(x, y, reduction="sum"), lambda x, y: np.sum(ref_kl_div(x, y)),
                        [LOGQ, P], id="kl_div_label_grad"))
    return cases


COMPOSED = _composed_cases()


@pytest.mark.parametrize("case", COMPOSED, ids=[c.id for c in COMPOSED])
def test_composed_loss_forward_and_gradient(case):
    for dtype in case.dtypes:
        with record_ops() as rec:
            check_output(case, dtype, recorder=rec)
        assert case.op in rec.ops
    check_output(case, "float32", contiguous=False)
    check_grad(case)


# ------------------------------------------------------------------------------------------
# layers: Paddle's defaults, the same numbers as the functions, registered by the plugin
# ------------------------------------------------------------------------------------------
LOGITS = RNG.standard_normal((4, 3))
LABELS = np.array([2, 0, 1, 2])
PROB = RNG.uniform(0.1, 0.9, (4, 3))
TARGET = RNG.integers(0, 2, (4, 3)).astype(np.float64)


def _layer_cases(reduction):
    w = _t([0.2, 1.0, 3.0])
    return [
        (oar.nn.CrossEntropyLoss(weight=w, reduction=reduction, label_smoothing=0.1),
         lambda: F.cross_entropy(_t(LOGITS), _t(LABELS), weight=w, reduction=reduction, label_smoothing=0.1),
         (LOGITS, LABELS)),
        (oar.nn.NLLLoss(weight=w, ignore_index=0, reduction=reduction),
         lambda: F.nll_loss(_t(LOGITS), _t(LABELS), weight=w, ignore_index=0, reduction=reduction), (LOGITS, LABELS)),
        (oar.nn.BCELoss(weight=_t(PROB), reduction=reduction),
         lambda: F.binary_cross_entropy(_t(PROB), _t(TARGET), weight=_t(PROB), reduction=reduction), (PROB, TARGET)),
        (oar.nn.BCEWithLogitsLoss(pos_weight=w, reduction=reduction),
         lambda: F.binary_cross_entropy_with_logits(_t(LOGITS), _t(TARGET), pos_weight=w, reduction=reduction),
         (LOGITS, TARGET)),
        (oar.nn.MSELoss(reduction), lambda: F.mse_loss(_t(LOGITS), _t(PROB), reduction=reduction), (LOGITS, PROB)),
        (oar.nn.L1Loss(reduction), lambda: F.l1_loss(_t(LOGITS), _t(PROB), reduction=reduction), (LOGITS, PROB)),
        (oar.nn.SmoothL1Loss(reduction, delta=0.5),
         lambda: F.smooth_l1_loss(_t(LOGITS), _t(PROB), reduction=reduction, delta=0.5), (LOGITS, PROB)),
        (oar.nn.KLDivLoss(reduction, log_target=True),
         lambda: F.kl_div(_t(LOGITS), _t(PROB), reduction=reduction, log_target=True), (LOGITS, PROB)),
    ]


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_loss_layers_match_their_functions(reduction):
    for layer, function, (a, b) in _layer_cases(reduction):
        np.testing.assert_allclose(layer(_t(a), _t(b)).numpy(), function().numpy(), rtol=1e-6,
                                   err_msg=type(layer).__name__)
        assert repr(reduction) in repr(layer)


def test_margin_ranking_and_ctc_layers():
    layer = oar.nn.MarginRankingLoss(margin=0.3, reduction="sum")
    expected = F.margin_ranking_loss(_t(X), _t(RANK_OTHER), _t(RANK_LABEL), margin=0.3, reduction="sum")
    assert float(layer(_t(X), _t(RANK_OTHER), _t(RANK_LABEL))) == pytest.approx(float(expected))
    ctc = oar.nn.CTCLoss(blank=0, reduction="none")
    args = [_t(a) for a in (CTC_LOGITS, CTC_LABELS, CTC_INPUT_LENGTHS, CTC_LABEL_LENGTHS)]
    np.testing.assert_allclose(ctc(*args).numpy(), ref_ctc_loss(CTC_LOGITS, CTC_LABELS, CTC_INPUT_LENGTHS,
                                                                  CTC_LABEL_LENGTHS, reduction="none"), rtol=1e-5)


def test_loss_layers_have_paddles_defaults_and_are_registered():
    ce = oar.nn.CrossEntropyLoss()
    assert (ce.weight, ce.ignore_index, ce.reduction, ce.soft_label, ce.axis, ce.use_softmax, ce.label_smoothing) == (
        None, -100, "mean", False, -1, True, 0.0)
    assert oar.nn.NLLLoss().ignore_index == -100
    assert oar.nn.SmoothL1Loss().delta == 1.0
    assert oar.nn.KLDivLoss().log_target is False
    assert oar.nn.MarginRankingLoss().margin == 0.0
    assert oar.nn.CTCLoss().blank == 0
    layers = registries().layers
    for name in ("CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "MSELoss", "L1Loss", "SmoothL1Loss",
                 "KLDivLoss", "MarginRankingLoss", "CTCLoss"):
        assert layers.get(name) is getattr(oar.nn, name)
        assert isinstance(getattr(oar.nn, name)(), oar.nn.Layer)


def test_loss_layer_trains_a_linear_model():
    oar.seed(0)
    net = oar.nn.Linear(3, 3)
    loss_fn = oar.nn.CrossEntropyLoss()
    opt_x, opt_y = _t(LOGITS.astype(np.float32)), _t(LABELS)
    first = None
    for _ in range(60):
        loss = loss_fn(net(opt_x), opt_y)
        first = float(loss) if first is None else first
        loss.backward()
        with oar.no_grad():
            for p in net.parameters():
                p.subtract_(p.grad * 0.5)
                p.clear_gradient()
    assert float(loss) < first / 4


# ------------------------------------------------------------------------------------------
# Paddle's conventions
# ------------------------------------------------------------------------------------------
def test_cross_entropy_output_shapes_follow_paddle():
    x = _t(RNG.standard_normal((4, 5)))
    assert F.cross_entropy(x, _t([0, 1, 2, 3])).shape == []
    assert F.cross_entropy(x, _t([0, 1, 2, 3]), reduction="none").shape == [4]
    assert F.cross_entropy(x, _t([[0], [1], [2], [3]]), reduction="none").shape == [4, 1]
    assert F.cross_entropy(x, _t(np.full((4, 5), 0.2)), soft_label=True, reduction="none").shape == [4, 1]
    assert F.cross_entropy(x, _t([0, 1, 2, 3]), label_smoothing=0.1, reduction="none").shape == [4]
    seg = _t(RNG.standard_normal((2, 5, 3, 3)))
    assert F.cross_entropy(seg, _t(np.zeros((2, 3, 3), np.int64)), axis=1, reduction="none").shape == [2, 3, 3]
    assert F.cross_entropy(seg, _t(np.zeros((2, 1, 3, 3), np.int64)), axis=1, reduction="none").shape == [2, 1, 3, 3]
    loss, softmax = F.softmax_with_cross_entropy(x, _t([0, 1, 2, 3]), return_softmax=True)
    assert loss.shape == [4, 1] and softmax.shape == [4, 5]


def test_cross_entropy_mean_skips_ignored_labels_and_all_ignored_is_zero():
    x = _t(LOGITS, grad=True)
    labels = _t([2, -100, 1, -100])
    per_sample = F.cross_entropy(x, labels, reduction="none").numpy()
    assert per_sample[1] == 0 and per_sample[3] == 0
    assert float(F.cross_entropy(x, labels)) == pytest.approx((per_sample[0] + per_sample[2]) / 2, rel=1e-6)
    nothing = F.cross_entropy(x, _t([-100, -100, -100, -100]))
    assert float(nothing) == 0.0
    nothing.backward()
    assert np.all(x.grad.numpy() == 0)
    assert float(F.nll_loss(_t(LOGITS), _t([-100] * 4))) == 0.0


def test_cross_entropy_equals_nll_of_log_softmax():
    x = _t(LOGITS)
    log_p = x - oar.logsumexp(x, axis=1, keepdim=True)
    w = _t([0.2, 1.0, 3.0])
    for kwargs in ({}, {"weight": w}, {"ignore_index": 0}, {"weight": w, "ignore_index": 2, "reduction": "sum"}):
        np.testing.assert_allclose(F.cross_entropy(x, _t(LABELS), **kwargs).numpy(),
                                   F.nll_loss(log_p, _t(LABELS), **kwargs).numpy(), rtol=1e-6, err_msg=str(kwargs))


def test_cross_entropy_accepts_float_class_indices_like_paddle():
    x = _t(LOGITS)
    assert float(F.cross_entropy(x, _t(LABELS.astype(np.float32)))) == pytest.approx(float(F.cross_entropy(x, _t(LABELS))))


def test_cross_entropy_is_stable_and_keeps_low_precision_dtypes():
    x = _t([[1000.0, -1000.0, 0.0], [-5e4, 5e4, 1.0]], grad=True)
    loss = F.cross_entropy(x, _t([0, 0]), reduction="none")
    np.testing.assert_allclose(loss.numpy(), [0.0, 1e5], rtol=1e-6)
    loss.sum().backward()
    assert np.all(np.isfinite(x.grad.numpy()))
    for dtype in ("float16", "bfloat16"):
        half = oar.cast(_t(LOGITS), dtype)
        out = F.cross_entropy(half, _t(LABELS))
        assert out.dtype == dtype
        assert float(oar.cast(out, "float32")) == pytest.approx(ref_cross_entropy(LOGITS, LABELS), rel=2e-2)


def test_binary_cross_entropy_clamps_its_logs_like_paddle():
    p = _t([0.0, 1.0, 1.0], grad=True)
    loss = F.binary_cross_entropy(p, _t([1.0, 0.0, 1.0]), reduction="none")
    np.testing.assert_allclose(loss.numpy(), [100.0, 100.0, 0.0])
    loss.sum().backward()
    assert np.all(np.isfinite(p.grad.numpy()))


def test_bce_with_logits_is_stable_for_huge_logits():
    x = _t([-1e4, 1e4, 80.0, -80.0], grad=True)
    loss = F.binary_cross_entropy_with_logits(x, _t([1.0, 0.0, 1.0, 0.0]), reduction="none")
    np.testing.assert_allclose(loss.numpy(), [1e4, 1e4, 0.0, 0.0], atol=1e-6)
    loss.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [-1.0, 1.0, 0.0, 0.0], atol=1e-6)


def test_smooth_l1_uses_paddles_delta_not_pytorchs_beta():
    # Paddle: delta * |d| - delta^2 / 2 = 4.0 (PyTorch's beta=2 would give |d| - beta / 2 = 2.0).
    out = F.smooth_l1_loss(_t([3.0, 1.0]), _t([0.0, 0.0]), delta=2.0, reduction="none")
    assert out.tolist() == [4.0, 0.5]


def test_kl_div_zero_target_adds_nothing():
    x = _t([[-1.0, -2.0]], grad=True)
    loss = F.kl_div(x, _t([[0.0, 1.0]]), reduction="sum")
    assert float(loss) == pytest.approx(2.0)
    loss.backward()
    assert x.grad.tolist() == [[0.0, -1.0]]
    assert F.kl_div(_t([[-1.0, -2.0], [-0.5, -0.1]]), _t([[0.5, 0.5], [0.2, 0.8]]), reduction="batchmean").shape == []


# ------------------------------------------------------------------------------------------
# ctc_loss
# ------------------------------------------------------------------------------------------
def _ctc_args(logits=CTC_LOGITS, grad=False):
    return (_t(logits, grad=grad), _t(CTC_LABELS), _t(CTC_INPUT_LENGTHS), _t(CTC_LABEL_LENGTHS))


def test_ctc_applies_softmax_itself_like_warpctc():
    log_softmax = CTC_LOGITS - np.log(np.exp(CTC_LOGITS).sum(-1, keepdims=True))
    np.testing.assert_allclose(F.ctc_loss(*_ctc_args(log_softmax), reduction="none").numpy(),
                               F.ctc_loss(*_ctc_args(), reduction="none").numpy(), rtol=1e-6)


def test_ctc_norm_by_times_scales_the_gradient_only():
    plain, normed = _ctc_args(grad=True), _ctc_args(grad=True)
    a = F.ctc_loss(*plain, reduction="sum")
    b = F.ctc_loss(*normed, reduction="sum", norm_by_times=True)
    assert float(a) == float(b)
    a.backward()
    b.backward()
    np.testing.assert_allclose(normed[0].grad.numpy(), plain[0].grad.numpy() / CTC_INPUT_LENGTHS[None, :, None],
                               rtol=1e-6)


def test_ctc_impossible_alignment_is_infinite_with_zero_gradient():
    x = _t(CTC_LOGITS[:2], grad=True)  # two steps cannot emit "2, 2" (it needs a blank between)
    loss = F.ctc_loss(x, _t(CTC_LABELS), _t([2, 2, 2]), _t(CTC_LABEL_LENGTHS), reduction="none")
    assert np.isinf(loss.numpy()[1]) and np.all(np.isfinite(loss.numpy()[[0, 2]]))
    loss[0].backward()
    assert np.all(x.grad.numpy()[:, 1] == 0)


def test_ctc_second_order_is_refused():
    x = _t(CTC_LOGITS, grad=True)
    loss = F.ctc_loss(x, *_ctc_args()[1:])
    with pytest.raises(GradientError, match="ctc_loss: second-order"):
        oar.grad(loss, x, create_graph=True)


# ------------------------------------------------------------------------------------------
# second-order gradients: the rules are written with oar ops
# ------------------------------------------------------------------------------------------
SECOND_ORDER = [
    ("cross_entropy", lambda x: F.cross_entropy(x, _t(LABELS), weight=_t([0.2, 1.0, 3.0]))),
    ("cross_entropy_soft", lambda x: F.cross_entropy(x, _t(np.full((4, 3), 1 / 3)), soft_label=True)),
    ("cross_entropy_probabilities", lambda x: F.cross_entropy(oar.exp(x) / oar.exp(x).sum(axis=1, keepdim=True),
                                                              _t(LABELS), use_softmax=False)),
    ("softmax_output", lambda x: (F.softmax_with_cross_entropy(x, _t(LABELS), return_softmax=True)[1] ** 2).sum()),
    ("nll_loss", lambda x: F.nll_loss(x * x, _t(LABELS))),
    ("bce", lambda x: F.binary_cross_entropy(oar.exp(x) / (1 + oar.exp(x)), _t(TARGET))),
    ("bce_with_logits", lambda x: F.binary_cross_entropy_with_logits(x, _t(TARGET), pos_weight=_t([0.5, 2.0, 1.0]))),
]


@pytest.mark.parametrize("fn", [f for _, f in SECOND_ORDER], ids=[n for n, _ in SECOND_ORDER])
def test_second_order_gradient_matches_finite_differences(fn):
    v = RNG.standard_normal(LOGITS.shape)

    def first_order(values):
        x = _t(values, grad=True)
        (g,) = oar.grad(fn(x), x, create_graph=True)
        return x, g

    x, g = first_order(LOGITS)
    (hv,) = oar.grad((g * _t(v)).sum(), x)
    eps = 1e-6
    numeric = np.zeros_like(LOGITS)
    for i in np.ndindex(*LOGITS.shape):
        step = np.zeros_like(LOGITS)
        step[i] = eps
        up = float((first_order(LOGITS + step)[1] * _t(v)).sum())
        down = float((first_order(LOGITS - step)[1] * _t(v)).sum())
        numeric[i] = (up - down) / (2 * eps)
    np.testing.assert_allclose(hv.numpy(), numeric, rtol=1e-5, atol=1e-7)


# ------------------------------------------------------------------------------------------
# errors
# ------------------------------------------------------------------------------------------
def test_unknown_reduction_is_refused_by_functions_and_layers():
    x = _t(LOGITS)
    with pytest.raises(ArgumentError, match=r"cross_entropy: reduction must be one of 'mean', 'sum', 'none', got 'avg'"):
        F.cross_entropy(x, _t(LABELS), reduction="avg")
    with pytest.raises(ArgumentError, match="mse_loss: reduction .* got 'batchmean'"):
        F.mse_loss(x, x, reduction="batchmean")
    with pytest.raises(ArgumentError, match="'batchmean'.*got 'elementwise'"):
        F.kl_div(x, x, reduction="elementwise")
    with pytest.raises(ArgumentError, match="CrossEntropyLoss: reduction .* got 'avg'"):
        oar.nn.CrossEntropyLoss(reduction="avg")
    with pytest.raises(ArgumentError, match="ctc_loss: reduction"):
        F.ctc_loss(*_ctc_args(), reduction="max")


def test_label_out_of_range_names_the_value_and_the_class_count():
    x = _t(LOGITS)  # 3 classes
    with pytest.raises(ArgumentError, match=r"cross_entropy: label value 7 is out of range \[0, 3\): "
                                            r"the input has 3 classes"):
        F.cross_entropy(x, _t([0, 1, 7, 2]))
    with pytest.raises(ArgumentError, match="label value -1 .* ignore_index=-100"):
        F.cross_entropy(x, _t([0, -1, 1, 2]))
    with pytest.raises(ArgumentError, match="label value 3 .* out of range"):
        F.cross_entropy(x, _t([0, 3, 1, 2]), label_smoothing=0.1)
    with pytest.raises(ArgumentError, match=r"nll_loss: label value 5 .* \[0, 3\)"):
        F.nll_loss(x, _t([5, 0, 1, 2]))


def test_label_shape_and_dtype_mismatches_are_explained():
    x = _t(LOGITS)  # [4, 3]
    with pytest.raises(ShapeError, match=r"cross_entropy: label shape \[3\] does not fit input shape \[4, 3\].*"
                                         r"\[4\] or \[4, 1\]"):
        F.cross_entropy(x, _t([0, 1, 2]))
    with pytest.raises(ShapeError, match="soft_label=True"):
        F.cross_entropy(x, _t(np.zeros((4, 3), np.int64)))
    with pytest.raises(ShapeError, match=r"soft labels must have the input's shape \[4, 3\], got \[4, 1\]"):
        F.cross_entropy(x, _t(np.ones((4, 1))), soft_label=True)
    with pytest.raises(DTypeError, match="cross_entropy: hard labels must be an integer tensor .* got bool"):
        F.cross_entropy(x, _t([True, False, True, True]))
    with pytest.raises(DTypeError, match="cross_entropy: input must be a floating tensor .* got int64"):
        F.cross_entropy(_t([[1, 2]]), _t([0]))
    with pytest.raises(DTypeError, match=r"label \(soft\) must be a floating tensor .* got int64"):
        F.cross_entropy(x, _t(np.zeros((4, 3), np.int64)), soft_label=True)
    with pytest.raises(ShapeError, match=r"nll_loss: label shape \[4, 1\] does not match input shape \[4, 3\]: "
                                         r"expected \[4\]"):
        F.nll_loss(x, _t(LABELS[:, None]))
    with pytest.raises(DTypeError, match="nll_loss: label must be an integer tensor"):
        F.nll_loss(x, _t(LABELS.astype(np.float32)))
    with pytest.raises(ShapeError, match=r"mse_loss: label shape \[4\] does not match input shape \[4, 1\]"):
        F.mse_loss(_t(np.zeros((4, 1))), _t(np.zeros(4)))
    with pytest.raises(ShapeError, match=r"binary_cross_entropy_with_logits: pos_weight shape \[2\]"):
        F.binary_cross_entropy_with_logits(x, _t(TARGET), pos_weight=_t([1.0, 2.0]))
    with pytest.raises(DTypeError, match="binary_cross_entropy: label must be a floating tensor"):
        F.binary_cross_entropy(_t(PROB), _t(TARGET.astype(np.int64)))


def test_bad_options_are_explained():
    x = _t(LOGITS)
    with pytest.raises(ShapeError, match=r"cross_entropy: weight must be a 1-D tensor with one value per class "
                                         r"\(3 classes\), got shape \[2\]"):
        F.cross_entropy(x, _t(LABELS), weight=_t([1.0, 2.0]))
    with pytest.raises(ArgumentError, match="ignore_index applies to hard labels only"):
        F.cross_entropy(x, _t(np.full((4, 3), 1 / 3)), soft_label=True, ignore_index=1)
    with pytest.raises(ArgumentError, match=r"label_smoothing must be in \[0, 1\], got 1.5"):
        F.cross_entropy(x, _t(LABELS), label_smoothing=1.5)
    with pytest.raises(ArgumentError, match=r"binary_cross_entropy: input must hold probabilities in \[0, 1\]"):
        F.binary_cross_entropy(_t([0.5, 1.5]), _t([1.0, 0.0]))
    with pytest.raises(ArgumentError, match="smooth_l1_loss: delta must be positive, got 0.0"):
        F.smooth_l1_loss(x, x, delta=0)
    with pytest.raises(ArgumentError, match="cross_entropy: axis=2 is out of range"):
        F.cross_entropy(x, _t(LABELS), axis=2)


def test_ctc_input_errors_are_explained():
    logits, labels, in_len, lab_len = _ctc_args()
    with pytest.raises(ArgumentError, match=r"ctc_loss: labels\[0, 1\] = 0 is not a class .* other than blank=0"):
        F.ctc_loss(logits, _t([[1, 0, 0], [2, 2, 1], [1, 0, 0]]), in_len, _t([2, 2, 0]))
    with pytest.raises(ArgumentError, match=r"ctc_loss: input_lengths must be in \[1, 5\]"):
        F.ctc_loss(logits, labels, _t([6, 4, 3]), lab_len)
    with pytest.raises(ArgumentError, match=r"ctc_loss: blank=3 is out of range \[0, 3\)"):
        F.ctc_loss(logits, labels, in_len, lab_len, blank=3)
    with pytest.raises(ShapeError, match=r"ctc_loss: label_lengths must have shape \[batch\] with batch=3"):
        F.ctc_loss(logits, labels, in_len, _t([1, 1]))


def test_an_in_place_change_of_the_loss_does_not_block_its_gradient():
    # The rules read only the saved softmax / gradient output, not the loss the user may scale in place.
    x = _t(LOGITS, grad=True)
    loss = F.softmax_with_cross_entropy(x, _t(LABELS))
    loss.scale_(2.0)
    loss.sum().backward()
    y = _t(LOGITS, grad=True)
    (F.softmax_with_cross_entropy(y, _t(LABELS)) * 2.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-6)
    logits = _t(CTC_LOGITS, grad=True)
    loss = F.ctc_loss(logits, *_ctc_args()[1:], reduction="none")
    loss.scale_(3.0)
    loss.sum().backward()
    assert np.all(np.isfinite(logits.grad.numpy()))


def test_a_kernel_registered_later_replaces_the_one_a_loss_op_resolved():
    """Ops of an Op subclass (LossOp) have their cached kernel lookups cleared like any op's when a
    plugin registers a kernel after they ran."""
    import types

    op = registries().ops.get("softmax_with_cross_entropy")
    logits, label = oar.randn([4, 3]), oar.to_tensor([[0], [1], [2], [0]])
    F.softmax_with_cross_entropy(logits, label)  # resolves and caches the kernel
    calls = []
    reference = op.reference

    def counting(*arrays, **attrs):
        calls.append(1)
        return reference(*arrays, **attrs)

    plugin = types.ModuleType("late_loss_kernel")
    plugin.oar_register_kernels = oar.hookimpl(
        lambda kernels: kernels.register("softmax_with_cross_entropy", "cpu", counting, dtypes=["float32"], priority=1000))
    oar.plugins.register(plugin, name="late_loss_kernel")
    try:
        F.softmax_with_cross_entropy(logits, label)
        assert calls == [1]
    finally:
        oar.plugins.unregister("late_loss_kernel")
    F.softmax_with_cross_entropy(logits, label)
    assert calls == [1]  # the reference again once the plugin is gone
