"""oar.metric against hand-checked examples, independent numpy computations and Paddle's algorithms."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import oar
import oar.metric
import oar.metric.metrics
from oar.errors import ArgumentError, ShapeError


def numpy_topk_correct(pred: np.ndarray, label: np.ndarray, k: int) -> np.ndarray:
    """[N, k] matrix: is the j-th highest score of sample i its label (no ties in the inputs)."""
    order = np.argsort(-pred, axis=1)[:, :k]
    return (order == label.reshape(-1, 1)).astype(np.float32)


# -- Accuracy ------------------------------------------------------------------------------------
def test_accuracy_papers_example():
    x = oar.to_tensor(
        np.array([[0.1, 0.2, 0.3, 0.4], [0.1, 0.4, 0.3, 0.2], [0.1, 0.2, 0.4, 0.3], [0.1, 0.2, 0.3, 0.4]])
    )
    y = oar.to_tensor(np.array([[0], [1], [2], [3]]))
    m = oar.metric.Accuracy()
    correct = m.compute(x, y)
    assert isinstance(correct, oar.Tensor) and correct.dtype == oar.float32
    assert correct.numpy().tolist() == [[0.0], [1.0], [1.0], [1.0]]
    assert m.update(correct) == 0.75
    assert m.accumulate() == 0.75
    assert m.name() == ["acc"]


def test_accuracy_topk_matches_numpy_across_batches():
    rng = np.random.default_rng(0)
    m = oar.metric.Accuracy(topk=(1, 3), name="top")
    assert m.name() == ["top_top1", "top_top3"]
    hits = np.zeros(2)
    seen = 0
    for n in (7, 16, 5):
        pred = rng.random((n, 6)).astype(np.float32)
        label = rng.integers(0, 6, (n, 1))
        correct = m.compute(oar.to_tensor(pred), oar.to_tensor(label))
        expected = numpy_topk_correct(pred, label, 3)
        np.testing.assert_array_equal(correct.numpy(), expected)
        batch = m.update(correct)
        want = [expected[:, :1].sum() / n, expected.sum() / n]
        assert batch == pytest.approx(want)
        hits += [expected[:, :1].sum(), expected.sum()]
        seen += n
    assert m.accumulate() == pytest.approx(list(hits / seen))
    m.reset()
    assert m.accumulate() == [0.0, 0.0]


@pytest.mark.parametrize("form", ["flat", "column", "onehot", "numpy"])
def test_accuracy_label_forms(form):
    pred = np.array([[0.9, 0.1, 0.0], [0.2, 0.3, 0.5], [0.6, 0.3, 0.1]], np.float32)
    classes = np.array([0, 1, 2])
    label = {
        "flat": oar.to_tensor(classes),
        "column": oar.to_tensor(classes.reshape(-1, 1)),
        "onehot": oar.to_tensor(np.eye(3, dtype=np.float32)[classes]),
        "numpy": classes.reshape(-1, 1),
    }[form]
    m = oar.metric.Accuracy(topk=2)
    correct = m.compute(pred if form == "numpy" else oar.to_tensor(pred), label)
    assert correct.numpy().tolist() == [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]
    assert m.update(correct.numpy()) == pytest.approx(2 / 3)


def test_accuracy_update_takes_numpy_and_rejects_bad_input():
    m = oar.metric.Accuracy(topk=(1, 2))
    assert m.update(np.array([[1, 0], [0, 1], [0, 0], [0, 0]], np.float32)) == [0.25, 0.5]
    with pytest.raises(ShapeError):
        m.update(np.zeros((4, 1)))
    with pytest.raises(ArgumentError):
        oar.metric.Accuracy(topk=(0,))
    with pytest.raises(ShapeError, match="top-5"):
        oar.metric.Accuracy(topk=5).compute(oar.rand([2, 3]), oar.to_tensor([[0], [1]]))


# -- accuracy (functional) ----------------------------------------------------------------------
def test_functional_accuracy_example_and_numpy():
    pred = oar.to_tensor([[0.2, 0.1, 0.4, 0.1, 0.1], [0.2, 0.3, 0.1, 0.15, 0.25]])
    out = oar.metric.accuracy(pred, oar.to_tensor([[2], [0]]), k=1)
    assert out.shape == [] and out.dtype == oar.float32 and float(out) == 0.5
    assert float(oar.metric.accuracy(pred, oar.to_tensor([[2], [0]]), k=3)) == 1.0

    rng = np.random.default_rng(1)
    scores = rng.random((50, 10)).astype(np.float32)
    labels = rng.integers(0, 10, (50, 1))
    for k in (1, 3, 10):
        want = numpy_topk_correct(scores, labels, k).sum(axis=1).mean()
        got = oar.metric.accuracy(oar.to_tensor(scores), oar.to_tensor(labels), k=k)
        assert float(got) == pytest.approx(want)
    with pytest.raises(ArgumentError):
        oar.metric.accuracy(oar.to_tensor(scores), oar.to_tensor(labels), k=11)


# -- Precision and Recall -----------------------------------------------------------------------
def test_precision_recall_hand_checked():
    preds = np.array([0.1, 0.5, 0.49, 0.9, 0.7, 0.2])  # rounded half up: 0 1 0 1 1 0
    labels = np.array([0, 0, 1, 1, 1, 1])
    p, r = oar.metric.Precision(), oar.metric.Recall()
    p.update(preds, labels)
    r.update(oar.to_tensor(preds.reshape(-1, 1)), oar.to_tensor(labels.reshape(-1, 1)))
    assert (p.tp, p.fp) == (2, 1) and p.accumulate() == pytest.approx(2 / 3)
    assert (r.tp, r.fn) == (2, 2) and r.accumulate() == 0.5
    assert p.name() == "precision" and r.name() == "recall"
    p.reset(), r.reset()
    assert p.accumulate() == 0.0 and r.accumulate() == 0.0


def test_precision_recall_accumulate_like_numpy():
    rng = np.random.default_rng(2)
    p, r = oar.metric.Precision(), oar.metric.Recall()
    all_preds, all_labels = [], []
    for n in (10, 33, 1):
        preds, labels = rng.random(n), rng.integers(0, 2, n)
        p.update(preds, labels)
        r.update(preds, labels)
        all_preds.append(preds)
        all_labels.append(labels)
    predicted = np.concatenate(all_preds) >= 0.5
    actual = np.concatenate(all_labels) == 1
    assert p.accumulate() == pytest.approx((predicted & actual).sum() / predicted.sum())
    assert r.accumulate() == pytest.approx((predicted & actual).sum() / actual.sum())
    with pytest.raises(ShapeError):
        p.update(np.zeros(3), np.zeros(4))
    with pytest.raises(ArgumentError):
        r.update("0.5", [1])


# -- Auc ----------------------------------------------------------------------------------------
def paddle_auc_loop(preds: np.ndarray, labels: np.ndarray, num_thresholds: int) -> float:
    """Paddle's Auc.update/accumulate, transcribed as its per-sample and per-bucket loops."""
    stat_pos = np.zeros(num_thresholds + 1)
    stat_neg = np.zeros(num_thresholds + 1)
    for i, lbl in enumerate(labels):
        bin_idx = int(preds[i, 1] * num_thresholds)
        if lbl:
            stat_pos[bin_idx] += 1.0
        else:
            stat_neg[bin_idx] += 1.0
    tot_pos = tot_neg = auc = 0.0
    for idx in range(num_thresholds, -1, -1):
        tot_pos_prev, tot_neg_prev = tot_pos, tot_neg
        tot_pos += stat_pos[idx]
        tot_neg += stat_neg[idx]
        auc += abs(tot_neg - tot_neg_prev) * (tot_pos + tot_pos_prev) / 2.0
    return auc / tot_pos / tot_neg if tot_pos > 0.0 and tot_neg > 0.0 else 0.0


def pairwise_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """P(score of a positive > score of a negative) + half the ties: the Mann-Whitney AUC."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    diff = pos[:, None] - neg[None, :]
    return float(((diff > 0).sum() + 0.5 * (diff == 0).sum()) / diff.size)


@pytest.mark.parametrize("num_thresholds", [4095, 200, 7])
def test_auc_equals_paddles_loop_exactly(num_thresholds):
    rng = np.random.default_rng(num_thresholds)
    m = oar.metric.Auc(num_thresholds=num_thresholds)
    all_preds, all_labels = [], []
    for n in (64, 17, 128):
        p1 = rng.random((n, 1)).astype(np.float32)
        preds = np.concatenate([1 - p1, p1], axis=1)
        labels = (rng.random((n, 1)) < 0.3 + 0.5 * p1).astype(np.int64)  # informative scores
        m.update(preds=oar.to_tensor(preds), labels=oar.to_tensor(labels))
        all_preds.append(preds)
        all_labels.append(labels)
    preds, labels = np.concatenate(all_preds), np.concatenate(all_labels).reshape(-1)
    assert m.accumulate() == paddle_auc_loop(preds, labels, num_thresholds)
    buckets = (preds[:, 1] * num_thresholds).astype(np.int64)
    assert m.accumulate() == pytest.approx(pairwise_auc(buckets, labels), abs=1e-12)
    assert 0.5 < m.accumulate() < 1.0


def test_auc_hand_checked_and_edge_cases():
    m = oar.metric.Auc()
    assert m.name() == "auc" and m.accumulate() == 0.0
    m.update(np.array([[0.9, 0.1], [0.6, 0.4], [0.65, 0.35], [0.2, 0.8]]), np.array([[0], [0], [1], [1]]))
    assert m.accumulate() == 0.75
    m.update(np.array([0.35]), np.array([0]))  # a tie with a positive counts one half
    assert m.accumulate() == pytest.approx((3 + 1 + 0.5) / 6)
    m.reset()
    m.update(np.array([0.2, 0.9]), np.array([1, 1]))  # no negatives: 0, as Paddle
    assert m.accumulate() == 0.0
    perfect = oar.metric.Auc(num_thresholds=10)
    perfect.update(np.array([0.0, 0.05, 0.95, 1.0]), np.array([0, 0, 1, 1]))
    assert perfect.accumulate() == 1.0
    with pytest.raises(ArgumentError, match=r"\[0, 1\]"):
        m.update(np.array([1.5]), np.array([1]))
    with pytest.raises(ShapeError):
        m.update(np.zeros((2, 3)), np.zeros(2))
    with pytest.raises(ArgumentError, match="ROC"):
        oar.metric.Auc(curve="PR")


def test_metric_base_is_abstract_and_compute_is_identity():
    with pytest.raises(TypeError):
        oar.metric.Metric()

    class Count(oar.metric.Metric):
        def reset(self):
            self.n = 0

        def update(self, x):
            self.n += len(x)

        def accumulate(self):
            return self.n

        def name(self):
            return "count"

    c = Count()
    c.reset()
    c.update(*c.compute([1, 2, 3]))
    assert c.accumulate() == 3


def test_docstring_examples_run():
    for module in (oar.metric, oar.metric.metrics):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0 and result.attempted > 0
