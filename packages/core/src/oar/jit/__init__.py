"""``oar.jit``: dynamic to static -- capture eager code into a Program, run it, save it, load it.

>>> import oar
>>> from oar.static import InputSpec
>>> @oar.jit.to_static(input_spec=[InputSpec([None, 2], name="x")])
... def f(x):
...     return oar.tanh(x) * 3.0
>>> f(oar.zeros([4, 2])).shape
[4, 2]

``TranslatedLayer`` (what ``jit.load`` returns) is an ``oar.nn.Layer`` when oar-nn is installed;
it resolves on first use, so importing oar.jit never imports oar.nn.
"""

from oar._graph.tracing import GraphBreakError as GraphBreakError
from oar.jit._save_load import load as load
from oar.jit._save_load import save as save
from oar.jit.api import StaticFunction as StaticFunction
from oar.jit.api import enable_to_static as enable_to_static
from oar.jit.api import not_to_static as not_to_static
from oar.jit.api import to_static as to_static
from oar.jit.translated_layer import translated_layer_class

__all__ = ["to_static", "not_to_static", "enable_to_static", "save", "load", "TranslatedLayer", "StaticFunction",
           "GraphBreakError"]


def __getattr__(name: str):
    if name == "TranslatedLayer":
        cls = translated_layer_class()
        globals()["TranslatedLayer"] = cls
        return cls
    raise AttributeError(f"module 'oar.jit' has no attribute {name!r}")
