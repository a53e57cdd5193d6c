"""Common layers: Linear, Identity, Flatten, Dropout, Embedding, Upsample, Pad, ..."""

from __future__ import annotations

from oar.nn import functional as F
from oar.nn.layer.layers import Layer


class Linear(Layer):
    """``y = x @ weight + bias``, weight ``[in_features, out_features]`` (Paddle's layout),
    XavierUniform weights and zero bias by default.

    >>> import oar
    >>> fc = oar.nn.Linear(4, 2)
    >>> fc.weight.shape, fc.bias.shape
    ([4, 2], [2])
    """

    def __init__(self, in_features: int, out_features: int, weight_attr=None, bias_attr=None, name=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = self.create_parameter([in_features, out_features], attr=weight_attr)
        self.bias = self.create_parameter([out_features], attr=bias_attr, is_bias=True)
        self.name = name

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, dtype={self._dtype}"


__all__ = ["Linear"]
