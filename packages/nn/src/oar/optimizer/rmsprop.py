"""RMSProp, plain or centered, with momentum."""

from __future__ import annotations

import numpy as np

from oar.errors import ArgumentError
from oar.optimizer.optimizer import Optimizer, register_update_rule


def rmsprop_update(param, grad, lr, state, *, rho, epsilon, momentum, centered) -> None:
    """In place, as Paddle's rmsprop kernel::

        mean_square = rho * mean_square + (1 - rho) * grad**2
        mean_grad = rho * mean_grad + (1 - rho) * grad                       (centered)
        momentum = momentum * momentum + lr * grad / sqrt(mean_square - mean_grad**2 + epsilon)
        param = param - momentum
    """
    mean_square, moment = state["mean_square"], state["momentum"]
    mean_square *= rho
    mean_square += (1 - rho) * grad * grad
    if centered:
        mean_grad = state["mean_grad"]
        mean_grad *= rho
        mean_grad += (1 - rho) * grad
        denom = np.sqrt(mean_square - mean_grad * mean_grad + epsilon)
    else:
        denom = np.sqrt(mean_square + epsilon)
    moment *= momentum
    moment += lr * grad / denom
    param -= moment


register_update_rule("rmsprop", "cpu", rmsprop_update)


class RMSProp(Optimizer):
    """RMSProp (Hinton), Paddle's formula (epsilon inside the square root)::

        mean_square = rho * mean_square + (1 - rho) * grad^2
        moment = momentum * moment + learning_rate * grad / sqrt(mean_square + epsilon)
        param = param - moment

    ``centered=True`` subtracts the square of the running mean gradient inside the root.

    >>> import oar
    >>> opt = oar.optimizer.RMSProp(learning_rate=0.01, parameters=oar.nn.Linear(4, 1).parameters())
    """

    type = "rmsprop"

    def __init__(self, learning_rate, rho: float = 0.95, epsilon: float = 1e-6, momentum: float = 0.0,
                 centered: bool = False, parameters=None, weight_decay=None, grad_clip=None, name=None):
        for what, value in (("rho", rho), ("epsilon", epsilon), ("momentum", momentum)):
            if value is None or value < 0:
                raise ArgumentError(f"RMSProp: {what} must be a number >= 0, got {value!r}")
        self._defaults = {"rho": float(rho), "epsilon": float(epsilon), "momentum": float(momentum),
                          "centered": bool(centered)}
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)

    def _accumulators(self, hyper) -> dict:
        return {"momentum": (None, 0.0), "mean_square": (None, 0.0), "mean_grad": (None, 0.0)}


__all__ = ["RMSProp"]
