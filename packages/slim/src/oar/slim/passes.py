"""oar-slim's graph pass: a converted model's quantize / dequantize chains run as int8 layers.

A model that ``oar.quantization`` converted computes in float after dequantizing: each
quantized layer reads ``dequantize_linear(quantize_linear(x))`` and ``dequantize_linear(w_int8)``
(the QDQ form ONNX Runtime and TensorRT fuse). ``quantized_ops`` (phase ``quantize``, level 2,
inference programs) rewrites

- ``conv(dequantize_linear(x_q), dequantize_linear(w_q))`` (2-d, NCHW) into
  ``quantized_conv2d(x_q, ..., w_q, ...)``; a ``batch_norm_infer`` after it (through its bias
  add) is folded in: its per-channel factor ``gamma / sqrt(var + eps)`` scales whole output
  channels, so it joins the weight's steps (``w_step * factor``), and its shift becomes the bias;
- ``linear(dequantize_linear(x_q), dequantize_linear(w_q), bias)`` into ``quantized_linear``,

where ``x_q`` is quantized per tensor and ``w_q`` per tensor or per output channel. Both ops
(oar-nn's, ``oar.nn.quant``) sum the integer products exactly in int32 and dequantize once per
output; nn's ``fuse`` phase then gives them the bias add, the activation and a following max
pooling, as it does float convolutions. The results equal the QDQ program's within float32
rounding (the same products, summed exactly instead of in float).

The integer kernels are oar-numba's. Without them the ops would run numpy's float BLAS on the
integers (exact, and slower than the QDQ program, whose float kernels are compiled), so the
registered pass rewrites only where a compiled kernel of both ops is registered;
``rewrite_quantized`` rewrites unconditionally.

>>> import oar
>>> from oar.quantization import PTQ, QuantConfig
>>> from oar.quantization.observers import AbsmaxObserver, AbsMaxChannelWiseWeightObserver
>>> from oar.slim.passes import rewrite_quantized
>>> from oar.static.passes import optimize
>>> ptq = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=AbsMaxChannelWiseWeightObserver()))
>>> observed = ptq.quantize(oar.nn.Sequential(oar.nn.Linear(4, 3), oar.nn.ReLU()).eval())
>>> _ = observed(oar.randn([8, 4]))
>>> f = oar.jit.to_static(ptq.convert(observed))
>>> _ = f(oar.randn([2, 4]))
>>> [n.op for n in rewrite_quantized(optimize(f.forward.concrete_program, level=1)).nodes]
['quantize_linear', 'quantized_linear', 'relu']
"""

from __future__ import annotations

import functools

import numpy as np

import oar
from oar.ops import PLUGIN_PRIORITY
from oar.plugins import registries
from oar.static.passes import OpNode, Program, dead_code_elimination, emit, graph_pass, replace_nodes, sole_reader

INT8_OPS = ("quantized_conv2d", "quantized_linear")

# The per-channel axis of each op's weight: conv's [O, C, kh, kw], linear's [in, out].
WEIGHT_CHANNEL_AXIS = {"conv": 0, "linear": 1}


def _dequantized(program: Program, producers: dict, vid: int, axis: int | None) -> list[int] | None:
    """``[q, scale, zero_point]`` when ``vid`` is ``dequantize_linear(q)`` of an int8 ``q`` to
    float32, per tensor or per channel along ``axis`` (None: per tensor only)."""
    node = producers.get(vid)
    if node is None or node.op != "dequantize_linear" or len(node.inputs) != 3:
        return None
    q, scale, zero_point = node.inputs
    if program.values[q].dtype.name != "int8" or program.values[vid].dtype.name != "float32":
        return None
    per_tensor = program.values[scale].shape == ()
    if not per_tensor and (axis is None or node.attrs.get("axis") != axis):
        return None
    return [q, scale, zero_point]


def _emitted(program: Program, nodes: list[OpNode], op: str, inputs: list[int], attrs=None, out=None) -> int:
    node = emit(program, op, inputs, attrs, out)
    nodes.append(node)
    return node.outputs[0]


def _batch_norm_after(program: Program, producers: dict, users: dict, kept: set, conv: OpNode):
    """``(add, bias, bn)`` when ``conv``'s output goes only into ``batch_norm_infer`` over its
    channels with static statistics, through its bias add (``bias`` the 1-d bias, else None)."""
    y, add, bias = conv.outputs[0], None, None
    channels = program.values[conv.inputs[1]].shape[0]
    reader = sole_reader(users, kept, y, ("add", "batch_norm_infer"))
    if reader is not None and reader.op == "add" and len(reader.inputs) == 2:
        other = reader.inputs[1] if reader.inputs[0] == y else reader.inputs[0]
        reshape = producers.get(other)
        if reshape is None or reshape.op != "reshape" or not program.is_static(reshape.inputs[0]) or \
                program.values[reshape.inputs[0]].shape != (channels,):
            return None
        add, bias = reader, reshape.inputs[0]
        reader = sole_reader(users, kept, add.outputs[0], ("batch_norm_infer",))
    if reader is None or reader.op != "batch_norm_infer" or reader.attrs.get("channel_axis") != 1:
        return None
    if not all(program.is_static(v) and program.values[v].dtype.name == "float32" for v in reader.inputs[1:]):
        return None
    return add, bias, reader


def _quantized_conv(program: Program, producers: dict, users: dict, kept: set, conv: OpNode,
                    inputs: list[int]) -> tuple[list[OpNode], OpNode | None, OpNode | None]:
    """The nodes of ``quantized_conv2d`` on ``inputs`` for ``conv``, with a following batch norm
    folded in when there is one: its factor ``gamma / sqrt(var + eps)`` scales whole output
    channels, so it joins the weight's steps, and its shift becomes the bias the fuse phase adds.
    Also the bias add and batch norm nodes it replaces (None where absent)."""
    attrs = {**{k: conv.attrs[k] for k in ("stride", "padding", "dilation", "groups")}, "act": None, "act_attrs": {}}
    found = _batch_norm_after(program, producers, users, kept, conv)
    if found is None:
        return [emit(program, "quantized_conv2d", inputs, attrs, out=list(conv.outputs))], None, None
    add, bias, bn = found
    _, gamma, beta, mean, var = bn.inputs
    channels = program.values[conv.inputs[1]].shape[0]
    new: list[OpNode] = []
    node_of = functools.partial(_emitted, program, new)
    eps = program.add_constant(np.asarray(bn.attrs["epsilon"], np.float32), name="bn_epsilon").id
    factor = node_of("multiply", [gamma, node_of("rsqrt", [node_of("add", [var, eps])])])
    x_q, x_scale, x_zero_point, w_q, w_scale, w_zero_point = inputs
    w_scale = node_of("multiply", [w_scale, factor])  # what one integer step of each channel is worth now
    if program.values[w_zero_point].shape != (channels,):
        w_zero_point = node_of("broadcast_to", [w_zero_point], {"shape": [channels]})
    shift = node_of("subtract", [beta, node_of("multiply", [mean, factor])])
    if bias is not None:
        shift = node_of("add", [shift, node_of("multiply", [bias, factor])])
    y = node_of("quantized_conv2d", [x_q, x_scale, x_zero_point, w_q, w_scale, w_zero_point], attrs)
    node_of("add", [y, node_of("reshape", [shift], {"shape": [channels, 1, 1]})], out=list(bn.outputs))
    return new, add, bn


def _quantized_nodes(program: Program, producers: dict, users: dict, kept: set, node: OpNode):
    """``(nodes, replaced)``: the nodes that compute ``node`` (a conv or linear, with a batch norm
    after a conv) on the integers and the nodes they replace, or None."""
    if node.op == "conv":
        if len(node.inputs) != 2 or len(program.values[node.inputs[0]].shape) != 4:
            return None
    elif node.op != "linear" or len(node.inputs) not in (2, 3):
        return None
    activation = _dequantized(program, producers, node.inputs[0], None)
    weight = _dequantized(program, producers, node.inputs[1], WEIGHT_CHANNEL_AXIS[node.op])
    if activation is None or weight is None:
        return None
    if node.op == "conv":
        new, add, bn = _quantized_conv(program, producers, users, kept, node, activation + weight)
        replaced = [n for n in (node, add, bn) if n is not None]
    else:
        inputs = activation + weight
        if len(node.inputs) == 3:
            bias = program.values[node.inputs[2]]
            if bias.dtype.name != "float32" or len(bias.shape) != 1:
                return None
            inputs.append(node.inputs[2])
        new = [emit(program, "quantized_linear", inputs, {"act": None, "act_attrs": {}}, out=list(node.outputs))]
        replaced = [node]
    for n in new:
        n.no_grad = node.no_grad
    return new, replaced


def rewrite_quantized(program: Program) -> Program:
    """``conv`` / ``linear`` of dequantized int8 activations and weights -> ``quantized_conv2d`` /
    ``quantized_linear`` on the int8 values, a conv's batch norm folded into its steps and bias
    (the dequantizations left unread are removed)."""
    producers, users = program.producers(), program.users()
    kept = set(program.output_ids())
    replacements: dict[int, list[OpNode]] = {}
    removed: set[int] = set()
    for node in program.nodes:
        if id(node) in removed:
            continue
        found = _quantized_nodes(program, producers, users, kept, node)
        if found is not None:
            new, replaced = found
            replacements[id(replaced[-1])] = new  # the last node it replaces: every input is computed by then
            removed.update(id(n) for n in replaced)
    return dead_code_elimination(replace_nodes(program, replacements, removed)) if replacements else program


def compiled_int8_kernels(backend: str = "cpu") -> bool:
    """Whether a plugin registered compiled kernels of both int8 layer ops on ``backend``."""
    kernels = registries().kernels
    entries = [kernels.lookup(name, backend, oar.int8) for name in INT8_OPS]
    return all(e is not None and e.priority >= PLUGIN_PRIORITY for e in entries)


@graph_pass(phase="quantize", level=2, inference_only=True)
def quantized_ops(program: Program) -> Program:
    """``rewrite_quantized`` where compiled int8 kernels are registered (oar-numba's); else the
    program as it is, whose QDQ pairs run on compiled float kernels."""
    return rewrite_quantized(program) if compiled_int8_kernels() else program


__all__ = ["quantized_ops", "rewrite_quantized", "compiled_int8_kernels"]
