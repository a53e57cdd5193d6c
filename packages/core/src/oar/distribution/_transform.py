"""Transforms (Paddle's ``paddle.distribution.*Transform``): invertible maps with the log-determinant
of their Jacobian, which ``TransformedDistribution`` uses for the change of variables.

Each transform says how many rightmost dims one of its events has on each side
(``_domain_event_rank``, ``_codomain_event_rank``): 0 for the elementwise ones, so that a chain
knows over which dims to sum each log-determinant. ``Independent`` and ``TransformedDistribution``,
the distributions made from another one, live here too: a transform applied to a distribution
makes one.
"""

from __future__ import annotations

import math

import numpy as np

from oar._engine.dtypes import get_default_dtype
from oar._engine.tensor import Tensor, to_tensor
from oar._ops.creation import ones_like, zeros, zeros_like
from oar._ops.elementwise import abs as absolute
from oar._ops.elementwise import exp, log, log1p, maximum, tanh
from oar._ops.elementwise import pow as power
from oar._ops.shape import concat, stack, unbind
from oar.distribution._base import Distribution, register_kl
from oar.distribution._base import kl_divergence as _kl_divergence
from oar.errors import ArgumentError, ShapeError


def softplus(x):
    """``log(1 + exp(x))`` without overflow."""
    return maximum(x, zeros_like(x)) + log1p(exp(-absolute(x)))


def sum_rightmost(value, n: int):
    """``value`` summed over its last ``n`` dims."""
    return value.sum(list(range(-n, 0))) if n > 0 else value


class Transform:
    """Base class of the transforms. ``t(x)`` applies it to a tensor, ``t(distribution)`` makes a
    ``TransformedDistribution``, ``t(other_transform)`` the chain ``t after other``.

    >>> import oar
    >>> t = oar.distribution.ExpTransform()
    >>> float(t.inverse(t(oar.to_tensor(1.5))))
    1.5
    """

    _domain_event_rank = 0
    _codomain_event_rank = 0

    def __call__(self, input):
        if isinstance(input, Distribution):
            return TransformedDistribution(input, [self])
        if isinstance(input, Transform):
            return ChainTransform([input, self])
        return self.forward(input)

    def forward(self, x):
        return self._forward(x)

    def inverse(self, y):
        return self._inverse(y)

    def forward_log_det_jacobian(self, x):
        """``log |det d forward(x) / dx|``."""
        return self._forward_log_det_jacobian(x)

    def inverse_log_det_jacobian(self, y):
        """``log |det d inverse(y) / dy|`` = ``-forward_log_det_jacobian(inverse(y))``."""
        return -self._forward_log_det_jacobian(self._inverse(y))

    def forward_shape(self, shape):
        return tuple(shape)

    def inverse_shape(self, shape):
        return tuple(shape)

    def _forward(self, x):
        raise NotImplementedError(f"{type(self).__name__} does not define forward")

    def _inverse(self, y):
        raise NotImplementedError(f"{type(self).__name__} is not invertible")

    def _forward_log_det_jacobian(self, x):
        raise NotImplementedError(f"{type(self).__name__} does not define a log-determinant")


class ExpTransform(Transform):
    """``y = exp(x)``."""

    def _forward(self, x):
        return exp(x)

    def _inverse(self, y):
        return log(y)

    def _forward_log_det_jacobian(self, x):
        return x


class AffineTransform(Transform):
    """``y = loc + scale * x``.

    >>> import oar
    >>> oar.distribution.AffineTransform(1.0, 2.0)(oar.to_tensor([0.0, 1.0])).tolist()
    [1.0, 3.0]
    """

    def __init__(self, loc, scale):
        self.loc = loc if isinstance(loc, Tensor) else to_tensor(np.asarray(loc, dtype=np.float32))
        self.scale = scale if isinstance(scale, Tensor) else to_tensor(np.asarray(scale, dtype=np.float32))

    def _forward(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def _forward_log_det_jacobian(self, x):
        return log(absolute(self.scale)) + zeros_like(x)

    def forward_shape(self, shape):
        return tuple(np.broadcast_shapes(tuple(shape), tuple(self.loc.shape), tuple(self.scale.shape)))

    inverse_shape = forward_shape


class PowerTransform(Transform):
    """``y = x ** power`` (for ``x > 0``)."""

    def __init__(self, power):
        self.power = power if isinstance(power, Tensor) else to_tensor(np.asarray(power, dtype=np.float32))

    def _forward(self, x):
        return power(x, self.power)

    def _inverse(self, y):
        return power(y, 1.0 / self.power)

    def _forward_log_det_jacobian(self, x):
        return log(absolute(self.power * power(x, self.power - 1.0)))


class SigmoidTransform(Transform):
    """``y = 1 / (1 + exp(-x))``."""

    def _forward(self, x):
        return 1.0 / (1.0 + exp(-x))

    def _inverse(self, y):
        return log(y) - log1p(-y)

    def _forward_log_det_jacobian(self, x):
        return -softplus(-x) - softplus(x)


class TanhTransform(Transform):
    """``y = tanh(x)``."""

    def _forward(self, x):
        return tanh(x)

    def _inverse(self, y):
        return 0.5 * (log1p(y) - log1p(-y))

    def _forward_log_det_jacobian(self, x):
        # log(1 - tanh(x)**2), written so that it stays finite for large |x|
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))


class AbsTransform(Transform):
    """``y = |x|``: not injective, so ``inverse(y)`` is the pair ``(-y, y)``."""

    def _forward(self, x):
        return absolute(x)

    def inverse(self, y):
        return -y, y

    def inverse_log_det_jacobian(self, y):
        zeros = zeros_like(y)
        return zeros, zeros


class ChainTransform(Transform):
    """The transforms applied in order: ``ChainTransform([f, g])(x) == g(f(x))``.

    >>> import oar
    >>> chain = oar.distribution.ChainTransform([oar.distribution.AffineTransform(0.0, 2.0),
    ...                                          oar.distribution.ExpTransform()])
    >>> round(float(chain.forward_log_det_jacobian(oar.to_tensor(1.0))), 6)  # log 2 + 2 x
    2.693147
    """

    def __init__(self, transforms):
        transforms = list(transforms)
        if not all(isinstance(t, Transform) for t in transforms):
            raise ArgumentError("ChainTransform: transforms must be a sequence of Transform instances")
        self.transforms = transforms

    @property
    def _domain_event_rank(self):
        if not self.transforms:
            return 0
        rank = self.transforms[-1]._codomain_event_rank
        for t in reversed(self.transforms):
            rank = max(rank - (t._codomain_event_rank - t._domain_event_rank), t._domain_event_rank)
        return rank

    @property
    def _codomain_event_rank(self):
        if not self.transforms:
            return 0
        rank = self.transforms[0]._domain_event_rank
        for t in self.transforms:
            rank = max(rank + t._codomain_event_rank - t._domain_event_rank, t._codomain_event_rank)
        return rank

    def _forward(self, x):
        for t in self.transforms:
            x = t.forward(x)
        return x

    def _inverse(self, y):
        for t in reversed(self.transforms):
            y = t.inverse(y)
        return y

    def _forward_log_det_jacobian(self, x):
        total = 0.0
        rank = self._domain_event_rank
        for t in self.transforms:
            total = total + sum_rightmost(t.forward_log_det_jacobian(x), rank - t._domain_event_rank)
            x = t.forward(x)
            rank += t._codomain_event_rank - t._domain_event_rank
        return total

    def forward_shape(self, shape):
        for t in self.transforms:
            shape = t.forward_shape(shape)
        return tuple(shape)

    def inverse_shape(self, shape):
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        return tuple(shape)


class IndependentTransform(Transform):
    """``base`` with its last ``reinterpreted_batch_rank`` dims made part of the event: the
    log-determinant sums over them."""

    def __init__(self, base, reinterpreted_batch_rank):
        if not isinstance(base, Transform):
            raise ArgumentError(f"IndependentTransform: base must be a Transform, got {type(base).__name__}")
        if isinstance(reinterpreted_batch_rank, bool) or not isinstance(reinterpreted_batch_rank, int) \
                or reinterpreted_batch_rank < 1:
            raise ArgumentError(f"IndependentTransform: reinterpreted_batch_rank must be a positive int, got "
                                f"{reinterpreted_batch_rank!r}")
        self.base, self.reinterpreted_batch_rank = base, reinterpreted_batch_rank

    @property
    def _domain_event_rank(self):
        return self.base._domain_event_rank + self.reinterpreted_batch_rank

    @property
    def _codomain_event_rank(self):
        return self.base._codomain_event_rank + self.reinterpreted_batch_rank

    def _forward(self, x):
        return self.base.forward(x)

    def _inverse(self, y):
        return self.base.inverse(y)

    def _forward_log_det_jacobian(self, x):
        return sum_rightmost(self.base.forward_log_det_jacobian(x), self.reinterpreted_batch_rank)

    def forward_shape(self, shape):
        return self.base.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base.inverse_shape(shape)


class ReshapeTransform(Transform):
    """Reshapes the event from ``in_event_shape`` to ``out_event_shape`` (same number of elements);
    volume-preserving, so its log-determinant is 0."""

    def __init__(self, in_event_shape, out_event_shape):
        self.in_event_shape, self.out_event_shape = tuple(in_event_shape), tuple(out_event_shape)
        if math.prod(self.in_event_shape) != math.prod(self.out_event_shape):
            raise ShapeError(f"ReshapeTransform: in_event_shape {list(self.in_event_shape)} and out_event_shape "
                             f"{list(self.out_event_shape)} must have the same number of elements")

    @property
    def _domain_event_rank(self):
        return len(self.in_event_shape)

    @property
    def _codomain_event_rank(self):
        return len(self.out_event_shape)

    def _reshaped(self, shape, source, target, op):
        shape = tuple(shape)
        if shape[len(shape) - len(source):] != source:
            raise ShapeError(f"ReshapeTransform.{op}: the shape {list(shape)} must end in {list(source)}")
        return shape[:len(shape) - len(source)] + target

    def _forward(self, x):
        return x.reshape(list(self._reshaped(x.shape, self.in_event_shape, self.out_event_shape, "forward")))

    def _inverse(self, y):
        return y.reshape(list(self._reshaped(y.shape, self.out_event_shape, self.in_event_shape, "inverse")))

    def _forward_log_det_jacobian(self, x):
        batch = list(x.shape[:len(x.shape) - len(self.in_event_shape)])
        return zeros(batch, dtype=x.dtype)

    def forward_shape(self, shape):
        return self._reshaped(shape, self.in_event_shape, self.out_event_shape, "forward_shape")

    def inverse_shape(self, shape):
        return self._reshaped(shape, self.out_event_shape, self.in_event_shape, "inverse_shape")


class SoftmaxTransform(Transform):
    """``y = softmax(x)`` over the last dim; ``inverse`` is ``log(y)`` (one of the preimages: the map
    is not injective, so it has no log-determinant)."""

    _domain_event_rank = 1
    _codomain_event_rank = 1

    def _forward(self, x):
        shifted = exp(x - x.max(-1, keepdim=True))
        return shifted / shifted.sum(-1, keepdim=True)

    def _inverse(self, y):
        return log(y)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ShapeError("SoftmaxTransform: the input must be at least 1-d")
        return tuple(shape)

    inverse_shape = forward_shape


class StickBreakingTransform(Transform):
    """Maps ``[..., k]`` reals onto the ``k + 1`` simplex by breaking a stick (``forward_shape``
    adds one to the last dim)."""

    _domain_event_rank = 1
    _codomain_event_rank = 1

    def _forward(self, x):
        k = x.shape[-1]
        offset = float(k + 1) - ones_like(x).cumsum(-1)
        z = 1.0 / (1.0 + exp(-(x - log(offset))))
        remaining = (1.0 - z).cumprod(-1)
        ones = ones_like(x[..., :1])
        return concat([z, ones], axis=-1) * concat([ones, remaining], axis=-1)

    def _inverse(self, y):
        cropped = y[..., :-1]
        offset = float(y.shape[-1]) - ones_like(cropped).cumsum(-1)
        left = 1.0 - cropped.cumsum(-1)
        return log(cropped) - log(left) + log(offset)

    def _forward_log_det_jacobian(self, x):
        y = self.forward(x)
        offset = float(x.shape[-1] + 1) - ones_like(x).cumsum(-1)
        shifted = x - log(offset)
        return (-shifted - softplus(-shifted) + log(y[..., :-1])).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ShapeError("StickBreakingTransform: the input must be at least 1-d")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ShapeError("StickBreakingTransform: the input must be at least 1-d")
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class StackTransform(Transform):
    """``transforms[i]`` applied to slice ``i`` along ``axis`` (elementwise transforms)."""

    def __init__(self, transforms, axis=0):
        transforms = list(transforms)
        if not transforms or not all(isinstance(t, Transform) for t in transforms):
            raise ArgumentError("StackTransform: transforms must be a non-empty sequence of Transform instances")
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise ArgumentError(f"StackTransform: axis must be an int, got {axis!r}")
        self.transforms, self.axis = transforms, axis

    def _each(self, method, x):
        if x.shape[self.axis] != len(self.transforms):
            raise ShapeError(f"StackTransform: the input {list(x.shape)} must have {len(self.transforms)} entries "
                             f"(one per transform) along axis {self.axis}")
        parts = unbind(x, axis=self.axis)
        return stack([getattr(t, method)(part) for t, part in zip(self.transforms, parts)], axis=self.axis)

    def _forward(self, x):
        return self._each("forward", x)

    def _inverse(self, y):
        return self._each("inverse", y)

    def _forward_log_det_jacobian(self, x):
        return self._each("forward_log_det_jacobian", x)

    def inverse_log_det_jacobian(self, y):
        return self._each("inverse_log_det_jacobian", y)


class Independent(Distribution):
    """``base`` with its last ``reinterpreted_batch_rank`` batch dims read as event dims:
    ``log_prob`` and ``entropy`` sum over them.

    >>> import oar
    >>> d = oar.distribution.Independent(oar.distribution.Normal(oar.zeros([2, 3]), 1.0), 1)
    >>> d.batch_shape, d.event_shape, d.log_prob(oar.zeros([2, 3])).shape
    ((2,), (3,), [2])
    """

    def __init__(self, base, reinterpreted_batch_rank):
        if not isinstance(base, Distribution):
            raise ArgumentError(f"Independent: base must be a Distribution, got {type(base).__name__}")
        rank = reinterpreted_batch_rank
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 < rank <= len(base.batch_shape):
            raise ArgumentError(f"Independent: reinterpreted_batch_rank must be an int in [1, "
                                f"{len(base.batch_shape)}] (the base's batch rank), got {rank!r}")
        self._base, self._reinterpreted_batch_rank = base, rank
        split = len(base.batch_shape) - rank
        super().__init__(base.batch_shape[:split], base.batch_shape[split:] + base.event_shape)

    @property
    def mean(self):
        return self._base.mean

    @property
    def variance(self):
        return self._base.variance

    def sample(self, shape=()):
        return self._base.sample(shape)

    def rsample(self, shape=()):
        return self._base.rsample(shape)

    def log_prob(self, value):
        return sum_rightmost(self._base.log_prob(value), self._reinterpreted_batch_rank)

    def entropy(self):
        return sum_rightmost(self._base.entropy(), self._reinterpreted_batch_rank)


class TransformedDistribution(Distribution):
    """The distribution of ``transforms`` applied in order to draws of ``base``; ``log_prob`` by the
    change of variables.

    >>> import math
    >>> import oar
    >>> from oar.distribution import ExpTransform, Normal, TransformedDistribution
    >>> d = TransformedDistribution(Normal(0.0, 1.0), [ExpTransform()])  # a log-normal
    >>> round(float(d.log_prob(oar.to_tensor(1.0))), 6) == round(-0.5 * math.log(2 * math.pi), 6)
    True
    """

    def __init__(self, base, transforms):
        if not isinstance(base, Distribution):
            raise ArgumentError(f"TransformedDistribution: base must be a Distribution, got {type(base).__name__}")
        transforms = list(transforms)
        if not all(isinstance(t, Transform) for t in transforms):
            raise ArgumentError("TransformedDistribution: transforms must be a sequence of Transform instances")
        self._base, self._transforms = base, transforms
        if not transforms:
            super().__init__(base.batch_shape, base.event_shape)
            return
        chain = ChainTransform(transforms)
        base_shape = base.batch_shape + base.event_shape
        if len(base_shape) < chain._domain_event_rank:
            raise ShapeError(f"TransformedDistribution: the base's shape {list(base_shape)} has fewer dims than "
                             f"the transforms' event rank {chain._domain_event_rank}")
        if chain._domain_event_rank > len(base.event_shape):
            base = Independent(base, chain._domain_event_rank - len(base.event_shape))
            self._base = base
        shape = chain.forward_shape(base.batch_shape + base.event_shape)
        event_rank = chain._codomain_event_rank + max(len(base.event_shape) - chain._domain_event_rank, 0)
        super().__init__(shape[:len(shape) - event_rank], shape[len(shape) - event_rank:])

    def sample(self, shape=()):
        x = self._base.sample(shape)
        for t in self._transforms:
            x = t.forward(x)
        return x.detach()

    def rsample(self, shape=()):
        x = self._base.rsample(shape)
        for t in self._transforms:
            x = t.forward(x)
        return x

    def log_prob(self, value):
        y = value if isinstance(value, Tensor) else to_tensor(np.asarray(value),
                                                                      dtype=get_default_dtype())
        log_prob = 0.0
        event_rank = len(self.event_shape)
        for t in reversed(self._transforms):
            x = t.inverse(y)
            event_rank += t._domain_event_rank - t._codomain_event_rank
            log_prob = log_prob - sum_rightmost(t.forward_log_det_jacobian(x), event_rank - t._domain_event_rank)
            y = x
        return log_prob + sum_rightmost(self._base.log_prob(y), event_rank - len(self._base.event_shape))


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p._reinterpreted_batch_rank != q._reinterpreted_batch_rank:
        raise NotImplementedError("kl_divergence: Independent distributions of different reinterpreted_batch_rank")
    return sum_rightmost(_kl_divergence(p._base, q._base), p._reinterpreted_batch_rank)
