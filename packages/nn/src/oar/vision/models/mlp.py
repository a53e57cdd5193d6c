"""``MLP``: oar's own small multilayer perceptron (Paddle has no ``vision.models.MLP``)."""

from __future__ import annotations

import math

import oar
from oar import nn
from oar.errors import ArgumentError, ShapeError


class MLP(nn.Layer):
    """A multilayer perceptron over flattened images: ``[N, *dims]`` -> ``[N, num_classes]``.

    oar's own model (``paddle.vision.models`` has no MLP). The input is flattened from axis 1, so
    ``[N, 1, 28, 28]`` images and ``[N, 784]`` rows both work. ``layers`` is a Sequential of
    ``Linear(input_size, h0), ReLU(), Linear(h0, h1), ReLU(), ..., Linear(h_last, num_classes)``;
    ``num_classes <= 0`` leaves the last Linear out (the model returns the last hidden
    activations), as the Paddle models do.

    >>> import oar
    >>> from oar.vision.models import MLP
    >>> model = MLP(input_size=64, hidden_sizes=(32,), num_classes=10)
    >>> model(oar.rand([4, 1, 8, 8])).shape
    [4, 10]
    >>> [name for name, _ in model.named_parameters()]
    ['layers.0.weight', 'layers.0.bias', 'layers.2.weight', 'layers.2.bias']
    """

    def __init__(self, input_size: int = 784, hidden_sizes=(512, 512), num_classes: int = 10):
        super().__init__()
        sizes = [input_size, *hidden_sizes]
        if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in sizes):
            raise ArgumentError(f"MLP: input_size and hidden_sizes must be positive ints, got input_size={input_size!r}, "
                                f"hidden_sizes={hidden_sizes!r}")
        self.input_size, self.hidden_sizes, self.num_classes = input_size, tuple(hidden_sizes), num_classes
        layers: list[nn.Layer] = []
        for n_in, n_out in zip(sizes[:-1], sizes[1:]):
            layers += [nn.Linear(n_in, n_out), nn.ReLU()]
        if num_classes > 0:
            layers.append(nn.Linear(sizes[-1], num_classes))
        self.layers = nn.Sequential(*layers)

    def forward(self, inputs):
        if inputs.ndim < 2 or math.prod(inputs.shape[1:]) != self.input_size:
            raise ShapeError(f"MLP: expected inputs [N, ...] with {self.input_size} values per sample "
                             f"(input_size), got shape {inputs.shape}")
        return self.layers(oar.flatten(inputs, 1))
