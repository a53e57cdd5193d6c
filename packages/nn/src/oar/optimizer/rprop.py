"""Rprop: resilient backpropagation (Riedmiller & Braun), Paddle's formula."""

from __future__ import annotations

import numpy as np

from oar.errors import ArgumentError
from oar.optimizer.optimizer import Optimizer, register_update_rule


def rprop_update(param, grad, lr, state, *, learning_rate_range, etas) -> None:
    """In place, as Paddle's rprop kernel (``learning_rates`` are per element, ``prevs`` the
    previous step's gradient; ``lr`` is not used: the step sizes adapt on their own)::

        where grad * prev > 0: rate = min(rate * etas[1], learning_rate_range[1])
        where grad * prev < 0: rate = max(rate * etas[0], learning_rate_range[0]); grad = 0
        param = param - sign(grad) * rate
        prev = grad
    """
    prev, rates = state["prevs"], state["learning_rates"]
    agreement = grad * prev
    grown = np.minimum(rates * etas[1], learning_rate_range[1])
    shrunk = np.maximum(rates * etas[0], learning_rate_range[0])
    rates[...] = np.where(agreement > 0, grown, np.where(agreement < 0, shrunk, rates))
    step = np.where(agreement < 0, 0, grad)
    param -= np.sign(step) * rates
    prev[...] = step


register_update_rule("rprop", "cpu", rprop_update)


class Rprop(Optimizer):
    """Rprop, as ``paddle.optimizer.Rprop``: each element's step size grows by ``etas[1]`` while
    its gradient keeps its sign and shrinks by ``etas[0]`` when it flips, within
    ``learning_rate_range`` (``rprop_update``). For full-batch training. ``learning_rate`` is the
    initial step size; a scheduler or a group's ``learning_rate`` does not change later steps.

    >>> import oar
    >>> net = oar.nn.Linear(2, 1)
    >>> opt = oar.optimizer.Rprop(learning_rate=0.01, parameters=net.parameters())
    >>> net(oar.ones([3, 2])).sum().backward()
    >>> opt.step()
    """

    type = "rprop"

    def __init__(self, learning_rate=0.001, learning_rate_range=(1e-5, 50), parameters=None, etas=(0.5, 1.2),
                 grad_clip=None, multi_precision=False, name=None):
        if isinstance(learning_rate, bool) or not isinstance(learning_rate, (int, float)):
            raise ArgumentError(f"Rprop: learning_rate (the initial step size) must be a float, got "
                                f"{type(learning_rate).__name__}")
        low, high = (float(v) for v in learning_rate_range)
        if not 0.0 < low <= learning_rate <= high:
            raise ArgumentError(f"Rprop: 0 < learning_rate_range[0] <= learning_rate <= learning_rate_range[1] must "
                                f"hold, got learning_rate={learning_rate}, learning_rate_range={learning_rate_range}")
        shrink, grow = (float(v) for v in etas)
        if not 0.0 < shrink < 1.0 < grow:
            raise ArgumentError(f"Rprop: 0 < etas[0] < 1 < etas[1] must hold, got etas={etas}")
        self._defaults = {"learning_rate_range": (low, high), "etas": (shrink, grow)}
        self._initial_step = float(learning_rate)
        super().__init__(learning_rate, parameters, None, grad_clip, name, multi_precision=multi_precision)

    def _accumulators(self, hyper) -> dict:
        return {"prevs": (None, 0.0), "learning_rates": (None, self._initial_step)}


__all__ = ["Rprop"]
