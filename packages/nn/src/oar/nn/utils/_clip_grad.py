"""``clip_grad_norm_`` / ``clip_grad_value_``: clip the ``.grad`` of parameters in place, as
Paddle's ``paddle.nn.utils`` functions do (the optimizer's ``grad_clip=`` classes are in
``oar.nn.clip``)."""

from __future__ import annotations

import math

import oar
from oar.errors import ArgumentError, GradientError
from oar.ops import Tensor

_NORM_TYPES = (math.inf, 0.0, 1.0, 2.0)


def _tensor_list(where: str, parameters) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        return [parameters]
    try:
        tensors = list(parameters)
    except TypeError:
        raise ArgumentError(f"{where}: parameters must be a Tensor or an iterable of Tensors, "
                            f"got {type(parameters).__name__}") from None
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise ArgumentError(f"{where}: parameters[{i}] must be a Tensor, got {type(t).__name__}")
    return tensors


def _number(where: str, name: str, value) -> float:
    if isinstance(value, Tensor) and value.size == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ArgumentError(f"{where}: {name} must be a number, got {type(value).__name__}")
    return float(value)


def _p_norm(x: Tensor, norm_type: float) -> Tensor:
    """``paddle.linalg.norm(x, norm_type)`` of the flattened ``x`` for p in 0, 1, 2."""
    if norm_type == 0.0:
        return oar.sum((x != 0).astype(x.dtype))  # p=0: the number of non-zero entries
    if norm_type == 1.0:
        return oar.sum(oar.abs(x))
    return oar.sqrt(oar.sum(oar.square(x)))


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False) -> Tensor:
    """Rescale the gradients of ``parameters`` together so that their joint ``norm_type``-norm is
    at most ``max_norm``; returns that norm, taken before clipping (``paddle.nn.utils.clip_grad_norm_``).

    The norm is the norm of the per-gradient norms (for ``inf``, the largest absolute entry); each
    gradient is multiplied by ``min(max_norm / (norm + 1e-6), 1)``. ``norm_type`` is one of
    ``inf``, 0, 1, 2. Parameters without a gradient are skipped; with none, the norm is 0.

    >>> import oar
    >>> w = oar.to_tensor([3.0, 4.0], stop_gradient=False)
    >>> oar.sum(w * w).backward()
    >>> oar.nn.utils.clip_grad_norm_(w, max_norm=1.0).item()
    10.0
    >>> [round(g, 4) for g in w.grad.tolist()]
    [0.6, 0.8]
    """
    where = "clip_grad_norm_"
    tensors = _tensor_list(where, parameters)
    max_norm = _number(where, "max_norm", max_norm)
    norm_type_value = _number(where, "norm_type", norm_type)
    if norm_type_value not in _NORM_TYPES:
        raise ArgumentError(f"{where}: norm_type must be one of inf, 0, 1, 2, got {norm_type!r}")
    grads = [t.grad for t in tensors if t.grad is not None]
    if not grads:
        return oar.to_tensor(0.0)
    with oar.no_grad():
        # Summed in float32 (float64 when a gradient is float64), never in float16.
        dtype = oar.float64 if any(g.dtype == oar.float64 for g in grads) else oar.float32
        grads = [g.detach().astype(dtype) for g in grads]
        if norm_type_value == math.inf:
            total_norm = oar.max(oar.stack([oar.max(oar.abs(g)) for g in grads]))
        else:
            total_norm = _p_norm(oar.stack([_p_norm(g, norm_type_value) for g in grads]), norm_type_value)
        if error_if_nonfinite and not math.isfinite(total_norm.item()):
            raise GradientError(f"{where}: the total {norm_type_value:g}-norm of the gradients is "
                                f"{total_norm.item()}, which cannot be clipped; pass error_if_nonfinite=False "
                                "to scale the gradients by it anyway")
        clip_coef = oar.clip(max_norm / (total_norm + 1e-6), max=1.0)
        for t in tensors:
            if t.grad is not None:
                t.grad = t.grad * clip_coef.astype(t.grad.dtype)
    return total_norm


def clip_grad_value_(parameters, clip_value) -> None:
    """Clip every gradient entry of ``parameters`` into ``[-clip_value, clip_value]``, in place
    (``paddle.nn.utils.clip_grad_value_``).

    >>> import oar
    >>> w = oar.to_tensor([3.0, -0.5], stop_gradient=False)
    >>> oar.sum(w * w).backward()
    >>> oar.nn.utils.clip_grad_value_(w, clip_value=1.0)
    >>> w.grad.tolist()
    [1.0, -1.0]
    """
    where = "clip_grad_value_"
    tensors = _tensor_list(where, parameters)
    clip_value = _number(where, "clip_value", clip_value)
    if clip_value < 0:
        raise ArgumentError(f"{where}: clip_value must be >= 0 (the range is [-clip_value, clip_value]), "
                            f"got {clip_value}")
    with oar.no_grad():
        for t in tensors:
            if t.grad is not None:
                t.grad.clip_(min=-clip_value, max=clip_value)
