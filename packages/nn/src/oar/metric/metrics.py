"""Metrics with Paddle's protocol: ``compute`` (tensor ops on a batch) -> ``update`` (numpy state)
-> ``accumulate`` (the result so far) -> ``reset``.

``compute`` runs with oar ops on the model's outputs, so it works on any device; ``update`` takes
what ``compute`` returned (tensors or numpy arrays) and keeps its running state in numpy.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

import numpy as np

import oar
from oar.errors import ArgumentError, ShapeError


def _to_numpy(value, what: str) -> np.ndarray:
    if isinstance(value, oar.Tensor):
        return value.numpy(copy=False)
    if isinstance(value, (np.ndarray, np.generic, list, tuple, int, float)):
        return np.asarray(value)
    raise ArgumentError(f"{what}: expected a numpy ndarray or an oar.Tensor, got {type(value).__name__}")


def _as_tensor(value) -> oar.Tensor:
    return value if isinstance(value, oar.Tensor) else oar.to_tensor(np.asarray(value))


class Metric(abc.ABC):
    """Base class of metrics, as ``paddle.metric.Metric``.

    Subclasses implement ``name``, ``update``, ``accumulate`` and ``reset``; ``compute`` may turn a
    batch of model outputs and labels into the states ``update`` takes (by default it returns its
    arguments unchanged). ``oar.Model`` calls ``update(*compute(outputs, labels))`` per batch.

    >>> import numpy as np
    >>> import oar
    >>> class MeanError(oar.metric.Metric):
    ...     def __init__(self):
    ...         self.reset()
    ...     def name(self):
    ...         return "mean_error"
    ...     def reset(self):
    ...         self.total, self.count = 0.0, 0
    ...     def update(self, pred, label):
    ...         self.total += float(np.abs(np.asarray(pred) - np.asarray(label)).sum())
    ...         self.count += np.asarray(label).size
    ...     def accumulate(self):
    ...         return self.total / max(self.count, 1)
    >>> m = MeanError()
    >>> m.update(np.array([1.0, 2.0]), np.array([1.5, 2.0]))
    >>> m.accumulate()
    0.25
    """

    @abc.abstractmethod
    def reset(self) -> None:
        """Clear the running state."""

    @abc.abstractmethod
    def update(self, *args):
        """Add a batch to the running state (numpy or tensors); may return the batch's value."""

    @abc.abstractmethod
    def accumulate(self):
        """The metric over every batch since the last ``reset``."""

    @abc.abstractmethod
    def name(self):
        """The metric's name (a list of names for metrics with several values)."""

    def compute(self, *args):
        """Turn model outputs and labels into the arguments of ``update`` (identity by default)."""
        return args


class Accuracy(Metric):
    """Top-k classification accuracy, as ``paddle.metric.Accuracy``.

    ``compute(pred, label)`` returns the float32 "correct" matrix ``[N, maxk]`` (entry ``[i, j]``
    is 1 when the j-th highest score of sample i is its label); ``update(correct)`` adds it and
    returns the batch's accuracy (a float, or a list with one value per k); ``accumulate()``
    returns the accuracy since the last ``reset()``. Labels may be ``[N]``, ``[N, 1]`` or one-hot.

    >>> import oar
    >>> x = oar.to_tensor([[0.1, 0.2, 0.3, 0.4], [0.1, 0.4, 0.3, 0.2],
    ...                    [0.1, 0.2, 0.4, 0.3], [0.1, 0.2, 0.3, 0.4]])
    >>> y = oar.to_tensor([[0], [1], [2], [3]])
    >>> m = oar.metric.Accuracy()
    >>> m.update(m.compute(x, y))
    0.75
    >>> m.accumulate()
    0.75
    """

    def __init__(self, topk: int | Sequence[int] = (1,), name: str | None = None, *args, **kwargs):
        super().__init__()
        topk = (topk,) if isinstance(topk, (int, np.integer)) else tuple(topk)
        if not topk or any(isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1 for k in topk):
            raise ArgumentError(f"Accuracy: topk must be positive ints, got {topk!r}")
        self.topk = tuple(int(k) for k in topk)
        self.maxk = max(self.topk)
        self._init_name(name)
        self.reset()

    def compute(self, pred, label, *args) -> oar.Tensor:
        """The ``[..., maxk]`` float32 matrix of correct top-k predictions."""
        pred, label = _as_tensor(pred), _as_tensor(label)
        if pred.shape[-1] < self.maxk:
            raise ShapeError(f"Accuracy: top-{self.maxk} needs at least {self.maxk} classes, pred has shape {pred.shape}")
        order = oar.argsort(pred, axis=-1, descending=True)
        top = order[..., : self.maxk]
        if label.ndim == 1 or (label.ndim == 2 and label.shape[-1] == 1):
            label = label.reshape([-1, 1])
        elif label.shape[-1] != 1:  # one-hot or soft labels: the class is the largest entry
            label = oar.argmax(label, axis=-1, keepdim=True)
        return oar.cast(top == label.cast(top.dtype), "float32")

    def update(self, correct, *args):
        """Add a correct matrix from ``compute``; returns this batch's accuracy (per k)."""
        correct = _to_numpy(correct, "Accuracy.update")
        if correct.ndim == 0 or correct.shape[-1] < self.maxk:
            raise ShapeError(f"Accuracy.update: expected a [..., {self.maxk}] correct matrix, got shape {list(correct.shape)}")
        num_samples = int(np.prod(correct.shape[:-1]))
        accs = []
        for i, k in enumerate(self.topk):
            num_corrects = float(correct[..., :k].sum())
            accs.append(num_corrects / num_samples if num_samples else 0.0)
            self.total[i] += num_corrects
            self.count[i] += num_samples
        return accs[0] if len(self.topk) == 1 else accs

    def reset(self) -> None:
        self.total = [0.0] * len(self.topk)
        self.count = [0] * len(self.topk)

    def accumulate(self):
        res = [float(t) / c if c > 0 else 0.0 for t, c in zip(self.total, self.count)]
        return res[0] if len(self.topk) == 1 else res

    def _init_name(self, name: str | None) -> None:
        name = name or "acc"
        self._name = [f"{name}_top{k}" for k in self.topk] if self.maxk != 1 else [name]

    def name(self) -> list[str]:
        return self._name


def _binary_inputs(preds, labels, what: str) -> tuple[np.ndarray, np.ndarray]:
    preds = _to_numpy(preds, f"{what}: preds").reshape(-1)
    labels = _to_numpy(labels, f"{what}: labels").reshape(-1)
    if preds.shape != labels.shape:
        raise ShapeError(f"{what}: preds has {preds.size} values but labels has {labels.size}")
    # Paddle rounds half up: a score of 0.5 or more predicts the positive class.
    return np.floor(preds + 0.5).astype(np.int32), labels


class Precision(Metric):
    """Binary precision ``tp / (tp + fp)``, as ``paddle.metric.Precision``.

    ``update(preds, labels)`` takes scores in [0, 1] (``[N]`` or ``[N, 1]``; a score of 0.5 or
    more predicts 1) and 0/1 labels.

    >>> import numpy as np
    >>> import oar
    >>> m = oar.metric.Precision()
    >>> m.update(np.array([0.1, 0.5, 0.6, 0.9]), np.array([0, 0, 1, 1]))
    >>> round(m.accumulate(), 4)
    0.6667
    """

    def __init__(self, name: str = "precision", *args, **kwargs):
        super().__init__()
        self.tp = 0
        self.fp = 0
        self._name = name

    def update(self, preds, labels) -> None:
        preds, labels = _binary_inputs(preds, labels, "Precision.update")
        predicted = preds == 1
        self.tp += int(np.count_nonzero(predicted & (labels == 1)))
        self.fp += int(np.count_nonzero(predicted & (labels != 1)))

    def reset(self) -> None:
        self.tp = 0
        self.fp = 0

    def accumulate(self) -> float:
        ap = self.tp + self.fp
        return float(self.tp) / ap if ap != 0 else 0.0

    def name(self) -> str:
        return self._name


class Recall(Metric):
    """Binary recall ``tp / (tp + fn)``, as ``paddle.metric.Recall``.

    >>> import numpy as np
    >>> import oar
    >>> m = oar.metric.Recall()
    >>> m.update(np.array([0.1, 0.5, 0.6, 0.2]), np.array([0, 1, 1, 1]))
    >>> round(m.accumulate(), 4)
    0.6667
    """

    def __init__(self, name: str = "recall", *args, **kwargs):
        super().__init__()
        self.tp = 0
        self.fn = 0
        self._name = name

    def update(self, preds, labels) -> None:
        preds, labels = _binary_inputs(preds, labels, "Recall.update")
        positive = labels == 1
        self.tp += int(np.count_nonzero(positive & (preds == 1)))
        self.fn += int(np.count_nonzero(positive & (preds != 1)))

    def reset(self) -> None:
        self.tp = 0
        self.fn = 0

    def accumulate(self) -> float:
        recall = self.tp + self.fn
        return float(self.tp) / recall if recall != 0 else 0.0

    def name(self) -> str:
        return self._name


class Auc(Metric):
    """Area under the ROC curve of a binary classifier, as ``paddle.metric.Auc``.

    Scores are counted in ``num_thresholds + 1`` buckets (bucket ``int(score * num_thresholds)``
    of the positive or the negative histogram), and ``accumulate`` integrates the ROC curve over
    the bucket edges with the trapezoid rule, from the highest bucket down, exactly as Paddle does:
    the same inputs give the same value. ``update(preds, labels)`` takes ``preds`` of shape
    ``[N, 2]`` (column 1 is the positive class's probability, as Paddle) or ``[N]``/``[N, 1]``
    (the positive probability itself), with scores in [0, 1]; a nonzero label is positive.

    Only ``curve='ROC'`` is computed; Paddle accepts ``'PR'`` and silently returns the ROC area,
    oar says so instead.

    >>> import numpy as np
    >>> import oar
    >>> m = oar.metric.Auc()
    >>> m.update(np.array([0.1, 0.4, 0.35, 0.8]), np.array([0, 0, 1, 1]))
    >>> m.accumulate()
    0.75
    """

    def __init__(self, curve: str = "ROC", num_thresholds: int = 4095, name: str = "auc", *args, **kwargs):
        super().__init__()
        if curve != "ROC":
            raise ArgumentError(f"Auc: only curve='ROC' is implemented (as in Paddle), got curve={curve!r}")
        if isinstance(num_thresholds, bool) or not isinstance(num_thresholds, (int, np.integer)) or num_thresholds < 1:
            raise ArgumentError(f"Auc: num_thresholds must be a positive int, got {num_thresholds!r}")
        self._curve = curve
        self._num_thresholds = int(num_thresholds)
        self._name = name
        self.reset()

    def update(self, preds, labels) -> None:
        preds = _to_numpy(preds, "Auc.update: preds")
        labels = _to_numpy(labels, "Auc.update: labels").reshape(-1)
        if preds.ndim == 2 and preds.shape[1] == 2:
            scores = preds[:, 1]
        elif preds.ndim == 1 or (preds.ndim == 2 and preds.shape[1] == 1):
            scores = preds.reshape(-1)
        else:
            raise ShapeError(f"Auc.update: preds must be [N, 2], [N, 1] or [N], got shape {list(preds.shape)}")
        if scores.shape[0] != labels.shape[0]:
            raise ShapeError(f"Auc.update: {scores.shape[0]} predictions but {labels.shape[0]} labels")
        if scores.size and not (np.all(scores >= 0) and np.all(scores <= 1)):
            raise ArgumentError(
                f"Auc.update: scores must be probabilities in [0, 1], got values in "
                f"[{scores.min()}, {scores.max()}]"
            )
        # The product keeps the scores' dtype and int() truncates, as Paddle's per-sample loop.
        buckets = (scores * self._num_thresholds).astype(np.int64)
        positive = labels.astype(bool)
        n = self._num_thresholds + 1
        self._stat_pos += np.bincount(buckets[positive], minlength=n)
        self._stat_neg += np.bincount(buckets[~positive], minlength=n)

    @staticmethod
    def trapezoid_area(x1, x2, y1, y2):
        return abs(x1 - x2) * (y1 + y2) / 2.0

    def accumulate(self) -> float:
        # Cumulative counts from the highest bucket down; cumsum adds in the same order as
        # Paddle's loop, so the floating-point result is the same.
        tot_pos = np.cumsum(self._stat_pos[::-1])
        tot_neg = np.cumsum(self._stat_neg[::-1])
        if tot_pos.size == 0 or tot_pos[-1] <= 0.0 or tot_neg[-1] <= 0.0:
            return 0.0
        prev_pos = np.concatenate([[0.0], tot_pos[:-1]])
        prev_neg = np.concatenate([[0.0], tot_neg[:-1]])
        auc = np.cumsum(self.trapezoid_area(tot_neg, prev_neg, tot_pos, prev_pos))[-1]
        return float(auc / tot_pos[-1] / tot_neg[-1])

    def reset(self) -> None:
        self._stat_pos = np.zeros(self._num_thresholds + 1)
        self._stat_neg = np.zeros(self._num_thresholds + 1)

    def name(self) -> str:
        return self._name


def accuracy(input, label, k: int = 1, correct=None, total=None, name=None) -> oar.Tensor:
    """The fraction of samples whose label is among the ``k`` highest scores, as a 0-d float32
    tensor (``paddle.metric.accuracy``). ``input`` is ``[N, C]``, ``label`` ``[N, 1]`` or ``[N]``.
    ``correct`` and ``total`` are accepted for compatibility and, as in Paddle's dynamic mode,
    not written.

    >>> import oar
    >>> pred = oar.to_tensor([[0.2, 0.1, 0.4, 0.1, 0.1], [0.2, 0.3, 0.1, 0.15, 0.25]])
    >>> label = oar.to_tensor([[2], [0]])
    >>> float(oar.metric.accuracy(pred, label, k=1))
    0.5
    """
    input, label = _as_tensor(input), _as_tensor(label)
    if input.ndim != 2:
        raise ShapeError(f"accuracy: input must be [sample_number, class_dim], got shape {input.shape}")
    if label.size != input.shape[0]:
        raise ShapeError(f"accuracy: label must hold one class per sample ({input.shape[0]}), got shape {label.shape}")
    if not 1 <= k <= input.shape[1]:
        raise ArgumentError(f"accuracy: k must be in [1, {input.shape[1]}], got {k}")
    _, indices = oar.topk(input, k=k, axis=-1)
    hits = (indices == label.reshape([-1, 1]).cast(indices.dtype)).any(axis=-1)
    return hits.cast("float32").mean()


__all__ = ["Metric", "Accuracy", "Precision", "Recall", "Auc", "accuracy"]
