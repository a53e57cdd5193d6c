"""The losses Paddle 3.3 added to oar.nn (embedding, margin, likelihood, hierarchical and adaptive
softmax, RNN-T): each against a numpy reference written from Paddle's formulas, gradients against
finite differences in float64, the layers against their functions, and the errors a user can
cause. Values that no numpy formula gives (Paddle's own conventions) are recorded from Paddle
3.3.1 and say so."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar.errors import ArgumentError, GradientError, ShapeError
from oar.testing import OpCase, check_grad, check_output

from .op_cases.sequence import RNNT_DATA, ref_rnnt_loss

RNG = np.random.default_rng(23)
REDUCTIONS = ("mean", "sum", "none")
PADDLE_RNNT_VALUE = [4.040315]  # Paddle 3.3.1, see test_rnnt_loss_paddle_values


def _reduce(loss, reduction):
    return {"mean": np.mean, "sum": np.sum, "none": lambda v: v}[reduction](loss)


def _t(a, grad=False):
    return oar.to_tensor(np.asarray(a), stop_gradient=not grad)


def _softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


def _log_softmax(x, axis=-1):
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


# ------------------------------------------------------------------------------------------
# numpy references, one sample at a time where the formula reads that way
# ------------------------------------------------------------------------------------------
def ref_cosine_embedding(a, b, y, margin):
    out = []
    for u, v, label in zip(a, b, y):
        cos = (u @ v) / np.sqrt((u @ u + 1e-11) * (v @ v + 1e-11))
        out.append(1 - cos if label == 1 else max(0.0, cos - margin) if label == -1 else 0.0)
    return np.array(out)


def ref_triplet(a, p, n, margin=1.0, norm=2.0, eps=1e-6, swap=False):
    def dist(u, v):
        return np.sum(np.abs(u - v + eps) ** norm, axis=-1) ** (1 / norm)

    negative = dist(a, n)
    if swap:
        negative = np.minimum(negative, dist(p, n))
    return np.maximum(dist(a, p) - negative + margin, 0)


def ref_multi_margin(x, y, p=1, margin=1.0, weight=None):
    out = []
    for row, label in zip(x, y):
        w = 1.0 if weight is None else weight[label]
        terms = [w * max(0.0, margin - row[label] + row[i]) ** p for i in range(len(row)) if i != label]
        out.append(sum(terms) / len(row))
    return np.array(out)


def ref_multi_label_margin(x, y):
    out = []
    for row, labels in zip(x, y):
        targets = []
        for c in labels:
            if c == -1:
                break
            targets.append(int(c))
        total = sum(max(0.0, 1 - (row[j] - row[i])) for j in targets for i in range(len(row)) if i not in targets)
        out.append(total / len(row))
    return np.array(out)


def ref_poisson(x, y, log_input=True, full=False, eps=1e-8):
    loss = np.exp(x) - y * x if log_input else x - y * np.log(x + eps)
    if full:
        safe = np.where(y > 1, y, 1.0)
        loss = loss + np.where(y > 1, safe * np.log(safe) - safe + 0.5 * np.log(2 * np.pi * safe), 0.0)
    return loss


def ref_gaussian(x, y, var, full=False, eps=1e-6):
    var = np.maximum(var, eps)
    loss = 0.5 * (np.log(var) + (x - y) ** 2 / var)
    return loss + 0.5 * np.log(2 * np.pi) if full else loss


def ref_focal(x, y, alpha=0.25, gamma=2.0):
    p = 1 / (1 + np.exp(-x))
    bce = -(y * np.log(p) + (1 - y) * np.log(1 - p))
    p_t = p * y + (1 - p) * (1 - y)
    return (alpha * y + (1 - alpha) * (1 - y)) * (1 - p_t) ** gamma * bce


def ref_npair(anchor, positive, labels, l2_reg):
    same = (labels[:, None] == labels[None, :]).astype(float)
    target = same / same.sum(axis=1, keepdims=True)
    ce = -(target * _log_softmax(anchor @ positive.T, axis=1)).sum(axis=1)
    l2 = np.mean(np.sum(anchor ** 2, 1)) + np.mean(np.sum(positive ** 2, 1))
    return 0.25 * l2_reg * l2 + np.mean((target * ce[:, None]).sum(axis=0))


def ref_dice(probs, labels, eps=1e-5):
    onehot = np.eye(probs.shape[-1])[labels[..., 0]]
    axes = tuple(range(1, probs.ndim))
    inter = (probs * onehot).sum(axis=axes)
    return np.mean(1 - 2 * inter / (probs.sum(axis=axes) + onehot.sum(axis=axes) + eps))


def ref_hsigmoid_default(x, labels, num_classes, weight, bias):
    """Walk the default tree: class c's code is c + num_classes; below its leading bit, bit j
    picks the side at node (code >> (j + 1)) - 1."""
    out = []
    for row, c in zip(x, labels):
        code, total, j = int(c) + num_classes, 0.0, 0
        while (code >> (j + 1)) > 0:
            node = (code >> (j + 1)) - 1
            z = np.clip(row @ weight[node] + bias[node, 0], -40, 40)
            total += _softplus(z) - ((code >> j) & 1) * z
            j += 1
        out.append([total])
    return np.array(out)


def ref_adaptive(x, labels, head_w, head_b, tails, cutoffs):
    head = _log_softmax(x @ head_w + head_b, axis=1)
    out = []
    for row, head_row, c in zip(x, head, labels):
        if c < cutoffs[0]:
            out.append(head_row[c])
            continue
        i = next(k for k in range(1, len(cutoffs)) if c < cutoffs[k])
        proj, w = tails[i - 1]
        cluster = _log_softmax((row @ proj) @ w)
        out.append(head_row[cutoffs[0] + i - 1] + cluster[c - cutoffs[i - 1]])
    out = np.array(out)
    return out, -out.mean()


# ------------------------------------------------------------------------------------------
# data: away from every kink (margins, max(0, .)), so that finite differences are exact
# ------------------------------------------------------------------------------------------
X = RNG.standard_normal((4, 5))
SIGNS = np.array([[1.0, -1.0, 1.0, 1.0, -1.0], [-1.0, -1.0, 1.0, -1.0, 1.0], [1.0, 1.0, -1.0, 1.0, -1.0],
                  [-1.0, 1.0, 1.0, -1.0, -1.0]])
BINARY = (SIGNS > 0).astype(np.float64)
A, B = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
PAIR_LABEL = np.array([1, -1, -1, 1])
POS, NEG = A + 0.3 * RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
CLASSES = np.array([3, 0, 4, 1])
MULTI_LABELS = np.array([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 0, 0, 0, 0], [4, 4, -1, 0, 0]])
SCORES = np.array([[0.1, 0.7, -0.4, 1.3, 0.25], [0.9, -1.1, 0.35, 0.6, -0.2], [1.7, 0.15, -0.65, 0.45, 2.2],
                   [-0.3, 0.8, 0.05, 1.45, -0.95]])  # every margin 1 - (x_j - x_i) away from 0
COUNTS = np.array([[0.0, 1.0, 3.0, 2.0, 5.0], [4.0, 0.0, 1.0, 2.0, 7.0], [1.0, 1.0, 0.0, 6.0, 2.0],
                   [3.0, 2.0, 1.0, 0.0, 1.0]])
RATES = RNG.uniform(0.5, 2.0, (4, 5))
VARIANCE = RNG.uniform(0.3, 2.0, (4, 5))
PROBS = RNG.uniform(0.1, 1.0, (3, 2, 4))
PROBS = PROBS / PROBS.sum(axis=-1, keepdims=True)
SEG_LABELS = np.array([[[1], [3]], [[0], [0]], [[2], [1]]])
EMB = RNG.standard_normal((5, 3))
HS_X, HS_W, HS_B = RNG.standard_normal((6, 3)), RNG.standard_normal((6, 3)), RNG.standard_normal((6, 1))
HS_LABELS = np.array([0, 3, 6, 2, 5, 1])
AD_X = RNG.standard_normal((6, 4))
AD_HEAD_W, AD_HEAD_B = RNG.standard_normal((4, 4)), RNG.standard_normal(4)
AD_TAILS = [(RNG.standard_normal((4, 2)), RNG.standard_normal((2, 3))),
            (RNG.standard_normal((4, 1)), RNG.standard_normal((1, 3)))]
AD_CUTOFFS = [2, 5, 8]
AD_LABELS = np.array([0, 1, 2, 4, 7, 6])


def _cases():
    cases = []
    for r in REDUCTIONS:
        cases += [
            OpCase("exp", lambda x, y, r=r: F.soft_margin_loss(x, y, reduction=r),
                   lambda x, y, r=r: _reduce(_softplus(-y * x), r), [X, SIGNS], grad_inputs=[0], id=f"soft_margin_{r}"),
            OpCase("where", lambda x, y, r=r: F.hinge_embedding_loss(x, y, margin=0.5, reduction=r),
                   lambda x, y, r=r: _reduce(np.where(y == 1, x, np.maximum(0, 0.5 - x)), r), [X, SIGNS],
                   grad_inputs=[0], id=f"hinge_embedding_{r}"),
            OpCase("sqrt", lambda a, b, y, r=r: F.cosine_embedding_loss(a, b, y, margin=0.1, reduction=r),
                   lambda a, b, y, r=r: _reduce(ref_cosine_embedding(a, b, y, 0.1), r), [A, B, PAIR_LABEL],
                   id=f"cosine_embedding_{r}"),
            OpCase("pow", lambda a, p, n, r=r: F.triplet_margin_loss(a, p, n, margin=2.0, reduction=r),
                   lambda a, p, n, r=r: _reduce(ref_triplet(a, p, n, margin=2.0), r), [A, POS, NEG],
                   id=f"triplet_margin_{r}"),
            OpCase("take_along_axis", lambda x, y, r=r: F.multi_margin_loss(x, y, reduction=r),
                   lambda x, y, r=r: _reduce(ref_multi_margin(x, y), r), [SCORES, CLASSES], id=f"multi_margin_{r}"),
            OpCase("take_along_axis", lambda x, y, r=r: F.multi_label_margin_loss(x, y, reduction=r),
                   lambda x, y, r=r: _reduce(ref_multi_label_margin(x, y), r), [SCORES, MULTI_LABELS],
                   id=f"multi_label_margin_{r}"),
            OpCase("exp", lambda x, y, r=r: F.multi_label_soft_margin_loss(x, y, reduction=r),
                   lambda x, y, r=r: _reduce((y * _softplus(-x) + (1 - y) * _softplus(x)).mean(-1), r), [X, BINARY],
                   grad_inputs=[0], id=f"multi_label_soft_margin_{r}"),
            OpCase("exp", lambda x, y, r=r: F.poisson_nll_loss(x, y, reduction=r),
                   lambda x, y, r=r: _reduce(ref_poisson(x, y), r), [X, COUNTS], grad_inputs=[0], id=f"poisson_{r}"),
            OpCase("log", lambda x, y, v, r=r: F.gaussian_nll_loss(x, y, v, reduction=r),
                   lambda x, y, v, r=r: _reduce(ref_gaussian(x, y, v), r), [X, SCORES, VARIANCE],
                   id=f"gaussian_nll_{r}"),
            OpCase("pow", lambda x, y, r=r: F.sigmoid_focal_loss(x, y, reduction=r),
                   lambda x, y, r=r: _reduce(ref_focal(x, y), r), [X, BINARY], grad_inputs=[0], id=f"focal_{r}"),
        ]
    cases += [
        OpCase("pow", lambda a, p, n: F.triplet_margin_loss(a, p, n, p=3.0, epsilon=1e-3, swap=True),
               lambda a, p, n: np.mean(ref_triplet(a, p, n, norm=3.0, eps=1e-3, swap=True)), [A, POS, NEG],
               id="triplet_margin_p3_swap"),
        OpCase("sqrt", lambda a, p, n: F.triplet_margin_with_distance_loss(a, p, n, margin=2.0, swap=True),
               lambda a, p, n: np.mean(ref_triplet(a, p, n, margin=2.0, swap=True)), [A, POS, NEG],
               id="triplet_margin_with_distance_default"),
        OpCase("abs", lambda a, p, n: F.triplet_margin_with_distance_loss(
                   a, p, n, distance_function=lambda u, v: oar.sum(oar.abs(u - v), axis=-1), margin=2.0),
               lambda a, p, n: np.mean(np.maximum(np.abs(a - p).sum(-1) - np.abs(a - n).sum(-1) + 2.0, 0)),
               [A, POS, NEG], id="triplet_margin_with_l1"),
        OpCase("pow", lambda x, y, w: F.multi_margin_loss(x, y, p=2, margin=0.5, weight=w, reduction="sum"),
               lambda x, y, w: np.sum(ref_multi_margin(x, y, p=2, margin=0.5, weight=w)),
               [SCORES, CLASSES, RNG.uniform(0.5, 2.0, 5)], id="multi_margin_p2_weight"),
        OpCase("exp", lambda x, y, w: F.multi_label_soft_margin_loss(x, y, weight=w),
               lambda x, y, w: np.mean((w * (y * _softplus(-x) + (1 - y) * _softplus(x))).mean(-1)),
               [X, BINARY, RNG.uniform(0.5, 2.0, 5)], grad_inputs=[0, 2], id="multi_label_soft_margin_weight"),
        OpCase("log", lambda x, y: F.poisson_nll_loss(x, y, log_input=False, full=True, reduction="none"),
               lambda x, y: ref_poisson(x, y, log_input=False, full=True), [RATES, COUNTS], grad_inputs=[0],
               id="poisson_rate_full"),
        OpCase("log", lambda x, y, v: F.gaussian_nll_loss(x, y, v, full=True, reduction="sum"),
               lambda x, y, v: np.sum(ref_gaussian(x, y, v[:, None], full=True)), [X, SCORES, VARIANCE[:, 0]],
               id="gaussian_nll_shared_variance"),
        OpCase("pow", lambda x, y, n: F.sigmoid_focal_loss(x, y, normalizer=n, alpha=0.4, gamma=1.5, reduction="none"),
               lambda x, y, n: ref_focal(x, y, 0.4, 1.5) / n, [X, BINARY, np.array([2.5])], grad_inputs=[0],
               id="focal_normalizer"),
        OpCase("subtract", F.square_error_cost, lambda x, y: (x - y) ** 2, [X, SCORES], id="square_error_cost"),
        OpCase("log", lambda p, y: F.log_loss(p, y, epsilon=1e-3),
               lambda p, y: -y * np.log(p + 1e-3) - (1 - y) * np.log(1 - p + 1e-3), [RATES / 4, BINARY],
               grad_inputs=[0], id="log_loss"),
        OpCase("matmul", lambda a, p, y: F.npair_loss(a, p, y, l2_reg=0.01),
               lambda a, p, y: ref_npair(a, p, y, 0.01), [A, POS, np.array([0, 1, 0, 2])], id="npair_loss"),
        OpCase("divide", F.dice_loss, ref_dice, [PROBS, SEG_LABELS], id="dice_loss"),
        OpCase("clip", lambda x, y, w, b: F.hsigmoid_loss(x, y, 7, w, b),
               lambda x, y, w, b: ref_hsigmoid_default(x, y, 7, w, b), [HS_X, HS_LABELS, HS_W, HS_B],
               id="hsigmoid_loss_default_tree"),
        OpCase("log_softmax", lambda x, y, hw, hb, p0, w0, p1, w1: F.adaptive_log_softmax_with_loss(
                   x, y, hw, [[p0, w0], [p1, w1]], AD_CUTOFFS, hb),
               lambda x, y, hw, hb, p0, w0, p1, w1: ref_adaptive(x, y, hw, hb, [(p0, w0), (p1, w1)], AD_CUTOFFS),
               [AD_X, AD_LABELS, AD_HEAD_W, AD_HEAD_B, *AD_TAILS[0], *AD_TAILS[1]], id="adaptive_log_softmax"),
    ]
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_loss_forward_and_gradient(case):
    for dtype in case.dtypes:
        check_output(case, dtype)
    check_grad(case)


def test_hsigmoid_loss_custom_tree():
    table = np.array([[0, 1, -1], [0, 2, 3], [4, -1, -1], [1, 3, 2]])
    code = np.array([[1, 0, 0], [0, 1, 1], [1, 0, 0], [1, 1, 0]])
    x, w, b = RNG.standard_normal((4, 3)), RNG.standard_normal((5, 3)), RNG.standard_normal((5, 1))
    expected = []
    for row, nodes, bits in zip(x, table, code):
        total = 0.0
        for node, bit in zip(nodes, bits):
            if node < 0:
                break
            z = row @ w[node] + b[node, 0]
            total += _softplus(z) - bit * z
        expected.append([total])
    got = F.hsigmoid_loss(_t(x), _t([0, 1, 2, 0]), 3, _t(w), _t(b), _t(table), _t(code))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


def test_hsigmoid_loss_matches_paddle_up_to_its_padding_term():
    # Paddle 3.3.1's value for 4 classes and zero weights: every path has the full depth 2, so
    # Paddle's log 2 per missing step does not arise and the two agree: 2 * log 2.
    got = F.hsigmoid_loss(oar.ones([2, 3]), _t([0, 3]), 4, oar.zeros([3, 3]))
    np.testing.assert_allclose(got.numpy(), [[1.38629436], [1.38629436]], rtol=1e-6)


def test_rnnt_loss_matches_enumerated_alignments_and_paddles_fastemit():
    x, labels, input_lengths, label_lengths = RNNT_DATA
    loss = F.rnnt_loss(_t(x), _t(labels), _t(input_lengths), _t(label_lengths), reduction="none")
    np.testing.assert_allclose(loss.numpy(), ref_rnnt_loss(x, labels, input_lengths, label_lengths, reduction="none"),
                               rtol=1e-10)
    # FastEmit scales only the label-emission part of the gradient (warp-transducer's rule, as
    # Paddle 3.3.1): the blank column keeps its gradient, the loss its value.
    grads = []
    for lam in (0.0, 0.5):
        t = _t(x, grad=True)
        F.rnnt_loss(t, _t(labels), _t(input_lengths), _t(label_lengths), fastemit_lambda=lam, reduction="sum").backward()
        grads.append(t.grad.numpy())
    np.testing.assert_allclose(grads[1][..., 0], grads[0][..., 0], rtol=1e-12)
    emitted = np.abs(grads[0][..., 1:]) > 0
    np.testing.assert_allclose(grads[1][..., 1:][emitted], 1.5 * grads[0][..., 1:][emitted], rtol=1e-12)


def test_rnnt_loss_paddle_values():
    # Paddle 3.3.1, rnnt_loss(x, reduction='none') with x = log_softmax(arange(16).reshape(1, 2, 2, 4) / 5):
    x = F.log_softmax(oar.reshape(oar.arange(16, dtype="float32"), [1, 2, 2, 4]) / 5.0, axis=-1)
    loss = F.rnnt_loss(x, _t(np.array([[2]], np.int32)), _t(np.array([2], np.int32)), _t(np.array([1], np.int32)),
                       reduction="none")
    np.testing.assert_allclose(loss.numpy(), PADDLE_RNNT_VALUE, rtol=1e-6)


def test_rnnt_loss_refuses_second_order_and_bad_lengths():
    x, labels, input_lengths, label_lengths = RNNT_DATA
    t = _t(x, grad=True)
    loss = F.rnnt_loss(t, _t(labels), _t(input_lengths), _t(label_lengths))
    with pytest.raises(GradientError, match="rnnt_loss"):
        oar.grad(loss, t, create_graph=True)
    with pytest.raises(ArgumentError, match="input_lengths"):
        F.rnnt_loss(_t(x), _t(labels), _t(np.array([9, 1, 1], np.int32)), _t(label_lengths))


def test_loss_layers_match_their_functions():
    pairs = [
        (oar.nn.SoftMarginLoss("sum"), (X, SIGNS), lambda x, y: F.soft_margin_loss(x, y, reduction="sum")),
        (oar.nn.HingeEmbeddingLoss(0.5), (X, SIGNS), lambda x, y: F.hinge_embedding_loss(x, y, margin=0.5)),
        (oar.nn.CosineEmbeddingLoss(0.1), (A, B, PAIR_LABEL), lambda a, b, y: F.cosine_embedding_loss(a, b, y, 0.1)),
        (oar.nn.TripletMarginLoss(p=1.0, swap=True), (A, POS, NEG),
         lambda a, p, n: F.triplet_margin_loss(a, p, n, p=1.0, swap=True)),
        (oar.nn.TripletMarginWithDistanceLoss(margin=0.5), (A, POS, NEG),
         lambda a, p, n: F.triplet_margin_with_distance_loss(a, p, n, margin=0.5)),
        (oar.nn.MultiMarginLoss(p=2), (SCORES, CLASSES), lambda x, y: F.multi_margin_loss(x, y, p=2)),
        (oar.nn.MultiLabelMarginLoss("none"), (SCORES, MULTI_LABELS),
         lambda x, y: F.multi_label_margin_loss(x, y, reduction="none")),
        (oar.nn.MultiLabelSoftMarginLoss(), (X, BINARY), F.multi_label_soft_margin_loss),
        (oar.nn.PoissonNLLLoss(full=True), (X, COUNTS), lambda x, y: F.poisson_nll_loss(x, y, full=True)),
        (oar.nn.GaussianNLLLoss(full=True), (X, SCORES, VARIANCE),
         lambda x, y, v: F.gaussian_nll_loss(x, y, v, full=True)),
        (oar.nn.RNNTLoss(reduction="sum"), tuple(RNNT_DATA), lambda *a: F.rnnt_loss(*a, reduction="sum")),
    ]
    for layer, data, fn in pairs:
        args = [_t(a) for a in data]
        np.testing.assert_allclose(layer(*args).numpy(), fn(*args).numpy(), rtol=1e-12, err_msg=type(layer).__name__)


def test_hsigmoid_layer_and_adaptive_softmax_layer():
    layer = oar.nn.HSigmoidLoss(3, 7)
    assert layer.weight.shape == [6, 3] and layer.bias.shape == [6, 1]
    np.testing.assert_allclose(
        layer(_t(HS_X), _t(HS_LABELS)).numpy(),
        ref_hsigmoid_default(HS_X, HS_LABELS, 7, layer.weight.numpy(), layer.bias.numpy()), rtol=1e-5)
    asm = oar.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4, 8], head_bias=True)
    assert [p.shape for p in asm.parameters()] == [[8, 6], [6], [8, 2], [2, 4], [8, 0], [0, 2]]
    x = _t(RNG.standard_normal((5, 8)).astype("float32"))
    labels = np.array([0, 3, 4, 8, 9])
    out, loss = asm(x, _t(labels))
    full = asm.log_prob(x)
    # every row of log_prob is a distribution, and forward reads it at the label
    np.testing.assert_allclose(np.exp(full.numpy()).sum(axis=1), np.ones(5), rtol=1e-5)
    np.testing.assert_allclose(out.numpy(), full.numpy()[np.arange(5), labels], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(loss), -out.numpy().mean(), rtol=1e-5)
    np.testing.assert_array_equal(asm.predict(x).numpy(), full.numpy().argmax(axis=1))


def test_paddle_recorded_values():
    # Paddle 3.3.1's values for these calls (float32)
    np.testing.assert_allclose(F.log_loss(_t([[0.3], [0.9]]), _t([[1.0], [0.0]])).numpy(),
                               [[1.20363951], [2.30158544]], rtol=1e-6)
    np.testing.assert_allclose(float(F.poisson_nll_loss(_t([0.0, 1.0]), _t([1.0, 2.0]))), 0.85914087, rtol=1e-6)
    np.testing.assert_allclose(float(F.gaussian_nll_loss(_t([1.0, 2.0]), _t([0.5, 1.0]), _t([0.5, 2.0]))), 0.25,
                               rtol=1e-6)
    head, tails = oar.zeros([4, 3]), [[oar.zeros([4, 2]), oar.zeros([2, 2])]]
    out, loss = F.adaptive_log_softmax_with_loss(oar.ones([2, 4]), _t([0, 3]), head, tails, [2, 4])
    np.testing.assert_allclose(out.numpy(), [-1.09861231, -1.79175949], rtol=1e-6)
    np.testing.assert_allclose(float(loss), 1.44518590, rtol=1e-6)


def test_gaussian_nll_loss_differentiates_the_variance():
    # Paddle cuts variance off the graph; oar gives its gradient, checked against finite differences.
    case = OpCase("log", lambda v: F.gaussian_nll_loss(_t(X), _t(SCORES), v), lambda v: 0.0, [VARIANCE])
    check_grad(case)


def test_errors_name_the_function_and_argument():
    with pytest.raises(ShapeError, match="cosine_embedding_loss"):
        F.cosine_embedding_loss(_t(A), _t(B[:2]), _t(PAIR_LABEL))
    with pytest.raises(ArgumentError, match="multi_margin_loss: label value 7"):
        F.multi_margin_loss(_t(SCORES), _t([7, 0, 0, 0]))
    with pytest.raises(ArgumentError, match="triplet_margin_loss: margin"):
        F.triplet_margin_loss(_t(A), _t(POS), _t(NEG), margin=-1.0)
    with pytest.raises(ShapeError, match="gaussian_nll_loss: variance"):
        F.gaussian_nll_loss(_t(X), _t(SCORES), _t(VARIANCE[:, :2]))
    with pytest.raises(ArgumentError, match="gaussian_nll_loss: variance has negative"):
        F.gaussian_nll_loss(_t(X), _t(SCORES), _t(-VARIANCE))
    with pytest.raises(ArgumentError, match="poisson_nll_loss: epsilon"):
        F.poisson_nll_loss(_t(X), _t(COUNTS), epsilon=0.0)
    with pytest.raises(ArgumentError, match="adaptive_log_softmax_with_loss: label value 9"):
        F.adaptive_log_softmax_with_loss(_t(AD_X), _t([9, 0, 0, 0, 0, 0]), _t(AD_HEAD_W),
                                         [[_t(a) for a in pair] for pair in AD_TAILS], AD_CUTOFFS)
    with pytest.raises(ArgumentError, match="AdaptiveLogSoftmaxWithLoss: cutoffs"):
        oar.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4, 12])
    with pytest.raises(ArgumentError, match="hsigmoid_loss: path_table and path_code"):
        F.hsigmoid_loss(_t(HS_X), _t(HS_LABELS), 7, _t(HS_W), path_table=_t(np.zeros((6, 2), np.int64)))
    with pytest.raises(ArgumentError, match="sigmoid_focal_loss: reduction"):
        F.sigmoid_focal_loss(_t(X), _t(BINARY), reduction="avg")


def test_composed_losses_capture_in_a_static_program():
    # the value checks (negative variance, labels in range) run eagerly only: to_static captures the losses
    def total(x, y, v, labels, a, p, n):
        return (F.gaussian_nll_loss(x, y, v) + F.multi_margin_loss(x, labels) + F.dice_loss(F.softmax(x), labels[:, None])
                + F.triplet_margin_with_distance_loss(a, p, n) + F.cosine_embedding_loss(a, p, _t(PAIR_LABEL)))

    args = [_t(X), _t(SCORES), _t(VARIANCE), _t(CLASSES), _t(A), _t(POS), _t(NEG)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to eager would warn
        static = oar.jit.to_static(total)(*args)
    np.testing.assert_allclose(static.numpy(), total(*args).numpy(), rtol=1e-10)
