"""``oar.flops``: the FLOPs of one forward pass of a network, counted by ``paddle.flops``'s rules
(``paddle/hapi/dynamic_flops.py``).

A forward post-hook on every leaf layer (one without sublayers) adds that layer's count, picked by
its exact type -- a subclass of ``Conv2D`` is not a ``Conv2D`` here, as in Paddle. A
multiply-accumulate counts once:

==========================================  ==================================================
layer                                       FLOPs
==========================================  ==================================================
Conv1D/2D/3D, Conv1D/2D/3DTranspose         out.numel * (Cin / groups * prod(kernel) + bias?)
Linear                                      in_features * out.numel (the bias is not counted)
BatchNorm, BatchNorm2D                      2 * in.numel (the forward runs in eval mode)
LeakyReLU                                   in.numel
AvgPool1D/2D/3D                             out.numel
AdaptiveAvgPool1D/2D/3D                     (prod(in_spatial // out_spatial) + 1) * out.numel
ReLU, ReLU6, Dropout                        0
any other leaf (MaxPool2D, Sigmoid,         0, said once per type; give ``custom_ops`` to
BatchNorm1D, Upsample, ...)                 count it
==========================================  ==================================================

A counter is ``fn(layer, inputs, output)`` that adds to ``layer.total_ops``, an int64 tensor of
shape [1] that exists for the forward pass only (Paddle's protocol, so Paddle's ``custom_ops``
functions run unchanged). Params are each counted leaf's own parameters, summed over the leaves
that ran.

Where oar does better than Paddle: the mode of every sublayer, the hooks and the random stream
are restored, also when the forward raises (Paddle puts the whole network back in train mode when
it was training, and leaves its hooks and buffers when the forward fails); a network that is
itself a leaf is counted (Paddle returns 0); ``input_size`` may be a list of shapes for a network
with several inputs; conv and adaptive-pool layers in channels-last format are read in that
format (Paddle reads NCHW positions whatever the format); a network given to ``oar.jit.to_static``
runs its Python forward for this call and stays converted (Paddle unwraps it for good); a bad
``net`` or ``input_size`` raises ``ArgumentError`` (Paddle warns and returns -1). Static
programs (``paddle.static.Program``) are not counted.
"""

from __future__ import annotations

import math
import numbers
import sys
import types
from collections.abc import Callable, Mapping

import oar
from oar import nn
from oar.errors import ArgumentError
from oar.nn.layer.layers import Layer
from oar.ops import Tensor

FlopsCounter = Callable[[Layer, tuple, object], None]


def _channels_last(layer: Layer) -> bool:
    return str(getattr(layer, "_data_format", "NCHW")).endswith("C")


def _spatial(shape, layer: Layer) -> list:
    return list(shape[1:-1] if _channels_last(layer) else shape[2:])


def count_conv(layer, inputs, output) -> None:
    # in_channels / groups from the layer rather than from inputs[0].shape[1] (Paddle's
    # reading), which is the height for channels-last input; the same number for NCHW.
    kernel = math.prod(layer.weight.shape[2:])
    bias = 1 if layer.bias is not None else 0
    layer.total_ops += output.size * (layer._in_channels // layer._groups * kernel + bias)


def count_linear(layer, inputs, output) -> None:
    layer.total_ops += layer.weight.shape[0] * output.size  # oar's Linear weight is [in, out], as Paddle's


def count_batch_norm(layer, inputs, output) -> None:
    layer.total_ops += 2 * inputs[0].size


def count_leaky_relu(layer, inputs, output) -> None:
    layer.total_ops += inputs[0].size


def count_avg_pool(layer, inputs, output) -> None:
    layer.total_ops += output.size


def count_adaptive_avg_pool(layer, inputs, output) -> None:
    kernel = math.prod(i // o for i, o in zip(_spatial(inputs[0].shape, layer), _spatial(output.shape, layer)))
    layer.total_ops += (kernel + 1) * output.size


def count_zero(layer, inputs, output) -> None:
    pass


def _counters() -> dict[type, FlopsCounter]:
    """Paddle's ``register_hooks`` table; the 3-D pools join when oar-nn has them."""
    by_name = {
        "Conv1D": count_conv, "Conv2D": count_conv, "Conv3D": count_conv,
        "Conv1DTranspose": count_conv, "Conv2DTranspose": count_conv, "Conv3DTranspose": count_conv,
        "BatchNorm": count_batch_norm, "BatchNorm2D": count_batch_norm,
        "ReLU": count_zero, "ReLU6": count_zero, "Dropout": count_zero,
        "LeakyReLU": count_leaky_relu,
        "Linear": count_linear,
        "AvgPool1D": count_avg_pool, "AvgPool2D": count_avg_pool, "AvgPool3D": count_avg_pool,
        "AdaptiveAvgPool1D": count_adaptive_avg_pool, "AdaptiveAvgPool2D": count_adaptive_avg_pool,
        "AdaptiveAvgPool3D": count_adaptive_avg_pool,
    }
    return {getattr(nn, name): fn for name, fn in by_name.items() if hasattr(nn, name)}


COUNTERS: dict[type, FlopsCounter] = _counters()


def _normalize_sizes(input_size) -> list[list[int]]:
    """One shape (a list or tuple of positive ints) or a list of them, one per input."""

    def is_dim(d) -> bool:
        return isinstance(d, numbers.Integral) and not isinstance(d, bool)

    def check(shape) -> list[int]:
        if not shape or not all(is_dim(d) for d in shape):
            raise ArgumentError(f"flops: input_size must be a shape (a list of ints) or a list of shapes, got {input_size!r}")
        if any(d <= 0 for d in shape):
            raise ArgumentError(f"flops: the dimensions of input_size must be positive, got {list(shape)}")
        return [int(d) for d in shape]

    if not isinstance(input_size, (list, tuple)) or not input_size:
        raise ArgumentError(f"flops: input_size must be a shape (a list of ints) or a list of shapes, got {input_size!r}")
    if all(isinstance(s, (list, tuple)) for s in input_size):
        return [check(s) for s in input_size]
    return [check(input_size)]


def _shape(value) -> list:
    """The shape a table row shows: a tensor's, or the first tensor's of a list (as Paddle)."""
    if isinstance(value, Tensor):
        return list(value.shape)
    if isinstance(value, (list, tuple)) and value:
        return _shape(value[0])
    return []


def _is_leaf(layer: Layer) -> bool:
    return next(layer.children(), None) is None


def _python_forward(net: Layer):
    """The forward that runs Python for this call: a to_static forward would replay its program
    on a cache hit, and no hook would run. ``oar.jit`` is looked up, not imported: a net was
    converted only if it is loaded, and eager code does not load the graph layer."""
    jit = sys.modules.get("oar.jit")
    forward = net.forward
    if jit is not None and isinstance(forward, jit.StaticFunction):
        return types.MethodType(forward.dygraph_function, net)
    return None


def flops(net: Layer, input_size, custom_ops: Mapping[type, FlopsCounter] | None = None,
          print_detail: bool = False) -> int:
    """Count the FLOPs of one forward pass of ``net`` over a random input of ``input_size``, print
    ``Total Flops: N     Total Params: M`` (after a per-layer table with ``print_detail``) and
    return N, as ``paddle.flops``.

    ``input_size`` is one shape (``[1, 3, 224, 224]``; Paddle documents batch size 1) or a list
    of shapes, one per positional input. ``custom_ops`` maps a layer class to
    ``fn(layer, inputs, output)``, which adds to ``layer.total_ops``; it replaces the built-in
    counter of that class. The rules per layer are in this module's docstring: a
    multiply-accumulate counts once, a Linear's bias is not counted, and a layer oar has no rule
    for counts zero. The forward runs in eval mode without gradients; the modes, the hooks and
    the random stream are as they were afterwards.

    >>> import oar
    >>> from oar.vision.models import LeNet
    >>> oar.flops(LeNet(), [1, 1, 28, 28])  # Paddle's documented LeNet numbers
    <class 'oar.nn.layer.conv.Conv2D'>'s flops has been counted
    <class 'oar.nn.layer.activation.ReLU'>'s flops has been counted
    Cannot find suitable count function for <class 'oar.nn.layer.pooling.MaxPool2D'>. Treat it as zero FLOPs.
    <class 'oar.nn.layer.common.Linear'>'s flops has been counted
    Total Flops: 347560     Total Params: 61610
    347560
    >>> def count_max_pool(layer, inputs, output):
    ...     layer.total_ops += inputs[0].numel()
    >>> oar.flops(LeNet(), [1, 1, 28, 28], custom_ops={oar.nn.MaxPool2D: count_max_pool})  # doctest: +ELLIPSIS
    <class 'oar.nn.layer.conv.Conv2D'>'s flops has been counted
    ...
    Customize Function has been applied to <class 'oar.nn.layer.pooling.MaxPool2D'>
    ...
    Total Flops: 353864     Total Params: 61610
    353864
    """
    if not isinstance(net, Layer):
        raise ArgumentError(f"flops: net must be an oar.nn.Layer, got {type(net).__name__}"
                            " (static programs are not counted)")
    sizes = _normalize_sizes(input_size)
    custom_ops = {} if custom_ops is None else custom_ops
    if not isinstance(custom_ops, Mapping) or not all(
            isinstance(k, type) and callable(v) for k, v in custom_ops.items()):
        raise ArgumentError("flops: custom_ops must map layer classes to functions fn(layer, inputs, output)")

    leaves = [layer for layer in net.sublayers(include_self=True) if _is_leaf(layer)]
    seen_types: set[type] = set()
    handles = []
    ran: dict[int, dict] = {}  # id(leaf) -> its input and output shapes, once it ran

    def record(layer, inputs, output):
        ran[id(layer)] = {"input": _shape(list(inputs)), "output": _shape(output)}

    def add_hooks(layer: Layer) -> None:
        # Paddle's order: the messages in Layer.apply's order, the counter before the recorder.
        if not _is_leaf(layer):
            return
        kind = type(layer)
        counter = custom_ops.get(kind) or COUNTERS.get(kind)
        if kind not in seen_types:
            if kind in custom_ops:
                print(f"Customize Function has been applied to {kind}")
            elif counter is not None:
                print(f"{kind}'s flops has been counted")
            else:
                print(f"Cannot find suitable count function for {kind}. Treat it as zero FLOPs.")
            seen_types.add(kind)
        layer.register_buffer("total_ops", oar.zeros([1], dtype="int64"), persistable=False)
        if counter is not None:
            handles.append(layer.register_forward_post_hook(counter))
        handles.append(layer.register_forward_post_hook(record))

    modes = [(layer, layer.training) for layer in net.sublayers(include_self=True)]
    had_forward, own_forward = "forward" in net.__dict__, net.__dict__.get("forward")
    python_forward = _python_forward(net)
    rng_state = oar.get_rng_state()
    try:
        inputs = [oar.randn(shape) for shape in sizes]
        oar.set_rng_state(rng_state)  # the draw above leaves the caller's random stream as it was
        net.eval()
        net.apply(add_hooks)
        if python_forward is not None:
            object.__setattr__(net, "forward", python_forward)
        with oar.no_grad():
            net(*inputs)
        rows = [[layer.full_name(), ran[id(layer)]["input"], ran[id(layer)]["output"],
                 sum(p.size for p in layer.parameters()), int(layer.total_ops)]
                for layer in leaves if id(layer) in ran]
    finally:
        for handle in handles:
            handle.remove()
        for layer in leaves:
            if "total_ops" in layer._buffers:
                delattr(layer, "total_ops")
        for layer, training in modes:
            object.__setattr__(layer, "training", training)
        if python_forward is not None:
            if had_forward:
                object.__setattr__(net, "forward", own_forward)
            else:
                del net.__dict__["forward"]

    total_ops = sum(row[4] for row in rows)
    total_params = sum(row[3] for row in rows)
    if print_detail:
        print(_table(["Layer Name", "Input Shape", "Output Shape", "Params", "Flops"], rows))
    print(f"Total Flops: {total_ops}     Total Params: {total_params}")
    return total_ops


def _table(heads: list[str], rows: list[list]) -> str:
    """Paddle's table: each cell centred in its column's widest text plus two spaces."""
    widths = [max([len(h)] + [len(str(row[i])) for row in rows]) for i, h in enumerate(heads)]
    shelf = "".join("+" + "-" * (w + 2) for w in widths) + "+"

    def line(cells) -> str:
        return "".join("|" + str(c).center(w + 2) for c, w in zip(cells, widths)) + "|"

    return "\n".join([shelf, line(heads), shelf, *(line(row) for row in rows), shelf])


__all__ = ["flops"]
