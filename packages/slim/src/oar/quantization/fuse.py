"""Folding batch norm into the convolution before it (Paddle's ``fuse_conv_bn``), before PTQ.

In eval mode a ``BatchNorm2D`` is a per-channel affine map, so after a ``Conv2D`` it folds into the
conv: with ``s = gamma / sqrt(var + eps)`` per output channel, ``w' = w * s`` and
``b' = beta + (b - mean) * s``; the batch norm becomes ``nn.Identity()``. The quantized model then
keeps one int8 weight and one float bias per conv instead of also the batch norm's four float
tensors, and runs one op fewer per pair.

Paddle's ``fuse_utils.fuse_conv_bn`` pairs each conv with the next batch norm *registered*, which
can fold a batch norm into a conv it does not follow. Here the pairs come from the model's captured
program (``oar.slim.prune.capture``), and a pair is folded only where

- the program has ``conv`` (+ its bias add) -> ``batch_norm_infer`` (channels on axis 1) on the two
  layers' own parameters, each parameter read by that op only;
- the conv's output (and the bias add's) is read by nothing else and is no program output;
- the batch norm layer ran on what the conv layer returned, as often as the conv ran (forward hooks
  during the capture), so a forward that calls ``F.conv2d`` / ``F.batch_norm`` on the layers'
  parameters itself is left alone.

>>> import oar
>>> from oar.quantization import fuse_conv_bn
>>> net = oar.nn.Sequential(oar.nn.Conv2D(3, 8, 3, bias_attr=False), oar.nn.BatchNorm2D(8), oar.nn.ReLU())
>>> _ = net.eval()
>>> fused = fuse_conv_bn(net, [1, 3, 8, 8])
>>> fused
Sequential(
  (0): Conv2D(3, 8, kernel_size=[3, 3], data_format=NCHW)
  (1): Identity()
  (2): ReLU()
)
>>> x = oar.randn([2, 3, 8, 8])
>>> float((fused(x) - net(x)).abs().max()) < 1e-5
True
"""

from __future__ import annotations

import copy
from collections import Counter

import numpy as np

from oar import nn
from oar.errors import ArgumentError

_BN_PARAMS = ("weight", "bias", "_mean", "_variance")  # batch_norm_infer's inputs after x, in order


def _check_eval(where: str, model) -> None:
    if not isinstance(model, nn.Layer):
        raise ArgumentError(f"{where}: expected an oar.nn.Layer, got {type(model).__name__}")
    for path, layer in model.named_sublayers(include_self=True):
        if layer.training:
            which = "the model" if not path else f"layer {path!r} ({type(layer).__name__})"
            raise ArgumentError(f"{where}: {which} is in train mode; batch norm folds into a conv with its running "
                                f"statistics, in eval mode only: call model.eval() first")


def _param_reads(program) -> Counter:
    """How many op inputs read each parameter (by name), in the program and its control-flow blocks."""
    from oar.static import Program  # loaded with the program it reads; see conv_bn_pairs

    reads: Counter = Counter()
    for node in program.nodes:
        reads.update(program.values[v].name for v in node.inputs if program.is_param(v))
        for block in node.attrs.values():
            if isinstance(block, Program):
                reads.update(_param_reads(block))
    return reads


def _owner(program, vids, attrs, layers: dict, kind: type) -> str | None:
    """The path of the ``kind`` layer whose parameters ``attrs`` are the values ``vids``, if one is."""
    if not all(program.is_param(v) for v in vids):
        return None
    names = [program.values[v].name for v in vids]
    path = names[0][:-len(attrs[0])].rstrip(".")  # "blocks.0.conv1.weight" -> "blocks.0.conv1"
    layer = layers.get(path)
    if not isinstance(layer, kind) or layer._data_format != "NCHW":
        return None
    for name, attr in zip(names, attrs):
        if name != (f"{path}.{attr}" if path else attr) or program.param_tensors[name] is not getattr(layer, attr):
            return None
    return path


def _capture_with_calls(model: nn.Layer, inputs, layers: dict):
    """The captured program, and per conv / batch norm path what its calls returned (convs) or got
    (batch norms): the same Tensor objects when a batch norm ran on a conv layer's output."""
    from oar.slim.prune import capture  # the static graph loads when a model is fused, not with oar.quantization

    calls: dict[str, list] = {}
    handles = []
    for path, layer in layers.items():
        if isinstance(layer, nn.Conv2D):
            calls[path] = []
            handles.append(layer.register_forward_post_hook(lambda _, __, out, seen=calls[path]: seen.append(out)))
        elif isinstance(layer, nn.BatchNorm2D):
            calls[path] = []
            handles.append(layer.register_forward_pre_hook(lambda _, args, seen=calls[path]: seen.append(args[0])))
    try:
        return capture(model, inputs), calls
    finally:
        for handle in handles:
            handle.remove()


def conv_bn_pairs(model: nn.Layer, inputs) -> list[tuple[str, str]]:
    """The ``(conv path, batch norm path)`` pairs of ``model`` (in eval mode) that ``fuse_conv_bn``
    folds, in program order, read from its program captured on ``inputs`` (an input shape such as
    ``[1, 3, 32, 32]``, a list of shapes, InputSpecs or example tensors, one per forward argument).

    >>> import oar
    >>> from oar.quantization import conv_bn_pairs
    >>> class Net(oar.nn.Layer):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.conv1, self.bn, self.conv2 = oar.nn.Conv2D(3, 4, 1), oar.nn.BatchNorm2D(4), oar.nn.Conv2D(4, 4, 1)
    ...     def forward(self, x):
    ...         return self.bn(self.conv2(self.conv1(x)))  # bn follows conv2, registered after conv1
    >>> conv_bn_pairs(Net().eval(), [1, 3, 4, 4])
    [('conv2', 'bn')]
    """
    _check_eval("conv_bn_pairs", model)
    layers = dict(model.named_sublayers(include_self=True))
    program, calls = _capture_with_calls(model, inputs, layers)
    producers, users = program.producers(), program.users()
    kept = set(program.output_ids())
    reads = _param_reads(program)

    def only_reader(vid: int, node) -> bool:
        return vid not in kept and [id(n) for n in users.get(vid, [])] == [id(node)]

    pairs = []
    for bn in program.nodes:
        if bn.op != "batch_norm_infer" or bn.attrs.get("channel_axis") != 1:
            continue
        bn_path = _owner(program, bn.inputs[1:], _BN_PARAMS, layers, nn.BatchNorm2D)
        if bn_path is None:
            continue
        conv, add, bias = producers.get(bn.inputs[0]), None, None
        if conv is not None and conv.op == "add":  # Conv2D's bias: add(conv(x, w), reshape(b))
            add, bias = conv, producers.get(conv.inputs[1])
            conv = producers.get(add.inputs[0])
        if conv is None or conv.op != "conv" or len(conv.inputs) != 2:
            continue
        conv_path = _owner(program, conv.inputs[1:], ("weight",), layers, nn.Conv2D)
        if conv_path is None:
            continue
        params = [program.values[v].name for v in (conv.inputs[1], *bn.inputs[1:])]
        if layers[conv_path].bias is None:
            flows = add is None and only_reader(conv.outputs[0], bn)
        else:
            flows = (add is not None and bias is not None and bias.op == "reshape"
                     and _owner(program, bias.inputs, ("bias",), layers, nn.Conv2D) == conv_path
                     and only_reader(bias.outputs[0], add) and only_reader(conv.outputs[0], add)
                     and only_reader(add.outputs[0], bn))
            params += [program.values[bias.inputs[0]].name] if flows else []
        convs, bns = calls[conv_path], calls[bn_path]  # one call per trace (a dynamic dim traces twice)
        ran = len(convs) == len(bns) > 0 and all(out is arg for out, arg in zip(convs, bns))
        if flows and ran and all(reads[p] == 1 for p in params):
            pairs.append((conv_path, bn_path))
    return pairs


def _fold(conv: nn.Conv2D, bn: nn.BatchNorm2D) -> None:
    """Give ``conv`` the weight and bias of ``bn(conv(x))`` (in float64, then the conv's dtype)."""
    f64 = {name: getattr(bn, name).numpy().astype(np.float64) for name in _BN_PARAMS}
    scale = f64["weight"] / np.sqrt(f64["_variance"] + bn._epsilon)
    weight = conv.weight.numpy()
    bias = conv.bias.numpy().astype(np.float64) if conv.bias is not None else 0.0
    if conv.bias is None:
        conv.bias = conv.create_parameter([conv._out_channels], dtype=conv.weight.dtype, is_bias=True)
    conv.weight.set_value((weight.astype(np.float64) * scale.reshape(-1, 1, 1, 1)).astype(weight.dtype))
    conv.bias.set_value((f64["bias"] + (bias - f64["_mean"]) * scale).astype(weight.dtype))


def fuse_conv_bn(model: nn.Layer, inputs, inplace: bool = False) -> nn.Layer:
    """``model`` (in eval mode) with every ``BatchNorm2D`` that follows a ``Conv2D`` folded into it
    (Paddle's ``paddle.quantization.imperative.fuse_utils.fuse_conv_bn``): the conv gets the folded
    weight and bias, created if it had none, and the batch norm becomes ``nn.Identity()``.

    The pairs are those of ``conv_bn_pairs(model, inputs)``, read from the program captured on
    ``inputs`` (an input shape, a list of shapes, InputSpecs or example tensors): a batch norm whose
    conv output is also read elsewhere, or that follows no conv, stays. ``inplace=False`` fuses a deep
    copy. A model in train mode is refused (its batch norms use batch statistics). Fuse, then quantize::

        fused = fuse_conv_bn(model, [1, 3, 32, 32])
        observed = PTQ(config).quantize(fused)

    >>> import oar
    >>> from oar.quantization import fuse_conv_bn
    >>> net = oar.nn.Sequential(oar.nn.Conv2D(3, 4, 3), oar.nn.BatchNorm2D(4))
    >>> fuse_conv_bn(net, [1, 3, 8, 8])
    Traceback (most recent call last):
    ...
    oar.errors.ArgumentError: fuse_conv_bn: the model is in train mode; ...
    >>> fused = fuse_conv_bn(net.eval(), [1, 3, 8, 8])
    >>> type(fused[1]).__name__, type(net[1]).__name__
    ('Identity', 'BatchNorm2D')
    """
    _check_eval("fuse_conv_bn", model)
    model = model if inplace else copy.deepcopy(model)
    layers = dict(model.named_sublayers(include_self=True))
    for conv_path, bn_path in conv_bn_pairs(model, inputs):
        _fold(layers[conv_path], layers[bn_path])
        parent, _, name = bn_path.rpartition(".")
        identity = nn.Identity()
        identity.eval()
        setattr(layers[parent], name, identity)
    return model
