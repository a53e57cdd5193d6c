"""Factories: what a ``QuantConfig`` holds, and what makes one quanter or observer per layer.

``AbsmaxObserver(quant_bits=8)`` is not an observer; it is a factory that remembers its arguments.
``PTQ``/``QAT`` call ``factory._instance(layer)`` once for every layer the config reaches, so each
layer gets its own observer state (Paddle's ``paddle.quantization.factory``).
"""

from __future__ import annotations

import abc
import sys
from collections.abc import Callable
from typing import Any

from oar.nn import Layer


class ClassWithArguments(metaclass=abc.ABCMeta):
    """Arguments kept for a class that is instantiated later."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._args = args
        self._kwargs = kwargs

    @property
    def args(self) -> tuple:
        return self._args

    @property
    def kwargs(self) -> dict:
        return self._kwargs

    @abc.abstractmethod
    def _get_class(self) -> type:
        """The quanter or observer class this factory instantiates."""

    def __str__(self) -> str:
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"{type(self).__name__}({', '.join(parts)})"

    __repr__ = __str__


class QuanterFactory(ClassWithArguments):
    """Holds a quanter class and its arguments; ``_instance(layer)`` builds one for ``layer``."""

    def _instance(self, layer: Layer):
        return self._get_class()(layer, *self.args, **self.kwargs)


ObserverFactory = QuanterFactory


def quanter(class_name: str) -> Callable[[type], type]:
    """Declare a factory named ``class_name`` for a quanter class, in the module that applies the
    decorator (Paddle's ``paddle.quantization.quanter``). The class's ``__init__`` takes the layer first.

    >>> import oar
    >>> from oar.quantization import BaseQuanter, QuantConfig, quanter
    >>> @quanter("IdentityQuanter")
    ... class IdentityQuanterLayer(BaseQuanter):
    ...     def __init__(self, layer, bits=8):
    ...         super().__init__()
    ...         self._bits = bits
    ...     def forward(self, x):
    ...         return x
    ...     def scales(self): return None
    ...     def zero_points(self): return None
    ...     def quant_axis(self): return None
    ...     def bit_length(self): return self._bits
    >>> factory = IdentityQuanter(bits=4)  # declared by the decorator
    >>> str(factory)
    'IdentityQuanter(bits=4)'
    """

    # The caller's globals, as Paddle's inspect.stack()[1]: where the decorator is written.
    namespace = sys._getframe(1).f_globals

    def wrapper(target_class: type) -> type:
        factory = type(class_name, (QuanterFactory,), {
            "_get_class": lambda self: target_class,
            "__module__": target_class.__module__,
            "__doc__": f"The factory of {target_class.__name__} (declared by @quanter).",
        })
        namespace[class_name] = factory
        if isinstance(namespace.get("__all__"), list):
            namespace["__all__"].append(class_name)
        return target_class

    return wrapper
