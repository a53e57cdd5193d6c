"""Elementwise-chain fusion: groups of elementwise ops become one ``fused_elementwise`` node.

``x * 2 + b`` then ``tanh`` is three nodes and, run op by op, three passes over memory and two
temporaries. The pass ``fuse_elementwise`` (level 2, inference) groups such nodes into one
``fused_elementwise`` node whose ``chain`` attribute lists the steps as plain JSON data::

    %5: float32[8, 16] = fused_elementwise(%x, %b) {chain: [['scale', [0], {...}], ['add', [2, 1], {}],
                                                             ['tanh', [3], {}]]}

Each step is ``[op name, argument indices, attributes]``: indices below the number of inputs
name the node's inputs, the others earlier steps (input count + step index); the last step is
the result. Only ops of ``FUSIBLE`` (a fixed list of names with known elementwise semantics) are
fused, over one float dtype, and only values that nothing outside the group reads disappear, so
a value read elsewhere (another node, an output, a state update) is still computed. Broadcasting
is numpy's, so the inputs may have any broadcast-compatible shapes.

The reference kernel evaluates the chain with in-place numpy ufuncs where the shapes allow it
(one buffer for the whole chain in the common case); the oar-numba plugin compiles one loop per
distinct chain. The op has a gradient rule (the chain re-run with its ops, then ``oar.grad``),
but the pass runs on inference programs only: training programs keep their ops, whose
gradients the backward pass reads.
"""

from __future__ import annotations

import numpy as np

from oar._core.op import Op, TensorMeta
from oar._core.program import OpNode, Program
from oar.errors import ArgumentError, DTypeError

# Ops whose elementwise semantics the chain evaluators know (numpy broadcasting, result in the
# inputs' dtype for float inputs). Activations of oar-nn are listed by name: a chain holds them
# only when nn is installed, since only then can a program contain them.
FUSIBLE = frozenset({
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "neg", "abs", "exp", "log", "sqrt", "rsqrt",
    "reciprocal", "tanh", "sigmoid", "sin", "cos", "erf", "scale", "pow", "clip",
    "relu", "relu6", "leaky_relu", "gelu", "silu", "elu", "hardsigmoid", "hardswish", "softplus", "mish",
})


def _op(name: str) -> Op:
    from oar._core.dispatch import OPS

    return OPS.get(name)


def check_chain(chain, n_inputs: int) -> None:
    if not isinstance(chain, (list, tuple)) or not chain:
        raise ArgumentError("fused_elementwise: chain must be a non-empty list of [op, args, attrs] steps")
    for k, step in enumerate(chain):
        name, args, _ = step
        if name not in FUSIBLE:
            raise ArgumentError(f"fused_elementwise: step {k} names op {name!r}, which is not fusible; "
                                f"fusible ops: {sorted(FUSIBLE)}")
        if not all(isinstance(a, int) and 0 <= a < n_inputs + k for a in args):
            raise ArgumentError(f"fused_elementwise: step {k} ({name}) reads {list(args)}, but only values "
                                f"0..{n_inputs + k - 1} exist before it")


def check_dtypes(arrays) -> None:
    """Raise unless the arrays share one dtype (what the pass fuses; steps then keep it)."""
    dtype = arrays[0].dtype if arrays else None
    for a in arrays:
        if a.dtype != dtype:
            raise DTypeError(f"fused_elementwise: every input must have one float dtype, got "
                             f"{', '.join(str(x.dtype) for x in arrays)}")


def _fused_meta(*inputs: TensorMeta, chain) -> TensorMeta:
    check_chain(chain, len(inputs))
    if len({m.dtype for m in inputs}) > 1 or not inputs[0].dtype.is_floating:
        raise DTypeError(f"fused_elementwise: every input must have one float dtype, got "
                         f"{', '.join(m.dtype.name for m in inputs)}")
    metas = list(inputs)
    for name, args, attrs in chain:
        metas.append(_op(name).meta(*[metas[a] for a in args], **attrs))
    return metas[-1]


# -- the reference kernel -------------------------------------------------------------------------
def _relu_into(x, out):
    return np.maximum(x, 0, out=out)


def _scale_into(x, out, scale=1.0, bias=0.0, bias_after_scale=True):
    s, b = x.dtype.type(scale), x.dtype.type(bias)
    first, second, (p, q) = (np.multiply, np.add, (s, b)) if bias_after_scale else (np.add, np.multiply, (b, s))
    y = np.asarray(first(x, p, out=out))  # a 0-d input gives a numpy scalar: make it an array
    return second(y, q, out=y)


# step -> fn(*arrays, out=buffer or None, **attrs): kernels that can write into a dying temporary
_INTO = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.true_divide,
    "maximum": np.maximum, "minimum": np.minimum, "neg": np.negative, "abs": np.absolute, "exp": np.exp,
    "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh, "sin": np.sin, "cos": np.cos,
}
_INTO_ATTRS = {"relu": _relu_into, "scale": _scale_into}


def plan_chain(chain, n_inputs: int) -> list[tuple]:
    """``(name, args, attrs, reusable, dying)`` per step: ``reusable`` is an argument (a temporary
    of the chain) read for the last time by that step, whose buffer the step may write into;
    ``dying`` are the temporaries no later step reads."""
    last: dict[int, int] = {}
    for k, (_, args, _) in enumerate(chain):
        for a in args:
            last[a] = k
    plan = []
    for k, (name, args, attrs) in enumerate(chain):
        dying = tuple(a for a in dict.fromkeys(args) if a >= n_inputs and last[a] == k)
        reusable = None
        if name in _INTO or name in _INTO_ATTRS:
            reusable = next((a for a in dying if list(args).count(a) == 1), None)
        plan.append((name, tuple(args), dict(attrs), reusable, dying))
    return plan


_PLANS: dict[tuple, tuple] = {}  # (id(chain), inputs) -> (chain, plan): the executor passes one list per node
_MAX_PLANS = 4096


def cached_for(chain, n_inputs: int, build):
    """``build(chain, n_inputs)``, checked and computed once per chain object (a program node's
    attribute, the same list on every run) and kept while that object is."""
    key = (id(chain), n_inputs, build)
    hit = _PLANS.get(key)
    if hit is not None and hit[0] is chain:
        return hit[1]
    check_chain(chain, n_inputs)
    if len(_PLANS) >= _MAX_PLANS:
        _PLANS.clear()
    value = build(chain, n_inputs)
    _PLANS[key] = (chain, value)
    return value


def evaluate_chain(arrays, chain) -> np.ndarray:
    """The chain's result on numpy ``arrays`` (the reference kernel of ``fused_elementwise``)."""
    n = len(arrays)
    check_dtypes(arrays)
    values = list(arrays)
    owned = [False] * n  # whether a value is a buffer of this chain's own (never an input's)
    for name, args, attrs, reusable, dying in cached_for(chain, n, plan_chain):
        xs = [values[a] for a in args]
        out = values[reusable] if reusable is not None and owned[reusable] else None
        try:
            if name in _INTO:
                result = _INTO[name](*xs, out=out)
            elif name in _INTO_ATTRS:
                result = _INTO_ATTRS[name](*xs, out=out, **attrs)
            else:
                result = _op(name).reference(*xs, **attrs)
        except (ValueError, TypeError):
            if out is None:
                raise
            # the result is larger than the dying temporary (broadcasting), or of another dtype
            result = _INTO[name](*xs) if name in _INTO else _INTO_ATTRS[name](*xs, out=None, **attrs)
        result = np.asarray(result)
        fresh = name in _INTO or name in _INTO_ATTRS or not any(np.may_share_memory(result, a) for a in arrays)
        for a in dying:  # a dead temporary's memory goes back at once
            values[a] = None
        xs = out = None
        values.append(result)
        owned.append(fresh and result.flags.writeable)
    result = values[-1]
    return result.astype(arrays[0].dtype, copy=False) if result.dtype != arrays[0].dtype else result


def _fused_kernel(*arrays, chain):
    return evaluate_chain(arrays, chain)  # the chain is checked once, when its plan is made


fused_elementwise_op = Op(
    "fused_elementwise", reference=_fused_kernel, meta=_fused_meta, traits=("elementwise",),
    dtypes=("float32", "float64"),  # float16 and bfloat16 compute in float32
)


@fused_elementwise_op.defgrad
def _fused_grad(ctx, g):
    # The chain again, step by step with its own ops, differentiated by autograd: the gradient
    # is exactly the unfused ops' (and can be differentiated again).
    from oar._core.autograd import enable_grad, grad
    from oar._core.dispatch import dispatch

    wanted = [i for i, need in enumerate(ctx.needs_input_grad) if need]
    with enable_grad():
        values = list(ctx.inputs)
        for name, args, attrs in ctx.attrs["chain"]:
            values.append(dispatch(_op(name), tuple(values[a] for a in args), dict(attrs)))
        grads = grad(values[-1], [ctx.inputs[i] for i in wanted], grad_outputs=g, create_graph=True,
                     allow_unused=True)
    result = [None] * len(ctx.inputs)
    for i, gi in zip(wanted, grads):
        result[i] = gi
    return tuple(result)


def fused_elementwise(*inputs, chain):
    """Run an elementwise ``chain`` (see the module docstring) on tensors as one op.

    >>> import oar
    >>> from oar._core.fusion import fused_elementwise
    >>> x = oar.to_tensor([-1.0, 2.0])
    >>> fused_elementwise(x, oar.to_tensor([1.0, 1.0]), chain=[["add", [0, 1], {}], ["tanh", [2], {}]]).shape
    [2]
    """
    from oar._core.dispatch import dispatch

    return dispatch(fused_elementwise_op, tuple(inputs), {"chain": chain})


# -- the pass ---------------------------------------------------------------------------------------
def _fusible(program: Program, node: OpNode) -> bool:
    if node.op not in FUSIBLE or len(node.outputs) != 1 or not node.inputs:
        return False
    dtype = program.values[node.outputs[0]].dtype
    return dtype.is_floating and all(program.values[v].dtype is dtype for v in node.inputs)


def fuse_elementwise(program: Program) -> Program:
    """Fuse groups of ``FUSIBLE`` elementwise nodes of one float dtype into ``fused_elementwise``.

    A producer joins its consumer's group when the consumer is its only reader; then a group
    whose result is read only by the nodes of one other group joins that group (``t = tanh(x)``
    then ``(t - 1) * t``). Values that are outputs or state updates are never fused away, so every
    fused-away value was read inside its group alone.
    """
    users = program.users()
    kept_alive = set(program.output_ids())
    group_of: dict[int, list[OpNode]] = {}  # id(root node) -> the group's nodes in program order
    root_of: dict[int, int] = {}  # id(node) -> id(its group's root)
    producer = program.producers()
    for node in program.nodes:
        if not _fusible(program, node):
            continue
        group = [node]
        for v in dict.fromkeys(node.inputs):
            p = producer.get(v)
            if p is None or id(p) not in root_of or root_of[id(p)] != id(p):
                continue
            if v in kept_alive or len({id(u) for u in users.get(v, ())}) != 1 or \
                    program.values[v].dtype is not program.values[node.outputs[0]].dtype:
                continue
            for member in group_of.pop(id(p)):
                root_of[id(member)] = id(node)
                group.append(member)
        root_of[id(node)] = id(node)
        group_of[id(node)] = group
    changed = True
    while changed:  # a group read by one other group only (several of its nodes) joins it
        changed = False
        for root_id, group in list(group_of.items()):
            out = next(n for n in group if id(n) == root_id).outputs[0]
            readers = {root_of.get(id(u)) for u in users.get(out, ())}
            if out in kept_alive or len(readers) != 1 or None in readers or root_id in readers:
                continue
            (target,) = readers
            for member in group_of.pop(root_id):
                root_of[id(member)] = target
                group_of[target].append(member)
            changed = True
    fused: dict[int, OpNode] = {}
    absorbed: set[int] = set()
    order = {id(n): i for i, n in enumerate(program.nodes)}
    for root_id, group in group_of.items():
        if len(group) < 2:
            continue
        group.sort(key=lambda n: order[id(n)])
        inner = {v for n in group for v in n.outputs}
        inputs = list(dict.fromkeys(v for n in group for v in n.inputs if v not in inner))
        index = {v: i for i, v in enumerate(inputs)}
        chain = []
        for n in group:
            chain.append([n.op, [index[v] for v in n.inputs], dict(n.attrs)])
            index[n.outputs[0]] = len(inputs) + len(chain) - 1
        root = group[-1]
        fused[root_id] = OpNode("fused_elementwise", inputs, list(root.outputs), {"chain": chain},
                                all(n.no_grad for n in group))
        absorbed.update(id(n) for n in group)
    if not fused:
        return program
    program.nodes = [fused.get(id(n), n) for n in program.nodes if id(n) in fused or id(n) not in absorbed]
    return program.prune()


__all__ = ["FUSIBLE", "cached_for", "check_chain", "check_dtypes", "fuse_elementwise", "fused_elementwise", "fused_elementwise_op", "evaluate_chain", "plan_chain"]
