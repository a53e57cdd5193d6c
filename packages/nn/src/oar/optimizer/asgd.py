"""ASGD: stochastic average gradient (Schmidt, Le Roux & Bach), Paddle's formula."""

from __future__ import annotations

from oar.errors import ArgumentError
from oar.optimizer.optimizer import Optimizer, register_update_rule


def asgd_update(param, grad, lr, state, *, batch_num) -> None:
    """In place, as Paddle's asgd step (``y`` holds the last ``batch_num`` gradients, ``m`` the
    steps taken, ``d`` the sum of the gradients in ``y``)::

        i = m % batch_num
        m = m + 1
        d = d - y[i] + grad
        y[i] = grad
        param = param - lr * d / min(m, batch_num)

    Weight decay (``weight_decay``) is added to ``grad`` first, so it is averaged with it.
    """
    d, y, m = state["d"], state["y"], state["m"]
    index = int(m[0]) % batch_num
    m += 1
    d -= y[index]
    d += grad
    y[index] = grad
    param -= lr * d / min(float(m[0]), batch_num)


register_update_rule("asgd", "cpu", asgd_update)


class ASGD(Optimizer):
    """ASGD, as ``paddle.optimizer.ASGD``: the step follows the average of the last
    ``batch_num`` gradients (``asgd_update``). Its accumulators are Paddle's: ``d``, ``y``
    (``[batch_num, *param.shape]``) and ``m`` (the step count; a float here, Paddle's is int64).

    >>> import oar
    >>> net = oar.nn.Linear(2, 1)
    >>> opt = oar.optimizer.ASGD(learning_rate=0.01, batch_num=4, parameters=net.parameters())
    >>> net(oar.ones([3, 2])).sum().backward()
    >>> opt.step()
    """

    type = "asgd"

    def __init__(self, learning_rate=0.001, batch_num=1, parameters=None, weight_decay=None, grad_clip=None,
                 multi_precision=False, name=None):
        if isinstance(batch_num, bool) or not isinstance(batch_num, int) or batch_num <= 0:
            raise ArgumentError(f"ASGD: batch_num must be an int greater than 0, got {batch_num!r}")
        self._defaults = {"batch_num": batch_num}
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, multi_precision=multi_precision)

    def _accumulators(self, hyper) -> dict:
        return {"d": (None, 0.0), "y": (lambda shape: (hyper["batch_num"], *shape), 0.0), "m": ((1,), 0.0)}


__all__ = ["ASGD"]
