"""Momentum: Paddle's heavy-ball and Nesterov updates."""

from __future__ import annotations

from oar.optimizer.optimizer import Optimizer, register_update_rule
from oar.regularizer import L2Decay


def momentum_update(param, grad, lr, state, *, momentum, use_nesterov, rescale_grad, l2_coeff) -> None:
    """In place, as Paddle's momentum kernel::

        grad = rescale_grad * grad + l2_coeff * param
        velocity = momentum * velocity + grad
        param = param - lr * velocity                          (heavy ball)
        param = param - lr * (grad + momentum * velocity)      (Nesterov)
    """
    if rescale_grad != 1.0:
        grad = rescale_grad * grad
    if l2_coeff:
        grad = grad + l2_coeff * param
    velocity = state["velocity"]
    velocity *= momentum
    velocity += grad
    if use_nesterov:
        param -= (grad + momentum * velocity) * lr
    else:
        param -= lr * velocity


register_update_rule("momentum", "cpu", momentum_update)


class Momentum(Optimizer):
    """SGD with momentum, Paddle's convention (the velocity accumulates raw gradients)::

        velocity = momentum * velocity + grad
        param = param - learning_rate * velocity
        # use_nesterov=True: param = param - learning_rate * (grad + momentum * velocity)

    L2 weight decay (``weight_decay`` as a float or ``L2Decay``) is applied inside the update,
    after ``rescale_grad``, as Paddle fuses it.

    >>> import oar
    >>> fc = oar.nn.Linear(4, 1)
    >>> opt = oar.optimizer.Momentum(learning_rate=0.1, momentum=0.9, parameters=fc.parameters())
    """

    type = "momentum"

    def __init__(self, learning_rate=0.001, momentum: float = 0.9, parameters=None, use_nesterov: bool = False,
                 weight_decay=None, grad_clip=None, multi_precision: bool = False, rescale_grad: float = 1.0,
                 use_multi_tensor: bool = False, name=None):
        self._defaults = {"momentum": float(momentum), "use_nesterov": bool(use_nesterov),
                          "rescale_grad": float(rescale_grad)}
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, multi_precision)

    def _accumulators(self, hyper) -> dict:
        return {"velocity": (None, 0.0)}

    def _fuses(self, regularizer) -> bool:
        return isinstance(regularizer, L2Decay)

    def _rule_args(self, param, hyper, regularizer) -> dict:
        l2 = regularizer.coeff if isinstance(regularizer, L2Decay) else 0.0
        return {"momentum": hyper["momentum"], "use_nesterov": hyper["use_nesterov"],
                "rescale_grad": hyper["rescale_grad"], "l2_coeff": l2}


__all__ = ["Momentum"]
