"""NAdam: Adam with Nesterov momentum (Dozat), Paddle's formula."""

from __future__ import annotations

import numpy as np

from oar.errors import ArgumentError
from oar.optimizer.adam import hyperparameter
from oar.optimizer.optimizer import Optimizer, register_update_rule

# The momentum schedule's base (Dozat's 0.96), fixed in Paddle's kernel.
MOMENTUM_SCHEDULE_BASE = 0.96


def nadam_update(param, grad, lr, state, *, beta1, beta2, epsilon, momentum_decay) -> None:
    """In place, as Paddle's nadam kernel (``momentum_decay_pow`` holds ``0.96**t``)::

        mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = beta1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        mu_product = mu_1 * ... * mu_t
        moment1 = beta1 * moment1 + (1 - beta1) * grad
        moment2 = beta2 * moment2 + (1 - beta2) * grad**2
        m_hat = mu_next * moment1 / (1 - mu_product * mu_next) + (1 - mu_t) * grad / (1 - mu_product)
        param = param - lr * m_hat / (sqrt(moment2 / (1 - beta2**t)) + epsilon)
    """
    decay_pow, b2p, mu_product = state["momentum_decay_pow"], state["beta2_pow"], state["mu_product"]
    m1, m2 = state["moment1"], state["moment2"]
    decay_pow *= MOMENTUM_SCHEDULE_BASE
    b2p *= beta2
    mu_t = beta1 * (1 - 0.5 * decay_pow ** momentum_decay)
    mu_next = beta1 * (1 - 0.5 * (decay_pow * MOMENTUM_SCHEDULE_BASE) ** momentum_decay)
    mu_product *= mu_t
    m1 *= beta1
    m1 += (1 - beta1) * grad
    m2 *= beta2
    m2 += (1 - beta2) * grad * grad
    m_hat = mu_next * m1 / (1 - mu_product * mu_next) + (1 - mu_t) * grad / (1 - mu_product)
    param -= lr * m_hat / (np.sqrt(m2 / (1 - b2p)) + epsilon)


register_update_rule("nadam", "cpu", nadam_update)


class NAdam(Optimizer):
    """NAdam (Dozat, "Incorporating Nesterov Momentum into Adam"), as ``paddle.optimizer.NAdam``;
    the formula is ``nadam_update``'s. Its accumulators are Paddle's, parameter-shaped:
    ``momentum_decay_pow``, ``beta2_pow``, ``mu_product``, ``moment1``, ``moment2``.

    >>> import oar
    >>> net = oar.nn.Linear(2, 1)
    >>> opt = oar.optimizer.NAdam(learning_rate=0.002, parameters=net.parameters())
    >>> net(oar.ones([3, 2])).sum().backward()
    >>> opt.step()
    """

    type = "nadam"

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, epsilon=1e-8, momentum_decay=0.004,
                 parameters=None, weight_decay=None, grad_clip=None, name=None):
        values = {"beta1": hyperparameter(beta1, "beta1", "NAdam"), "beta2": hyperparameter(beta2, "beta2", "NAdam"),
                  "epsilon": hyperparameter(epsilon, "epsilon", "NAdam"),
                  "momentum_decay": hyperparameter(momentum_decay, "momentum_decay", "NAdam")}
        for beta in ("beta1", "beta2"):
            if not 0.0 <= values[beta] < 1.0:
                raise ArgumentError(f"NAdam: {beta} must be in [0, 1), got {values[beta]}")
        for name_ in ("epsilon", "momentum_decay"):
            if values[name_] < 0:
                raise ArgumentError(f"NAdam: {name_} must be >= 0, got {values[name_]}")
        if isinstance(learning_rate, (int, float)) and learning_rate < 0:
            raise ArgumentError(f"NAdam: learning_rate must be >= 0, got {learning_rate}")
        self._defaults = values
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)

    def _accumulators(self, hyper) -> dict:
        return {"momentum_decay_pow": (None, 1.0), "beta2_pow": (None, 1.0), "mu_product": (None, 1.0),
                "moment1": (None, 0.0), "moment2": (None, 0.0)}


__all__ = ["NAdam"]
