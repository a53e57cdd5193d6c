"""``oar.summary``: a per-layer table of a network's input and output shapes and parameter counts,
as ``paddle.summary``."""

from __future__ import annotations

import numbers
from collections import OrderedDict

import oar
from oar.errors import ArgumentError
from oar.nn.layer.container import LayerList, Sequential
from oar.nn.layer.layers import Layer
from oar.ops import Tensor


def _is_shape(value) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(d, numbers.Number) or d is None for d in value)


def _check_shape(shape) -> tuple:
    """A batch dimension of None or -1 becomes 1; any other dimension must be positive."""
    out, unknown = [], 0
    for d in shape:
        if d is None or d == -1:
            unknown += 1
            if unknown > 1:
                raise ArgumentError(f"summary: only the batch dimension of input_size may be None or -1, got {list(shape)}")
            d = 1
        elif d <= 0:
            raise ArgumentError(f"summary: input_size dimensions must be positive, got {list(shape)}")
        out.append(int(d))
    return tuple(out)


def _normalize_sizes(input_size) -> list:
    """Paddle's reading of ``input_size``: an int or a tuple is one input; a list holds one entry
    per input (an int entry is a 1-D shape); an InputSpec-like object gives its ``shape``."""
    if hasattr(input_size, "shape") and not isinstance(input_size, (list, tuple)):
        input_size = tuple(input_size.shape)
    if isinstance(input_size, int):
        return [(input_size,)]
    if isinstance(input_size, tuple) and _is_shape(input_size):
        return [_check_shape(input_size)]
    if isinstance(input_size, (list, tuple)):
        sizes = []
        for item in input_size:
            if isinstance(item, int):
                item = (item,)
            elif hasattr(item, "shape") and not isinstance(item, (list, tuple)):
                item = tuple(item.shape)
            if not isinstance(item, (list, tuple)) or not _is_shape(item):
                raise ArgumentError(f"summary: each entry of an input_size list must be a shape (tuple) or an InputSpec, got {item!r}")
            sizes.append(_check_shape(item))
        return sizes
    raise ArgumentError(f"summary: input_size must be an int, a tuple, an InputSpec or a list of them, got {type(input_size).__name__}")


def _shapes(value):
    if isinstance(value, Tensor):
        return value.shape
    if isinstance(value, (list, tuple)):
        return [_shapes(v) for v in value]
    if isinstance(value, dict):
        return [_shapes(v) for v in value.values()]
    return []


def _output_bytes(value) -> int:
    if isinstance(value, Tensor):
        return value.size * value.dtype.itemsize
    if isinstance(value, (list, tuple)):
        return sum(_output_bytes(v) for v in value)
    if isinstance(value, dict):
        return sum(_output_bytes(v) for v in value.values())
    return 0


def _row_name(layer: Layer, rows: OrderedDict) -> str:
    """``Linear-3`` for the layer whose full name is ``linear_2``, as Paddle numbers them."""
    try:
        index = int(layer.full_name().rsplit("_", 1)[-1])
    except ValueError:
        index = len(rows)
    return f"{type(layer).__name__}-{index + 1}"


def summary(net: Layer, input_size=None, dtypes=None, input=None) -> dict:
    """Print a table of ``net``'s layers -- Layer (type), Input Shape, Output Shape, Param # --
    from one forward pass, then the parameter totals, and return
    ``{'total_params': n, 'trainable_params': m}``, as ``paddle.summary``.

    Give ``input_size`` (a shape tuple for one input, a list of shapes for several; a batch
    dimension of None or -1 becomes 1) with ``dtypes`` (default float32), or real ``input``
    tensors, passed to ``net`` as its one argument. The forward pass runs in eval mode without
    gradients; the network's mode is restored afterwards.

    Every sublayer that is not a Sequential or LayerList gets a row (the network itself only when
    it has no sublayers), with the count of its own parameters. The totals count every parameter
    of the network once -- also one that no forward call reached or that two layers share; Paddle
    sums the rows instead. Trainable parameters are those with ``trainable`` set and
    ``stop_gradient`` False.

    >>> import oar
    >>> net = oar.nn.Sequential(oar.nn.Linear(4, 8), oar.nn.Linear(8, 2))
    >>> info = oar.summary(net, (1, 4))  # doctest: +ELLIPSIS
    --------------------------------------------...
    >>> info
    {'total_params': 58, 'trainable_params': 58}
    """
    if not isinstance(net, Layer):
        raise ArgumentError(f"summary: net must be an oar.nn.Layer, got {type(net).__name__}")
    if input_size is None and input is None:
        raise ArgumentError("summary: give input_size or input (both are None)")
    if input is not None:
        args = (input,)
        sizes = _shapes(input) if not isinstance(input, Tensor) else [input.shape]
    else:
        sizes = _normalize_sizes(input_size)
        if dtypes is None or isinstance(dtypes, str) or not isinstance(dtypes, (list, tuple)):
            dtypes = [dtypes or "float32"] * len(sizes)
        if len(dtypes) != len(sizes):
            raise ArgumentError(f"summary: {len(dtypes)} dtypes for {len(sizes)} inputs")
        args = tuple(oar.rand(list(shape)).astype(dtype) for shape, dtype in zip(sizes, dtypes))

    rows: OrderedDict = OrderedDict()
    has_sublayers = bool(net.sublayers())

    def record(layer, inputs, outputs):
        params = [p for p in layer._parameters.values() if p is not None]
        rows[_row_name(layer, rows)] = {
            "input_shape": _shapes(list(inputs)),
            "output_shape": _shapes(outputs),
            "params": sum(p.size for p in params),
            "output_bytes": _output_bytes(outputs),
        }

    handles = [
        layer.register_forward_post_hook(record)
        for layer in net.sublayers(include_self=True)
        if not isinstance(layer, (Sequential, LayerList)) and (layer is not net or not has_sublayers)
    ]
    was_training = net.training
    net.eval()
    try:
        with oar.no_grad():
            net(*args)
    finally:
        for handle in handles:
            handle.remove()
        if was_training:
            net.train()

    params = net.parameters()
    total = sum(p.size for p in params)
    trainable = sum(p.size for p in params if p.trainable and not p.stop_gradient)
    print(_table(rows, total, trainable, args, params))
    return {"total_params": int(total), "trainable_params": int(trainable)}


def _input_bytes(args) -> int:
    return sum(_output_bytes(a) for a in args)


def _table(rows: OrderedDict, total: int, trainable: int, args, params) -> str:
    widths = {"layer": 15, "input": 20, "output": 20, "params": 15}
    for name, row in rows.items():
        widths["layer"] = max(widths["layer"], len(name))
        widths["input"] = max(widths["input"], len(str(row["input_shape"])))
        widths["output"] = max(widths["output"], len(str(row["output_shape"])))
        widths["params"] = max(widths["params"], len(f"{row['params']:,}"))
    width = max(75, sum(widths.values()) + 5)

    def line(layer, input_shape, output_shape, n):
        return (f"{layer:^{widths['layer']}} {input_shape:^{widths['input']}} "
                f"{output_shape:^{widths['output']}} {n:^{widths['params']}}")

    mb = 1024.0 ** 2
    input_mb = _input_bytes(args) / mb
    forward_mb = 2.0 * sum(row["output_bytes"] for row in rows.values()) / mb  # x2: outputs and their gradients
    params_mb = sum(p.size * p.dtype.itemsize for p in params) / mb
    out = ["-" * width, line("Layer (type)", "Input Shape", "Output Shape", "Param #"), "=" * width]
    out += [line(name, str(r["input_shape"]), str(r["output_shape"]), f"{r['params']:,}") for name, r in rows.items()]
    out += [
        "=" * width,
        f"Total params: {total:,}",
        f"Trainable params: {trainable:,}",
        f"Non-trainable params: {total - trainable:,}",
        "-" * width,
        f"Input size (MB): {input_mb:.2f}",
        f"Forward/backward pass size (MB): {forward_mb:.2f}",
        f"Params size (MB): {params_mb:.2f}",
        f"Estimated Total Size (MB): {input_mb + forward_mb + params_mb:.2f}",
        "-" * width,
    ]
    return "\n".join(out) + "\n"


__all__ = ["summary"]
