"""``oar.static.passes``: what a pass author needs -- the ``Pass`` and its phases, the rewrite
toolkit, the pipeline, the executor and its observer hook.

A pass is registered by a plugin (``oar_register_passes`` in ``oar.hookspecs``) and joins every
``to_static`` pipeline at its phase (``PHASES``: simplify, fold, quantize, fuse,
fuse_elementwise); an ``opt_in`` pass runs only when named in ``optimize(..., enable=[...])``.

>>> import oar
>>> from oar.jit import to_static
>>> from oar.static.passes import graph_pass, emit, optimize, replace_nodes
>>> @graph_pass(phase="fuse", level=2, inference_only=True)
... def exp_to_tanh(program):
...     replaced = {id(n): emit(program, "tanh", n.inputs, out=n.outputs) for n in program.nodes if n.op == "exp"}
...     return replace_nodes(program, replaced)
>>> f = to_static(lambda x: oar.exp(x) * 2.0)
>>> _ = f(oar.ones([2]))
>>> [n.op for n in exp_to_tanh(f.concrete_program.clone()).nodes]
['tanh', 'multiply']

The op names and attributes a pass matches are a stable contract: ``docs/ops.md`` lists them.
``output_tensors(structure)`` lists the tensors of a function's output (tensors in lists, tuples
and dicts) in the order a captured program lists its outputs.
"""

from oar._graph.executor import Executor as Executor
from oar._graph.executor import _tensors_of as output_tensors
from oar._graph.executor import observe as observe
from oar._graph.passes import DEFAULT_LEVEL as DEFAULT_LEVEL
from oar._graph.passes import PHASES as PHASES
from oar._graph.passes import Pass as Pass
from oar._graph.passes import dead_code_elimination as dead_code_elimination
from oar._graph.passes import graph_pass as graph_pass
from oar._graph.passes import optimize as optimize
from oar._graph.passes import select_passes as select_passes
from oar._graph.program import OpNode as OpNode
from oar._graph.program import Program as Program
from oar._graph.program import Value as Value
from oar._graph.program import ValueRef as ValueRef
from oar._graph.program import attr_key as attr_key
from oar._graph.program import iter_refs as iter_refs
from oar._graph.program import map_refs as map_refs
from oar._graph.rewrite import emit as emit
from oar._graph.rewrite import rename_values as rename_values
from oar._graph.rewrite import replace_nodes as replace_nodes
from oar._graph.rewrite import sole_reader as sole_reader

__all__ = [
    "Pass", "PHASES", "DEFAULT_LEVEL", "graph_pass", "optimize", "select_passes", "dead_code_elimination", "emit",
    "rename_values", "replace_nodes", "sole_reader", "attr_key", "iter_refs", "map_refs", "Program", "OpNode", "Value", "ValueRef",
    "Executor", "observe", "output_tensors",
]
