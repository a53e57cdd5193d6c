"""``lgamma`` and ``digamma`` for positive arguments, composed of oar's elementwise ops.

oar has no special-function ops yet; the distributions need these two on their (positive)
parameters and values, with gradients (``d lgamma = digamma``, ``d digamma = trigamma``). Both
shift the argument up by ``_SHIFT`` with the recurrence ``f(x) = f(x + 1) - g(x)`` and then use
the asymptotic (Stirling) series, whose truncation error at ``x + _SHIFT >= 8`` is below 1e-11
-- float64 accuracy, and autograd differentiates the composition exactly. Arguments <= 0 are
outside their domain here (``nan``), unlike ``math.lgamma``.
"""

from __future__ import annotations

import math

from oar._ops.elementwise import log

_SHIFT = 8
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def lgamma(x):
    """``log(Gamma(x))`` for ``x > 0``, differentiable.

    >>> import oar
    >>> from oar.distribution._special import lgamma
    >>> round(float(lgamma(oar.to_tensor(5.0, dtype="float64"))), 10)  # log(4!)
    3.1780538303
    """
    shifted = x + float(_SHIFT)
    log_of_rising = log(x)
    for step in range(1, _SHIFT):
        log_of_rising = log_of_rising + log(x + float(step))
    inv = 1.0 / shifted
    inv2 = inv * inv
    series = inv * (1.0 / 12 + inv2 * (-1.0 / 360 + inv2 * (1.0 / 1260 + inv2 * (-1.0 / 1680))))
    return (shifted - 0.5) * log(shifted) - shifted + _HALF_LOG_2PI + series - log_of_rising


def digamma(x):
    """``d/dx log(Gamma(x))`` for ``x > 0``, differentiable.

    >>> import oar
    >>> from oar.distribution._special import digamma
    >>> round(float(digamma(oar.to_tensor(1.0, dtype="float64"))), 10)  # minus Euler's gamma
    -0.5772156649
    """
    shifted = x + float(_SHIFT)
    reciprocal_sum = 1.0 / x
    for step in range(1, _SHIFT):
        reciprocal_sum = reciprocal_sum + 1.0 / (x + float(step))
    inv = 1.0 / shifted
    inv2 = inv * inv
    series = inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (1.0 / 240 - inv2 / 132))))
    return log(shifted) - 0.5 * inv - series - reciprocal_sum


def lbeta(a, b):
    """``log(B(a, b)) = lgamma(a) + lgamma(b) - lgamma(a + b)``."""
    return lgamma(a) + lgamma(b) - lgamma(a + b)
