"""Loss layers of oar.nn: each holds its options and calls the function of the same name in
``oar.nn.functional``. Bad options (an unknown reduction, ...) fail when the layer is built."""

from __future__ import annotations

import oar
from oar.errors import ArgumentError
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

    def __init__(self, reduction="mean", delta=1.0, is_huber=True, name=None):
        super().__init__(reduction)
        self.delta = delta
        self.is_huber = is_huber
        self.name = name

    def forward(self, input, label):
        return F.smooth_l1_loss(input, label, reduction=self.reduction, delta=self.delta, is_huber=self.is_huber)

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

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs, labels, input_lengths, label_lengths, norm_by_times=False):
        return F.ctc_loss(log_probs, labels, input_lengths, label_lengths, blank=self.blank,
                          reduction=self.reduction, norm_by_times=norm_by_times, zero_infinity=self.zero_infinity)

    def extra_repr(self) -> str:
        return f"blank={self.blank}, reduction={self.reduction!r}"


class SoftMarginLoss(_Loss):
    """The two-class logistic loss of labels 1 and -1 (``F.soft_margin_loss``).

    >>> import oar
    >>> round(float(oar.nn.SoftMarginLoss()(oar.to_tensor([0.0, 2.0]), oar.to_tensor([1, -1]))), 4)
    1.41
    """

    def __init__(self, reduction="mean", name=None):
        super().__init__(reduction)
        self.name = name

    def forward(self, input, label):
        return F.soft_margin_loss(input, label, reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """``input`` for similar pairs (label 1), ``max(0, margin - input)`` for dissimilar ones
    (label -1) (``F.hinge_embedding_loss``).

    >>> import oar
    >>> float(oar.nn.HingeEmbeddingLoss(reduction="sum")(oar.to_tensor([0.5, 0.5]), oar.to_tensor([1.0, -1.0])))
    1.0
    """

    def __init__(self, margin=1.0, reduction="mean", name=None):
        super().__init__(reduction)
        self.margin = margin
        self.name = name

    def forward(self, input, label):
        return F.hinge_embedding_loss(input, label, margin=self.margin, reduction=self.reduction)

    def extra_repr(self) -> str:
        return f"margin={self.margin}, reduction={self.reduction!r}"


class CosineEmbeddingLoss(_Loss):
    """``1 - cos`` for similar pairs (label 1), ``max(0, cos - margin)`` for dissimilar ones
    (label -1) (``F.cosine_embedding_loss``).

    >>> import oar
    >>> a = oar.to_tensor([[1.0, 0.0]])
    >>> float(oar.nn.CosineEmbeddingLoss()(a, a, oar.to_tensor([1])))
    0.0
    """

    def __init__(self, margin=0, reduction="mean", name=None):
        super().__init__(reduction)
        self.margin = margin
        self.name = name

    def forward(self, input1, input2, label):
        return F.cosine_embedding_loss(input1, input2, label, margin=self.margin, reduction=self.reduction)

    def extra_repr(self) -> str:
        return f"margin={self.margin}, reduction={self.reduction!r}"


class TripletMarginLoss(_Loss):
    """``max(0, d(a, p) - d(a, n) + margin)`` with the p-norm distance (``F.triplet_margin_loss``).

    >>> import oar
    >>> a, p, n = oar.to_tensor([[0.0, 0.0]]), oar.to_tensor([[3.0, 4.0]]), oar.to_tensor([[0.0, 1.0]])
    >>> round(float(oar.nn.TripletMarginLoss(epsilon=0.0)(a, p, n)), 4)
    5.0
    """

    def __init__(self, margin=1.0, p=2.0, epsilon=1e-06, swap=False, reduction="mean", name=None):
        super().__init__(reduction)
        self.margin, self.p, self.epsilon, self.swap = margin, p, epsilon, swap
        self.name = name

    def forward(self, input, positive, negative):
        return F.triplet_margin_loss(input, positive, negative, margin=self.margin, p=self.p, epsilon=self.epsilon,
                                     swap=self.swap, reduction=self.reduction)

    def extra_repr(self) -> str:
        return f"margin={self.margin}, p={self.p}, swap={self.swap}, reduction={self.reduction!r}"


class TripletMarginWithDistanceLoss(_Loss):
    """The triplet margin loss with any ``distance_function`` (``F.triplet_margin_with_distance_loss``).

    >>> import oar
    >>> a, p, n = oar.to_tensor([[0.0, 0.0]]), oar.to_tensor([[3.0, 4.0]]), oar.to_tensor([[0.0, 1.0]])
    >>> l1 = lambda x, y: oar.sum(oar.abs(x - y), axis=-1)
    >>> float(oar.nn.TripletMarginWithDistanceLoss(distance_function=l1)(a, p, n))
    7.0
    """

    def __init__(self, distance_function=None, margin=1.0, swap=False, reduction="mean", name=None):
        super().__init__(reduction)
        self.distance_function, self.margin, self.swap = distance_function, margin, swap
        self.name = name

    def forward(self, input, positive, negative):
        return F.triplet_margin_with_distance_loss(input, positive, negative, distance_function=self.distance_function,
                                                   margin=self.margin, swap=self.swap, reduction=self.reduction)

    def extra_repr(self) -> str:
        return f"margin={self.margin}, swap={self.swap}, reduction={self.reduction!r}"


class MultiMarginLoss(_Loss):
    """The multi-class hinge loss (``F.multi_margin_loss``).

    >>> import oar
    >>> x = oar.to_tensor([[0.1, 0.2, 0.4, 0.8]])
    >>> round(float(oar.nn.MultiMarginLoss()(x, oar.to_tensor([3]))), 4)
    0.325
    """

    def __init__(self, p=1, margin=1.0, weight=None, reduction="mean", name=None):
        super().__init__(reduction)
        self.p, self.margin, self.weight = p, margin, weight
        self.name = name

    def forward(self, input, label):
        return F.multi_margin_loss(input, label, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)

    def extra_repr(self) -> str:
        return f"p={self.p}, margin={self.margin}, reduction={self.reduction!r}"


class MultiLabelMarginLoss(_Loss):
    """The multi-label hinge loss, targets listed per row up to the first -1
    (``F.multi_label_margin_loss``).

    >>> import oar
    >>> x = oar.to_tensor([[0.1, 0.2, 0.4, 0.8]])
    >>> round(float(oar.nn.MultiLabelMarginLoss()(x, oar.to_tensor([[3, 0, -1, 1]]))), 4)
    0.85
    """

    def __init__(self, reduction="mean", name=None):
        super().__init__(reduction)
        self.name = name

    def forward(self, input, label):
        return F.multi_label_margin_loss(input, label, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_Loss):
    """The multi-label logistic loss averaged over classes (``F.multi_label_soft_margin_loss``).

    >>> import oar
    >>> loss_fn = oar.nn.MultiLabelSoftMarginLoss()
    >>> round(float(loss_fn(oar.to_tensor([[0.0, 2.0]]), oar.to_tensor([[1.0, 0.0]]))), 4)
    1.41
    """

    def __init__(self, weight=None, reduction="mean", name=None):
        super().__init__(reduction)
        self.weight = weight
        self.name = name

    def forward(self, input, label):
        return F.multi_label_soft_margin_loss(input, label, weight=self.weight, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """The Poisson negative log-likelihood (``F.poisson_nll_loss``).

    >>> import oar
    >>> round(float(oar.nn.PoissonNLLLoss()(oar.to_tensor([0.0, 1.0]), oar.to_tensor([1.0, 2.0]))), 4)
    0.8591
    """

    def __init__(self, log_input=True, full=False, epsilon=1e-08, reduction="mean", name=None):
        super().__init__(reduction)
        self.log_input, self.full, self.epsilon = log_input, full, epsilon
        self.name = name

    def forward(self, input, label):
        return F.poisson_nll_loss(input, label, log_input=self.log_input, full=self.full, epsilon=self.epsilon,
                                  reduction=self.reduction)

    def extra_repr(self) -> str:
        return f"log_input={self.log_input}, full={self.full}, reduction={self.reduction!r}"


class GaussianNLLLoss(_Loss):
    """The Gaussian negative log-likelihood with a predicted variance (``F.gaussian_nll_loss``).

    >>> import oar
    >>> x, y, var = oar.to_tensor([1.0, 2.0]), oar.to_tensor([0.5, 1.0]), oar.to_tensor([0.5, 2.0])
    >>> round(float(oar.nn.GaussianNLLLoss()(x, y, var)), 4)
    0.25
    """

    def __init__(self, full=False, epsilon=1e-06, reduction="mean", name=None):
        super().__init__(reduction)
        self.full, self.epsilon = full, epsilon
        self.name = name

    def forward(self, input, label, variance):
        return F.gaussian_nll_loss(input, label, variance, full=self.full, epsilon=self.epsilon,
                                   reduction=self.reduction)

    def extra_repr(self) -> str:
        return f"full={self.full}, epsilon={self.epsilon}, reduction={self.reduction!r}"


class HSigmoidLoss(Layer):
    """The hierarchical sigmoid loss (``F.hsigmoid_loss``) with its node weights
    ``[num_classes - 1, feature_size]`` and biases ``[num_classes - 1, 1]`` (``num_classes`` of
    each with ``is_custom=True``, where ``forward`` takes ``path_table`` and ``path_code``).

    >>> import oar
    >>> loss_fn = oar.nn.HSigmoidLoss(3, 4)
    >>> loss_fn.weight.shape, loss_fn(oar.ones([2, 3]), oar.to_tensor([0, 3])).shape
    ([3, 3], [2, 1])
    """

    def __init__(self, feature_size, num_classes, weight_attr=None, bias_attr=None, is_custom=False, is_sparse=False,
                 name=None):
        super().__init__()
        if num_classes < 2 and not is_custom:
            raise ArgumentError(f"HSigmoidLoss: num_classes must be at least 2 with the default tree, got {num_classes}")
        self._num_classes, self._is_custom, self._is_sparse = num_classes, is_custom, is_sparse
        nodes = num_classes if is_custom else num_classes - 1
        self.weight = self.create_parameter([nodes, feature_size], attr=weight_attr)
        self.bias = self.create_parameter([nodes, 1], attr=bias_attr, is_bias=True)
        self.name = name

    def forward(self, input, label, path_table=None, path_code=None):
        return F.hsigmoid_loss(input, label, self._num_classes, self.weight, self.bias, path_table=path_table,
                               path_code=path_code, is_sparse=self._is_sparse)

    def extra_repr(self) -> str:
        return f"num_classes={self._num_classes}, is_custom={self._is_custom}"


class AdaptiveLogSoftmaxWithLoss(Layer):
    """The adaptive softmax (``F.adaptive_log_softmax_with_loss``): a head over the
    ``cutoffs[0]`` most frequent classes and one entry per cluster, and per cluster ``i`` a
    projection to ``in_features // div_value ** (i + 1)`` features and a softmax over its classes.
    ``forward`` returns ``(log-probability of each label, loss)``; ``log_prob`` gives every
    class's log-probability and ``predict`` the most likely class.

    Unlike Paddle, the tail weights are registered parameters (``tail_weights_<i>_<j>``), so
    ``parameters()`` and ``state_dict()`` hold them.

    >>> import oar
    >>> asm = oar.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4, 8])
    >>> out, loss = asm(oar.rand([3, 8]), oar.to_tensor([0, 5, 9]))
    >>> out.shape, asm.log_prob(oar.rand([3, 8])).shape, asm.predict(oar.rand([3, 8])).shape
    ([3], [3, 10], [3])
    """

    def __init__(self, in_features, n_classes, cutoffs, weight_attr=None, bias_attr=None, div_value=4.0,
                 head_bias=False, name=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if (not cutoffs or cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ArgumentError(f"AdaptiveLogSoftmaxWithLoss: cutoffs must be unique increasing integers in "
                                f"[1, n_classes - 1] = [1, {n_classes - 1}], got {cutoffs}")
        self.in_features, self.n_classes, self.div_value = in_features, n_classes, div_value
        self.cutoffs = [int(c) for c in cutoffs] + [n_classes]
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head_weight = self.create_parameter([in_features, self.head_size], attr=weight_attr)
        self.head_bias = self.create_parameter([self.head_size], attr=bias_attr, is_bias=True) if head_bias else None
        self.tail_weights = []
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            pair = [self.create_parameter([in_features, hidden], attr=weight_attr),
                    self.create_parameter([hidden, self.cutoffs[i + 1] - self.cutoffs[i]], attr=weight_attr)]
            for j, weight in enumerate(pair):
                self.add_parameter(f"tail_weights_{i}_{j}", weight)
            self.tail_weights.append(pair)
        self.name = name

    def forward(self, input, label):
        return F.adaptive_log_softmax_with_loss(input, label, self.head_weight, self.tail_weights, self.cutoffs,
                                                self.head_bias)

    def log_prob(self, input):
        """The log-probability of every class, ``[N, n_classes]``."""
        head_logprob = F.log_softmax(F.linear(input, self.head_weight, self.head_bias), axis=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i, (projection, out_weight) in enumerate(self.tail_weights):
            cluster_logprob = F.log_softmax(F.linear(F.linear(input, projection), out_weight), axis=1)
            parts.append(cluster_logprob + head_logprob[:, self.shortlist_size + i:self.shortlist_size + i + 1])
        return oar.concat(parts, axis=1)

    def predict(self, input):
        """The most likely class of each row, ``[N]``."""
        return oar.argmax(self.log_prob(input), axis=1)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, n_classes={self.n_classes}, cutoffs={self.cutoffs}"


class RNNTLoss(_Loss):
    """The RNN transducer loss of joint-network log-probabilities (``F.rnnt_loss``).

    >>> import oar
    >>> log_probs = oar.nn.functional.log_softmax(oar.zeros([1, 2, 2, 2]), axis=-1)
    >>> ids = oar.to_tensor([[1]], dtype="int32")
    >>> lengths = oar.to_tensor([2], dtype="int32"), oar.to_tensor([1], dtype="int32")
    >>> round(float(oar.nn.RNNTLoss()(log_probs, ids, *lengths)), 4)
    1.3863
    """

    def __init__(self, blank=0, fastemit_lambda=0.001, reduction="mean", name=None):
        super().__init__(reduction)
        self.blank, self.fastemit_lambda = blank, fastemit_lambda
        self.name = name

    def forward(self, input, label, input_lengths, label_lengths):
        return F.rnnt_loss(input, label, input_lengths, label_lengths, blank=self.blank,
                           fastemit_lambda=self.fastemit_lambda, reduction=self.reduction)

    def extra_repr(self) -> str:
        return f"blank={self.blank}, fastemit_lambda={self.fastemit_lambda}, reduction={self.reduction!r}"


__all__ = [
    "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "MSELoss", "L1Loss", "SmoothL1Loss",
    "KLDivLoss", "MarginRankingLoss", "CTCLoss", "SoftMarginLoss", "HingeEmbeddingLoss", "CosineEmbeddingLoss",
    "TripletMarginLoss", "TripletMarginWithDistanceLoss", "MultiMarginLoss", "MultiLabelMarginLoss",
    "MultiLabelSoftMarginLoss", "PoissonNLLLoss", "GaussianNLLLoss", "HSigmoidLoss", "AdaptiveLogSoftmaxWithLoss",
    "RNNTLoss",
]
