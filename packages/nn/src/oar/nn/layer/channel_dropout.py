"""Channel dropout layers of oar.nn: ``FeatureAlphaDropout`` (``F.feature_alpha_dropout``),
active in training mode only."""

from __future__ import annotations

from oar.nn import functional as F
from oar.nn.layer.layers import Layer


class FeatureAlphaDropout(Layer):
    """Alpha dropout of whole channels (``F.feature_alpha_dropout``) in training; the identity
    in evaluation.

    >>> import oar
    >>> layer = oar.nn.FeatureAlphaDropout(0.5)
    >>> x = oar.ones([2, 3, 4])
    >>> layer.eval()(x) is x
    True
    """

    def __init__(self, p: float = 0.5, name=None):
        super().__init__()
        self.p = p
        self.name = name

    def forward(self, x):
        return F.feature_alpha_dropout(x, p=self.p, training=self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


__all__ = ["FeatureAlphaDropout"]
