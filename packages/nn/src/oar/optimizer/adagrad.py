"""Adagrad: per-element steps scaled by the accumulated squared gradients."""

from __future__ import annotations

import numpy as np

from oar.optimizer.optimizer import Optimizer, register_update_rule


def adagrad_update(param, grad, lr, state, *, epsilon) -> None:
    """In place, as Paddle's adagrad kernel::

        moment = moment + grad**2
        param = param - lr * grad / (sqrt(moment) + epsilon)
    """
    moment = state["moment"]
    moment += grad * grad
    param -= lr * grad / (np.sqrt(moment) + epsilon)


register_update_rule("adagrad", "cpu", adagrad_update)


class Adagrad(Optimizer):
    """Adagrad (Duchi et al.)::

        moment = moment + grad * grad          (moment starts at initial_accumulator_value)
        param = param - learning_rate * grad / (sqrt(moment) + epsilon)

    >>> import oar
    >>> opt = oar.optimizer.Adagrad(learning_rate=0.1, parameters=oar.nn.Linear(4, 1).parameters())
    """

    type = "adagrad"

    def __init__(self, learning_rate, epsilon: float = 1e-6, parameters=None, weight_decay=None, grad_clip=None,
                 name=None, initial_accumulator_value: float = 0.0):
        self._defaults = {"epsilon": float(epsilon), "initial_accumulator_value": float(initial_accumulator_value)}
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)

    def _accumulators(self, hyper) -> dict:
        return {"moment": (None, hyper["initial_accumulator_value"])}

    def _rule_args(self, param, hyper, regularizer) -> dict:
        return {"epsilon": hyper["epsilon"]}


__all__ = ["Adagrad"]
