"""The continuous distributions, each composed of oar ops so that ``log_prob``, ``entropy`` and
``rsample`` differentiate with respect to the parameters."""

from __future__ import annotations

import math

import numpy as np

from oar import errors
from oar._engine.tensor import to_tensor
from oar._ops.creation import full_like, ones_like, zeros_like
from oar._ops.elementwise import abs as absolute
from oar._ops.elementwise import clip, erf, exp, log, log1p, logical_and, logical_or, sign, sqrt, tan, where
from oar._ops.elementwise import pow as power
from oar._ops.random import default_generator, rand, randn, uniform
from oar.distribution._base import (
    Distribution,
    ExponentialFamily,
    as_param,
    broadcast_params,
    float_params,
    register_kl,
)
from oar.distribution._special import digamma, lbeta, lgamma

_EULER_GAMMA = 0.5772156649015329


def _rand(dist, shape, like):
    """Uniform draws in ``(0, 1)`` of ``dist``'s extended shape (open at 0 so that logs stay finite)."""
    u = rand(list(dist._extend_shape(shape)), dtype=like.dtype)
    return clip(u, float(np.finfo(like.dtype.np).tiny), 1.0)


def _standard_gamma(concentration, shape):
    """Gamma(concentration, 1) draws from oar's generator (``oar.seed`` makes them reproducible)."""
    alpha = np.broadcast_to(concentration.numpy(), shape)
    draws = default_generator().standard_gamma(alpha).astype(concentration.dtype.np)
    return to_tensor(np.maximum(draws, np.finfo(draws.dtype).tiny))


class Normal(ExponentialFamily):
    """The normal distribution with mean ``loc`` and standard deviation ``scale``.

    >>> import oar
    >>> d = oar.distribution.Normal(0.0, 1.0)
    >>> round(float(d.log_prob(oar.to_tensor(0.0))), 6), round(float(d.entropy()), 6)
    (-0.918939, 1.418939)
    """

    def __init__(self, loc, scale, name=None):
        self.loc, self.scale = float_params("Normal", loc=loc, scale=scale)
        self.name = name or "Normal"
        super().__init__(tuple(self.loc.shape))

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return self.scale ** 2

    def sample(self, shape=(), seed=0):
        """Draws of ``shape + batch_shape``; a nonzero ``seed`` (Paddle's argument) gives the same
        draws on every call, 0 draws from oar's generator (``oar.seed``)."""
        if not seed:
            return super().sample(shape)
        z = np.random.default_rng(seed).standard_normal(self._extend_shape(shape))
        return (self.loc + self.scale * to_tensor(z.astype(self.loc.dtype.np))).detach()

    def rsample(self, shape=()):
        return self.loc + self.scale * randn(list(self._extend_shape(shape)), dtype=self.loc.dtype)

    def log_prob(self, value):
        value = self._value(value, self.loc)
        return -((value - self.loc) ** 2) / (2.0 * self.scale ** 2) - log(self.scale) - 0.5 * math.log(2 * math.pi)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + log(self.scale)

    def cdf(self, value):
        value = self._value(value, self.loc)
        return 0.5 * (1.0 + erf((value - self.loc) / (self.scale * math.sqrt(2.0))))


class LogNormal(Distribution):
    """``exp(X)`` for ``X ~ Normal(loc, scale)``.

    >>> import oar
    >>> round(float(oar.distribution.LogNormal(0.0, 1.0).mean), 6)  # exp(1/2)
    1.648721
    """

    def __init__(self, loc, scale):
        self._base = Normal(loc, scale)
        self.loc, self.scale = self._base.loc, self._base.scale
        super().__init__(self._base.batch_shape)

    @property
    def mean(self):
        return exp(self.loc + self.scale ** 2 / 2.0)

    @property
    def variance(self):
        return (exp(self.scale ** 2) - 1.0) * exp(2.0 * self.loc + self.scale ** 2)

    def rsample(self, shape=()):
        return exp(self._base.rsample(shape))

    def log_prob(self, value):
        value = self._value(value, self.loc)
        return self._base.log_prob(log(value)) - log(value)

    def entropy(self):
        return self._base.entropy() + self.loc


class Uniform(Distribution):
    """The uniform distribution on ``[low, high)``; ``log_prob`` is ``-inf`` outside.

    >>> import oar
    >>> d = oar.distribution.Uniform(0.0, 4.0)
    >>> float(d.prob(oar.to_tensor(1.0))), float(d.entropy()) == float(oar.log(oar.to_tensor(4.0)))
    (0.25, True)
    """

    def __init__(self, low, high, name=None):
        self.low, self.high = float_params("Uniform", low=low, high=high)
        self.name = name or "Uniform"
        super().__init__(tuple(self.low.shape))

    @property
    def mean(self):
        return (self.low + self.high) / 2.0

    @property
    def variance(self):
        return (self.high - self.low) ** 2 / 12.0

    def sample(self, shape=(), seed=0):
        """Draws of ``shape + batch_shape``; a nonzero ``seed`` (Paddle's argument) gives the same
        draws on every call, 0 draws from oar's generator (``oar.seed``)."""
        u = uniform(list(self._extend_shape(shape)), dtype=self.low.dtype, min=0.0, max=1.0, seed=seed)
        return (self.low + (self.high - self.low) * u).detach()

    def rsample(self, shape=()):
        u = rand(list(self._extend_shape(shape)), dtype=self.low.dtype)
        return self.low + (self.high - self.low) * u

    def log_prob(self, value):
        value = self._value(value, self.low)
        inside = logical_and(self.low <= value, value < self.high).astype(value.dtype)
        with np.errstate(divide="ignore"):  # log(0) = -inf outside the support, as Paddle
            return log(inside) - log(self.high - self.low)

    def entropy(self):
        return log(self.high - self.low)


class Exponential(ExponentialFamily):
    """The exponential distribution with ``rate`` (mean ``1 / rate``).

    >>> import oar
    >>> float(oar.distribution.Exponential(2.0).mean)
    0.5
    """

    def __init__(self, rate):
        self.rate = as_param(rate, "rate", "Exponential")
        super().__init__(tuple(self.rate.shape))

    @property
    def mean(self):
        return 1.0 / self.rate

    @property
    def variance(self):
        return 1.0 / self.rate ** 2

    def rsample(self, shape=()):
        return -log(_rand(self, shape, self.rate)) / self.rate

    def log_prob(self, value):
        value = self._value(value, self.rate)
        return log(self.rate) - self.rate * value

    def entropy(self):
        return 1.0 - log(self.rate)

    def cdf(self, value):
        return 1.0 - exp(-self.rate * self._value(value, self.rate))

    def icdf(self, value):
        return -log1p(-self._value(value, self.rate)) / self.rate


class Gamma(ExponentialFamily):
    """The gamma distribution with shape ``concentration`` and ``rate`` (mean ``concentration / rate``).

    >>> import oar
    >>> float(oar.distribution.Gamma(3.0, 2.0).variance)
    0.75
    """

    def __init__(self, concentration, rate):
        self.concentration, self.rate = broadcast_params(
            "Gamma", concentration=as_param(concentration, "concentration", "Gamma"),
            rate=as_param(rate, "rate", "Gamma"))
        super().__init__(tuple(self.rate.shape))

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def variance(self):
        return self.concentration / self.rate ** 2

    def sample(self, shape=()):
        return _standard_gamma(self.concentration, self._extend_shape(shape)) / self.rate.detach()

    def log_prob(self, value):
        value = self._value(value, self.rate)
        a, rate = self.concentration, self.rate
        return a * log(rate) + (a - 1.0) * log(value) - rate * value - lgamma(a)

    def entropy(self):
        a = self.concentration
        return a - log(self.rate) + lgamma(a) + (1.0 - a) * digamma(a)


class Chi2(Gamma):
    """The chi-squared distribution with ``df`` degrees of freedom: ``Gamma(df / 2, 1 / 2)``.

    >>> import oar
    >>> float(oar.distribution.Chi2(3.0).variance)
    6.0
    """

    def __init__(self, df):
        self.df = as_param(df, "df", "Chi2")
        super().__init__(self.df / 2.0, full_like(self.df, 0.5))


class Beta(ExponentialFamily):
    """The beta distribution on ``(0, 1)`` with concentrations ``alpha`` and ``beta``.

    >>> import oar
    >>> float(oar.distribution.Beta(2.0, 2.0).mean)
    0.5
    """

    def __init__(self, alpha, beta):
        self.alpha, self.beta = float_params("Beta", alpha=alpha, beta=beta)
        super().__init__(tuple(self.alpha.shape))

    @property
    def mean(self):
        return self.alpha / (self.alpha + self.beta)

    @property
    def variance(self):
        total = self.alpha + self.beta
        return self.alpha * self.beta / (total ** 2 * (total + 1.0))

    def sample(self, shape=()):
        x = _standard_gamma(self.alpha, self._extend_shape(shape))
        y = _standard_gamma(self.beta, self._extend_shape(shape))
        return x / (x + y)

    def log_prob(self, value):
        value = self._value(value, self.alpha)
        return ((self.alpha - 1.0) * log(value) + (self.beta - 1.0) * log(1.0 - value)
                - lbeta(self.alpha, self.beta))

    def entropy(self):
        a, b = self.alpha, self.beta
        return lbeta(a, b) - (a - 1.0) * digamma(a) - (b - 1.0) * digamma(b) + (a + b - 2.0) * digamma(a + b)


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution over the simplex; ``concentration`` is ``[..., k]`` (event ``[k]``).

    >>> import oar
    >>> oar.distribution.Dirichlet([1.0, 3.0]).mean.tolist()
    [0.25, 0.75]
    """

    def __init__(self, concentration):
        self.concentration = as_param(concentration, "concentration", "Dirichlet")
        if len(self.concentration.shape) < 1:
            raise errors.ShapeError("Dirichlet: concentration must have at least 1 dim (the categories), "
                                        "got a scalar")
        shape = tuple(self.concentration.shape)
        super().__init__(shape[:-1], shape[-1:])

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def variance(self):
        total = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (total - self.concentration) / (total ** 2 * (total + 1.0))

    def sample(self, shape=()):
        draws = _standard_gamma(self.concentration, self._extend_shape(shape))
        return draws / draws.sum(-1, keepdim=True)

    def log_prob(self, value):
        value = self._value(value, self.concentration)
        c = self.concentration
        return (((c - 1.0) * log(value)).sum(-1) + lgamma(c.sum(-1)) - lgamma(c).sum(-1))

    def entropy(self):
        c = self.concentration
        total = c.sum(-1)
        k = float(c.shape[-1])
        return (lgamma(c).sum(-1) - lgamma(total) + (total - k) * digamma(total)
                - ((c - 1.0) * digamma(c)).sum(-1))


class Laplace(Distribution):
    """The Laplace distribution with ``loc`` and ``scale`` (variance ``2 scale**2``).

    >>> import oar
    >>> float(oar.distribution.Laplace(0.0, 1.0).variance)
    2.0
    """

    def __init__(self, loc, scale):
        self.loc, self.scale = float_params("Laplace", loc=loc, scale=scale)
        super().__init__(tuple(self.loc.shape))

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return 2.0 * self.scale ** 2

    @property
    def stddev(self):
        return math.sqrt(2.0) * self.scale

    def rsample(self, shape=()):
        eps = float(np.finfo(self.loc.dtype.np).eps)
        u = uniform(list(self._extend_shape(shape)), dtype=self.loc.dtype, min=-1.0 + eps, max=1.0)
        return self.loc - self.scale * sign(u) * log1p(-absolute(u))

    def log_prob(self, value):
        value = self._value(value, self.loc)
        return -log(2.0 * self.scale) - absolute(value - self.loc) / self.scale

    def entropy(self):
        return 1.0 + log(2.0 * self.scale)

    def cdf(self, value):
        z = self._value(value, self.loc) - self.loc
        return 0.5 - 0.5 * sign(z) * (exp(-absolute(z) / self.scale) - 1.0)

    def icdf(self, value):
        term = self._value(value, self.loc) - 0.5
        return self.loc - self.scale * sign(term) * log1p(-2.0 * absolute(term))


class Cauchy(Distribution):
    """The Cauchy distribution with ``loc`` and ``scale``: it has no mean or variance.

    >>> import oar
    >>> round(float(oar.distribution.Cauchy(0.0, 1.0).entropy()), 6)  # log(4 pi)
    2.531024
    """

    def __init__(self, loc, scale, name=None):
        self.loc, self.scale = float_params("Cauchy", loc=loc, scale=scale)
        self.name = name or "Cauchy"
        super().__init__(tuple(self.loc.shape))

    @property
    def mean(self):
        raise ValueError("Cauchy distribution has no mean")

    @property
    def variance(self):
        raise ValueError("Cauchy distribution has no variance")

    @property
    def stddev(self):
        raise ValueError("Cauchy distribution has no stddev")

    def rsample(self, shape=()):
        u = rand(list(self._extend_shape(shape)), dtype=self.loc.dtype)
        return self.loc + self.scale * tan(math.pi * (u - 0.5))

    def log_prob(self, value):
        z = (self._value(value, self.loc) - self.loc) / self.scale
        return -math.log(math.pi) - log(self.scale) - log1p(z ** 2)

    def entropy(self):
        return log(4.0 * math.pi * self.scale)


class Gumbel(Distribution):
    """The Gumbel (type-I extreme value) distribution with ``loc`` and ``scale``.

    >>> import oar
    >>> round(float(oar.distribution.Gumbel(0.0, 1.0).mean), 6)  # Euler's gamma
    0.577216
    """

    def __init__(self, loc, scale):
        self.loc, self.scale = float_params("Gumbel", loc=loc, scale=scale)
        super().__init__(tuple(self.loc.shape))

    @property
    def mean(self):
        return self.loc + self.scale * _EULER_GAMMA

    @property
    def variance(self):
        return math.pi ** 2 / 6.0 * self.scale ** 2

    def rsample(self, shape=()):
        return self.loc - self.scale * log(-log(_rand(self, shape, self.loc)))

    def log_prob(self, value):
        z = (self._value(value, self.loc) - self.loc) / self.scale
        return -(z + exp(-z)) - log(self.scale)

    def entropy(self):
        return log(self.scale) + 1.0 + _EULER_GAMMA

    def cdf(self, value):
        z = (self._value(value, self.loc) - self.loc) / self.scale
        return exp(-exp(-z))


class StudentT(Distribution):
    """Student's t distribution with ``df`` degrees of freedom, ``loc`` and ``scale``.

    >>> import oar
    >>> float(oar.distribution.StudentT(4.0, 0.0, 1.0).variance)
    2.0
    """

    def __init__(self, df, loc, scale, name=None):
        self.df, self.loc, self.scale = broadcast_params(
            "StudentT", df=as_param(df, "df", "StudentT"), loc=as_param(loc, "loc", "StudentT"),
            scale=as_param(scale, "scale", "StudentT"))
        self.name = name or "StudentT"
        super().__init__(tuple(self.loc.shape))

    @property
    def mean(self):
        nan = full_like(self.loc, float("nan"))
        return where(self.df > 1.0, self.loc, nan)

    @property
    def variance(self):
        df = self.df
        finite = self.scale ** 2 * df / where(df > 2.0, df - 2.0, ones_like(df))
        infinite = where(df > 1.0, full_like(df, float("inf")), full_like(df, float("nan")))
        return where(df > 2.0, finite, infinite)

    def sample(self, shape=()):
        shape = self._extend_shape(shape)
        chi2 = 2.0 * _standard_gamma(self.df / 2.0, shape)
        z = randn(list(shape), dtype=self.loc.dtype)
        return (self.loc + self.scale * z * sqrt(self.df / chi2)).detach()

    def log_prob(self, value):
        z = (self._value(value, self.loc) - self.loc) / self.scale
        df = self.df
        return (lgamma((df + 1.0) / 2.0) - lgamma(df / 2.0) - 0.5 * log(df * math.pi) - log(self.scale)
                - (df + 1.0) / 2.0 * log1p(z ** 2 / df))

    def entropy(self):
        df = self.df
        half = full_like(df, 0.5)
        return (log(self.scale) + (df + 1.0) / 2.0 * (digamma((df + 1.0) / 2.0) - digamma(df / 2.0))
                + 0.5 * log(df) + lbeta(df / 2.0, half))


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1.0 - log(var_ratio))


@register_kl(LogNormal, LogNormal)
def _kl_lognormal_lognormal(p, q):
    return _kl_normal_normal(p._base, q._base)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    inside = logical_and(q.low <= p.low, p.high <= q.high)
    ratio = log((q.high - q.low) / (p.high - p.low))
    return where(inside, ratio, full_like(ratio, float("inf")))


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    ratio = q.rate / p.rate
    return ratio - 1.0 - log(ratio)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    ap, aq, rp, rq = p.concentration, q.concentration, p.rate, q.rate
    return ((ap - aq) * digamma(ap) - lgamma(ap) + lgamma(aq) + aq * (log(rp) - log(rq))
            + ap * (rq - rp) / rp)


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    return (lbeta(q.alpha, q.beta) - lbeta(p.alpha, p.beta) + (p.alpha - q.alpha) * digamma(p.alpha)
            + (p.beta - q.beta) * digamma(p.beta)
            + (q.alpha - p.alpha + q.beta - p.beta) * digamma(p.alpha + p.beta))


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    cp, cq = p.concentration, q.concentration
    total = cp.sum(-1, keepdim=True)
    return (lgamma(cp.sum(-1)) - lgamma(cq.sum(-1)) - (lgamma(cp) - lgamma(cq)).sum(-1)
            + ((cp - cq) * (digamma(cp) - digamma(total))).sum(-1))


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    distance = absolute(p.loc - q.loc)
    return (log(q.scale / p.scale) + distance / q.scale
            + p.scale / q.scale * exp(-distance / p.scale) - 1.0)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    return log(((p.scale + q.scale) ** 2 + (p.loc - q.loc) ** 2) / (4.0 * p.scale * q.scale))


class ContinuousBernoulli(Distribution):
    """The continuous Bernoulli distribution on ``[0, 1]``: density ``C(p) p^x (1-p)^(1-x)``. Within
    ``lims`` around ``p = 1/2`` the normalizer, mean and variance switch to their Taylor series,
    where the closed forms lose precision (0/0).

    >>> import oar
    >>> round(float(oar.distribution.ContinuousBernoulli(0.5).mean), 6)
    0.5
    """

    def __init__(self, probs, lims=(0.499, 0.501)):
        self.probs = as_param(probs, "probs", "ContinuousBernoulli")
        values = self.probs.numpy()
        if values.size and not (np.all(values >= 0) and np.all(values <= 1)):
            raise errors.ArgumentError(f"ContinuousBernoulli: probs must lie in [0, 1], got values from "
                                           f"{values.min()} to {values.max()}")
        self.lims = (float(lims[0]), float(lims[1]))
        eps = float(np.finfo(self.probs.dtype.np).eps)
        self._clipped = clip(self.probs, eps, 1.0 - eps)
        super().__init__(tuple(self.probs.shape))

    def _outside(self):
        return logical_or(self._clipped <= self.lims[0], self._clipped >= self.lims[1])

    def _cut(self):
        # inside the unstable region the closed forms are evaluated at lims[0], then discarded
        return where(self._outside(), self._clipped, full_like(self._clipped, self.lims[0]))

    def _log_normalizer(self):
        cut = self._cut()
        below = where(cut <= 0.5, cut, zeros_like(cut))
        above = where(cut >= 0.5, cut, ones_like(cut))
        closed = (log(absolute(log1p(-cut) - log(cut)))
                  - where(cut <= 0.5, log1p(-2.0 * below), log(2.0 * above - 1.0)))
        x = (self._clipped - 0.5) ** 2
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return where(self._outside(), closed, taylor)

    @property
    def mean(self):
        cut = self._cut()
        closed = cut / (2.0 * cut - 1.0) + 1.0 / (log1p(-cut) - log(cut))
        x = self._clipped - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x ** 2) * x
        return where(self._outside(), closed, taylor)

    @property
    def variance(self):
        cut = self._cut()
        closed = cut * (cut - 1.0) / (1.0 - 2.0 * cut) ** 2 + 1.0 / (log1p(-cut) - log(cut)) ** 2
        x = (self._clipped - 0.5) ** 2
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return where(self._outside(), closed, taylor)

    def log_prob(self, value):
        value = self._value(value, self.probs)
        return (value * log(self._clipped) + (1.0 - value) * log1p(-self._clipped)
                + self._log_normalizer())

    def entropy(self):
        log_p0, log_p1 = log1p(-self._clipped), log(self._clipped)
        return self.mean * (log_p0 - log_p1) - self._log_normalizer() - log_p0

    def cdf(self, value):
        value = self._value(value, self.probs)
        cut = self._cut()
        closed = (power(cut, value) * power(1.0 - cut, 1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = where(self._outside(), closed, value)
        return clip(unbounded, 0.0, 1.0)

    def icdf(self, value):
        value = self._value(value, self.probs)
        cut = self._cut()
        closed = (log1p(-cut + value * (2.0 * cut - 1.0)) - log1p(-cut)) / (log(cut) - log1p(-cut))
        return where(self._outside(), closed, value)

    def rsample(self, shape=()):
        return self.icdf(rand(list(self._extend_shape(shape)), dtype=self.probs.dtype))
