"""Fused ops as ONNX: fused_linear, fused_conv2d (what oar-nn's fusion passes write) and core's
fused_elementwise.

The exporter runs no kernel-fusion pass (ONNX Runtime fuses for itself), so these ops reach it
only in a program fused already (one optimized for oar's kernels, given as a ``Program``). Each
is written as the ops it fuses: the product or the convolution, then every epilogue or chain
step through that step op's own ONNX lowering, called on a synthetic node whose intermediate
values live in a ``StepContext``: an activation is written in one place, whatever fused it.

>>> from oar.onnx.lowerings import all_lowerings
>>> {"fused_linear", "fused_conv2d", "fused_elementwise"} <= set(all_lowerings())
True
"""

from __future__ import annotations

from oar.onnx.lowerings import lowers
from oar.onnx.lowerings.nn import conv_input, onnx_pads
from oar.ops import TensorMeta, lowering
from oar.plugins import registries


class StepContext:
    """The ``LoweringContext`` as one step of a fused op sees it: negative value ids are the fused
    op's intermediate values (an ONNX name and a ``TensorMeta`` each), every other id is the
    program's. A step reads and writes through it exactly as a lowering of a program node does."""

    def __init__(self, ctx, outer):
        self._ctx = ctx
        self._outer = outer
        self._metas: dict[int, TensorMeta] = {}
        self._names: dict[int, str] = {}

    def __getattr__(self, attr):
        return getattr(self._ctx, attr)

    def value(self, meta: TensorMeta, name: str | None = None) -> int:
        """A new intermediate value (named ``name``, or when a step writes it)."""
        vid = -1 - len(self._metas)
        self._metas[vid] = meta
        if name is not None:
            self._names[vid] = name
        return vid

    def meta(self, vid: int) -> TensorMeta:
        if vid in self._metas:
            return self._metas[vid]
        return TensorMeta(tuple(self._ctx.shape(vid)), self._ctx.program.values[vid].dtype)

    def name(self, vid: int) -> str:
        if vid not in self._metas:
            return self._ctx.name(vid)
        if vid not in self._names:
            self._names[vid] = self._ctx.fresh(f"{self._outer.op}_step")
        return self._names[vid]

    def bind(self, vid: int, name: str) -> None:
        if vid in self._metas:
            self._names[vid] = name
        else:
            self._ctx.bind(vid, name)

    def inputs(self, node) -> list[str]:
        return [self.name(v) for v in node.inputs]

    def outputs(self, node) -> list[str]:
        return [self.name(v) for v in node.outputs]

    def shape(self, vid: int) -> tuple:
        return tuple(self._metas[vid].shape) if vid in self._metas else self._ctx.shape(vid)

    def dtype(self, vid: int) -> str:
        return self._metas[vid].dtype.name if vid in self._metas else self._ctx.dtype(vid)

    def onnx_dtype(self, vid_or_dtype) -> int:
        if isinstance(vid_or_dtype, int) and vid_or_dtype in self._metas:
            return self._ctx.onnx_dtype(self.dtype(vid_or_dtype))
        return self._ctx.onnx_dtype(vid_or_dtype)

    def constant(self, value, dtype=None, *, like: int | None = None, hint: str = "const") -> str:
        return self._ctx.constant(value, self.dtype(like) if like is not None else dtype, hint=hint)

    # an intermediate value is read by the next step only; no step folds a later node into itself
    def is_used(self, vid: int) -> bool:
        return vid in self._metas or self._ctx.is_used(vid)

    def users(self, vid: int) -> list:
        return [] if vid in self._metas else self._ctx.users(vid)

    def sole_reader(self, vid: int):
        return None

    def producer(self, vid: int):
        return None if vid in self._metas else self._ctx.producer(vid)

    def is_static(self, vid: int) -> bool:
        return vid not in self._metas and self._ctx.is_static(vid)

    def static_value(self, vid: int):
        return None if vid in self._metas else self._ctx.static_value(vid)

    def unsupported(self, node, reason: str):
        return self._ctx.unsupported(self._outer, f"its step {node.op!r}: {reason}")


def lower_step(ctx, outer, op_name: str, args: list, attrs: dict, out: int | None = None) -> tuple[str, TensorMeta]:
    """Write op ``op_name`` of ``outer`` (a fused node) on ``args`` (program value ids, or
    ``(ONNX name, TensorMeta)`` pairs of intermediate values) with its own ONNX lowering; its
    result is program value ``out`` when given. Returns the result's name and meta."""
    from oar.static import OpNode  # import cost: the static graph loads when a program is exported, not with the plugin

    lower = lowering("onnx", op_name)
    if lower is None:
        raise ctx.unsupported(outer, f"its step {op_name!r} has no ONNX lowering")
    steps = StepContext(ctx, outer)
    vids = [a if isinstance(a, int) else steps.value(a[1], a[0]) for a in args]
    meta = registries().ops.get(op_name).meta(*[steps.meta(v) for v in vids], **attrs)
    result = out if out is not None else steps.value(meta)
    lower(OpNode(op_name, vids, [result], dict(attrs), no_grad=True, where=outer.where), steps)
    return steps.name(result), meta


def _epilogue(ctx, node, y: str, meta: TensorMeta, out: int | None) -> str:
    """``node``'s activation (``act``, ``act_attrs``) on ``y``; the result is ``out`` when given."""
    act = node.attrs.get("act")
    if act is None:
        return y
    return lower_step(ctx, node, act, [(y, meta)], dict(node.attrs.get("act_attrs") or {}), out)[0]


def _flat_bias(ctx, node, names):
    """The bias input as the 1-d vector Gemm's C and Conv's B take (oar's fused ops accept any
    shape of that many elements)."""
    if len(names) < 3:
        return None
    if len(ctx.shape(node.inputs[2])) == 1:
        return names[2]
    return ctx.emit("Reshape", [names[2], ctx.int64s([-1])])


def _meta_of(ctx, vid: int) -> TensorMeta:
    return TensorMeta(tuple(ctx.shape(vid)), ctx.program.values[vid].dtype)


@lowers("fused_linear")
def lower_fused_linear(node, ctx):
    # act(x @ w + b): Gemm for a 2-d x, else MatMul (with Transposes for the flags) and Add
    a = node.attrs
    names = ctx.inputs(node)
    x, w = names[:2]
    b = _flat_bias(ctx, node, names)
    tx, ty = bool(a.get("transpose_x")), bool(a.get("transpose_y"))
    rank = len(ctx.shape(node.inputs[0]))
    final = ctx.name(node.outputs[0]) if a.get("act") is None else None
    if rank == 2:
        y = ctx.emit("Gemm", [x, w] + ([b] if b is not None else []), final, transA=int(tx) or None,
                     transB=int(ty) or None)
    else:
        if tx:
            if rank < 2:
                raise ctx.unsupported(node, "transpose_x of a 1-d x")
            x = ctx.emit("Transpose", [x], perm=list(range(rank - 2)) + [rank - 1, rank - 2])
        if ty:
            w = ctx.emit("Transpose", [w], perm=[1, 0])
        y = ctx.emit("MatMul", [x, w], final if b is None else None)
        if b is not None:
            y = ctx.emit("Add", [y, b], final)
    _epilogue(ctx, node, y, _meta_of(ctx, node.outputs[0]), node.outputs[0])


@lowers("fused_conv2d")
def lower_fused_conv2d(node, ctx):
    # act(conv2d(x, w) + b), then max_pool=k: a k x k MaxPool of stride k, no padding, floor mode
    a = node.attrs
    names = ctx.inputs(node)
    pool = a.get("max_pool")
    x, pads = conv_input(ctx, names[0], a["padding"])
    b = _flat_bias(ctx, node, names)
    act = a.get("act")
    conv_meta = registries().ops.get("conv").meta(
        _meta_of(ctx, node.inputs[0]), _meta_of(ctx, node.inputs[1]), stride=a["stride"], padding=a["padding"],
        dilation=a["dilation"], groups=a["groups"])
    out = node.outputs[0]
    y = ctx.emit("Conv", [x, names[1]] + ([b] if b is not None else []),
                 ctx.name(out) if act is None and pool is None else None, strides=list(a["stride"]),
                 pads=onnx_pads(pads), dilations=list(a["dilation"]), group=int(a["groups"]))
    y = _epilogue(ctx, node, y, conv_meta, out if pool is None else None)
    if pool is not None:
        ctx.emit("MaxPool", [y], ctx.name(out), kernel_shape=[int(pool)] * 2, strides=[int(pool)] * 2)


@lowers("fused_elementwise")
def lower_fused_elementwise(node, ctx):
    # each step by its op's own lowering; the last one writes the node's output
    values: list = list(node.inputs)
    chain = node.attrs["chain"]
    for k, (name, args, attrs) in enumerate(chain):
        last = k == len(chain) - 1
        values.append(lower_step(ctx, node, name, [values[i] for i in args], dict(attrs),
                                 node.outputs[0] if last else None))
