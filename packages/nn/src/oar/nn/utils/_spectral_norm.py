"""``spectral_norm``: Paddle's ``W / sigma(W)``, the largest singular value estimated by power iteration.

``weight`` is renamed ``weight_orig`` (the same Parameter); the buffers ``weight_u`` ([h]) and
``weight_v`` ([w]) hold the singular-vector estimates of ``W`` seen as an ``[h, w]`` matrix (axis
``dim`` first, the rest flattened). In training, each forward pre-hook call runs
``n_power_iterations`` steps ``v = normalize(W^T u)``, ``u = normalize(W v)`` in place on the
buffers (without gradient), then sets ``layer.weight = W / (u . W v)``; in eval mode the stored
``u``, ``v`` are used as they are. The gradient reaches ``weight_orig`` through ``W`` and ``sigma``
with ``u`` and ``v`` held constant, as in Paddle.
"""

from __future__ import annotations

import oar
from oar.errors import ArgumentError
from oar.nn import functional as F
from oar.nn.layer.common import Linear
from oar.nn.layer.conv import Conv1DTranspose, Conv2DTranspose, Conv3DTranspose
from oar.nn.layer.layers import Layer
from oar.nn.utils._weight_norm import _check_layer, _check_parameter
from oar.ops import Tensor

# Layers whose weight keeps its output features on axis 1: spectral_norm's dim=None picks 1 for them.
_OUTPUT_ON_AXIS_1 = (Conv1DTranspose, Conv2DTranspose, Conv3DTranspose, Linear)


def weight_to_matrix(weight: Tensor, dim: int) -> Tensor:
    """``weight`` as an ``[weight.shape[dim], -1]`` matrix: axis ``dim`` moved first, the rest flattened."""
    if dim != 0:
        weight = oar.transpose(weight, [dim] + [axis for axis in range(weight.ndim) if axis != dim])
    return oar.reshape(weight, [weight.shape[0], -1])


class SpectralNorm:
    """The forward pre-hook ``spectral_norm`` registers: ``layer.<name> = W / sigma(W)``."""

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12):
        if isinstance(n_power_iterations, bool) or not isinstance(n_power_iterations, int) or n_power_iterations <= 0:
            raise ArgumentError(f"spectral_norm: n_power_iterations must be a positive int, got {n_power_iterations!r}")
        self.name = name
        self.dim = dim
        self.n_power_iterations = n_power_iterations
        self.eps = float(eps)

    def compute_weight(self, layer: Layer, do_power_iteration: bool) -> Tensor:
        weight = getattr(layer, self.name + "_orig")
        u = getattr(layer, self.name + "_u")
        v = getattr(layer, self.name + "_v")
        weight_mat = weight_to_matrix(weight, self.dim)
        if do_power_iteration:
            with oar.no_grad():
                for _ in range(self.n_power_iterations):
                    v.set_value(F.normalize(oar.matmul(weight_mat, u, transpose_x=True), axis=0, epsilon=self.eps))
                    u.set_value(F.normalize(oar.matmul(weight_mat, v), axis=0, epsilon=self.eps))
                # Copies: the next call's in-place update must not change what this call's backward saved.
                u, v = u.clone(), v.clone()
        sigma = oar.dot(u, oar.mv(weight_mat, v))
        return weight / sigma

    def __call__(self, layer: Layer, inputs) -> None:
        setattr(layer, self.name, self.compute_weight(layer, do_power_iteration=layer.training))

    @staticmethod
    def apply(layer: Layer, name: str, n_power_iterations: int, dim: int, eps: float) -> SpectralNorm:
        _check_layer("spectral_norm", layer)
        if any(isinstance(h, SpectralNorm) and h.name == name for h in layer._forward_pre_hooks.values()):
            raise ArgumentError(f"spectral_norm: {type(layer).__name__}.{name} already has a spectral_norm hook")
        weight = _check_parameter("spectral_norm", layer, name)
        rank = weight.ndim
        if isinstance(dim, bool) or not isinstance(dim, int) or not -rank <= dim < rank:
            raise ArgumentError(f"spectral_norm: dim must be an int in [{-rank}, {rank}) for the {rank}-D {name} "
                                f"of shape {weight.shape}, got {dim!r}")
        hook = SpectralNorm(name, n_power_iterations, dim % rank, eps)
        with oar.no_grad():
            height, width = weight_to_matrix(weight, hook.dim).shape
            u = F.normalize(oar.normal(0.0, 1.0, shape=[height]).astype(weight.dtype), axis=0, epsilon=hook.eps)
            v = F.normalize(oar.normal(0.0, 1.0, shape=[width]).astype(weight.dtype), axis=0, epsilon=hook.eps)
        del layer._parameters[name]
        layer.add_parameter(name + "_orig", weight)
        # ``weight`` stays readable before the first call (initialisers look at it), as a plain
        # tensor without a graph: assigning the Parameter itself would register it a second time.
        with oar.no_grad():
            setattr(layer, name, weight * 1.0)
        layer.register_buffer(name + "_u", u)
        layer.register_buffer(name + "_v", v)
        layer.register_forward_pre_hook(hook)
        return hook


def spectral_norm(layer: Layer, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Layer:
    """Divide ``layer.<name>`` by its spectral norm before each call (``paddle.nn.utils.spectral_norm``).

    ``dim`` is the axis taken as the matrix's rows; ``None`` picks 1 for Linear and the transposed
    convolutions (their output features), else 0. ``weight_orig`` is the trained parameter;
    ``weight_u`` and ``weight_v`` are persistable buffers updated by ``n_power_iterations`` power
    iterations per training call. Returns ``layer``.

    >>> import oar
    >>> fc = oar.nn.utils.spectral_norm(oar.nn.Linear(4, 3))
    >>> sorted(fc.state_dict())
    ['bias', 'weight_orig', 'weight_u', 'weight_v']
    >>> fc.weight_u.shape, fc.weight_v.shape
    ([3], [4])
    """
    if dim is None:
        dim = 1 if isinstance(layer, _OUTPUT_ON_AXIS_1) else 0
    SpectralNorm.apply(layer, name, n_power_iterations, dim, eps)
    return layer
