"""oar-nn's inference passes on its own ops: conv + batch-norm folding, linear and conv with their
bias and activation as one op each, and max pooling without the mask only gradients read.

- ``fold_batch_norm`` (phase ``fold``, level 2, inference): ``conv`` (+ bias) followed by
  ``batch_norm_infer`` becomes one ``conv`` whose weight and bias are computed from the
  parameters -- by op nodes that read parameters only, which the executor runs once per
  parameter update.
- ``fuse_linear`` (phase ``fuse``, level 2, inference): ``matmul(x, w)``, then ``add`` of a bias of ``N``
  elements (``w``'s output features), then optionally one activation of
  ``oar.nn.functional.fused.ACTIVATIONS`` -> ``fused_linear``. A matmul followed by an
  activation alone fuses too, and so does a ``linear`` op (matmul and bias already in one)
  followed by an activation.
- ``fuse_conv2d`` (phase ``fuse``, level 2, inference): a 2-d ``conv``, then ``add`` of a per-channel bias
  (``reshape(b, [C, 1, 1])`` as Conv2D traces it, or a ``[C, 1, 1]`` / ``[1, C, 1, 1]`` value,
  as conv + batch-norm folding leaves it), then optionally an activation -> ``fused_conv2d``.
- The int8 layers ``quantized_linear`` / ``quantized_conv2d`` (oar-slim's ``quantize`` phase
  makes them) take their bias add and activation, and a conv its max pooling, the same way.
- ``max_pool_drop_mask`` (phase ``fuse``, level 2, inference): a ``max_pool`` whose mask nobody reads ->
  ``max_pool_infer``.
- ``fuse_conv2d_max_pool`` (phase ``fuse``, level 2, inference, registered after the two above): a ``fused_conv2d``
  (or ``quantized_conv2d``) whose
  only reader is a ``max_pool_infer`` of ``k x k`` windows, stride ``k``, no padding, floor mode
  -> the ``fused_conv2d`` with ``max_pool=k``: a kernel writes the pooled output only, and the
  full-size activation never exists.

A value is fused away only when the next op of the pattern is its only reader and it is no
output or state update, so a value read elsewhere is still computed. The ``fuse`` phase runs after
the ``fold`` phase and before elementwise-chain fusion (which would otherwise take the bias add
and the activation). oar-nn's plugin registers them lazily: the static graph loads when a
program is optimized, not when nn is imported.
"""

from __future__ import annotations

import functools

import numpy as np

from oar.nn.functional.fused import ACTIVATIONS
from oar.static.passes import OpNode, Program, emit, graph_pass, replace_nodes, sole_reader


def _bias_of(program: Program, producers: dict, users: dict, vid: int, channels: int) -> int | None:
    """The 1-d bias whose reshape to [C, 1, ...] is ``vid``, if that is what ``vid`` is."""
    node = producers.get(vid)
    if node is None or node.op != "reshape" or len(users.get(vid, ())) != 1:
        return None
    (b,) = node.inputs
    if program.is_static(b) and program.values[b].shape == (channels,):
        return b
    return None


def _emit_into(program: Program, nodes: list, op_name: str, inputs: list[int], attrs=None, out=None) -> int:
    node = emit(program, op_name, inputs, attrs, out)
    nodes.append(node)
    return node.outputs[0]


@graph_pass(phase="fold", level=2, inference_only=True)
def fold_batch_norm(program: Program) -> Program:
    """``conv`` (+ bias add) then ``batch_norm_infer`` -> one ``conv`` with folded weight and bias."""
    producers = program.producers()
    users = program.users()
    outputs = set(program.output_ids())
    removed: set[int] = set()
    replacement: dict[int, list[OpNode]] = {}
    for bn in program.nodes:
        if bn.op != "batch_norm_infer" or bn.attrs.get("channel_axis") != 1:
            continue
        y, gamma, beta, mean, var = bn.inputs
        if not all(program.is_static(v) for v in (gamma, beta, mean, var)):
            continue
        if y in outputs or len(users.get(y, ())) != 1:
            continue
        add = None
        node = producers.get(y)
        if node is not None and node.op == "add":
            add = node
            node = producers.get(add.inputs[0])
            if node is None or node.op != "conv" or node.outputs[0] in outputs or \
                    len(users.get(node.outputs[0], ())) != 1:
                continue
        if node is None or node.op != "conv" or id(node) in removed:
            continue
        conv = node
        x, w = conv.inputs
        wv = program.values[w]
        if not program.is_static(w) or None in wv.shape:
            continue
        channels = wv.shape[0]
        nd = len(wv.shape) - 2
        bias = None
        if add is not None:
            bias = _bias_of(program, producers, users, add.inputs[1], channels)
            if bias is None:
                continue
        dtype = program.values[y].dtype
        eps = program.add_constant(np.asarray(bn.attrs["epsilon"], dtype=dtype.np), name="bn_epsilon").id
        new: list[OpNode] = []
        node_of = functools.partial(_emit_into, program, new)
        scale = node_of("multiply", [gamma, node_of("rsqrt", [node_of("add", [var, eps])])])
        w2 = node_of("multiply", [w, node_of("reshape", [scale], {"shape": [channels] + [1] * (nd + 1)})])
        shift = node_of("subtract", [beta, node_of("multiply", [mean, scale])])
        if bias is not None:
            shift = node_of("add", [shift, node_of("multiply", [bias, scale])])
        conv2 = node_of("conv", [x, w2], conv.attrs)
        node_of("add", [conv2, node_of("reshape", [shift], {"shape": [channels] + [1] * nd})], out=list(bn.outputs))
        removed.update({id(conv), id(bn)} | ({id(add), id(producers[add.inputs[1]])} if add is not None else set()))
        replacement[id(bn)] = new
    return replace_nodes(program, replacement, removed)


def _activation_after(program: Program, users: dict, kept: set, vid: int) -> OpNode | None:
    node = sole_reader(users, kept, vid, ACTIVATIONS)
    return node if node is not None and len(node.inputs) == 1 and len(node.outputs) == 1 else None


def _bias_input(program: Program, producers: dict, add: OpNode, y: int, channels, accepted_shapes) -> int | None:
    """The bias operand of ``add`` (the other input than ``y``), unwrapped from a reshape of a 1-d
    ``[channels]`` value when that is how it was made, or None when it is no bias."""
    if len(add.inputs) != 2 or add.inputs.count(y) != 1:
        return None
    b = add.inputs[1] if add.inputs[0] == y else add.inputs[0]
    value = program.values[b]
    if value.dtype is not program.values[y].dtype or channels is None:
        return None
    node = producers.get(b)
    if node is not None and node.op == "reshape" and program.values[node.inputs[0]].shape == (channels,):
        return node.inputs[0]  # the reshape stays only if something else reads it (dead code removes it)
    if value.shape in accepted_shapes(channels):
        return b
    return None


def _fuse(program: Program, anchor_op: str, fused_op: str, accepted, make_attrs, channels_of,
          bias_shapes) -> Program:
    producers = program.producers()
    users = program.users()
    kept = set(program.output_ids())
    replaced: dict[int, OpNode] = {}
    removed: set[int] = set()
    for node in program.nodes:
        if node.op != anchor_op or not accepted(program, node):
            continue
        y = node.outputs[0]
        inputs, group, last = list(node.inputs), [node], y
        add = sole_reader(users, kept, y, ("add",)) if bias_shapes is not None else None
        if add is not None:
            b = _bias_input(program, producers, add, y, channels_of(program, node), bias_shapes)
            if b is not None:
                inputs.append(b)
                group.append(add)
                last = add.outputs[0]
        act = _activation_after(program, users, kept, last)
        attrs = {**make_attrs(node), "act": None, "act_attrs": {}}
        if act is not None:
            attrs.update(act=act.op, act_attrs=dict(act.attrs))
            group.append(act)
            last = act.outputs[0]
        if len(group) == 1:
            continue
        replaced[id(group[-1])] = OpNode(fused_op, inputs, [last], attrs, all(n.no_grad for n in group))
        removed.update(id(n) for n in group)
    return replace_nodes(program, replaced, removed)


def _float_inputs(program: Program, node: OpNode) -> bool:
    """Whether ``node``'s inputs all have its floating output's dtype (what the fused float ops take)."""
    dtype = program.values[node.outputs[0]].dtype
    return dtype.is_floating and all(program.values[v].dtype is dtype for v in node.inputs)


def _is_linear(program: Program, node: OpNode) -> bool:
    return _float_inputs(program, node) and len(program.values[node.inputs[1]].shape) == 2 and \
        len(program.values[node.inputs[0]].shape) >= 1


# quantized_linear / quantized_conv2d (oar-slim's quantize phase makes them) before any epilogue:
# (x, x_scale, x_zero_point, weight, weight_scale, weight_zero_point), no bias, no activation.
QUANTIZED_OPERANDS = 6


def _is_bare_quantized(program: Program, node: OpNode) -> bool:
    return node.attrs.get("act") is None and node.attrs.get("max_pool") is None


def _is_bare_quantized_conv(program: Program, node: OpNode) -> bool:
    return _is_bare_quantized(program, node) and len(node.inputs) == QUANTIZED_OPERANDS


def _quantized_attrs(node: OpNode) -> dict:
    return {k: v for k, v in node.attrs.items() if k not in ("act", "act_attrs")}


def _linear_features(program: Program, node: OpNode):
    w = program.values[node.inputs[1]].shape
    return w[0] if node.attrs.get("transpose_y") else w[1]


@graph_pass(phase="fuse", level=2, inference_only=True)
def fuse_linear(program: Program) -> Program:
    """``matmul`` (2-d weight) + bias ``add`` + activation, or ``linear`` + activation -> ``fused_linear``."""
    flags = lambda n: {"transpose_x": bool(n.attrs.get("transpose_x", False)),  # noqa: E731
                       "transpose_y": bool(n.attrs.get("transpose_y", False))}
    program = _fuse(program, "matmul", "fused_linear", _is_linear, flags, _linear_features, lambda c: {(c,)})
    program = _fuse(program, "linear", "fused_linear", _is_linear, flags, _linear_features, None)
    return _fuse(program, "quantized_linear", "quantized_linear", _is_bare_quantized, _quantized_attrs,
                 None, None)  # its bias is already an operand, as linear's


def _is_conv2d(program: Program, node: OpNode) -> bool:
    return _float_inputs(program, node) and len(program.values[node.inputs[0]].shape) == 4


def _conv_channels(program: Program, node: OpNode):
    return program.values[node.inputs[1]].shape[0]


def _quantized_conv_channels(program: Program, node: OpNode):
    return program.values[node.inputs[3]].shape[0]


@graph_pass(phase="fuse", level=2, inference_only=True)
def fuse_conv2d(program: Program) -> Program:
    """2-d ``conv`` + per-channel bias ``add`` + activation -> ``fused_conv2d``; a
    ``quantized_conv2d`` takes its bias and activation the same way."""
    program = _fuse(program, "conv", "fused_conv2d", _is_conv2d,
                    lambda n: {k: n.attrs[k] for k in ("stride", "padding", "dilation", "groups")},
                    _conv_channels, lambda c: {(c,), (c, 1, 1), (1, c, 1, 1)})
    return _fuse(program, "quantized_conv2d", "quantized_conv2d", _is_bare_quantized_conv, _quantized_attrs,
                 _quantized_conv_channels, lambda c: {(c,)})


@graph_pass(phase="fuse", level=2, inference_only=True)
def max_pool_drop_mask(program: Program) -> Program:
    """``max_pool`` whose mask (the argmax, for gradients) nobody reads -> ``max_pool_infer``."""
    users = program.users()
    kept = set(program.output_ids())
    replaced = {}
    for node in program.nodes:
        if node.op == "max_pool" and node.outputs[1] not in kept and not users.get(node.outputs[1]):
            replaced[id(node)] = OpNode("max_pool_infer", node.inputs, node.outputs[:1], dict(node.attrs), node.no_grad)
    return replace_nodes(program, replaced)


@graph_pass(phase="fuse", level=2, inference_only=True)
def fuse_conv2d_max_pool(program: Program) -> Program:
    """``fused_conv2d`` then ``max_pool_infer`` (square window = stride, no padding, floor mode)
    -> one ``fused_conv2d`` with ``max_pool``."""
    users = program.users()
    kept = set(program.output_ids())
    replaced: dict[int, OpNode] = {}
    removed: set[int] = set()
    for node in program.nodes:
        if node.op not in ("fused_conv2d", "quantized_conv2d") or node.attrs.get("max_pool") is not None:
            continue
        pool = sole_reader(users, kept, node.outputs[0], ("max_pool_infer",))
        if pool is None:
            continue
        k, stride, padding = pool.attrs["kernel_size"], pool.attrs["stride"], pool.attrs["padding"]
        if len(k) != 2 or k[0] != k[1] or list(stride) != list(k) or any(padding) or pool.attrs["ceil_mode"]:
            continue
        replaced[id(pool)] = OpNode(node.op, node.inputs, pool.outputs, {**node.attrs, "max_pool": int(k[0])},
                                    node.no_grad and pool.no_grad)
        removed.update((id(node), id(pool)))
    return replace_nodes(program, replaced, removed)
