"""Loss layers of oar.nn: each holds its options and calls the function of the same name in
``oar.nn.functional``. Bad options (an unknown reduction, ...) fail when the layer is built."""

from __future__ import annotations

from oar.nn import functional as F
from oar.nn.functional import loss as _loss
from oar.nn.layer.layers import Layer


class _Loss(Layer):
    """Base of the loss layers: checks ``reduction`` when the layer is built."""

    _reductions = _loss._REDUCTIONS

    def __init__(self, reduction: str = "mean"):
        super().__init__()
        self.reduction = _loss._check_reduction(type(self).__name__, reduction, self._reductions)

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}"


class CrossEntropyLoss(_Loss):
    """Softmax cross-entropy (``F.cross_entropy``) with hard or soft labels, class weights,
    ``ignore_index``, label smoothing and any class ``axis``.

    >>> import oar
    >>> loss_fn = oar.nn.CrossEntropyLoss()
    >>> round(float(loss_fn(oar.to_tensor([[1.0, 2.0, 3.0]]), oar.to_tensor([2]))), 4)
    0.4076
    """

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", soft_label=False, axis=-1,
                 use_softmax=True, label_smoothing=0.0, name=None):
        super().__init__(reduction)
        self.weight = weight
        self.ignore_index = ignore_index
        self.soft_label = soft_label
        self.axis = axis
        self.use_softmax = use_softmax
        self.label_smoothing = label_smoothing
        self.name = name

    def forward(self, input, label):
        return F.cross_entropy(input, label, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, soft_label=self.soft_label, axis=self.axis,
                               use_softmax=self.use_softmax, label_smoothing=self.label_smoothing)

    def extra_repr(self) -> str:
        return (f"reduction={self.reduction!r}, ignore_index={self.ignore_index}, soft_label={self.soft_label}, "
                f"axis={self.axis}, use_softmax={self.use_softmax}, label_smoothing={self.label_smoothing}")


class NLLLoss(_Loss):
    """Negative log-likelihood of log-probabilities (``F.nll_loss``).

    >>> import oar
    >>> logp = oar.log(oar.to_tensor([[0.5, 0.5]]))
    >>> round(float(oar.nn.NLLLoss()(logp, oar.to_tensor([1]))), 4)
    0.6931
    """

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", name=None):
        super().__init__(reduction)
        self.weight = weight
        self.ignore_index = ignore_index
        self.name = name

    def forward(self, input, label):
        return F.nll_loss(input, label, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class BCELoss(_Loss):
    """Binary cross-entropy of probabilities (``F.binary_cross_entropy``).

    >>> import oar
    >>> round(float(oar.nn.BCELoss()(oar.to_tensor([0.8]), oar.to_tensor([1.0]))), 4)
    0.2231
    """

    def __init__(self, weight=None, reduction="mean", name=None):
        super().__init__(reduction)
        self.weight = weight
        self.name = name

    def forward(self, input, label):
        return F.binary_cross_entropy(input, label, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy of logits (``F.binary_cross_entropy_with_logits``), with ``pos_weight``.

    >>> import oar
    >>> round(float(oar.nn.BCEWithLogitsLoss()(oar.to_tensor([0.0]), oar.to_tensor([1.0]))), 4)
    0.6931
    """

    def __init__(self, weight=None, reduction="mean", pos_weight=None, name=None):
        super().__init__(reduction)
        self.weight = weight
        self.pos_weight = pos_weight
        self.name = name

    def forward(self, logit, label):
        return F.binary_cross_entropy_with_logits(logit, label, weight=self.weight, reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class MSELoss(_Loss):
    """Mean squared error (``F.mse_loss``).

    >>> import oar
    >>> float(oar.nn.MSELoss()(oar.to_tensor([1.0, 3.0]), oar.to_tensor([1.0, 1.0])))
    2.0
    """

    def __init__(self, reduction="mean"):
        super().__init__(reduction)

    def forward(self, input, label):
        return F.mse_loss(input, label, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error (``F.l1_loss``).

    >>> import oar
    >>> float(oar.nn.L1Loss()(oar.to_tensor([1.0, 3.0]), oar.to_tensor([1.0, 1.0])))
    1.0
    """

    def __init__(self, reduction="mean", name=None):
        super().__init__(reduction)
        self.name = name

    def forward(self, input, label):
        return F.l1_loss(input, label, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Paddle's smooth L1, the Huber loss with threshold ``delta`` (``F.smooth_l1_loss``).

    >>> import oar
    >>> float(oar.nn.SmoothL1Loss()(oar.to_tensor([3.0]), oar.to_tensor([0.0])))
    2.5
    """

    def __init__(self, reduction="mean", delta=1.0, name=None):
        super().__init__(reduction)
        self.delta = delta
        self.name = name

    def forward(self, input, label):
        return F.smooth_l1_loss(input, label, reduction=self.reduction, delta=self.delta)

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}, delta={self.delta}"


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence of log-probabilities from a target (``F.kl_div``); reduction
    may also be ``'batchmean'``.

    >>> import oar
    >>> logq = oar.log(oar.to_tensor([[0.5, 0.5]]))
    >>> round(float(oar.nn.KLDivLoss("batchmean")(logq, oar.to_tensor([[0.9, 0.1]]))), 4)
    0.3681
    """

    _reductions = _loss._REDUCTIONS + ("batchmean",)

    def __init__(self, reduction="mean", log_target=False):
        super().__init__(reduction)
        self.log_target = log_target

    def forward(self, input, label):
        return F.kl_div(input, label, reduction=self.reduction, log_target=self.log_target)


class MarginRankingLoss(_Loss):
    """``max(0, -label * (input - other) + margin)`` (``F.margin_ranking_loss``).

    >>> import oar
    >>> loss_fn = oar.nn.MarginRankingLoss(margin=1.0)
    >>> float(loss_fn(oar.to_tensor([2.0]), oar.to_tensor([1.5]), oar.to_tensor([1.0])))
    0.5
    """

    def __init__(self, margin=0.0, reduction="mean", name=None):
        super().__init__(reduction)
        self.margin = margin
        self.name = name

    def forward(self, input, other, label):
        return F.margin_ranking_loss(input, other, label, margin=self.margin, reduction=self.reduction)

    def extra_repr(self) -> str:
        return f"margin={self.margin}, reduction={self.reduction!r}"


class CTCLoss(_Loss):
    """Connectionist Temporal Classification loss (``F.ctc_loss``); the softmax over classes is
    applied inside, as in Paddle's warp-ctc.

    >>> import oar
    >>> loss_fn = oar.nn.CTCLoss(blank=0, reduction="sum")
    >>> logits = oar.zeros([2, 1, 2])
    >>> round(float(loss_fn(logits, oar.to_tensor([[1]]), oar.to_tensor([2]), oar.to_tensor([1]))), 4)
    0.2877
    """

    def __init__(self, blank=0, reduction="mean"):
        super().__init__(reduction)
        self.blank = blank

    def forward(self, log_probs, labels, input_lengths, label_lengths, norm_by_times=False):
        return F.ctc_loss(log_probs, labels, input_lengths, label_lengths, blank=self.blank,
                          reduction=self.reduction, norm_by_times=norm_by_times)

    def extra_repr(self) -> str:
        return f"blank={self.blank}, reduction={self.reduction!r}"


__all__ = [
    "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "MSELoss", "L1Loss", "SmoothL1Loss",
    "KLDivLoss", "MarginRankingLoss", "CTCLoss",
]
