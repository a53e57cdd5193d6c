"""The ``Distribution`` base class, parameter conversion, and the KL-divergence registry."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from oar._engine.autograd import no_grad
from oar._engine.dtypes import get_default_dtype
from oar._engine.tensor import Tensor, to_tensor
from oar._ops.elementwise import exp, sqrt
from oar._ops.shape import broadcast_to
from oar.errors import ArgumentError

_KL_RULES: dict = {}  # (type of p, type of q) -> kl function


def as_param(value, name: str, owner: str, dtype=None):
    """A distribution parameter as a float tensor: a tensor keeps its float dtype (integers become the
    default float dtype), a numpy array its float dtype, Python numbers and lists the default dtype."""
    if isinstance(value, Tensor):
        target = dtype or (value.dtype if value.dtype.is_floating else get_default_dtype())
        return value if value.dtype == target else value.astype(target)
    if isinstance(value, np.ndarray) and value.dtype.kind == "f" and dtype is None:
        return to_tensor(value)
    if isinstance(value, (bool, str)) or not isinstance(value, (int, float, np.number, list, tuple, np.ndarray)):
        raise ArgumentError(f"{owner}: {name} must be a number, a list, a numpy array or a Tensor, "
                            f"got {type(value).__name__}")
    return to_tensor(np.asarray(value, dtype=np.float64), dtype=dtype or get_default_dtype())


def broadcast_params(owner: str, **params):
    """The parameters broadcast to one shape (Paddle's rule), in the order given."""
    shapes = {name: tuple(p.shape) for name, p in params.items()}
    try:
        shape = np.broadcast_shapes(*shapes.values())
    except ValueError:
        detail = ", ".join(f"{name} {list(s)}" for name, s in shapes.items())
        raise ArgumentError(f"{owner}: the parameters' shapes do not broadcast: {detail}") from None
    dtype = next(iter(params.values())).dtype
    return [(p if tuple(p.shape) == shape else broadcast_to(p, list(shape))).astype(dtype)
            for p in params.values()]


def float_params(owner: str, **values):
    """``as_param`` of each value, broadcast to one shape (``broadcast_params``), in the order given."""
    return broadcast_params(owner, **{name: as_param(value, name, owner) for name, value in values.items()})


def sample_shape_arg(shape, owner: str) -> tuple:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (int(shape),)
    if not isinstance(shape, Sequence) or not all(isinstance(d, (int, np.integer)) and d >= 0 for d in shape):
        raise ArgumentError(f"{owner}.sample: shape must be a sequence of non-negative ints, got {shape!r}")
    return tuple(int(d) for d in shape)


class Distribution:
    """Base class of the probability distributions (Paddle's ``paddle.distribution.Distribution``).

    ``batch_shape`` is the shape of a batch of independent distributions, ``event_shape`` the shape
    of one draw of one of them (``()`` for a scalar distribution); ``sample(shape)`` returns a tensor
    of ``shape + batch_shape + event_shape``.

    >>> import oar
    >>> d = oar.distribution.Normal(oar.zeros([3]), 1.0)
    >>> d.batch_shape, d.event_shape, d.sample([2]).shape
    ((3,), (), [2, 3])
    """

    def __init__(self, batch_shape=(), event_shape=()):
        self._batch_shape = tuple(batch_shape)
        self._event_shape = tuple(event_shape)

    @property
    def batch_shape(self) -> tuple:
        return self._batch_shape

    @property
    def event_shape(self) -> tuple:
        return self._event_shape

    @property
    def mean(self):
        raise NotImplementedError(f"{type(self).__name__} does not define mean")

    @property
    def variance(self):
        raise NotImplementedError(f"{type(self).__name__} does not define variance")

    @property
    def stddev(self):
        return sqrt(self.variance)

    def sample(self, shape=()):
        """Draws of ``shape + batch_shape + event_shape``, without gradient."""
        with no_grad():
            return self.rsample(shape).detach()

    def rsample(self, shape=()):
        """Reparameterized draws: differentiable with respect to the parameters."""
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized sample (rsample)")

    def entropy(self):
        raise NotImplementedError(f"{type(self).__name__} does not define entropy")

    def log_prob(self, value):
        raise NotImplementedError(f"{type(self).__name__} does not define log_prob")

    def prob(self, value):
        """The density (or mass) at ``value``: ``exp(log_prob(value))``."""
        return exp(self.log_prob(value))

    def probs(self, value):
        """Paddle's older name of ``prob``."""
        return self.prob(value)

    def kl_divergence(self, other):
        """``KL(self || other)``; see ``oar.distribution.kl_divergence``."""
        return kl_divergence(self, other)

    def _extend_shape(self, sample_shape) -> tuple:
        return sample_shape_arg(sample_shape, type(self).__name__) + self._batch_shape + self._event_shape

    def _value(self, value, like):
        """``value`` as a tensor of the parameters' dtype."""
        if not isinstance(value, Tensor):
            value = to_tensor(np.asarray(value), dtype=like.dtype)
        return value if value.dtype == like.dtype else value.astype(like.dtype)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(batch_shape={list(self._batch_shape)}, event_shape={list(self._event_shape)})"


class ExponentialFamily(Distribution):
    """Base class of the exponential-family distributions (Normal, Beta, Dirichlet, Gamma, ...): a
    marker here, as the closed-form ``entropy`` and ``kl_divergence`` of each subclass are used."""


def register_kl(cls_p, cls_q):
    """Registers the decorated function as ``kl_divergence(p, q)`` for ``p`` of ``cls_p`` and ``q``
    of ``cls_q`` (subclasses included; the closest registered pair wins).

    >>> import oar
    >>> from oar.distribution import Distribution, register_kl
    >>> class Point(Distribution):
    ...     pass
    >>> @register_kl(Point, Point)
    ... def _kl_point(p, q):
    ...     return oar.zeros([])
    >>> float(oar.distribution.kl_divergence(Point(), Point()))
    0.0
    """
    if not (isinstance(cls_p, type) and issubclass(cls_p, Distribution)
            and isinstance(cls_q, type) and issubclass(cls_q, Distribution)):
        raise ArgumentError(f"register_kl: cls_p and cls_q must be Distribution subclasses, got {cls_p!r}, {cls_q!r}")

    def decorator(function):
        _KL_RULES[cls_p, cls_q] = function
        return function

    return decorator


def kl_divergence(p: Distribution, q: Distribution):
    """``KL(p || q)``, the Kullback-Leibler divergence, elementwise over the batch.

    >>> import oar
    >>> from oar.distribution import Normal, kl_divergence
    >>> round(float(kl_divergence(Normal(0.0, 1.0), Normal(1.0, 1.0))), 6)
    0.5
    """
    matches = [(cp, cq) for cp, cq in _KL_RULES if isinstance(p, cp) and isinstance(q, cq)]
    if not matches:
        raise NotImplementedError(f"kl_divergence: no rule for {type(p).__name__} and {type(q).__name__}; "
                                  f"register one with oar.distribution.register_kl")
    # the most specific pair: the fewest steps up both classes' method resolution orders
    best = min(matches, key=lambda pair: (type(p).__mro__.index(pair[0]) + type(q).__mro__.index(pair[1])))
    return _KL_RULES[best](p, q)
