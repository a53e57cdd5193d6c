"""Which channels must be pruned together: a propagation over the model's captured program.

Pruning channel ``k`` of a parameter along an axis changes the shape of every value that channel
flows into, and of every value that flows into it. Starting from ``(parameter, axis)`` the analysis
walks the ``oar.static.Program`` both ways, op by op, and collects every parameter axis that moves
with it: a conv's output channels take its bias (the ``reshape`` + ``add`` the capture writes), the
next batch norm's weight, bias, ``_mean`` and ``_variance``, and the input channels of each consumer
conv or linear; a residual ``add`` ties both of its sides to one set of channels; ``concat`` places
the channels at their offset; ``flatten`` turns a channel into a block of features; a depthwise conv
(``groups == in_channels``) passes its input's channels through to its output.

What travels is a *source map* per value axis: an int array, one entry per channel, holding the
index of the master channel it follows, or -1 where the channel is not governed by this group (the
other inputs' part of a concat). A channel group is the list of ``(parameter, axis, source map)``
it reached::

    conv1.weight   axis 0  [0 1 2 3]          the master: its filters
    conv1.bias     axis 0  [0 1 2 3]
    bn1.weight     axis 0  [0 1 2 3]          ... bias, _mean, _variance likewise
    fc.weight      axis 0  [0 0 .. 1 1 .. ]   a 4 x 16 block per channel through flatten

Refused, naming the op and the source line: a group that reaches a feed or a program output (their
shapes are fixed: the last conv before a flatten that is the model's output, a classifier's
logits), a constant, an op the rules below do not cover (``transpose``, ``getitem``, ``matmul``,
...), a grouped conv that is not depthwise, or two paths that tie one channel to two masters.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import oar.plugins
from oar.errors import OarError
from oar.static import OpNode, Program


class PruningError(OarError, ValueError):
    """A parameter that cannot be pruned along the asked axis, and why."""


_POOLS = frozenset({"max_pool", "max_pool_infer", "avg_pool", "adaptive_avg_pool", "adaptive_max_pool"})
_NORMS = frozenset({"batch_norm", "batch_norm_infer"})


@dataclass
class ChannelGroup:
    """The parameters one pruning decision moves: ``master``/``axis`` whose channels are scored, and
    ``members``: ``(parameter name, axis, source map)`` for every parameter axis reached (the master
    first, its map the identity)."""

    master: str
    axis: int
    size: int
    members: list[tuple[str, int, np.ndarray]] = field(default_factory=list)

    def names(self) -> list[str]:
        return [name for name, _, _ in self.members]

    def masks(self, keep: np.ndarray) -> list[tuple[str, int, np.ndarray]]:
        """``(name, axis, keep mask)`` of every member for the master's keep mask."""
        keep = np.asarray(keep, dtype=bool)
        return [(name, axis, np.where(src >= 0, keep[np.maximum(src, 0)], True)) for name, axis, src in self.members]


# -- op rules: (program, node, port, axis, src) -> [(port, axis, src)] ----------------------------
# A port is ("in", i) or ("out", i). A rule returns the other ports the channels move to, or raises
# _Refused with the reason; the walker turns ports into values.

class _Refused(Exception):
    pass


def _shape(program: Program, node: OpNode, port) -> tuple:
    kind, i = port
    vid = node.inputs[i] if kind == "in" else node.outputs[i]
    return program.values[vid].shape


def _ports(node: OpNode):
    return [("in", i) for i in range(len(node.inputs))] + [("out", i) for i in range(len(node.outputs))]


def _elementwise(program, node, port, axis, src):
    shapes = {p: _shape(program, node, p) for p in _ports(node)}
    rank = max(len(s) for s in shapes.values())
    g = axis + rank - len(shapes[port])
    moves = []
    for p, shape in shapes.items():
        a = g - (rank - len(shape))
        if p != port and a >= 0 and shape[a] != 1:
            moves.append((p, a, src))
    return moves


def _conv(program, node, port, axis, src):
    x, w = _shape(program, node, ("in", 0)), _shape(program, node, ("in", 1))
    groups = int(node.attrs.get("groups", 1))
    bias = [("in", 2)] if len(node.inputs) > 2 else []
    if groups == 1:
        pairs = [[(("in", 0), 1), (("in", 1), 1)], [(("in", 1), 0), (("out", 0), 1)] + [(b, 0) for b in bias]]
        for pair in pairs:
            if (port, axis) in pair:
                return [(p, a, src) for p, a in pair if (p, a) != (port, axis)]
        raise _Refused(f"a conv's axis {axis} of {port[0]}put {port[1]} (only channels are pruned)")
    if groups == x[1] and w[1] == 1:  # depthwise, channel multiplier m
        m = w[0] // groups
        outs = [(("in", 1), 0), (("out", 0), 1)] + [(b, 0) for b in bias]
        if (port, axis) == (("in", 0), 1):
            return [(p, a, np.repeat(src, m)) for p, a in outs]
        if (port, axis) in outs:
            blocks = src.reshape(groups, m)
            if not (blocks == blocks[:, :1]).all():
                raise _Refused("a depthwise conv's output channels pruned apart from their input channel")
            return [(("in", 0), 1, blocks[:, 0])] + [(p, a, src) for p, a in outs if (p, a) != (port, axis)]
        raise _Refused(f"a depthwise conv's axis {axis} of {port[0]}put {port[1]}")
    raise _Refused(f"a grouped conv with groups={groups} (only groups=1 and depthwise convs are pruned)")


def _batch_norm(program, node, port, axis, src):
    channel = int(node.attrs.get("channel_axis", 1))

    def axis_of(p):
        return 0 if len(_shape(program, node, p)) == 1 else channel

    if axis != axis_of(port):
        raise _Refused(f"a batch norm's axis {axis} (only its channel axis {channel} is pruned)")
    return [(p, axis_of(p), src) for p in _ports(node) if p != port]


def _linear(program, node, port, axis, src):
    x = _shape(program, node, ("in", 0))
    last = len(x) - 1
    bias = [("in", 2)] if len(node.inputs) > 2 else []
    groups = [[(("in", 0), last), (("in", 1), 0)], [(("in", 1), 1), (("out", 0), last)] + [(b, 0) for b in bias]]
    groups += [[(("in", 0), a), (("out", 0), a)] for a in range(last)]
    for group in groups:
        if (port, axis) in group:
            return [(p, a, src) for p, a in group if (p, a) != (port, axis)]
    raise _Refused(f"a linear's axis {axis} of {port[0]}put {port[1]}")


def _pool(program, node, port, axis, src):
    if axis not in (0, 1):
        raise _Refused(f"a pool's spatial axis {axis}")
    return [(p, axis, src) for p in _ports(node) if p != port]


def _concat(program, node, port, axis, src):
    out = _shape(program, node, ("out", 0))
    cat = int(node.attrs.get("axis", 0)) % len(out)
    sizes = [_shape(program, node, ("in", i))[cat] for i in range(len(node.inputs))]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    if axis != cat:
        return [(p, axis, src) for p in _ports(node) if p != port]
    if port[0] == "in":
        full = np.full(out[cat], -1, dtype=np.int64)
        full[offsets[port[1]]:offsets[port[1] + 1]] = src
        return [(("out", 0), cat, full)]
    moves = []
    for i in range(len(node.inputs)):
        part = src[offsets[i]:offsets[i + 1]]
        if (part >= 0).any():
            moves.append((("in", i), cat, part))
    return moves


def _segments(a: tuple, b: tuple):
    """Split two shapes of one element count into runs of equal product: ``[(a_axes, b_axes)]``."""
    runs, i, j = [], 0, 0
    while i < len(a) or j < len(b):
        ai, bj, pa, pb = [i], [j], 1, 1
        if i < len(a):
            pa = a[i]
            i += 1
        else:
            ai = []
        if j < len(b):
            pb = b[j]
            j += 1
        else:
            bj = []
        while pa != pb:
            if pa < pb and i < len(a):
                pa *= a[i]
                ai.append(i)
                i += 1
            elif pb < pa and j < len(b):
                pb *= b[j]
                bj.append(j)
                j += 1
            else:
                raise _Refused(f"a reshape from {list(a)} to {list(b)}")
        runs.append((ai, bj))
    return runs


def _move_through_reshape(a: tuple, b: tuple, axis: int, src: np.ndarray):
    """The axis of shape ``b`` and its source map that channel map ``src`` on axis ``axis`` of
    shape ``a`` becomes once ``a`` is reshaped to ``b``."""
    if any(d is None for d in a + b):
        if a[0] is None and b[0] is None and None not in a[1:] + b[1:]:
            a, b = (1,) + a[1:], (1,) + b[1:]
        else:
            raise _Refused(f"a reshape with dynamic dims from {list(a)} to {list(b)}")
    for a_axes, b_axes in _segments(a, b):
        if axis not in a_axes:
            continue
        dims_a = [a[k] for k in a_axes]
        dims_b = [b[k] for k in b_axes]
        grid = np.indices(dims_a)[a_axes.index(axis)]
        carried = src[grid].reshape(dims_b)
        for k, d in enumerate(dims_b):
            line = carried[tuple(slice(None) if kk == k else 0 for kk in range(len(dims_b)))]
            if d > 1 and (carried == line.reshape([d if kk == k else 1 for kk in range(len(dims_b))])).all():
                return b_axes[k], line
        raise _Refused(f"a reshape from {list(a)} to {list(b)} that splits the pruned channels")
    raise _Refused(f"a reshape from {list(a)} to {list(b)}")


def _reshape(program, node, port, axis, src):
    ins = _shape(program, node, ("in", 0))
    out = _shape(program, node, ("out", 0))
    if port == ("in", 0):
        b_axis, moved = _move_through_reshape(ins, out, axis, src)
        return [(("out", 0), b_axis, moved)]
    if port == ("out", 0):
        a_axis, moved = _move_through_reshape(out, ins, axis, src)
        return [(("in", 0), a_axis, moved)]
    raise _Refused("a reshape's shape input")


_RULES = {"conv": _conv, "linear": _linear, "concat": _concat, "flatten": _reshape, "reshape": _reshape,
          "squeeze": _reshape, "unsqueeze": _reshape}
_RULES.update({name: _batch_norm for name in _NORMS})
_RULES.update({name: _pool for name in _POOLS})


def _rule(op: str):
    if op in _RULES:
        return _RULES[op]
    try:
        traits = oar.plugins.registries().ops.get(op).traits
    except Exception:  # an op this oar does not register (a saved program's): not understood
        traits = frozenset()
    if "elementwise" in traits and "random" not in traits:
        return _elementwise
    return None


# -- the walk --------------------------------------------------------------------------------------

def find_group(program: Program, name: str, axis: int) -> ChannelGroup:
    """The channel group of parameter ``name`` along ``axis`` in ``program``; raises
    ``PruningError`` naming what cannot be followed."""
    if name not in program.params:
        raise PruningError(f"{name!r} is not a parameter of the captured program "
                           f"(parameters: {', '.join(sorted(program.params))})")
    start = program.params[name]
    shape = program.values[start].shape
    if not -len(shape) <= axis < len(shape):
        raise PruningError(f"{name} has shape {list(shape)}: axis {axis} is out of range")
    axis %= len(shape)
    producers, users = program.producers(), program.users()
    fixed = {vid: "a program output" for vid in program.output_ids()}
    fixed.update({vid: f"the model input {program.values[vid].ref}" for vid in program.feeds})
    seen: dict[tuple[int, int], np.ndarray] = {}
    order: list[tuple[int, int]] = []
    queue = [(start, axis, np.arange(shape[axis], dtype=np.int64))]
    while queue:
        vid, ax, src = queue.pop()
        key = (vid, ax)
        old = seen.get(key)
        if old is not None:
            both = (old >= 0) & (src >= 0)
            if (old[both] != src[both]).any():
                raise PruningError(f"pruning {name} along axis {axis}: channels of {program.values[vid].ref} are "
                                   f"tied to two different channels of {name}")
            merged = np.where(old >= 0, old, src)
            if (merged == old).all():
                continue
            src = merged
        else:
            order.append(key)
        seen[key] = src
        value = program.values[vid]
        if vid in fixed:
            raise PruningError(f"cannot prune {name} along axis {axis}: its channels reach {fixed[vid]} "
                               f"({value!r}), whose shape is fixed")
        if program.is_constant(vid):
            raise PruningError(f"cannot prune {name} along axis {axis}: its channels meet the constant "
                               f"{value.ref} {list(value.shape)}")
        nodes = ([producers[vid]] if vid in producers else []) + users.get(vid, [])
        for node in dict.fromkeys(nodes):
            rule = _rule(node.op)
            where = f" at {node.where}" if node.where else ""
            if rule is None:
                raise PruningError(f"cannot prune {name} along axis {axis}: its channels flow through "
                                   f"`{node.op}`{where}, which the pruning analysis does not understand")
            ports = [("in", i) for i, v in enumerate(node.inputs) if v == vid]
            ports += [("out", i) for i, v in enumerate(node.outputs) if v == vid]
            for port in ports:
                try:
                    moves = rule(program, node, port, ax, src)
                except _Refused as refused:
                    raise PruningError(f"cannot prune {name} along axis {axis}: its channels reach {refused} "
                                       f"(`{node.op}`{where})") from None
                for (kind, i), a, s in moves:
                    queue.append((node.inputs[i] if kind == "in" else node.outputs[i], a, s))
    group = ChannelGroup(name, axis, shape[axis])
    for vid, ax in order:
        if program.is_param(vid):
            group.members.append((program.values[vid].name, ax, seen[(vid, ax)]))
    return group
