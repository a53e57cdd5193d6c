"""Graph passes on ``Program``s, and the pipeline that picks them by optimization level.

A pass is an object with ``name``, ``level`` (the smallest optimization level that runs it),
``inference_only`` and ``__call__(program) -> program``. Core's passes are registered through
core's builtin plugin (``oar_register_passes``), exactly as a plugin registers its own; the
pipeline (``optimize``) reads the registry, so a plugin's pass joins every to_static program.

Core's passes, in the order they run:

- ``constant_folding`` (level 1): nodes whose inputs are all constants (and that draw no random
  numbers) are evaluated once; their outputs become constants.
- ``common_subexpression_elimination`` (level 1): identical constants, and nodes with the same
  op, inputs and attributes, are computed once.
- ``fold_batch_norm`` (level 2, inference): ``conv`` (+ bias) followed by ``batch_norm_infer``
  becomes one ``conv`` whose weight and bias are computed from the parameters -- by op nodes
  that read parameters only, which the executor runs once per parameter update.
- ``remove_detach`` (level 2, inference): the ``assign`` that stands for ``x.detach()`` is
  dropped; at inference no gradient flows anyway.
- ``remove_identity_ops`` (level 2, inference): reshapes to the same shape, casts to the same
  dtype, ``scale`` by 1 plus 0 are dropped.
- ``dead_code_elimination`` (level 1): nodes no output needs are removed (random ops stay: they
  advance the random generator, as eager does); it also runs after every pipeline.
- ``fuse_elementwise`` (level 2, inference, order ``FUSION_ORDER + 10``): connected elementwise
  ops become one ``fused_elementwise`` node (``oar._core.fusion``).

A pass's ``order`` (default 0) sorts the pipeline before registration order does: fusion passes
(``FUSION_ORDER`` and above; oar-nn's linear/conv fusion, then the elementwise one) see the
program after every simplification, whichever package registered first.

Every pass keeps the program's outputs within float tolerance; tests compare outputs before and
after each on real programs.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable

import numpy as np

from oar._core.fusion import fuse_elementwise
from oar._core.op import TensorMeta
from oar._core.program import OpNode, Program, ValueRef, _encode_attr, map_refs
from oar.errors import SerializationError

DEFAULT_LEVEL = 2
FUSION_ORDER = 100  # fusion passes run after the simplifications (order 0)
MAX_FOLDED_ELEMENTS = 1 << 20  # a folded constant larger than this stays an op (file size)


class Pass:
    """A named program rewrite: ``Pass("my_pass", fn, level=2, inference_only=True)``.

    >>> from oar._core.passes import Pass
    >>> identity = Pass("identity", lambda program: program, level=3)
    >>> identity.name, identity.level, identity.inference_only
    ('identity', 3, False)
    """

    def __init__(self, name: str, fn: Callable[[Program], Program], *, level: int = 1,
                 inference_only: bool = False, doc: str = "", order: int = 0):
        self.name = name
        self.fn = fn
        self.level = level
        self.inference_only = inference_only
        self.order = order
        self.__doc__ = doc or fn.__doc__

    def __call__(self, program: Program) -> Program:
        return self.fn(program)

    def __repr__(self) -> str:
        return f"<pass {self.name} level={self.level}{' inference' if self.inference_only else ''}>"


def _op(name: str):
    from oar._core.dispatch import OPS

    return OPS.get(name)


def attr_key(attrs: dict) -> str:
    """A canonical string of attributes, for comparing nodes."""
    try:
        return json.dumps(_encode_attr(attrs, "attrs"), sort_keys=True)
    except SerializationError:
        return repr(sorted(attrs.items(), key=lambda kv: kv[0]))


def _rename(program: Program, rename: dict[int, int]) -> None:
    if not rename:
        return

    def follow(v: int) -> int:
        while v in rename:
            v = rename[v]
        return v

    for node in program.nodes:
        node.inputs = [follow(v) for v in node.inputs]
    program.outputs = map_refs(program.outputs, lambda r: ValueRef(follow(r.id)))
    program.updates = [(kind, target, follow(vid)) for kind, target, vid in program.updates]


def emit(program: Program, op_name: str, inputs: list[int], attrs: dict | None = None,
         out: list[int] | None = None) -> OpNode:
    """A new node of ``op_name`` (not yet placed in ``program.nodes``), its output values typed
    by the op's meta function; ``out`` reuses existing value ids for the outputs."""
    attrs = dict(attrs or {})
    metas = _op(op_name).meta(*[program.values[i].meta for i in inputs], **attrs)
    metas = (metas,) if isinstance(metas, TensorMeta) else tuple(metas)
    if out is None:
        out = [program.new_value(m.shape, m.dtype).id for m in metas]
    return OpNode(op_name, inputs, out, attrs)


# ------------------------------------------------------------------------------------------
# dead code
# ------------------------------------------------------------------------------------------
def dead_code_elimination(program: Program) -> Program:
    """Remove nodes whose outputs no output, update or live node reads (random ops stay)."""
    live = set(program.output_ids())
    kept = []
    for node in reversed(program.nodes):
        if any(v in live for v in node.outputs) or "random" in _op(node.op).traits:
            kept.append(node)
            live.update(node.inputs)
    program.nodes = kept[::-1]
    return program.prune()


# ------------------------------------------------------------------------------------------
# common subexpressions
# ------------------------------------------------------------------------------------------
def common_subexpression_elimination(program: Program) -> Program:
    """Compute identical constants and identical (op, inputs, attributes) nodes once."""
    rename: dict[int, int] = {}
    by_content: dict[tuple, int] = {}
    for name, vid in program.constants.items():
        a = program.constant_data[name]
        key = (a.dtype.str, a.shape, a.tobytes())
        if key in by_content:
            rename[vid] = by_content[key]
        else:
            by_content[key] = vid
    _rename(program, rename)
    rename = {}
    seen: dict[tuple, list[int]] = {}
    kept = []
    for node in program.nodes:
        node.inputs = [rename.get(v, v) for v in node.inputs]
        if "random" in _op(node.op).traits:
            kept.append(node)
            continue
        key = (node.op, tuple(node.inputs), attr_key(node.attrs), node.no_grad)
        first = seen.get(key)
        if first is None:
            seen[key] = node.outputs
            kept.append(node)
        else:
            rename.update(zip(node.outputs, first))
    program.nodes = kept
    _rename(program, rename)
    return program.prune()


# ------------------------------------------------------------------------------------------
# constant folding
# ------------------------------------------------------------------------------------------
def constant_folding(program: Program) -> Program:
    """Evaluate nodes whose inputs are all constants (no random ops) into constants."""
    from oar._core.autograd import _set_grad_enabled
    from oar._core.dispatch import _mode_stack
    from oar._core.tensor import Tensor

    constant = set(program.constants.values())
    kept = []
    for node in program.nodes:
        op = _op(node.op)
        if "random" in op.traits or not all(v in constant for v in node.inputs):
            kept.append(node)
            continue
        args = tuple(Tensor._wrap(program.constant_value(v), "cpu", True, None, 0, None) for v in node.inputs)
        previous = _set_grad_enabled(False)
        try:
            result = _mode_stack[0].apply(op, args, dict(node.attrs))  # the eager kernels, no mode above
        except Exception:  # noqa: BLE001 - an op that cannot run here stays in the program
            kept.append(node)
            continue
        finally:
            _set_grad_enabled(previous)
        results = result if isinstance(result, tuple) else (result,)
        if sum(r._data.size for r in results) > MAX_FOLDED_ELEMENTS:
            kept.append(node)
            continue
        for vid, r in zip(node.outputs, results):
            name = program._unique(f"folded_{vid}")
            value = program.values[vid]
            value.name = name
            value.shape = tuple(r._data.shape)
            program.constants[name] = vid
            program.constant_data[name] = np.array(r._data, copy=True)
            constant.add(vid)
    program.nodes = kept
    return program.prune()


# ------------------------------------------------------------------------------------------
# conv + batch norm folding
# ------------------------------------------------------------------------------------------
def _is_static(program: Program, vid: int) -> bool:
    return program.is_param(vid) or program.is_constant(vid)


def _bias_of(program: Program, producers: dict, users: dict, vid: int, channels: int) -> int | None:
    """The 1-d bias whose reshape to [C, 1, ...] is ``vid``, if that is what ``vid`` is."""
    node = producers.get(vid)
    if node is None or node.op != "reshape" or len(users.get(vid, ())) != 1:
        return None
    (b,) = node.inputs
    if _is_static(program, b) and program.values[b].shape == (channels,):
        return b
    return None


def _emit_into(program: Program, nodes: list, op_name: str, inputs: list[int], attrs=None, out=None) -> int:
    node = emit(program, op_name, inputs, attrs, out)
    nodes.append(node)
    return node.outputs[0]


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
        if not all(_is_static(program, v) for v in (gamma, beta, mean, var)):
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
        if not _is_static(program, w) or None in wv.shape:
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
    if not replacement:
        return program
    nodes = []
    for node in program.nodes:
        if id(node) in replacement:
            nodes.extend(replacement[id(node)])
        elif id(node) not in removed:
            nodes.append(node)
    program.nodes = nodes
    return program.prune()


# ------------------------------------------------------------------------------------------
# inference simplifications
# ------------------------------------------------------------------------------------------
def remove_detach(program: Program) -> Program:
    """Drop the no_grad ``assign`` nodes that stand for ``detach()``: at inference they copy only."""
    rename = {}
    kept = []
    for node in program.nodes:
        if node.op == "assign" and node.no_grad:
            rename[node.outputs[0]] = node.inputs[0]
        else:
            kept.append(node)
    program.nodes = kept
    _rename(program, rename)
    return program.prune()


_IDENTITY_SHAPE_OPS = ("reshape", "flatten", "squeeze", "unsqueeze")


def _is_identity(program: Program, node: OpNode) -> bool:
    if len(node.inputs) != 1 or len(node.outputs) != 1:
        return False
    x, y = program.values[node.inputs[0]], program.values[node.outputs[0]]
    if x.dtype is not y.dtype:
        return False
    if node.op in _IDENTITY_SHAPE_OPS:
        # equal shapes with at most one dynamic dim, in the same place: the sizes agree there too
        return x.shape == y.shape and list(x.shape).count(None) <= 1
    if node.op == "cast":
        return True  # same dtype in and out
    if node.op == "scale":
        return y.dtype.is_floating and node.attrs.get("scale", 1.0) == 1 and node.attrs.get("bias", 0.0) == 0
    return False


def _is_input(program: Program, vid: int) -> bool:
    return vid in program.feeds or program.is_param(vid) or program.is_constant(vid)


def remove_identity_ops(program: Program) -> Program:
    """Drop ops that return their input unchanged: a reshape, flatten or squeeze to the same shape,
    a cast to the same dtype, a scale by 1 plus 0 (Dropout in eval mode and Identity leave no node
    to remove: they return their input while tracing). A returned value stays computed when its
    input is a feed, parameter or constant, so no output is the caller's own tensor."""
    outputs = set(program.output_ids())
    rename = {}
    kept = []
    for node in program.nodes:
        source = node.inputs[0] if node.inputs else None
        if _is_identity(program, node) and not (node.outputs[0] in outputs and _is_input(program, rename.get(source, source))):
            rename[node.outputs[0]] = rename.get(source, source)
        else:
            kept.append(node)
    program.nodes = kept
    _rename(program, rename)
    return program.prune()


BUILTIN_PASSES = [
    Pass("constant_folding", constant_folding, level=1),
    Pass("common_subexpression_elimination", common_subexpression_elimination, level=1),
    Pass("fold_batch_norm", fold_batch_norm, level=2, inference_only=True),
    Pass("remove_detach", remove_detach, level=2, inference_only=True),
    Pass("remove_identity_ops", remove_identity_ops, level=2, inference_only=True),
    Pass("dead_code_elimination", dead_code_elimination, level=1),
    Pass("fuse_elementwise", fuse_elementwise, level=2, inference_only=True, order=FUSION_ORDER + 10),
]


def select_passes(level: int = DEFAULT_LEVEL, *, inference: bool = True, enable=(), disable=()) -> list:
    """The registered passes a pipeline at ``level`` runs, in registration order."""
    from oar.plugins import registries

    enable, disable = set(enable), set(disable)
    passes = registries().passes
    unknown = (enable | disable) - set(passes)
    if unknown:
        raise ValueError(f"unknown pass(es) {sorted(unknown)}; registered: {sorted(passes)}")
    chosen = []
    for name, p in passes.items():
        if name in disable or (p.inference_only and not inference):
            continue
        if name in enable or getattr(p, "level", 1) <= level:
            chosen.append(p)
    chosen.sort(key=lambda p: getattr(p, "order", 0))  # stable: registration order within an order
    return chosen


def optimize(program: Program, level: int = DEFAULT_LEVEL, *, inference: bool = True, enable=(),
             disable=()) -> Program:
    """A rewritten copy of ``program``: the passes ``select_passes`` picks, then dead code out.

    >>> import oar
    >>> from oar.jit import to_static
    >>> f = to_static(lambda x: x * (oar.ones([2]) + 1.0))
    >>> _ = f(oar.ones([2]))
    >>> [n.op for n in optimize(f.concrete_program).nodes]
    ['multiply']
    """
    result = program.clone()
    for p in select_passes(level, inference=inference, enable=enable, disable=disable):
        result = p(result)
        if not isinstance(result, Program):
            raise TypeError(f"pass {getattr(p, 'name', p)!r} returned a {type(result).__name__}, not a Program")
    if level >= 1 and "dead_code_elimination" not in set(disable):
        result = dead_code_elimination(result)
    for node in result.nodes:  # control flow (cond / while): each block is a closed program, optimized alike
        for name, block in [(k, a) for k, a in node.attrs.items() if isinstance(a, Program)]:
            node.attrs[name] = optimize(block, level, inference=inference, enable=enable, disable=disable)
    result.validate()
    return result


__all__ = ["Pass", "optimize", "select_passes", "BUILTIN_PASSES", "DEFAULT_LEVEL", "FUSION_ORDER"]
