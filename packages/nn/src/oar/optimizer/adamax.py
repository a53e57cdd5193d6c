"""Adamax: Adam with the infinity norm."""

from __future__ import annotations

import numpy as np

from oar.optimizer.adam import hyperparameter
from oar.optimizer.optimizer import Optimizer, register_update_rule


def adamax_update(param, grad, lr, state, *, beta1, beta2, epsilon) -> None:
    """In place, as Paddle's adamax kernel::

        moment = beta1 * moment + (1 - beta1) * grad
        inf_norm = max(|grad|, beta2 * inf_norm + epsilon)
        param = param - lr / (1 - beta1_pow) * moment / inf_norm
    """
    b1p, moment, inf_norm = state["beta1_pow_acc"], state["moment"], state["inf_norm"]
    moment *= beta1
    moment += (1 - beta1) * grad
    inf_norm *= beta2
    inf_norm += epsilon
    np.maximum(np.abs(grad), inf_norm, out=inf_norm)
    param -= (lr / (1 - b1p[0])) * (moment / inf_norm)
    b1p *= beta1


register_update_rule("adamax", "cpu", adamax_update)


class Adamax(Optimizer):
    """Adamax (Kingma & Ba, section 7)::

        moment = beta1 * moment + (1 - beta1) * grad
        inf_norm = max(beta2 * inf_norm + epsilon, |grad|)
        param = param - learning_rate / (1 - beta1**t) * moment / inf_norm

    >>> import oar
    >>> opt = oar.optimizer.Adamax(learning_rate=0.002, parameters=oar.nn.Linear(4, 1).parameters())
    """

    type = "adamax"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, parameters=None,
                 weight_decay=None, grad_clip=None, name=None):
        self._defaults = {"beta1": hyperparameter(beta1, "beta1", "Adamax"),
                          "beta2": hyperparameter(beta2, "beta2", "Adamax"),
                          "epsilon": hyperparameter(epsilon, "epsilon", "Adamax")}
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)

    def _accumulators(self, hyper) -> dict:
        return {"moment": (None, 0.0), "inf_norm": (None, 0.0), "beta1_pow_acc": ((1,), hyper["beta1"])}


__all__ = ["Adamax"]
