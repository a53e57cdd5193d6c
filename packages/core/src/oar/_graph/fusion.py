"""Elementwise-chain fusion: groups of elementwise ops become one ``fused_elementwise`` node.

``x * 2 + b`` then ``tanh`` is three nodes and, run op by op, three passes over memory and two
temporaries. The pass ``fuse_elementwise`` (phase ``fuse_elementwise``, level 2, inference)
groups such nodes into one node of the ``fused_elementwise`` op (``oar._ops.fused_elementwise``,
which describes the ``chain`` attribute and evaluates it)::

    %5: float32[8, 16] = fused_elementwise(%x, %b) {chain: [['scale', [0], {...}], ['add', [2, 1], {}],
                                                             ['tanh', [3], {}]]}

Only ops with the ``fusible`` trait (declared where each op is defined: core's arithmetic and
math, oar-nn's activations) are fused, over one float dtype, and only values that nothing
outside the group reads disappear, so a value read elsewhere (another node, an output, a state
update) is still computed. Broadcasting is numpy's, so the inputs may have any
broadcast-compatible shapes. Training programs keep their ops, whose gradients the backward
pass reads.
"""

from __future__ import annotations

from oar._engine.registries import OPS
from oar._graph.passes import graph_pass
from oar._graph.program import OpNode, Program


def _fusible(program: Program, node: OpNode) -> bool:
    op = OPS.lookup(node.op)
    if op is None or "fusible" not in op.traits or len(node.outputs) != 1 or not node.inputs:
        return False
    dtype = program.values[node.outputs[0]].dtype
    return dtype.is_floating and all(program.values[v].dtype is dtype for v in node.inputs)


@graph_pass(phase="fuse_elementwise", level=2, inference_only=True)
def fuse_elementwise(program: Program) -> Program:
    """Fuse groups of fusible elementwise nodes of one float dtype into ``fused_elementwise``.

    A producer joins its consumer's group when the consumer is its only reader; then a group
    whose result is read only by the nodes of one other group joins that group (``t = tanh(x)``
    then ``(t - 1) * t``). Values that are outputs or state updates are never fused away, so every
    fused-away value was read inside its group alone.
    """
    users = program.users()
    kept_alive = set(program.output_ids())
    group_of: dict[int, list[OpNode]] = {}  # id(root node) -> the group's nodes in program order
    root_of: dict[int, int] = {}  # id(node) -> id(its group's root)
    producer = program.producers()
    for node in program.nodes:
        if not _fusible(program, node):
            continue
        group = [node]
        for v in dict.fromkeys(node.inputs):
            p = producer.get(v)
            if p is None or id(p) not in root_of or root_of[id(p)] != id(p):
                continue
            if v in kept_alive or len({id(u) for u in users.get(v, ())}) != 1 or \
                    program.values[v].dtype is not program.values[node.outputs[0]].dtype:
                continue
            for member in group_of.pop(id(p)):
                root_of[id(member)] = id(node)
                group.append(member)
        root_of[id(node)] = id(node)
        group_of[id(node)] = group
    changed = True
    while changed:  # a group read by one other group only (several of its nodes) joins it
        changed = False
        for root_id, group in list(group_of.items()):
            out = next(n for n in group if id(n) == root_id).outputs[0]
            readers = {root_of.get(id(u)) for u in users.get(out, ())}
            if out in kept_alive or len(readers) != 1 or None in readers or root_id in readers:
                continue
            (target,) = readers
            for member in group_of.pop(root_id):
                root_of[id(member)] = target
                group_of[target].append(member)
            changed = True
    fused: dict[int, OpNode] = {}
    absorbed: set[int] = set()
    order = {id(n): i for i, n in enumerate(program.nodes)}
    for root_id, group in group_of.items():
        if len(group) < 2:
            continue
        group.sort(key=lambda n: order[id(n)])
        inner = {v for n in group for v in n.outputs}
        inputs = list(dict.fromkeys(v for n in group for v in n.inputs if v not in inner))
        index = {v: i for i, v in enumerate(inputs)}
        chain = []
        for n in group:
            chain.append([n.op, [index[v] for v in n.inputs], dict(n.attrs)])
            index[n.outputs[0]] = len(inputs) + len(chain) - 1
        root = group[-1]
        lines = ", ".join(dict.fromkeys(n.where for n in group if n.where)) or None  # the user's, for errors
        fused[root_id] = OpNode("fused_elementwise", inputs, list(root.outputs), {"chain": chain},
                                all(n.no_grad for n in group), lines)
        absorbed.update(id(n) for n in group)
    if not fused:
        return program
    program.nodes = [fused.get(id(n), n) for n in program.nodes if id(n) in fused or id(n) not in absorbed]
    return program.prune()


__all__ = ["fuse_elementwise"]
