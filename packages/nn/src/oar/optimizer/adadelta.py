"""Adadelta: steps scaled by the ratio of running RMS of updates and of gradients."""

from __future__ import annotations

import numpy as np

from oar.optimizer.optimizer import Optimizer, register_update_rule


def adadelta_update(param, grad, lr, state, *, rho, epsilon) -> None:
    """In place, as Paddle's adadelta kernel::

        avg_squared_grad = rho * avg_squared_grad + (1 - rho) * grad**2
        update = -sqrt(avg_squared_update + epsilon) / sqrt(avg_squared_grad + epsilon) * grad
        param = param + lr * update
        avg_squared_update = rho * avg_squared_update + (1 - rho) * update**2
    """
    sq_grad, sq_update = state["_avg_squared_grad"], state["_avg_squared_update"]
    sq_grad *= rho
    sq_grad += (1 - rho) * grad * grad
    update = -(np.sqrt(sq_update + epsilon) / np.sqrt(sq_grad + epsilon) * grad)
    param += lr * update
    sq_update *= rho
    sq_update += (1 - rho) * update * update


register_update_rule("adadelta", "cpu", adadelta_update)


class Adadelta(Optimizer):
    """Adadelta (Zeiler), with Paddle's learning rate on the step::

        E[g^2] = rho * E[g^2] + (1 - rho) * grad^2
        update = -sqrt(E[dx^2] + epsilon) / sqrt(E[g^2] + epsilon) * grad
        param = param + learning_rate * update
        E[dx^2] = rho * E[dx^2] + (1 - rho) * update^2

    >>> import oar
    >>> opt = oar.optimizer.Adadelta(learning_rate=1.0, parameters=oar.nn.Linear(4, 1).parameters())
    """

    type = "adadelta"

    def __init__(self, learning_rate=0.001, epsilon: float = 1e-6, rho: float = 0.95, parameters=None,
                 weight_decay=None, grad_clip=None, name=None):
        self._defaults = {"epsilon": float(epsilon), "rho": float(rho)}
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)

    def _accumulators(self, hyper) -> dict:
        return {"_avg_squared_grad": (None, 0.0), "_avg_squared_update": (None, 0.0)}


__all__ = ["Adadelta"]
