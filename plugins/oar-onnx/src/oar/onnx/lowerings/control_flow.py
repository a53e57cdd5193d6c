"""Control flow of oar-core: ``cond`` as ONNX ``If``, ``while`` as ONNX ``Loop``.

oar's blocks are closed sub-programs: everything a block reads is a feed, given by the node's
inputs. ONNX's subgraphs are the other way round: an ``If`` branch takes no inputs and reads the
enclosing graph's tensors by name, and a ``Loop`` body takes (iteration number, condition, loop-
carried values) and reads everything else by name. So a block is written with its feeds *named*
after the node's input tensors (``LoweringContext.lower_block``'s ``outer_names``): no Identity,
no copy.

``while(*loop_vars, *captured, cond_block=, body_block=, num_loop_vars=n)`` is::

    c0 = <cond_block on (loop_vars, captured)>          # written inline, before the Loop
    outs = Loop("", c0, *loop_vars, body=step)          # no trip count: the condition stops it
    step(i, c, *vars) = (<cond_block on body(vars)>, *body(vars))   # captured read by name

``step`` is built as an oar program (the body block's nodes, then the condition block's nodes on
the body's results) and written as one graph. A condition of shape ``[1]`` is carried as it is:
ONNX and ONNX Runtime take any one-element bool tensor.

Refused: ``while(history=True)``, which only a training program whose backward is derived holds
(the iteration history the backward reads); an exported model infers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oar.onnx.lowerings import lowers

if TYPE_CHECKING:
    from oar.static import Program


@lowers("cond")
def lower_cond(node, ctx):
    pred, *operands = ctx.inputs(node)
    branches = {}
    for attr, onnx_attr in (("true_block", "then_branch"), ("false_block", "else_branch")):
        block = node.attrs[attr]
        # An If branch has no inputs: its feeds are the node's operands, read from this graph.
        branches[onnx_attr] = ctx.lower_block(block, [], ctx.fresh(f"cond_{onnx_attr[:4]}"), outer_names=operands)
    ctx.emit("If", [pred], ctx.outputs(node), **branches)


@lowers("while")
def lower_while(node, ctx):
    if node.attrs.get("history"):
        raise ctx.unsupported(node, "history=True (the iteration record of a training program's derived "
                                    "backward) has no place in an inference model; export the eval program")
    n = node.attrs["num_loop_vars"]
    cond_block, body_block = node.attrs["cond_block"], node.attrs["body_block"]
    names = ctx.inputs(node)
    carried, captured = names[:n], names[n:]

    # The first test, before the Loop: the condition block's nodes written into this graph.
    first = ctx.lower_block(cond_block, [], ctx.fresh("while_cond"), outer_names=names)
    ctx.nodes.extend(first.node)
    ctx.initializers.extend(first.initializer)
    condition = first.output[0].name

    step = step_program(cond_block, body_block, n)
    graph_name = ctx.fresh("while_body")
    # The body's own inputs: a loop variable given twice is still two inputs of two names.
    inputs = [f"{graph_name}/iteration", f"{graph_name}/condition"] + [f"{graph_name}/loop_var{i}" for i in range(n)]
    body = ctx.lower_block(step, inputs, graph_name, outer_names=captured)
    ctx.emit("Loop", ["", condition, *carried], ctx.outputs(node), body=body)


def step_program(cond_block: Program, body_block: Program, num_loop_vars: int) -> Program:
    """One iteration as a Loop body: feeds (iteration number, condition, loop vars, captured),
    outputs (the condition on the next loop vars, the next loop vars): ``body_block``'s nodes
    followed by ``cond_block``'s on their results. Both blocks are closed, so their value ids are
    renumbered into the new program (two blocks built apart may share ids); nested blocks in
    the nodes' attributes are closed too and are shared as they are."""
    # Imported here: the plugin loads this module on every program's first op, and oar.static
    # would load the whole static-graph layer with it.
    from oar.static import Program, ValueRef

    step = Program()
    condition = cond_block.values[cond_block.outputs[0].id]
    step.feeds += [step.new_value((), "int64").id, step.new_value(condition.shape, condition.dtype).id]
    body_ids = {}
    for vid in body_block.feeds:
        src = body_block.values[vid]
        body_ids[vid] = step.new_value(src.shape, src.dtype).id
        step.feeds.append(body_ids[vid])
    next_vars = _copy_nodes(body_block, step, body_ids)
    captured = [body_ids[v] for v in body_block.feeds[num_loop_vars:]]
    cond_ids = dict(zip(cond_block.feeds, next_vars + captured))
    step.outputs = [ValueRef(v) for v in _copy_nodes(cond_block, step, cond_ids) + next_vars]
    return step


def _copy_nodes(block: Program, into: Program, ids: dict[int, int]) -> list[int]:
    """Copy ``block``'s constants and nodes into ``into`` (``ids`` maps the block's feeds and
    grows with every value copied); the ids of the block's outputs in ``into``."""
    for name, vid in block.constants.items():
        ids[vid] = into.add_constant(block.constant_data[name], name).id
    for node in block.nodes:
        outs = []
        for vid in node.outputs:
            src = block.values[vid]
            ids[vid] = into.new_value(src.shape, src.dtype).id
            outs.append(ids[vid])
        into.add_node(node.op, [ids[v] for v in node.inputs], outs, node.attrs, node.no_grad, node.where)
    return [ids[r.id] for r in block.outputs]
