"""Lamb: Adam directions rescaled per parameter by a trust ratio (large-batch training)."""

from __future__ import annotations

import numpy as np

from oar.optimizer.adam import hyperparameter
from oar.optimizer.optimizer import Optimizer, register_update_rule


def lamb_update(param, grad, lr, state, *, beta1, beta2, epsilon, weight_decay, always_adapt) -> None:
    """In place, as Paddle's lamb kernel::

        moment1 = beta1 * moment1 + (1 - beta1) * grad
        moment2 = beta2 * moment2 + (1 - beta2) * grad**2
        r = (moment1 / (1 - beta1_pow)) / (sqrt(moment2 / (1 - beta2_pow)) + epsilon) + weight_decay * param
        ratio = ||param|| / ||r||  (1 if either is 0, or when weight_decay is 0 and not always_adapt)
        param = param - lr * ratio * r
    """
    b1p, b2p = state["beta1_pow_acc"], state["beta2_pow_acc"]
    m1, m2 = state["moment1"], state["moment2"]
    m1 *= beta1
    m1 += (1 - beta1) * grad
    m2 *= beta2
    m2 += (1 - beta2) * grad * grad
    r = (m1 / (1 - b1p[0])) / (np.sqrt(m2 / (1 - b2p[0])) + epsilon) + weight_decay * param
    ratio = 1.0
    if weight_decay > 0 or always_adapt:
        p_norm, r_norm = np.sqrt(np.sum(param * param)), np.sqrt(np.sum(r * r))
        if p_norm > 0 and r_norm > 0:
            ratio = p_norm / r_norm
    param -= (lr * ratio) * r
    b1p *= beta1
    b2p *= beta2


register_update_rule("lamb", "cpu", lamb_update)


class Lamb(Optimizer):
    """Lamb (You et al.): the Adam direction plus ``lamb_weight_decay * param``, with the step
    rescaled per parameter by ``||param|| / ||direction||``.
    ``exclude_from_weight_decay_fn(param) -> bool`` exempts parameters from the decay.

    >>> import oar
    >>> opt = oar.optimizer.Lamb(learning_rate=1e-3, parameters=oar.nn.Linear(4, 1).parameters(),
    ...                          exclude_from_weight_decay_fn=lambda p: p.ndim == 1)
    """

    type = "lamb"
    _decay_is_regularizer = False

    def __init__(self, learning_rate=0.001, lamb_weight_decay: float = 0.01, beta1=0.9, beta2=0.999,
                 epsilon=1e-6, parameters=None, grad_clip=None, exclude_from_weight_decay_fn=None,
                 multi_precision: bool = False, always_adapt: bool = False, name=None):
        self._defaults = {
            "beta1": hyperparameter(beta1, "beta1", "Lamb"), "beta2": hyperparameter(beta2, "beta2", "Lamb"),
            "epsilon": hyperparameter(epsilon, "epsilon", "Lamb"),
            "lamb_weight_decay": hyperparameter(lamb_weight_decay, "lamb_weight_decay", "Lamb"),
            "exclude_from_weight_decay_fn": exclude_from_weight_decay_fn, "always_adapt": bool(always_adapt),
        }
        super().__init__(learning_rate, parameters, None, grad_clip, name, multi_precision)

    def _accumulators(self, hyper) -> dict:
        return {"moment1": (None, 0.0), "moment2": (None, 0.0),
                "beta1_pow_acc": ((1,), hyper["beta1"]), "beta2_pow_acc": ((1,), hyper["beta2"])}

    def _rule_args(self, param, hyper, regularizer) -> dict:
        exclude = hyper["exclude_from_weight_decay_fn"]
        decay = 0.0 if exclude is not None and exclude(param) else hyper["lamb_weight_decay"]
        return {"beta1": hyper["beta1"], "beta2": hyper["beta2"], "epsilon": hyper["epsilon"],
                "weight_decay": decay, "always_adapt": hyper["always_adapt"]}


__all__ = ["Lamb"]
