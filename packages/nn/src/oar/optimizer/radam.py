"""RAdam: Adam with the variance of its adaptive step rectified (Liu et al.), Paddle's formula."""

from __future__ import annotations

import numpy as np

from oar.errors import ArgumentError
from oar.optimizer.adam import hyperparameter
from oar.optimizer.optimizer import Optimizer, register_update_rule

# Below this length of the approximated simple moving average, the variance is not tractable and
# RAdam takes an un-adapted momentum step (the paper's threshold, Paddle's kernel's).
RECTIFY_ABOVE = 5.0


def radam_update(param, grad, lr, state, *, beta1, beta2, epsilon) -> None:
    """In place, as Paddle's radam kernel::

        moment1 = beta1 * moment1 + (1 - beta1) * grad
        moment2 = beta2 * moment2 + (1 - beta2) * grad**2
        m_hat = moment1 / (1 - beta1**t)
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 t beta2**t / (1 - beta2**t)
        if rho_t > 5:
            l_t = sqrt(1 - beta2**t) / (sqrt(moment2) + epsilon)
            r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
            param = param - lr * m_hat * r_t * l_t
        else:
            param = param - lr * m_hat

    The accumulator ``rho`` holds ``t beta2**t / (1 - beta2**t)`` (1 before the first step), from
    which the step count ``t`` is recovered, as Paddle's does.
    """
    b1p, b2p, rho = state["beta1_pow"], state["beta2_pow"], state["rho"]
    m1, m2 = state["moment1"], state["moment2"]
    previous_steps = rho * (1 - b2p) / b2p
    b1p *= beta1
    b2p *= beta2
    rho[...] = (previous_steps + 1) * b2p / (1 - b2p)
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * rho
    m1 *= beta1
    m1 += (1 - beta1) * grad
    m2 *= beta2
    m2 += (1 - beta2) * grad * grad
    m_hat = m1 / (1 - b1p)
    rectified = rho_t > RECTIFY_ABOVE
    safe_rho_t = np.where(rectified, rho_t, rho_inf)  # r_t is only read where rectified
    r_t = np.sqrt((safe_rho_t - 4) * (safe_rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * safe_rho_t))
    l_t = np.sqrt(1 - b2p) / (np.sqrt(m2) + epsilon)
    param -= lr * np.where(rectified, m_hat * r_t * l_t, m_hat)


register_update_rule("radam", "cpu", radam_update)


class RAdam(Optimizer):
    """RAdam (Liu et al., "On the Variance of the Adaptive Learning Rate and Beyond"), as
    ``paddle.optimizer.RAdam``; the formula is ``radam_update``'s. Its accumulators are Paddle's,
    parameter-shaped: ``beta1_pow``, ``beta2_pow``, ``rho``, ``moment1``, ``moment2``.

    >>> import oar
    >>> net = oar.nn.Linear(2, 1)
    >>> opt = oar.optimizer.RAdam(learning_rate=0.001, parameters=net.parameters())
    >>> net(oar.ones([3, 2])).sum().backward()
    >>> opt.step()
    """

    type = "radam"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, parameters=None,
                 weight_decay=None, grad_clip=None, name=None):
        values = {"beta1": hyperparameter(beta1, "beta1", "RAdam"), "beta2": hyperparameter(beta2, "beta2", "RAdam"),
                  "epsilon": hyperparameter(epsilon, "epsilon", "RAdam")}
        for beta in ("beta1", "beta2"):
            if not 0.0 <= values[beta] < 1.0:
                raise ArgumentError(f"RAdam: {beta} must be in [0, 1), got {values[beta]}")
        if values["epsilon"] < 0:
            raise ArgumentError(f"RAdam: epsilon must be >= 0, got {values['epsilon']}")
        if isinstance(learning_rate, (int, float)) and learning_rate < 0:
            raise ArgumentError(f"RAdam: learning_rate must be >= 0, got {learning_rate}")
        self._defaults = values
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)

    def _accumulators(self, hyper) -> dict:
        return {"beta1_pow": (None, 1.0), "beta2_pow": (None, 1.0), "rho": (None, 1.0), "moment1": (None, 0.0),
                "moment2": (None, 0.0)}


__all__ = ["RAdam"]
