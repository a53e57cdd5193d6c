"""SGD: ``param -= lr * grad``."""

from __future__ import annotations

from oar.optimizer.optimizer import Optimizer, register_update_rule


def sgd_update(param, grad, lr, state) -> None:
    """In place: ``param = param - lr * grad``."""
    param -= lr * grad


register_update_rule("sgd", "cpu", sgd_update)


class SGD(Optimizer):
    """Stochastic gradient descent, ``param = param - learning_rate * grad``.

    >>> import oar
    >>> w = oar.nn.Linear(1, 1, weight_attr=oar.nn.initializer.Constant(1.0), bias_attr=False).weight
    >>> opt = oar.optimizer.SGD(learning_rate=0.1, parameters=[w])
    >>> (w * 3.0).sum().backward()
    >>> opt.step()
    >>> round(w.item(), 6)
    0.7
    """

    type = "sgd"

    def __init__(self, learning_rate=0.001, parameters=None, weight_decay=None, grad_clip=None,
                 multi_precision: bool = False, name=None):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, multi_precision)

    def _rule_args(self, param, hyper, regularizer) -> dict:
        return {}


__all__ = ["SGD"]
