"""oar-nn's inference passes: linear and conv with their bias and activation as one op each, and
max pooling without the mask only gradients read.

- ``fuse_linear`` (level 2, inference): ``matmul(x, w)``, then ``add`` of a bias of ``N``
  elements (``w``'s output features), then optionally one activation of
  ``oar.nn.functional.fused.ACTIVATIONS`` -> ``fused_linear``. A matmul followed by an
  activation alone fuses too, and so does a ``linear`` op (matmul and bias already in one)
  followed by an activation.
- ``fuse_conv2d`` (level 2, inference): a 2-d ``conv``, then ``add`` of a per-channel bias
  (``reshape(b, [C, 1, 1])`` as Conv2D traces it, or a ``[C, 1, 1]`` / ``[1, C, 1, 1]`` value,
  as conv + batch-norm folding leaves it), then optionally an activation -> ``fused_conv2d``.
- ``max_pool_drop_mask`` (level 2, inference): a ``max_pool`` whose mask nobody reads ->
  ``max_pool_infer``.
- ``fuse_conv2d_max_pool`` (level 2, inference, after the two above): a ``fused_conv2d`` whose
  only reader is a ``max_pool_infer`` of ``k x k`` windows, stride ``k``, no padding, floor mode
  -> the ``fused_conv2d`` with ``max_pool=k``: a kernel writes the pooled output only, and the
  full-size activation never exists.

A value is fused away only when the next op of the pattern is its only reader and it is no
output or state update, so a value read elsewhere is still computed. Both run at
``FUSION_ORDER``, after conv + batch-norm folding and before elementwise-chain fusion (which
would otherwise take the bias add and the activation).
"""

from __future__ import annotations

from oar._core.passes import FUSION_ORDER, Pass
from oar._core.program import OpNode, Program
from oar.nn.functional.fused import ACTIVATIONS


def _sole_reader(program: Program, users: dict, kept: set, vid: int, op_names) -> OpNode | None:
    """The one node that reads ``vid`` if its op is in ``op_names`` and ``vid`` is not kept alive."""
    readers = users.get(vid, ())
    if vid in kept or len(readers) != 1 or readers[0].op not in op_names:
        return None
    return readers[0]


def _activation_after(program: Program, users: dict, kept: set, vid: int) -> OpNode | None:
    node = _sole_reader(program, users, kept, vid, ACTIVATIONS)
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


def _rewrite(program: Program, replaced: dict, removed: set) -> Program:
    if not replaced:
        return program
    program.nodes = [replaced.get(id(n), n) for n in program.nodes if id(n) in replaced or id(n) not in removed]
    return program.prune()


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
        dtype = program.values[y].dtype
        if not dtype.is_floating or any(program.values[v].dtype is not dtype for v in node.inputs):
            continue
        inputs, group, last = list(node.inputs), [node], y
        add = _sole_reader(program, users, kept, y, ("add",)) if bias_shapes is not None else None
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
    return _rewrite(program, replaced, removed)


def _is_linear(program: Program, node: OpNode) -> bool:
    return len(program.values[node.inputs[1]].shape) == 2 and len(program.values[node.inputs[0]].shape) >= 1


def _linear_features(program: Program, node: OpNode):
    w = program.values[node.inputs[1]].shape
    return w[0] if node.attrs.get("transpose_y") else w[1]


def fuse_linear(program: Program) -> Program:
    """``matmul`` (2-d weight) + bias ``add`` + activation, or ``linear`` + activation -> ``fused_linear``."""
    flags = lambda n: {"transpose_x": bool(n.attrs.get("transpose_x", False)),  # noqa: E731
                       "transpose_y": bool(n.attrs.get("transpose_y", False))}
    program = _fuse(program, "matmul", "fused_linear", _is_linear, flags, _linear_features, lambda c: {(c,)})
    return _fuse(program, "linear", "fused_linear", _is_linear, flags, _linear_features, None)


def _is_conv2d(program: Program, node: OpNode) -> bool:
    return len(program.values[node.inputs[0]].shape) == 4


def fuse_conv2d(program: Program) -> Program:
    """2-d ``conv`` + per-channel bias ``add`` + activation -> ``fused_conv2d``."""
    return _fuse(program, "conv", "fused_conv2d", _is_conv2d,
                 lambda n: {k: n.attrs[k] for k in ("stride", "padding", "dilation", "groups")},
                 lambda program, n: program.values[n.inputs[1]].shape[0], lambda c: {(c,), (c, 1, 1), (1, c, 1, 1)})


def max_pool_drop_mask(program: Program) -> Program:
    """``max_pool`` whose mask (the argmax, for gradients) nobody reads -> ``max_pool_infer``."""
    users = program.users()
    kept = set(program.output_ids())
    replaced = {}
    for node in program.nodes:
        if node.op == "max_pool" and node.outputs[1] not in kept and not users.get(node.outputs[1]):
            replaced[id(node)] = OpNode("max_pool_infer", node.inputs, node.outputs[:1], dict(node.attrs), node.no_grad)
    return _rewrite(program, replaced, set())


def fuse_conv2d_max_pool(program: Program) -> Program:
    """``fused_conv2d`` then ``max_pool_infer`` (square window = stride, no padding, floor mode)
    -> one ``fused_conv2d`` with ``max_pool``."""
    users = program.users()
    kept = set(program.output_ids())
    replaced: dict[int, OpNode] = {}
    removed: set[int] = set()
    for node in program.nodes:
        if node.op != "fused_conv2d" or node.attrs.get("max_pool") is not None:
            continue
        pool = _sole_reader(program, users, kept, node.outputs[0], ("max_pool_infer",))
        if pool is None:
            continue
        k, stride, padding = pool.attrs["kernel_size"], pool.attrs["stride"], pool.attrs["padding"]
        if len(k) != 2 or k[0] != k[1] or list(stride) != list(k) or any(padding) or pool.attrs["ceil_mode"]:
            continue
        replaced[id(pool)] = OpNode("fused_conv2d", node.inputs, pool.outputs, {**node.attrs, "max_pool": int(k[0])},
                                    node.no_grad and pool.no_grad)
        removed.update((id(node), id(pool)))
    return _rewrite(program, replaced, removed)


PASSES = [
    Pass("fuse_conv2d", fuse_conv2d, level=2, inference_only=True, order=FUSION_ORDER),
    Pass("fuse_linear", fuse_linear, level=2, inference_only=True, order=FUSION_ORDER),
    Pass("max_pool_drop_mask", max_pool_drop_mask, level=2, inference_only=True, order=FUSION_ORDER),
    Pass("fuse_conv2d_max_pool", fuse_conv2d_max_pool, level=2, inference_only=True, order=FUSION_ORDER),
]
