"""The discrete distributions. Draws are not differentiable, so these have ``sample`` only
(Bernoulli also has Paddle's relaxed ``rsample``); ``log_prob`` and ``entropy`` differentiate."""

from __future__ import annotations

import numpy as np

from oar._engine.autograd import no_grad
from oar._engine.tensor import Tensor, to_tensor
from oar._ops.creation import arange, full_like, zeros, zeros_like
from oar._ops.elementwise import clip, exp, floor, isfinite, log, log1p, logical_and, where
from oar._ops.indexing import gather, take_along_axis
from oar._ops.random import bernoulli, default_generator, multinomial, rand
from oar._ops.reduction import logsumexp
from oar._ops.shape import broadcast_to
from oar.distribution._base import Distribution, ExponentialFamily, as_param, broadcast_params, register_kl
from oar.distribution._special import lgamma
from oar.errors import ArgumentError, ShapeError


def _xlogy(x, y):
    """``x * log(y)`` with ``0 * log(0) = 0`` (the entropy of a certain outcome is 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        product = x * log(y)
    return where(x == 0.0, zeros_like(product), product)


def _check_probs(probs, owner: str) -> None:
    values = probs.numpy()
    if values.size and not (np.all(values >= 0) and np.all(values <= 1)):
        raise ArgumentError(f"{owner}: probs must lie in [0, 1], got values from {values.min()} to {values.max()}")


class Bernoulli(ExponentialFamily):
    """1 with probability ``probs``, else 0.

    >>> import oar
    >>> d = oar.distribution.Bernoulli(0.25)
    >>> float(d.prob(oar.to_tensor(1.0))), float(d.variance)
    (0.25, 0.1875)
    """

    def __init__(self, probs, name=None):
        self.probs = as_param(probs, "probs", "Bernoulli")
        _check_probs(self.probs, "Bernoulli")
        self.name = name or "Bernoulli"
        eps = float(np.finfo(self.probs.dtype.np).eps)
        clipped = clip(self.probs, eps, 1.0 - eps)
        self.logits = log(clipped) - log1p(-clipped)
        super().__init__(tuple(self.probs.shape))

    @property
    def mean(self):
        return self.probs

    @property
    def variance(self):
        return self.probs * (1.0 - self.probs)

    def sample(self, shape=()):
        shape = self._extend_shape(shape)
        return bernoulli(broadcast_to(self.probs.detach(), list(shape)))

    def rsample(self, shape=(), temperature=1.0):
        """Paddle's relaxed (Gumbel-sigmoid) draws in ``(0, 1)``: differentiable, approaching 0/1
        draws as ``temperature`` goes to 0."""
        u = clip(rand(list(self._extend_shape(shape)), dtype=self.probs.dtype),
                     float(np.finfo(self.probs.dtype.np).tiny), 1.0 - float(np.finfo(self.probs.dtype.np).eps))
        logistic = log(u) - log1p(-u)
        return 1.0 / (1.0 + exp(-(self.logits + logistic) / temperature))

    def log_prob(self, value):
        value = self._value(value, self.probs)
        eps = float(np.finfo(self.probs.dtype.np).eps)
        p = clip(self.probs, eps, 1.0 - eps)
        return value * log(p) + (1.0 - value) * log1p(-p)

    def entropy(self):
        return -(_xlogy(self.probs, self.probs) + _xlogy(1.0 - self.probs, 1.0 - self.probs))

    def cdf(self, value):
        value = self._value(value, self.probs)
        below = zeros_like(value + self.probs)
        return where(value < 0.0, below, where(value < 1.0, 1.0 - self.probs + below, below + 1.0))


class Categorical(Distribution):
    """A distribution over ``0 .. k-1`` given by ``logits`` (``[..., k]``), as Paddle's.

    As in Paddle, ``prob``/``log_prob`` read ``logits`` as unnormalized probabilities
    (``logits / logits.sum(-1)``) while ``sample``, ``entropy`` and ``kl_divergence`` use
    ``softmax(logits)``.

    >>> import oar
    >>> d = oar.distribution.Categorical(oar.to_tensor([1.0, 3.0]))
    >>> d.probs(oar.to_tensor([1, 0])).tolist()
    [0.75, 0.25]
    """

    def __init__(self, logits, name=None):
        self.logits = as_param(logits, "logits", "Categorical")
        if len(self.logits.shape) < 1:
            raise ShapeError("Categorical: logits must have at least 1 dim (the categories), got a scalar")
        self.name = name or "Categorical"
        self._prob = self.logits / self.logits.sum(-1, keepdim=True)
        super().__init__(tuple(self.logits.shape[:-1]))

    def _softmax(self):
        shifted = self.logits - self.logits.max(-1, keepdim=True)
        return shifted - logsumexp(shifted, axis=-1, keepdim=True)

    def sample(self, shape=()):
        shape = self._extend_shape(shape)
        k = self.logits.shape[-1]
        flat = exp(self._softmax()).detach().reshape([-1, k])
        count = int(np.prod(shape[:len(shape) - len(self.batch_shape)], dtype=np.int64))
        draws = multinomial(flat, count, replacement=True) if count else zeros([flat.shape[0], 0], "int64")
        return draws.transpose([1, 0]).reshape(list(shape))

    def probs(self, value):
        """``logits / logits.sum(-1)`` at the category indices ``value``."""
        value = value if isinstance(value, Tensor) else to_tensor(np.asarray(value, dtype=np.int64))
        if len(self.logits.shape) == 1:
            return gather(self._prob, value.reshape([-1])).reshape(list(value.shape))
        return take_along_axis(self._prob, value.astype("int64").unsqueeze(-1), axis=-1,
                                   broadcast=True).squeeze(-1)

    def prob(self, value):
        return self.probs(value)

    def log_prob(self, value):
        return log(self.probs(value))

    def entropy(self):
        log_p = self._softmax()
        return -(exp(log_p) * log_p).sum(-1)


class Multinomial(Distribution):
    """Counts of ``total_count`` draws over the categories of ``probs`` (``[..., k]``, event ``[k]``).

    >>> import oar
    >>> oar.distribution.Multinomial(10, oar.to_tensor([0.2, 0.8])).mean.tolist()
    [2.0, 8.0]
    """

    def __init__(self, total_count, probs):
        if isinstance(total_count, bool) or not isinstance(total_count, (int, np.integer)) or total_count < 1:
            raise ArgumentError(f"Multinomial: total_count must be a positive int, got {total_count!r}")
        self.total_count = int(total_count)
        self.probs = as_param(probs, "probs", "Multinomial")
        if len(self.probs.shape) < 1:
            raise ShapeError("Multinomial: probs must have at least 1 dim (the categories), got a scalar")
        self.probs = self.probs / self.probs.sum(-1, keepdim=True)
        shape = tuple(self.probs.shape)
        super().__init__(shape[:-1], shape[-1:])

    @property
    def mean(self):
        return self.probs * float(self.total_count)

    @property
    def variance(self):
        return float(self.total_count) * self.probs * (1.0 - self.probs)

    def sample(self, shape=()):
        shape = self._extend_shape(shape)
        probs = np.broadcast_to(self.probs.numpy().astype(np.float64), shape)
        counts = default_generator().multinomial(self.total_count, probs)
        return to_tensor(counts.astype(self.probs.dtype.np))

    def log_prob(self, value):
        value = self._value(value, self.probs)
        n = float(self.total_count)
        return (lgamma(full_like(value.sum(-1), n + 1.0)) - lgamma(value + 1.0).sum(-1)
                + _xlogy(value, self.probs).sum(-1))

    def entropy(self):
        # H = -lgamma(n+1) - n sum p log p + sum_i E[lgamma(X_i + 1)], X_i ~ Binomial(n, p_i)
        n = self.total_count
        support = arange(0, n + 1, dtype=self.probs.dtype).reshape([-1] + [1] * len(self.probs.shape))
        marginal = Binomial(n, self.probs)
        pmf = exp(marginal.log_prob(support))
        expected = (pmf * lgamma(support + 1.0)).sum(0).sum(-1)
        return -lgamma(full_like(expected, n + 1.0)) - n * _xlogy(self.probs, self.probs).sum(-1) + expected


class Binomial(Distribution):
    """Successes in ``total_count`` trials of probability ``probs``.

    >>> import oar
    >>> float(oar.distribution.Binomial(10, 0.5).variance)
    2.5
    """

    def __init__(self, total_count, probs):
        self.probs = as_param(probs, "probs", "Binomial")
        _check_probs(self.probs, "Binomial")
        count = as_param(total_count, "total_count", "Binomial", dtype=self.probs.dtype)
        self.total_count, self.probs = broadcast_params("Binomial", total_count=count, probs=self.probs)
        super().__init__(tuple(self.probs.shape))

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def variance(self):
        return self.total_count * self.probs * (1.0 - self.probs)

    def sample(self, shape=()):
        shape = self._extend_shape(shape)
        draws = default_generator().binomial(np.broadcast_to(self.total_count.numpy().astype(np.int64), shape),
                                             np.broadcast_to(self.probs.numpy(), shape))
        return to_tensor(draws.astype(self.probs.dtype.np))

    def log_prob(self, value):
        k = self._value(value, self.probs)
        n = self.total_count
        return (lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0) + _xlogy(k, self.probs)
                + _xlogy(n - k, 1.0 - self.probs))

    def entropy(self):
        most = int(self.total_count.numpy().max(initial=0))
        support = arange(0, most + 1, dtype=self.probs.dtype).reshape([-1] + [1] * len(self.probs.shape))
        # outcomes above a batch member's total_count, or of probability 0, count 0
        with np.errstate(divide="ignore", invalid="ignore"):
            log_pmf = self.log_prob(support)
            possible = logical_and(support <= self.total_count, isfinite(log_pmf))
            terms = where(possible, exp(log_pmf) * log_pmf, zeros_like(log_pmf))
        return -terms.sum(0)


class Poisson(ExponentialFamily):
    """Counts with mean (and variance) ``rate``.

    >>> import oar
    >>> round(float(oar.distribution.Poisson(2.0).prob(oar.to_tensor(0.0))), 6)  # exp(-2)
    0.135335
    """

    def __init__(self, rate):
        self.rate = as_param(rate, "rate", "Poisson")
        super().__init__(tuple(self.rate.shape))

    @property
    def mean(self):
        return self.rate

    @property
    def variance(self):
        return self.rate

    def sample(self, shape=()):
        shape = self._extend_shape(shape)
        draws = default_generator().poisson(np.broadcast_to(self.rate.numpy(), shape))
        return to_tensor(draws.astype(self.rate.dtype.np))

    def log_prob(self, value):
        value = self._value(value, self.rate)
        return _xlogy(value, self.rate) - self.rate - lgamma(value + 1.0)

    def entropy(self):
        # summed over a support that holds all but a negligible tail: rate + 30 standard deviations
        top = float(self.rate.numpy().max(initial=0.0))
        upper = int(np.ceil(top + 30.0 * np.sqrt(top) + 30.0))
        support = arange(0, upper + 1, dtype=self.rate.dtype).reshape([-1] + [1] * len(self.rate.shape))
        # a rate of 0 puts all mass on 0: the other terms are 0 * -inf, which count 0
        with np.errstate(divide="ignore", invalid="ignore"):
            log_pmf = self.log_prob(support)
            terms = where(isfinite(log_pmf), exp(log_pmf) * log_pmf, zeros_like(log_pmf))
        return -terms.sum(0)


class Geometric(Distribution):
    """Failures before the first success, each trial succeeding with ``probs``: ``P(k) = (1-p)^k p``.

    >>> import oar
    >>> float(oar.distribution.Geometric(0.5).mean)
    1.0
    """

    def __init__(self, probs):
        self.probs = as_param(probs, "probs", "Geometric")
        _check_probs(self.probs, "Geometric")
        super().__init__(tuple(self.probs.shape))

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, shape=()):
        with no_grad():
            return self.rsample(shape).detach()

    def rsample(self, shape=()):
        tiny = float(np.finfo(self.probs.dtype.np).tiny)
        u = clip(rand(list(self._extend_shape(shape)), dtype=self.probs.dtype), tiny, 1.0)
        return floor(log(u) / log1p(-self.probs))

    def pmf(self, k):
        return exp(self.log_pmf(k))

    def log_pmf(self, k):
        k = self._value(k, self.probs)
        return _xlogy(k, 1.0 - self.probs) + log(self.probs)

    def log_prob(self, value):
        return self.log_pmf(value)

    def entropy(self):
        p = self.probs
        return -(_xlogy(1.0 - p, 1.0 - p) + _xlogy(p, p)) / p

    def cdf(self, k):
        k = self._value(k, self.probs)
        return 1.0 - (1.0 - self.probs) ** (k + 1.0)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    eps = float(np.finfo(q.probs.dtype.np).eps)
    qp = clip(q.probs, eps, 1.0 - eps)
    return (_xlogy(p.probs, p.probs) - p.probs * log(qp) + _xlogy(1.0 - p.probs, 1.0 - p.probs)
            - (1.0 - p.probs) * log1p(-qp))


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    log_p, log_q = p._softmax(), q._softmax()
    return (exp(log_p) * (log_p - log_q)).sum(-1)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return _xlogy(p.rate, p.rate) - p.rate * log(q.rate) - p.rate + q.rate


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return (-p.entropy() - log(q.probs) - (1.0 / p.probs - 1.0) * log1p(-q.probs))


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if not np.array_equal(p.total_count.numpy(), q.total_count.numpy()):
        raise NotImplementedError("kl_divergence: Binomials of different total_count have no finite KL here")
    n = p.total_count
    return n * (_xlogy(p.probs, p.probs) - p.probs * log(q.probs)
                + _xlogy(1.0 - p.probs, 1.0 - p.probs) - (1.0 - p.probs) * log1p(-q.probs))
