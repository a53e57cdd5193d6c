"""Adam (and AMSGrad), with Paddle's bias correction folded into the step size."""

from __future__ import annotations

import numpy as np

from oar.ops import Tensor
from oar.optimizer.optimizer import Optimizer, register_update_rule


def adam_update(param, grad, lr, state, *, beta1, beta2, epsilon, amsgrad, coeff=0.0) -> None:
    """In place, as Paddle's adam kernel (``beta*_pow`` hold ``beta**t`` for this step t)::

        moment1 = beta1 * moment1 + (1 - beta1) * grad
        moment2 = beta2 * moment2 + (1 - beta2) * grad**2
        lr_t = lr * sqrt(1 - beta2_pow) / (1 - beta1_pow)
        param = param - lr_t * moment1 / (sqrt(moment2) + epsilon * sqrt(1 - beta2_pow))

    which is ``lr * m_hat / (sqrt(v_hat) + epsilon)``. AMSGrad uses the running maximum of
    ``moment2``. ``coeff`` is AdamW's decoupled decay, ``param -= lr * coeff * param`` first.
    """
    b1p, b2p = state["beta1_pow_acc"], state["beta2_pow_acc"]
    m1, m2 = state["moment1"], state["moment2"]
    if coeff:
        param -= (lr * coeff) * param
    correction = np.sqrt(1 - b2p[0])
    lr_t = lr * correction / (1 - b1p[0])
    # The formulas above, evaluated in the same order, through one temporary buffer: numpy
    # expressions would allocate (and page-fault) six parameter-sized arrays per step.
    tmp = np.multiply(grad, 1 - beta1, dtype=m1.dtype)
    m1 *= beta1
    m1 += tmp
    np.multiply(grad, 1 - beta2, out=tmp)
    tmp *= grad
    m2 *= beta2
    m2 += tmp
    if amsgrad:
        np.maximum(state["moment2_max"], m2, out=state["moment2_max"])
        m2 = state["moment2_max"]
    np.sqrt(m2, out=tmp)
    tmp += epsilon * correction
    np.divide(m1, tmp, out=tmp)
    tmp *= lr_t
    param -= tmp
    b1p *= beta1
    b2p *= beta2


register_update_rule("adam", "cpu", adam_update)


def hyperparameter(value, name: str, where: str) -> float:
    """A float hyperparameter that Paddle also accepts as a one-element tensor."""
    if isinstance(value, Tensor):
        value = value.item()
    try:
        return float(value)
    except (TypeError, ValueError):
        from oar.errors import ArgumentError

        raise ArgumentError(f"{where}: {name} must be a float, got {type(value).__name__}") from None


class Adam(Optimizer):
    """Adam (Kingma & Ba), Paddle's formula::

        moment1 = beta1 * moment1 + (1 - beta1) * grad
        moment2 = beta2 * moment2 + (1 - beta2) * grad * grad
        lr_t = learning_rate * sqrt(1 - beta2**t) / (1 - beta1**t)
        param = param - lr_t * moment1 / (sqrt(moment2) + epsilon * sqrt(1 - beta2**t))

    ``amsgrad=True`` divides by the running maximum of ``moment2``. ``weight_decay`` is added to
    the gradient (L2); for decoupled decay use AdamW. ``lazy_mode`` (sparse rows) and
    ``use_multi_tensor`` are accepted and change nothing here.

    >>> import oar
    >>> fc = oar.nn.Linear(4, 1)
    >>> opt = oar.optimizer.Adam(learning_rate=1e-3, parameters=fc.parameters())
    """

    type = "adam"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, parameters=None,
                 weight_decay=None, grad_clip=None, lazy_mode: bool = False, multi_precision: bool = False,
                 use_multi_tensor: bool = False, amsgrad: bool = False, name=None):
        where = type(self).__name__
        self._defaults = {
            "beta1": hyperparameter(beta1, "beta1", where), "beta2": hyperparameter(beta2, "beta2", where),
            "epsilon": hyperparameter(epsilon, "epsilon", where), "lazy_mode": bool(lazy_mode),
            "amsgrad": bool(amsgrad),
        }
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, multi_precision)

    def _accumulators(self, hyper) -> dict:
        acc = {"moment1": (None, 0.0), "moment2": (None, 0.0),
               "beta1_pow_acc": ((1,), hyper["beta1"]), "beta2_pow_acc": ((1,), hyper["beta2"])}
        if hyper["amsgrad"]:
            acc["moment2_max"] = (None, 0.0)
        return acc

    def _rule_args(self, param, hyper, regularizer) -> dict:
        return {"beta1": hyper["beta1"], "beta2": hyper["beta2"], "epsilon": hyper["epsilon"],
                "amsgrad": hyper["amsgrad"]}


__all__ = ["Adam"]
