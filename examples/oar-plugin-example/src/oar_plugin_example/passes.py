"""The plugin's graph pass, written with ``oar.static.passes`` (the pass author's public API)."""

from __future__ import annotations

from oar.static.passes import graph_pass


# Level 1: part of every optimised to_static program. The gradient is unchanged too
# (d/dx logcosh(-x) = tanh(x)), so the pass is not inference-only; it simplifies.
@graph_pass(phase="simplify", level=1)
def skip_negation_under_logcosh(program):
    """logcosh is even, ``logcosh(-x) == logcosh(x)``: a ``neg`` feeding ``logcosh`` is skipped
    (the ``neg`` node, now unused, is removed by dead-code elimination after the passes)."""
    producers = program.producers()
    for node in program.nodes:
        if node.op == "logcosh":
            source = producers.get(node.inputs[0])
            if source is not None and source.op == "neg":
                node.inputs = [source.inputs[0]]
    return program.prune()
