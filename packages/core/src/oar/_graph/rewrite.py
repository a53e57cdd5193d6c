"""The rewrite toolkit passes are written with: new typed nodes, redirected reads, replaced nodes.

A pass finds a pattern with ``program.producers()`` / ``program.users()`` and ``sole_reader``,
builds its replacement with ``emit`` (outputs typed by the op's meta function), and puts it in
place with ``replace_nodes`` or ``rename_values``; both prune what nothing reads any more.
``oar.static.passes`` is the public face of this module.

>>> import oar
>>> from oar.jit import to_static
>>> from oar.static.passes import emit, replace_nodes
>>> f = to_static(lambda x: oar.exp(x))
>>> _ = f(oar.ones([2]))
>>> program = f.concrete_program.clone()
>>> (node,) = program.nodes
>>> tanh = emit(program, "tanh", node.inputs, out=node.outputs)
>>> [n.op for n in replace_nodes(program, {id(node): tanh}).nodes]
['tanh']
"""

from __future__ import annotations

from collections.abc import Iterable

from oar._engine.op import TensorMeta
from oar._engine.registries import OPS
from oar._graph.program import OpNode, Program, ValueRef, map_refs


def emit(program: Program, op_name: str, inputs: list[int], attrs: dict | None = None,
         out: list[int] | None = None) -> OpNode:
    """A new node of ``op_name`` (not yet placed in ``program.nodes``), its output values typed
    by the op's meta function; ``out`` reuses existing value ids for the outputs."""
    attrs = dict(attrs or {})
    metas = OPS.get(op_name).meta(*[program.values[i].meta for i in inputs], **attrs)
    metas = (metas,) if isinstance(metas, TensorMeta) else tuple(metas)
    if out is None:
        out = [program.new_value(m.shape, m.dtype).id for m in metas]
    return OpNode(op_name, inputs, out, attrs)


def rename_values(program: Program, rename: dict[int, int]) -> None:
    """Make every read of value ``a`` (by nodes, outputs and state updates) read ``rename[a]``."""
    if not rename:
        return

    def follow(v: int) -> int:
        while v in rename:
            v = rename[v]
        return v

    for node in program.nodes:
        node.inputs = [follow(v) for v in node.inputs]
    program.outputs = map_refs(program.outputs, lambda r: ValueRef(follow(r.id)))
    program.updates = [(kind, target, follow(vid)) for kind, target, vid in program.updates]


def replace_nodes(program: Program, replaced: dict[int, OpNode | list[OpNode]],
                  removed: Iterable[int] = ()) -> Program:
    """Put ``replaced[id(node)]`` (a node or a list of nodes) where ``node`` was, drop the nodes
    whose ids are in ``removed``, and prune what nothing reads any more (in place; returns it).
    A replacement without a ``where`` takes the user's line of the node it replaces."""
    removed = set(removed)
    if not replaced and not removed:
        return program
    nodes = []
    for node in program.nodes:
        new = replaced.get(id(node))
        if new is not None:
            new = new if isinstance(new, list) else [new]
            for n in new:
                n.where = n.where or node.where
            nodes.extend(new)
        elif id(node) not in removed:
            nodes.append(node)
    program.nodes = nodes
    return program.prune()


def sole_reader(users: dict, kept: set, vid: int, op_names: Iterable[str]) -> OpNode | None:
    """The one node that reads ``vid`` if its op is one of ``op_names`` and ``vid`` is not in
    ``kept`` (the outputs and state updates): the condition for fusing ``vid`` away."""
    readers = users.get(vid, ())
    if vid in kept or len(readers) != 1 or readers[0].op not in op_names:
        return None
    return readers[0]


__all__ = ["emit", "rename_values", "replace_nodes", "sole_reader"]
