"""``weight_norm`` / ``remove_weight_norm``: Paddle's reparameterisation ``w = g * v / ||v||``.

The parameter ``weight`` is replaced by two, ``weight_g`` (the magnitudes, one per slice along
``dim``) and ``weight_v`` (the directions, ``weight``'s shape); a forward pre-hook recomputes
``layer.weight`` from them with oar ops before each call, so gradients reach ``weight_g`` and
``weight_v`` through ordinary autograd. Between calls ``weight`` is a non-persistable buffer, as
in Paddle: ``state_dict()`` holds ``weight_g`` and ``weight_v``, not ``weight``.
"""

from __future__ import annotations

import oar
from oar.errors import ArgumentError
from oar.nn.layer.layers import Layer, _unique_name
from oar.nn.parameter import Parameter
from oar.ops import Tensor

# Paddle's epsilon in the norm: keeps a zero slice from dividing by zero.
_NORM_EPS = 1e-12


def _other_axes(ndim: int, dim: int) -> list[int]:
    return [axis for axis in range(ndim) if axis != dim]


def norm_except_dim(p: Tensor, dim: int) -> Tensor:
    """The L2 norm of ``p`` over every axis but ``dim`` (shape ``[p.shape[dim]]``); over all of
    ``p`` for ``dim == -1`` (shape ``[]``)."""
    if dim == -1:
        return oar.sqrt(oar.sum(oar.square(p)) + _NORM_EPS)
    if p.ndim == 1:
        return oar.sqrt(oar.square(p) + _NORM_EPS)
    return oar.sqrt(oar.sum(oar.square(p), axis=_other_axes(p.ndim, dim)) + _NORM_EPS)


def compute_weight_norm(v: Tensor, g: Tensor, dim: int) -> Tensor:
    """``g * v / ||v||``, the norm taken as in ``norm_except_dim`` and ``g`` broadcast along ``dim``."""
    if dim == -1:
        return v / (oar.sqrt(oar.sum(oar.square(v))) + _NORM_EPS) * g
    if v.ndim == 1:
        return v / oar.sqrt(oar.square(v) + _NORM_EPS) * g
    square_sum = oar.sum(oar.square(v), axis=_other_axes(v.ndim, dim), keepdim=True)
    broadcast_shape = [1] * v.ndim
    broadcast_shape[dim] = v.shape[dim]
    return v / oar.sqrt(square_sum + _NORM_EPS) * oar.reshape(g, broadcast_shape)


def _new_parameter(layer: Layer, value: Tensor) -> Parameter:
    """A parameter of ``layer`` holding a copy of ``value`` (same dtype and device), named as
    ``create_parameter`` names them."""
    return Parameter(value.detach().clone(), name=_unique_name(f"{layer._full_name}.w"))


def _check_layer(where: str, layer) -> None:
    if not isinstance(layer, Layer):
        raise ArgumentError(f"{where}: layer must be an oar.nn.Layer, got {type(layer).__name__}")


def _check_parameter(where: str, layer: Layer, name: str) -> Parameter:
    parameter = layer._parameters.get(name) if isinstance(name, str) else None
    if parameter is None:
        held = ", ".join(n for n, p in layer._parameters.items() if p is not None) or "none"
        raise ArgumentError(f"{where}: {type(layer).__name__} has no parameter {name!r} (its parameters: {held})")
    return parameter


class WeightNorm:
    """The forward pre-hook ``weight_norm`` registers: ``layer.<name> = g * v / ||v||``."""

    def __init__(self, name: str, dim: int):
        self.name = name
        self.dim = dim

    def compute_weight(self, layer: Layer) -> Tensor:
        return compute_weight_norm(getattr(layer, self.name + "_v"), getattr(layer, self.name + "_g"), self.dim)

    @staticmethod
    def apply(layer: Layer, name: str, dim: int | None) -> WeightNorm:
        _check_layer("weight_norm", layer)
        if any(isinstance(h, WeightNorm) and h.name == name for h in layer._forward_pre_hooks.values()):
            raise ArgumentError(f"weight_norm: {type(layer).__name__}.{name} already has a weight_norm hook")
        weight = _check_parameter("weight_norm", layer, name)
        rank = weight.ndim
        if dim is None:
            dim = -1  # None: one norm over the whole weight
        elif isinstance(dim, bool) or not isinstance(dim, int) or not -rank <= dim < rank:
            raise ArgumentError(f"weight_norm: dim must be None or an int in [{-rank}, {rank}) for the "
                                f"{rank}-D {name} of shape {weight.shape}, got {dim!r}")
        elif dim != -1:
            dim %= rank  # as Paddle: -1 means "all of it", other negative dims count from the end
        hook = WeightNorm(name, dim)
        with oar.no_grad():
            g = norm_except_dim(weight, dim)
        del layer._parameters[name]
        layer.add_parameter(name + "_v", _new_parameter(layer, weight))
        layer.add_parameter(name + "_g", _new_parameter(layer, g))
        # Without a graph until the first call (each call recomputes it), so that a freshly
        # wrapped layer can still be deep-copied.
        with oar.no_grad():
            setattr(layer, name, hook.compute_weight(layer))
        layer.register_forward_pre_hook(hook)
        return hook

    def remove(self, layer: Layer) -> None:
        with oar.no_grad():
            weight = self.compute_weight(layer)
        delattr(layer, self.name)
        del layer._parameters[self.name + "_g"]
        del layer._parameters[self.name + "_v"]
        layer.add_parameter(self.name, _new_parameter(layer, weight))

    def __call__(self, layer: Layer, inputs) -> None:
        setattr(layer, self.name, self.compute_weight(layer))


def weight_norm(layer: Layer, name: str = "weight", dim: int | None = 0) -> Layer:
    """Reparameterise ``layer.<name>`` as ``g * v / ||v||`` (Paddle's ``paddle.nn.utils.weight_norm``).

    ``weight`` is replaced by the parameters ``weight_g`` (the norms over every axis but ``dim``,
    shape ``[weight.shape[dim]]``; ``dim=None`` or ``-1``, as in Paddle, takes one norm over the whole weight, shape ``[]``)
    and ``weight_v`` (initially ``weight``); a forward pre-hook recomputes ``weight`` before each
    call. Returns ``layer``.

    >>> import oar
    >>> conv = oar.nn.utils.weight_norm(oar.nn.Conv2D(3, 5, 3))
    >>> conv.weight_g.shape, conv.weight_v.shape
    ([5], [5, 3, 3, 3])
    >>> sorted(conv.state_dict())
    ['bias', 'weight_g', 'weight_v']
    """
    WeightNorm.apply(layer, name, dim)
    return layer


def remove_weight_norm(layer: Layer, name: str = "weight") -> Layer:
    """Undo ``weight_norm``: ``weight`` becomes a parameter again, holding ``g * v / ||v||``.

    >>> import oar
    >>> fc = oar.nn.utils.weight_norm(oar.nn.Linear(2, 3))
    >>> sorted(oar.nn.utils.remove_weight_norm(fc).state_dict())
    ['bias', 'weight']
    """
    _check_layer("remove_weight_norm", layer)
    for hook_id, hook in list(layer._forward_pre_hooks.items()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(layer)
            del layer._forward_pre_hooks[hook_id]
            return layer
    raise ArgumentError(f"remove_weight_norm: {type(layer).__name__} has no weight_norm on {name!r}")
