"""``MultivariateNormal``: a normal distribution over vectors, held by the Cholesky factor of its
covariance (``scale_tril``), from which sampling, ``log_prob``, ``entropy`` and KL are triangular
solves and sums of the factor's log-diagonal."""

from __future__ import annotations

import math

import numpy as np

from oar import linalg
from oar._engine.tensor import to_tensor
from oar._ops.elementwise import log
from oar._ops.linalg import matmul
from oar._ops.linalg_ext import diagonal
from oar._ops.random import default_generator, randn
from oar._ops.shape import broadcast_to
from oar.distribution._base import Distribution, as_param, register_kl
from oar.distribution._special import lgamma
from oar.errors import ArgumentError, ShapeError


def _half_log_det(scale_tril):
    return log(diagonal(scale_tril, axis1=-2, axis2=-1)).sum(-1)


class MultivariateNormal(Distribution):
    """The normal distribution over vectors with mean ``loc`` (``[..., k]``) and one of
    ``covariance_matrix``, ``precision_matrix`` (its inverse) or ``scale_tril`` (the lower Cholesky
    factor of the covariance), each ``[..., k, k]``.

    >>> import oar
    >>> d = oar.distribution.MultivariateNormal(oar.zeros([2]), covariance_matrix=oar.eye(2) * 4.0)
    >>> d.variance.tolist(), d.event_shape
    ([4.0, 4.0], (2,))
    """

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None):
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ArgumentError("MultivariateNormal: give exactly one of covariance_matrix, precision_matrix and "
                                f"scale_tril, got {len(given)}")
        self.loc = as_param(loc, "loc", "MultivariateNormal")
        if len(self.loc.shape) < 1:
            raise ShapeError("MultivariateNormal: loc must be at least 1-d ([..., k]), got a scalar")
        if scale_tril is not None:
            tril = as_param(scale_tril, "scale_tril", "MultivariateNormal", dtype=self.loc.dtype)
        elif covariance_matrix is not None:
            tril = linalg.cholesky(as_param(covariance_matrix, "covariance_matrix", "MultivariateNormal",
                                                dtype=self.loc.dtype))
        else:
            precision = as_param(precision_matrix, "precision_matrix", "MultivariateNormal", dtype=self.loc.dtype)
            tril = linalg.cholesky(linalg.inv(precision))
        k = self.loc.shape[-1]
        if len(tril.shape) < 2 or tuple(tril.shape[-2:]) != (k, k):
            raise ShapeError(f"MultivariateNormal: the matrix must be [..., {k}, {k}] to match loc "
                             f"{list(self.loc.shape)}, got {list(tril.shape)}")
        try:
            batch = tuple(np.broadcast_shapes(tuple(self.loc.shape[:-1]), tuple(tril.shape[:-2])))
        except ValueError:
            raise ShapeError(f"MultivariateNormal: the batch dims of loc {list(self.loc.shape)} and of the matrix "
                             f"{list(tril.shape)} do not broadcast") from None
        self.loc = broadcast_to(self.loc, list(batch) + [k])
        self.scale_tril = broadcast_to(tril, list(batch) + [k, k])
        super().__init__(batch, (k,))

    @property
    def covariance_matrix(self):
        return matmul(self.scale_tril, self.scale_tril, transpose_y=True)

    @property
    def precision_matrix(self):
        return linalg.inv(self.covariance_matrix)

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return (self.scale_tril ** 2).sum(-1)

    def rsample(self, shape=()):
        eps = randn(list(self._extend_shape(shape)), dtype=self.loc.dtype)
        return self.loc + matmul(self.scale_tril, eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value):
        diff = self._value(value, self.loc) - self.loc
        tril = broadcast_to(self.scale_tril, list(diff.shape) + [diff.shape[-1]])
        z = linalg.triangular_solve(tril, diff.unsqueeze(-1), upper=False)
        mahalanobis = (z ** 2).sum([-2, -1])
        k = self.event_shape[0]
        return -0.5 * (k * math.log(2 * math.pi) + mahalanobis) - _half_log_det(self.scale_tril)

    def entropy(self):
        k = self.event_shape[0]
        return 0.5 * k * (1.0 + math.log(2 * math.pi)) + _half_log_det(self.scale_tril)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    if p.event_shape != q.event_shape:
        raise ShapeError(f"kl_divergence: MultivariateNormals of different event shapes {list(p.event_shape)} and "
                         f"{list(q.event_shape)}")
    k = p.event_shape[0]
    batch = list(np.broadcast_shapes(p.batch_shape, q.batch_shape))
    q_tril = broadcast_to(q.scale_tril, batch + [k, k])
    between = linalg.triangular_solve(q_tril, broadcast_to(p.scale_tril, batch + [k, k]), upper=False)
    diff = broadcast_to(q.loc - p.loc, batch + [k]).unsqueeze(-1)
    z = linalg.triangular_solve(q_tril, diff, upper=False)
    return (0.5 * ((between ** 2).sum([-2, -1]) + (z ** 2).sum([-2, -1]) - k)
            + _half_log_det(q.scale_tril) - _half_log_det(p.scale_tril))


def _multivariate_lgamma(a, p: int):
    """``log Gamma_p(a) = p (p - 1) / 4 log(pi) + sum_j lgamma(a - j / 2)`` for ``j < p``."""
    total = p * (p - 1) / 4.0 * math.log(math.pi)
    for j in range(p):
        total = total + lgamma(a - j / 2.0)
    return total


class LKJCholesky(Distribution):
    """The LKJ distribution over correlation matrices, on their lower Cholesky factors
    (``[..., dim, dim]``): density ``prod_i L_ii ** (dim - i + 2 (concentration - 1))`` (i from 2).
    ``sample_method`` is ``"onion"`` or ``"cvine"`` (two constructions of the same distribution).

    >>> import oar
    >>> factor = oar.distribution.LKJCholesky(3, 2.0).sample()
    >>> factor.shape, bool(((factor ** 2).sum(-1) - 1.0).abs().max() < 1e-5)
    ([3, 3], True)
    """

    def __init__(self, dim=2, concentration=1.0, sample_method="onion"):
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 2:
            raise ArgumentError(f"LKJCholesky: dim must be an int >= 2, got {dim!r}")
        if sample_method not in ("onion", "cvine"):
            raise ArgumentError(f"LKJCholesky: sample_method must be 'onion' or 'cvine', got {sample_method!r}")
        self.dim, self.sample_method = dim, sample_method
        self.concentration = as_param(concentration, "concentration", "LKJCholesky")
        super().__init__(tuple(self.concentration.shape), (dim, dim))

    def sample(self, shape=()):
        shape = self._extend_shape(shape)
        batch, d = shape[:-2], self.dim
        eta = np.broadcast_to(self.concentration.numpy().astype(np.float64), batch)[..., None]
        generator = default_generator()
        if self.sample_method == "onion":
            # row i of the factor: sqrt(y_i) times a uniform direction in its first i coordinates, with
            # y_i ~ Beta(i / 2, eta + (d - 1 - i) / 2) (row 0 has no free coordinate: its draw is unused)
            free = np.maximum(np.arange(d, dtype=np.float64), 1.0)
            y = generator.beta(free / 2.0, eta + (d - 1 - free) / 2.0)
            direction = np.tril(generator.standard_normal(batch + (d, d)), -1)
            norms = np.linalg.norm(direction, axis=-1, keepdims=True)
            direction = np.divide(direction, norms, out=np.zeros_like(direction), where=norms > 0)
            w = np.sqrt(y)[..., None] * direction
        else:
            # partial correlations of column j ~ 2 Beta(b_j, b_j) - 1, b_j = eta + (d - 2 - j) / 2
            b = eta + (d - 2 - np.arange(d - 1.0)) / 2.0
            partial = 2.0 * generator.beta(b[..., None, :], b[..., None, :], size=batch + (d, d - 1)) - 1.0
            w = np.zeros(batch + (d, d))
            for i in range(1, d):
                for j in range(i):
                    w[..., i, j] = partial[..., i, j] * np.sqrt(np.clip(1.0 - (w[..., i, :j] ** 2).sum(-1), 0.0, 1.0))
        diagonal_entries = np.sqrt(np.clip(1.0 - (w ** 2).sum(-1), np.finfo(np.float64).tiny, None))
        factor = w + diagonal_entries[..., None] * np.eye(d)
        return to_tensor(factor.astype(self.concentration.dtype.np))

    def log_prob(self, value):
        value = self._value(value, self.concentration)
        d = self.dim
        diagonal_entries = diagonal(value, axis1=-2, axis2=-1)[..., 1:]
        order = 2.0 * (self.concentration - 1.0).unsqueeze(-1) + (d - np.arange(2.0, d + 1.0)).astype(
            self.concentration.dtype.np)
        unnormalized = (order * log(diagonal_entries)).sum(-1)
        alpha = self.concentration + 0.5 * (d - 1)
        normalizer = (0.5 * (d - 1) * math.log(math.pi) + _multivariate_lgamma(alpha - 0.5, d - 1)
                      - lgamma(alpha) * float(d - 1))
        return unnormalized - normalizer
