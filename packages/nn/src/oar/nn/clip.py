"""Gradient clipping, as an optimizer's ``grad_clip=``: ClipGradByValue, ClipGradByNorm,
ClipGradByGlobalNorm.

A clip object maps a list of ``(param, grad)`` pairs to a new list; the optimizer applies it
before weight decay and the update, as Paddle does. Parameters with ``need_clip=False``
(``ParamAttr(need_clip=False)``) keep their gradient and, for the global norm, are left out of
the norm too. The arithmetic uses oar ops, so it runs on whichever device the gradients are.

>>> import oar
>>> fc = oar.nn.Linear(4, 2)
>>> clip = oar.nn.ClipGradByGlobalNorm(clip_norm=1.0)
>>> opt = oar.optimizer.SGD(0.1, parameters=fc.parameters(), grad_clip=clip)
"""

from __future__ import annotations

import oar
from oar.errors import ArgumentError
from oar.ops import Tensor


def _number(value, what: str) -> float:
    if isinstance(value, Tensor):
        value = value.item()
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise ArgumentError(f"{what} must be a number, got {type(value).__name__}")
    return float(value)


def _sum_dtype(grad: Tensor):
    # Squares are summed in float32 (float64 for float64 gradients), never in float16.
    return oar.float64 if grad.dtype == oar.float64 else oar.float32


def _clipped(param) -> bool:
    return getattr(param, "need_clip", True)


class ClipGradBase:
    """Base class of the gradient clipping strategies; ``clip(params_grads)`` returns new pairs."""

    def __call__(self, params_grads):
        with oar.no_grad():
            return self._dygraph_clip(list(params_grads))

    def _dygraph_clip(self, params_grads):
        raise NotImplementedError


class ClipGradByValue(ClipGradBase):
    """Clip every gradient element into ``[min, max]``; ``min`` defaults to ``-max``.

    >>> import oar
    >>> w = oar.nn.Linear(2, 1).weight
    >>> [(_, g)] = oar.nn.ClipGradByValue(max=1.0)([(w, oar.to_tensor([[3.0], [-0.5]]))])
    >>> g.tolist()
    [[1.0], [-0.5]]
    """

    def __init__(self, max: float, min: float | None = None):  # noqa: A002 - Paddle's argument names
        max = _number(max, "ClipGradByValue: max")
        if min is None:
            if max <= 0:
                raise ArgumentError(f"ClipGradByValue: max must be positive when min is not given, got {max}")
            min = -max
        min = _number(min, "ClipGradByValue: min")
        if min > max:
            raise ArgumentError(f"ClipGradByValue: min ({min}) must not exceed max ({max})")
        self.max, self.min = max, min

    def _dygraph_clip(self, params_grads):
        out = []
        for p, g in params_grads:
            if g is not None and _clipped(p):
                g = oar.clip(g, min=self.min, max=self.max)
            out.append((p, g))
        return out

    def __str__(self) -> str:
        return f"Clip Gradient By Value, min = {self.min:f}, max={self.max:f}"


class ClipGradByNorm(ClipGradBase):
    """Rescale each gradient on its own to L2 norm at most ``clip_norm``:
    ``g * clip_norm / ||g||`` when ``||g|| > clip_norm``, else ``g``.

    >>> import oar
    >>> w = oar.nn.Linear(2, 1).weight
    >>> [(_, g)] = oar.nn.ClipGradByNorm(clip_norm=1.0)([(w, oar.to_tensor([[3.0], [4.0]]))])
    >>> [round(v, 6) for v in g.flatten().tolist()]
    [0.6, 0.8]
    """

    def __init__(self, clip_norm: float):
        self.clip_norm = _number(clip_norm, "ClipGradByNorm: clip_norm")
        if self.clip_norm < 0:
            raise ArgumentError(f"ClipGradByNorm: clip_norm must be >= 0, got {self.clip_norm}")

    def _dygraph_clip(self, params_grads):
        out = []
        for p, g in params_grads:
            if g is not None and _clipped(p):
                norm = oar.sqrt(oar.sum(oar.square(g.astype(_sum_dtype(g)))))
                if norm.item() > self.clip_norm:
                    g = g * (self.clip_norm / norm).astype(g.dtype)
            out.append((p, g))
        return out

    def __str__(self) -> str:
        return f"Gradient Clip By Norm, clip_norm={self.clip_norm:f}"


class ClipGradByGlobalNorm(ClipGradBase):
    """Rescale all gradients together so that their joint L2 norm is at most ``clip_norm``:
    ``g * clip_norm / max(global_norm, clip_norm)``, where ``global_norm`` is the norm of the
    concatenation of every gradient whose parameter has ``need_clip=True``.

    ``auto_skip_clip=True`` skips the multiplication when the norm is within bounds (the result
    is the same). ``group_name`` is accepted for Paddle's API; in eager mode each instance
    clips the pairs it is given.

    >>> import oar
    >>> a, b = oar.nn.Linear(1, 1).weight, oar.nn.Linear(1, 1).weight
    >>> pairs = [(a, oar.to_tensor([[3.0]])), (b, oar.to_tensor([[4.0]]))]
    >>> [round(g.item(), 6) for _, g in oar.nn.ClipGradByGlobalNorm(clip_norm=1.0)(pairs)]
    [0.6, 0.8]
    """

    def __init__(self, clip_norm: float, group_name: str = "default_group", auto_skip_clip: bool = False):
        self.clip_norm = _number(clip_norm, "ClipGradByGlobalNorm: clip_norm")
        if self.clip_norm < 0:
            raise ArgumentError(f"ClipGradByGlobalNorm: clip_norm must be >= 0, got {self.clip_norm}")
        if not isinstance(group_name, str):
            raise ArgumentError(f"ClipGradByGlobalNorm: group_name must be a str, got {type(group_name).__name__}")
        self.group_name = group_name
        self.auto_skip_clip = auto_skip_clip

    def global_norm(self, params_grads) -> Tensor | None:
        """The joint L2 norm of the clipped gradients (None when there are none)."""
        grads = [g for p, g in params_grads if g is not None and _clipped(p)]
        if not grads:
            return None
        dtype = oar.float64 if any(g.dtype == oar.float64 for g in grads) else oar.float32
        total = None
        for g in grads:
            square_sum = oar.sum(oar.square(g.astype(dtype)))
            total = square_sum if total is None else total + square_sum
        return oar.sqrt(total)

    def _dygraph_clip(self, params_grads):
        norm = self.global_norm(params_grads)
        if norm is None:
            return params_grads
        if self.auto_skip_clip and norm.item() <= self.clip_norm:
            return params_grads
        # the limit as a Python scalar follows norm to its device (oar.full would make it on the current one)
        factor = self.clip_norm / oar.maximum(norm, self.clip_norm)
        out = []
        for p, g in params_grads:
            if g is not None and _clipped(p):
                g = g * factor.astype(g.dtype)
            out.append((p, g))
        return out

    def __str__(self) -> str:
        return f"Gradient Clip By GlobalNorm, global_norm={self.clip_norm:f}"


__all__ = ["ClipGradByValue", "ClipGradByNorm", "ClipGradByGlobalNorm"]
