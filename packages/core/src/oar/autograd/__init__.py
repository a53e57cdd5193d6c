"""``oar.autograd``: Paddle's ``paddle.autograd`` -- backward, custom ops and grad modes.

>>> import oar
>>> from oar.autograd import PyLayer
>>> class Double(PyLayer):
...     @staticmethod
...     def forward(ctx, x):
...         return x * 2
...     @staticmethod
...     def backward(ctx, dy):
...         return dy * 2
>>> x = oar.to_tensor([1.0, 2.0], stop_gradient=False)
>>> oar.autograd.backward(Double.apply(x).sum())
>>> x.grad.tolist()
[2.0, 2.0]
"""

from __future__ import annotations

from oar._engine.autograd import backward as backward
from oar._engine.autograd import enable_grad as enable_grad
from oar._engine.autograd import grad as grad
from oar._engine.autograd import is_grad_enabled as is_grad_enabled
from oar._engine.autograd import no_grad as no_grad
from oar._engine.autograd import queue_callback as queue_callback
from oar._engine.autograd import set_grad_enabled as set_grad_enabled
from oar._engine.pylayer import PyLayer as PyLayer
from oar._engine.pylayer import PyLayerContext as PyLayerContext

__all__ = [
    "backward", "PyLayer", "PyLayerContext", "grad", "no_grad", "enable_grad", "set_grad_enabled",
    "is_grad_enabled", "queue_callback",
]
