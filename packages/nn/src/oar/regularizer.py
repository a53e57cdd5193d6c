"""``oar.regularizer``: weight decay added to a parameter's gradient before the optimizer update.

An optimizer's ``weight_decay`` (a float means ``L2Decay(float)``) applies to every parameter
whose ``ParamAttr`` sets no ``regularizer`` of its own; a parameter's own regularizer wins.

>>> import oar
>>> fc = oar.nn.Linear(4, 2)
>>> opt = oar.optimizer.SGD(0.1, parameters=fc.parameters(), weight_decay=oar.regularizer.L1Decay(1e-4))
"""

from __future__ import annotations

import oar
from oar.errors import ArgumentError
from oar.ops import Tensor


class WeightDecayRegularizer:
    """Base class: ``regularizer(param, grad)`` returns the term added to ``grad``."""

    def __init__(self, coeff: float = 0.0):
        if isinstance(coeff, Tensor):
            coeff = coeff.item()
        if not isinstance(coeff, (int, float)) or isinstance(coeff, bool):
            raise ArgumentError(f"{type(self).__name__}: coeff must be a number, got {type(coeff).__name__}")
        self._coeff = float(coeff)

    @property
    def coeff(self) -> float:
        return self._coeff

    def __call__(self, param: Tensor, grad: Tensor | None = None, block=None) -> Tensor:
        raise NotImplementedError

    def __str__(self) -> str:
        return f"{type(self).__name__}, coeff={self._coeff:f}"

    __repr__ = __str__


class L1Decay(WeightDecayRegularizer):
    """L1 weight decay: adds ``coeff * sign(param)`` to the gradient.

    >>> import oar
    >>> w = oar.to_tensor([-2.0, 0.0, 3.0])
    >>> oar.regularizer.L1Decay(0.1)(w).tolist()
    [-0.10000000149011612, 0.0, 0.10000000149011612]
    """

    def __call__(self, param: Tensor, grad: Tensor | None = None, block=None) -> Tensor:
        with oar.no_grad():
            return oar.scale(oar.sign(param), self._coeff)


class L2Decay(WeightDecayRegularizer):
    """L2 weight decay: adds ``coeff * param`` to the gradient (the gradient of ``coeff/2 * ||param||^2``).

    >>> import oar
    >>> w = oar.to_tensor([-2.0, 4.0])
    >>> oar.regularizer.L2Decay(0.5)(w).tolist()
    [-1.0, 2.0]
    """

    def __call__(self, param: Tensor, grad: Tensor | None = None, block=None) -> Tensor:
        with oar.no_grad():
            return oar.scale(param, self._coeff)


def as_regularizer(weight_decay, where: str) -> WeightDecayRegularizer | None:
    """``None``, a number (L2 coefficient) or a regularizer, as a regularizer or None."""
    if weight_decay is None or isinstance(weight_decay, WeightDecayRegularizer):
        return weight_decay
    if isinstance(weight_decay, Tensor):
        weight_decay = weight_decay.item()
    if isinstance(weight_decay, (int, float)) and not isinstance(weight_decay, bool):
        return L2Decay(float(weight_decay))
    raise ArgumentError(
        f"{where}: weight_decay must be None, a float (the L2Decay coefficient) or an "
        f"oar.regularizer.L1Decay/L2Decay, got {type(weight_decay).__name__}"
    )


__all__ = ["L1Decay", "L2Decay", "WeightDecayRegularizer"]
