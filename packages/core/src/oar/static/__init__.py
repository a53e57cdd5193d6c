"""``oar.static``: what describes and holds static graphs -- ``InputSpec``, ``BuildStrategy``,
the ``Program`` IR -- as in ``paddle.static``. Capture with ``oar.jit.to_static``; rewrite and run
programs with ``oar.static.passes`` (what a pass author needs).

>>> import oar
>>> from oar.static import InputSpec
>>> spec = InputSpec([None, 3], "float32", "x")
>>> f = oar.jit.to_static(lambda x: x + 1.0, input_spec=[spec])
>>> f(oar.ones([2, 3])).shape
[2, 3]
"""

from oar._graph.program import OpNode as OpNode
from oar._graph.program import Program as Program
from oar._graph.program import Value as Value
from oar._graph.program import ValueRef as ValueRef
from oar.static import nn as nn
from oar.static import passes as passes
from oar.static.input import BuildStrategy as BuildStrategy
from oar.static.input import InputSpec as InputSpec

__all__ = ["InputSpec", "BuildStrategy", "Program", "OpNode", "Value", "ValueRef", "nn", "passes"]
