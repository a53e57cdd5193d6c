"""Op cases of the loss family: the fused loss ops, through the public functions that use them.

The numpy references below loop over samples and write each formula out as Paddle documents it;
they share no code with the kernels. Logits are small and distinct, probabilities stay away from 0
and 1, so that finite differences are accurate.
"""

from __future__ import annotations

import numpy as np

import oar.nn.functional as F
from oar.testing import OpCase

RNG = np.random.default_rng(7)


def _randn(*shape):
    return RNG.standard_normal(shape)


def _uniform(low, high, *shape):
    return RNG.uniform(low, high, shape)


def _distribution(*shape, axis=-1):
    raw = _uniform(0.1, 1.0, *shape)
    return raw / raw.sum(axis=axis, keepdims=True)


# ------------------------------------------------------------------------------------------
# numpy references
# ------------------------------------------------------------------------------------------
def _rows(x, axis):
    """``x`` with the class axis last, flattened to [samples, C], and the sample shape."""
    moved = np.moveaxis(x, axis, -1)
    return moved.reshape(-1, moved.shape[-1]), moved.shape[:-1]


def ref_log_softmax_row(row):
    m = max(row)
    return row - (m + np.log(sum(np.exp(v - m) for v in row)))


def _reduce(per_sample, reduction, weights=None):
    if reduction == "none":
        return per_sample
    if reduction == "sum":
        return np.sum(per_sample)
    if weights is None:
        return np.mean(per_sample)
    total = np.sum(weights)
    return np.sum(per_sample) / (total if total != 0 else 1.0)


def ref_cross_entropy(x, label, weight=None, ignore_index=-100, reduction="mean", soft_label=False, axis=-1,
                      use_softmax=True, label_smoothing=0.0):
    """Paddle's documented formulas: loss_j = -sum_i y_i log p_i, weighted by weight[label_j]
    (hard) or sum_i weight_i y_i (soft); the mean divides by the summed weights of the counted
    samples (their number without a weight)."""
    axis = axis % x.ndim
    rows, sample_shape = _rows(x, axis)
    num_classes = rows.shape[1]
    if soft_label:
        targets, _ = _rows(label, axis)
        hard = None
    else:
        hard = label.reshape(-1)
        targets = np.zeros_like(rows)
        for j, c in enumerate(hard):
            if c != ignore_index:
                targets[j, c] = 1.0
    if label_smoothing:
        targets = targets * (1 - label_smoothing) + label_smoothing / num_classes
    losses, weights = [], []
    for j, (row, y) in enumerate(zip(rows, targets)):
        if hard is not None and hard[j] == ignore_index:
            losses.append(0.0)
            weights.append(0.0)
            continue
        log_p = ref_log_softmax_row(row) if use_softmax else np.log(row)
        w = 1.0 if weight is None else float(np.dot(y, weight))
        losses.append(-float(np.dot(y, log_p)) * w)
        weights.append(w)
    losses, weights = np.array(losses), np.array(weights)
    if reduction == "none":
        if soft_label:  # the input's shape with the class axis as 1
            return np.moveaxis(losses.reshape(sample_shape + (1,)), -1, axis)
        return losses.reshape(label.shape)
    if reduction == "sum":
        return np.sum(losses)
    return np.sum(losses) / (np.sum(weights) or 1.0)


def ref_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def ref_nll_loss(x, label, weight=None, ignore_index=-100, reduction="mean"):
    losses = np.zeros(label.shape)
    weights = np.zeros(label.shape)
    for position in np.ndindex(*label.shape):
        c = label[position]
        if c == ignore_index:
            continue
        n, rest = position[0], position[1:]
        w = 1.0 if weight is None else weight[c]
        losses[position] = -x[(n, c) + rest] * w
        weights[position] = w
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / (weights.sum() or 1.0)


def ref_bce(p, y, weight=None, reduction="mean"):
    with np.errstate(divide="ignore"):  # log(0) = -inf, clamped at -100 as Paddle does
        loss = -(y * np.maximum(np.log(p), -100) + (1 - y) * np.maximum(np.log(1 - p), -100))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def ref_bce_with_logits(x, y, weight=None, reduction="mean", pos_weight=None):
    sig = 1 / (1 + np.exp(-x))
    p = 1.0 if pos_weight is None else pos_weight
    loss = -(p * y * np.log(sig) + (1 - y) * np.log(1 - sig))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


# ------------------------------------------------------------------------------------------
# inputs
# ------------------------------------------------------------------------------------------
LOGITS = _randn(5, 4)
LABELS = np.array([0, 3, 1, 1, 2], np.int64)
LABELS_IGNORED = np.array([0, -100, 3, 2, -100], np.int64)
LABELS_IGNORE_1 = np.array([1, 0, 1, 2, 3], np.int64)  # ignore_index=1: a valid class id
CLASS_WEIGHT = np.array([0.5, 2.0, 1.0, 1.5])
SOFT = _distribution(5, 4)
SEG_LOGITS = _randn(2, 3, 2, 2)  # [N, C, H, W]
SEG_LABELS = np.array([[[0, 2], [1, -100]], [[2, 2], [0, 1]]], np.int64)
PROBS = _distribution(5, 4)
LOGP = np.log(_distribution(4, 3))
LOGP_SEG = np.log(_distribution(2, 3, 2, 2, axis=1))
BCE_P = _uniform(0.05, 0.95, 3, 4)
BCE_Y = RNG.integers(0, 2, (3, 4)).astype(np.float64)
SOFT_Y = _uniform(0.0, 1.0, 3, 4)
ELEM_WEIGHT = _uniform(0.5, 1.5, 3, 4)
POS_WEIGHT = np.array([0.5, 1.0, 2.0, 3.0])
BIG_LOGITS = np.array([[-200.0, 0.5, 60.0, 200.0], [1e3, -1e3, 0.0, 30.0]])

CE = "softmax_with_cross_entropy"
CASES = [
    # -- cross_entropy, hard labels --------------------------------------------------------
    OpCase(CE, lambda x, y: F.cross_entropy(x, y), lambda x, y: ref_cross_entropy(x, y), [LOGITS, LABELS],
           grad_inputs=[0], id="cross_entropy_mean"),
    OpCase(CE, lambda x, y: F.cross_entropy(x, y, reduction="sum"),
           lambda x, y: ref_cross_entropy(x, y, reduction="sum"), [LOGITS, LABELS], grad_inputs=[0],
           id="cross_entropy_sum"),
    OpCase(CE, lambda x, y: F.cross_entropy(x, y, reduction="none"),
           lambda x, y: ref_cross_entropy(x, y, reduction="none"), [LOGITS, LABELS], grad_inputs=[0],
           id="cross_entropy_none_label_n"),
    OpCase(CE, lambda x, y: F.cross_entropy(x, y, reduction="none"),
           lambda x, y: ref_cross_entropy(x, y, reduction="none"), [LOGITS, LABELS[:, None]], grad_inputs=[0],
           id="cross_entropy_none_label_n1"),
    OpCase(CE, lambda x, y, w: F.cross_entropy(x, y, weight=w),
           lambda x, y, w: ref_cross_entropy(x, y, weight=w), [LOGITS, LABELS, CLASS_WEIGHT], grad_inputs=[0, 2],
           id="cross_entropy_weight_mean"),
    OpCase(CE, lambda x, y, w: F.cross_entropy(x, y, weight=w, reduction="none"),
           lambda x, y, w: ref_cross_entropy(x, y, weight=w, reduction="none"), [LOGITS, LABELS, CLASS_WEIGHT],
           grad_inputs=[0, 2], id="cross_entropy_weight_none"),
    OpCase(CE, lambda x, y, w: F.cross_entropy(x, y, weight=w, reduction="sum"),
           lambda x, y, w: ref_cross_entropy(x, y, weight=w, reduction="sum"), [LOGITS, LABELS, CLASS_WEIGHT],
           grad_inputs=[0], id="cross_entropy_weight_sum"),
    OpCase(CE, lambda x, y: F.cross_entropy(x, y), lambda x, y: ref_cross_entropy(x, y),
           [LOGITS, LABELS_IGNORED], grad_inputs=[0], id="cross_entropy_ignore_index_mean"),
    OpCase(CE, lambda x, y, w: F.cross_entropy(x, y, weight=w, ignore_index=1),
           lambda x, y, w: ref_cross_entropy(x, y, weight=w, ignore_index=1),
           [LOGITS, LABELS_IGNORE_1, CLASS_WEIGHT], grad_inputs=[0], id="cross_entropy_ignore_valid_class_weighted"),
    OpCase(CE, lambda x, y: F.cross_entropy(x, y, ignore_index=1, reduction="none"),
           lambda x, y: ref_cross_entropy(x, y, ignore_index=1, reduction="none"),
           [LOGITS, LABELS_IGNORE_1], grad_inputs=[0], id="cross_entropy_ignore_valid_class_none"),
    # [N, C, H, W] segmentation, classes on axis 1
    OpCase(CE, lambda x, y, w: F.cross_entropy(x, y, weight=w, axis=1),
           lambda x, y, w: ref_cross_entropy(x, y, weight=w, axis=1),
           [SEG_LOGITS, SEG_LABELS, CLASS_WEIGHT[:3]], grad_inputs=[0], id="cross_entropy_axis1_weight_ignore"),
    OpCase(CE, lambda x, y: F.cross_entropy(x, y, axis=1, reduction="none"),
           lambda x, y: ref_cross_entropy(x, y, axis=1, reduction="none"), [SEG_LOGITS, SEG_LABELS],
           grad_inputs=[0], id="cross_entropy_axis1_none"),
    # label smoothing
    OpCase(CE, lambda x, y: F.cross_entropy(x, y, label_smoothing=0.2),
           lambda x, y: ref_cross_entropy(x, y, label_smoothing=0.2), [LOGITS, LABELS_IGNORED], grad_inputs=[0],
           id="cross_entropy_label_smoothing"),
    OpCase(CE, lambda x, y, w: F.cross_entropy(x, y, weight=w, label_smoothing=0.1, reduction="none"),
           lambda x, y, w: ref_cross_entropy(x, y, weight=w, label_smoothing=0.1, reduction="none"),
           [LOGITS, LABELS, CLASS_WEIGHT], grad_inputs=[0, 2], id="cross_entropy_label_smoothing_weight_none"),
    OpCase(CE, lambda x, y: F.cross_entropy(x, y, axis=1, label_smoothing=0.3),
           lambda x, y: ref_cross_entropy(x, y, axis=1, label_smoothing=0.3), [SEG_LOGITS, SEG_LABELS],
           grad_inputs=[0], id="cross_entropy_label_smoothing_axis1"),
    # soft labels: the label gets a gradient too
    OpCase(CE, lambda x, y: F.cross_entropy(x, y, soft_label=True),
           lambda x, y: ref_cross_entropy(x, y, soft_label=True), [LOGITS, SOFT], id="cross_entropy_soft_mean"),
    OpCase(CE, lambda x, y: F.cross_entropy(x, y, soft_label=True, reduction="none"),
           lambda x, y: ref_cross_entropy(x, y, soft_label=True, reduction="none"), [LOGITS, SOFT],
           id="cross_entropy_soft_none"),
    OpCase(CE, lambda x, y, w: F.cross_entropy(x, y, weight=w, soft_label=True, reduction="sum"),
           lambda x, y, w: ref_cross_entropy(x, y, weight=w, soft_label=True, reduction="sum"),
           [LOGITS, SOFT, CLASS_WEIGHT], id="cross_entropy_soft_weight_sum"),
    OpCase(CE, lambda x, y, w: F.cross_entropy(x, y, weight=w, soft_label=True),
           lambda x, y, w: ref_cross_entropy(x, y, weight=w, soft_label=True),
           [LOGITS, SOFT, CLASS_WEIGHT], id="cross_entropy_soft_weight_mean"),
    OpCase(CE, lambda x, y: F.cross_entropy(x, y, soft_label=True, axis=1, reduction="none"),
           lambda x, y: ref_cross_entropy(x, y, soft_label=True, axis=1, reduction="none"),
           [SEG_LOGITS, _distribution(2, 3, 2, 2, axis=1)], id="cross_entropy_soft_axis1_none"),
    # use_softmax=False: the input holds probabilities
    OpCase(CE, lambda p, y: F.cross_entropy(p, y, use_softmax=False),
           lambda p, y: ref_cross_entropy(p, y, use_softmax=False), [PROBS, LABELS_IGNORED], grad_inputs=[0],
           id="cross_entropy_probabilities"),
    OpCase(CE, lambda p, y: F.cross_entropy(p, y, use_softmax=False, soft_label=True, reduction="none"),
           lambda p, y: ref_cross_entropy(p, y, use_softmax=False, soft_label=True, reduction="none"),
           [PROBS, SOFT], id="cross_entropy_probabilities_soft"),
    OpCase(CE, lambda p, y: F.cross_entropy(p, y, use_softmax=False, label_smoothing=0.1),
           lambda p, y: ref_cross_entropy(p, y, use_softmax=False, label_smoothing=0.1), [PROBS, LABELS],
           grad_inputs=[0], id="cross_entropy_probabilities_label_smoothing"),
    # logits far apart: still finite and exact
    OpCase(CE, lambda x, y: F.cross_entropy(x, y, reduction="none"),
           lambda x, y: ref_cross_entropy(x, y, reduction="none"), [BIG_LOGITS, np.array([0, 1])],
           grad=False, id="cross_entropy_large_logits"),
    # the legacy API: loss and softmax, both differentiable
    OpCase(CE, lambda x, y: F.softmax_with_cross_entropy(x, y, return_softmax=True),
           lambda x, y: (ref_cross_entropy(x, y, reduction="none")[:, None], ref_softmax(x, -1)),
           [LOGITS, LABELS], grad_inputs=[0], id="softmax_with_cross_entropy_return_softmax"),
    OpCase(CE, lambda x, y: F.softmax_with_cross_entropy(x, y, soft_label=True, axis=0),
           lambda x, y: ref_cross_entropy(x, y, soft_label=True, axis=0, reduction="none"),
           [LOGITS, _distribution(5, 4, axis=0)], id="softmax_with_cross_entropy_soft_axis0"),
    OpCase(CE, lambda x, y: F.softmax_with_cross_entropy(x, y, ignore_index=2),
           lambda x, y: ref_cross_entropy(x, y, ignore_index=2, reduction="none"),
           [LOGITS, np.array([[2], [0], [3], [2], [1]])], grad_inputs=[0], id="softmax_with_cross_entropy_ignore"),
    # -- nll_loss ------------------------------------------------------------------------------
    OpCase("nll_loss", lambda x, y: F.nll_loss(x, y), lambda x, y: ref_nll_loss(x, y),
           [LOGP, np.array([2, 0, 1, 1])], grad_inputs=[0], id="nll_loss_mean"),
    OpCase("nll_loss", lambda x, y: F.nll_loss(x, y, reduction="none"),
           lambda x, y: ref_nll_loss(x, y, reduction="none"), [LOGP, np.array([2, 0, 1, 1])], grad_inputs=[0],
           id="nll_loss_none"),
    OpCase("nll_loss", lambda x, y, w: F.nll_loss(x, y, weight=w, ignore_index=0),
           lambda x, y, w: ref_nll_loss(x, y, weight=w, ignore_index=0),
           [LOGP, np.array([2, 0, 1, 1]), CLASS_WEIGHT[:3]], grad_inputs=[0, 2], id="nll_loss_weight_ignore_mean"),
    OpCase("nll_loss", lambda x, y, w: F.nll_loss(x, y, weight=w, reduction="sum"),
           lambda x, y, w: ref_nll_loss(x, y, weight=w, reduction="sum"),
           [LOGP, np.array([2, 0, 1, 1]), CLASS_WEIGHT[:3]], grad_inputs=[0], id="nll_loss_weight_sum"),
    OpCase("nll_loss", lambda x, y: F.nll_loss(x, y, reduction="none"),
           lambda x, y: ref_nll_loss(x, y, reduction="none"), [LOGP_SEG, np.clip(SEG_LABELS, 0, 2)],
           grad_inputs=[0], id="nll_loss_4d_none"),
    OpCase("nll_loss", lambda x, y: F.nll_loss(x, y), lambda x, y: ref_nll_loss(x, y),
           [LOGP_SEG, SEG_LABELS], grad_inputs=[0], id="nll_loss_4d_ignore_mean"),
    # -- binary_cross_entropy -------------------------------------------------------------------
    OpCase("bce_loss", lambda p, y: F.binary_cross_entropy(p, y), lambda p, y: ref_bce(p, y), [BCE_P, BCE_Y],
           id="binary_cross_entropy_mean"),
    OpCase("bce_loss", lambda p, y: F.binary_cross_entropy(p, y, reduction="none"),
           lambda p, y: ref_bce(p, y, reduction="none"), [BCE_P, SOFT_Y], id="binary_cross_entropy_soft_none"),
    OpCase("bce_loss", lambda p, y, w: F.binary_cross_entropy(p, y, weight=w, reduction="sum"),
           lambda p, y, w: ref_bce(p, y, w, reduction="sum"), [BCE_P, BCE_Y, ELEM_WEIGHT],
           id="binary_cross_entropy_weight_sum"),
    OpCase("bce_loss", lambda p, y: F.binary_cross_entropy(p, y, reduction="none"),
           lambda p, y: ref_bce(p, y, reduction="none"), [np.array([0.0, 1.0, 1.0, 0.0]), np.array([1.0, 0.0, 1.0, 0.0])],
           grad=False, id="binary_cross_entropy_clamped_log"),
    # -- binary_cross_entropy_with_logits -------------------------------------------------------
    OpCase("sigmoid_cross_entropy_with_logits", lambda x, y: F.binary_cross_entropy_with_logits(x, y),
           lambda x, y: ref_bce_with_logits(x, y), [_randn(3, 4), SOFT_Y], id="bce_with_logits_mean"),
    OpCase("sigmoid_cross_entropy_with_logits",
           lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction="none"),
           lambda x, y: ref_bce_with_logits(x, y, reduction="none"), [_randn(3, 4), BCE_Y],
           id="bce_with_logits_none"),
    OpCase("sigmoid_cross_entropy_with_logits",
           lambda x, y, p: F.binary_cross_entropy_with_logits(x, y, pos_weight=p, reduction="none"),
           lambda x, y, p: ref_bce_with_logits(x, y, pos_weight=p, reduction="none"),
           [_randn(3, 4), SOFT_Y, POS_WEIGHT], id="bce_with_logits_pos_weight_none"),
    OpCase("sigmoid_cross_entropy_with_logits",
           lambda x, y, w, p: F.binary_cross_entropy_with_logits(x, y, weight=w, pos_weight=p, reduction="sum"),
           lambda x, y, w, p: ref_bce_with_logits(x, y, w, reduction="sum", pos_weight=p),
           [_randn(3, 4), BCE_Y, ELEM_WEIGHT, POS_WEIGHT], id="bce_with_logits_weight_pos_weight_sum"),
    OpCase("sigmoid_cross_entropy_with_logits",
           lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction="none"),
           lambda x, y: np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x))),
           [BIG_LOGITS, np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.5, 1.0]])], grad=False,
           id="bce_with_logits_large_logits"),
]


# ------------------------------------------------------------------------------------------
# ctc_loss: against every alignment, enumerated
# ------------------------------------------------------------------------------------------
def _collapse(path, blank):
    out, previous = [], None
    for c in path:
        if c != previous and c != blank:
            out.append(c)
        previous = c
    return out


def ref_ctc_loss(logits, labels, input_lengths, label_lengths, blank=0, reduction="mean"):
    """-log of the summed probability of every path that collapses to the labels (softmax first,
    as warp-ctc)."""
    import itertools

    losses = []
    for b in range(logits.shape[1]):
        steps = int(input_lengths[b])
        target = [int(c) for c in labels[b, : int(label_lengths[b])]]
        prob = ref_softmax(logits[:steps, b, :], axis=-1)
        total = 0.0
        for path in itertools.product(range(logits.shape[2]), repeat=steps):
            if _collapse(path, blank) == target:
                total += float(np.prod([prob[t, c] for t, c in enumerate(path)]))
        losses.append(-np.log(total) if total > 0 else np.inf)
    losses = np.array(losses)
    if reduction == "mean":
        return np.mean(losses / np.maximum(label_lengths, 1))
    return _reduce(losses, reduction)


CTC_LOGITS = _randn(5, 3, 3)  # [T, B, C]
CTC_LABELS = np.array([[1, 2, 0], [2, 2, 1], [1, 0, 0]], np.int32)  # padded
CTC_INPUT_LENGTHS = np.array([5, 4, 3], np.int64)
CTC_LABEL_LENGTHS = np.array([2, 2, 0], np.int64)  # a repeated label (2, 2) needs a blank between; one empty

CASES += [
    OpCase("warpctc", lambda x, y, n, m, r=reduction: F.ctc_loss(x, y, n, m, reduction=r),
           lambda x, y, n, m, r=reduction: ref_ctc_loss(x, y, n, m, reduction=r),
           [CTC_LOGITS, CTC_LABELS, CTC_INPUT_LENGTHS, CTC_LABEL_LENGTHS], grad_inputs=[0], id=f"ctc_loss_{reduction}")
    for reduction in ("mean", "sum", "none")
] + [
    OpCase("warpctc", lambda x, y, n, m: F.ctc_loss(x, y, n, m, blank=2, reduction="none"),
           lambda x, y, n, m: ref_ctc_loss(x, y, n, m, blank=2, reduction="none"),
           [CTC_LOGITS, np.array([[0, 1], [1, 1], [0, 0]]), CTC_INPUT_LENGTHS, np.array([2, 2, 1])], grad_inputs=[0],
           id="ctc_loss_blank_last"),
]


# softmax_with_cross_entropy_grad: the hard-label backward (prob - onehot) * g, called directly
def _ce_grad(prob, label, g, ignore_index=-100, axis=-1):
    from oar.nn.functional.loss import softmax_with_cross_entropy_grad_op
    from oar.ops import dispatch

    return dispatch(softmax_with_cross_entropy_grad_op, (prob, label, g), {"ignore_index": ignore_index, "axis": axis})


def ref_ce_grad(prob, label, g, ignore_index=-100, axis=-1):
    p, shape = _rows(prob, axis)
    lab = np.moveaxis(label, axis, -1).reshape(-1)
    gv = np.moveaxis(g, axis, -1).reshape(-1)
    out = np.zeros_like(p)
    for r in range(p.shape[0]):
        if lab[r] == ignore_index:
            continue
        for c in range(p.shape[1]):
            out[r, c] = (p[r, c] - (1.0 if c == lab[r] else 0.0)) * gv[r]
    return np.moveaxis(out.reshape(*shape, p.shape[1]), -1, axis)


CE_LABELS = np.array([[2], [0], [4], [1], [3], [4]], np.int64)
CASES += [
    OpCase("softmax_with_cross_entropy_grad", _ce_grad, ref_ce_grad,
           [_distribution(6, 5), CE_LABELS, _randn(6, 1)], grad_inputs=[0, 2], id="softmax_with_cross_entropy_grad"),
    OpCase("softmax_with_cross_entropy_grad", lambda p, y, g: _ce_grad(p, y, g, ignore_index=4),
           lambda p, y, g: ref_ce_grad(p, y, g, ignore_index=4),
           [_distribution(6, 5), CE_LABELS.astype(np.int32), _randn(6, 1)], grad_inputs=[0, 2],
           id="softmax_with_cross_entropy_grad_ignore_index"),
    OpCase("softmax_with_cross_entropy_grad", lambda p, y, g: _ce_grad(p, y, g, axis=1),
           lambda p, y, g: ref_ce_grad(p, y, g, axis=1),
           [_distribution(2, 4, 3, axis=1), np.array([[[1, 3, 0]], [[2, 2, 1]]]), _randn(2, 1, 3)], grad_inputs=[0, 2],
           id="softmax_with_cross_entropy_grad_axis1"),
]

# An empty batch (issue #24), as Paddle 3: the mean over no sample is NaN, the sum is 0, and
# 'none' gives an empty loss of the label's shape.
CASES += [
    OpCase(CE, lambda x, y: F.cross_entropy(x, y), lambda x, y: np.array(np.nan), [_randn(0, 3), np.zeros(0, np.int64)],
           grad_inputs=[0], id="cross_entropy_mean_empty"),
    OpCase(CE, lambda x, y: F.cross_entropy(x, y, reduction="sum"), lambda x, y: np.array(0.0),
           [_randn(0, 3), np.zeros((0, 1), np.int64)], grad_inputs=[0], id="cross_entropy_sum_empty"),
    OpCase(CE, lambda x, y: F.cross_entropy(x, y, reduction="none"), lambda x, y: np.zeros((0,)),
           [_randn(0, 3), np.zeros(0, np.int64)], grad_inputs=[0], id="cross_entropy_none_empty"),
]
