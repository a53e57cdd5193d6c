"""Control-flow ops: ``cond`` and ``while``, whose attributes hold sub-programs (blocks).

A block is a closed ``Program``: its feeds are the node's operands (and, for ``while``, the loop
variables first), it reads nothing else, and its outputs are a list of values.

- ``cond(pred, *operands, true_block=, false_block=)``: runs the block that ``pred`` (a bool
  tensor of one element) picks on the operands; both blocks return as many values as the node
  has outputs.
- ``while(*loop_vars, *captured, cond_block=, body_block=, num_loop_vars=n)``: while
  ``cond_block`` returns True on (loop vars, captured), ``body_block`` maps them to the next loop
  vars; the outputs are the last loop vars. With ``history=True`` (set only in a training
  program whose backward is derived, ``oar._core.backward``) the outputs also hold the iteration
  count and each loop var at the start of every iteration, stacked along a new first dim.

``oar.static.nn.cond`` / ``while_loop`` emit these nodes while tracing; the reference kernels
run the blocks with an ``Executor`` each (kernels looked up once per block). Training replays the
blocks' ops one by one (``replay_dispatch``) so that autograd records the path that ran; the
gradient rules here serve a direct call of the op and recompute the taken path to differentiate
it. The ops carry the ``random`` trait: passes treat them as opaque nodes with effects (never
folded, merged, hoisted or dropped) since a block may draw random numbers.
"""

from __future__ import annotations

import numpy as np

from oar._core.op import Op, TensorMeta
from oar._core.program import Program
from oar.errors import ArgumentError, DTypeError, OarError, ShapeError

TRAITS = {"random", "view"}  # a block may draw; an output may be an input itself (a while of no iteration)


def _block_executor(block: Program):
    executor = block.__dict__.get("_cf_executor")
    if executor is None:
        from oar._core.executor import Executor

        executor = Executor(block, "cpu", hoist_parameters=False)
        block.__dict__["_cf_executor"] = executor
    return executor


def run_block_arrays(block: Program, arrays, where: str) -> list:
    """Run ``block`` on arrays (its feeds, in order) for inference; its outputs as arrays."""
    try:
        return _block_executor(block).run_arrays(arrays)  # no tensors per iteration
    except OarError as exc:  # say which block the failing op is in
        raise type(exc)(f"{where}: {exc}") from exc


def _truth(pred) -> bool:
    a = np.asarray(pred)
    if a.size != 1:
        raise ShapeError(f"cond: the predicate must hold one element, got shape {list(a.shape)}")
    return bool(a.reshape(-1)[0])


def _result(outs: list) -> tuple:
    return tuple(outs)  # always a tuple, as a variadic op (split) returns


# ------------------------------------------------------------------------------------------
# cond
# ------------------------------------------------------------------------------------------
def _cond_reference(pred, *operands, true_block: Program, false_block: Program):
    taken = "true_block" if _truth(pred) else "false_block"
    block = true_block if taken == "true_block" else false_block
    return _result(run_block_arrays(block, operands, f"in cond's {taken}"))


def _out_metas(block: Program) -> list[TensorMeta]:
    return [block.values[r.id].meta for r in block.outputs]


def merge_metas(a: TensorMeta, b: TensorMeta, what: str) -> TensorMeta:
    """One meta for two values that take each other's place: dims that differ become dynamic."""
    if a.dtype is not b.dtype:
        raise DTypeError(f"{what}: dtypes differ ({a.dtype.name} and {b.dtype.name})")
    if len(a.shape) != len(b.shape):
        raise ShapeError(f"{what}: ranks differ ({a!r} and {b!r})")
    return TensorMeta(tuple(x if x == y else None for x, y in zip(a.shape, b.shape)), a.dtype)


def _check_block_inputs(block: Program, name: str, operands, op: str) -> None:
    if len(block.feeds) != len(operands):
        raise ArgumentError(f"{op}: {name} takes {len(block.feeds)} inputs, the node gives {len(operands)}")
    for i, (vid, m) in enumerate(zip(block.feeds, operands)):
        want = block.values[vid].meta
        if want.dtype is not m.dtype or len(want.shape) != len(m.shape):
            raise ArgumentError(f"{op}: {name} input {i} is {want!r}, the node gives {m!r}")


def _cond_meta(pred, *operands, true_block: Program, false_block: Program):
    if pred.dtype.name != "bool" or (None not in pred.shape and int(np.prod(pred.shape)) != 1):
        raise ArgumentError(f"cond: the predicate must be a bool tensor of one element, got {pred!r}")
    for name, block in (("true_block", true_block), ("false_block", false_block)):
        _check_block_inputs(block, name, operands, "cond")
    t, f = _out_metas(true_block), _out_metas(false_block)
    if len(t) != len(f):
        raise ArgumentError(f"cond: true_block returns {len(t)} values, false_block {len(f)}")
    metas = [merge_metas(a, b, f"cond output {i}") for i, (a, b) in enumerate(zip(t, f))]
    return metas[0] if len(metas) == 1 else tuple(metas)


cond_op = Op("cond", reference=_cond_reference, meta=_cond_meta, traits=TRAITS, num_outputs=None,
             nondiff_inputs=(0,))


@cond_op.defgrad
def _cond_grad(ctx, *grads):
    pred, *operands = ctx.inputs
    block = ctx.attrs["true_block"] if _truth(pred._data) else ctx.attrs["false_block"]
    return (None, *_vjp(lambda xs: run_block_tensors(block, xs), operands, grads))


# ------------------------------------------------------------------------------------------
# while
# ------------------------------------------------------------------------------------------
def _while_reference(*inputs, cond_block: Program, body_block: Program, num_loop_vars: int, history: bool = False):
    carried, captured = list(inputs[:num_loop_vars]), list(inputs[num_loop_vars:])
    seen = []
    while _truth(run_block_arrays(cond_block, carried + captured, "in while's cond_block")[0]):
        if history:  # copies: a block runner may hand back buffers it reuses on the next run
            seen.append([np.array(a, copy=True) for a in carried])
        carried = run_block_arrays(body_block, carried + captured, "in while's body_block")
    if not history:
        return _result(carried)
    return _result(carried + _history_arrays(seen, inputs[:num_loop_vars]))


def _history_arrays(seen: list, initial) -> list:
    """``history=True`` (the derived backward reads it): the iteration count, then each loop
    variable at the start of every iteration, stacked along a new first dim."""
    stacks = []
    for i, first in enumerate(initial):
        rows = [np.asarray(vars_[i]) for vars_ in seen]
        if any(r.shape != np.shape(first) for r in rows):
            raise ShapeError(f"while(history=True): loop variable {i} changes shape across iterations "
                             f"({[list(r.shape) for r in rows]}); its iterations cannot be stacked")
        stacks.append(np.stack(rows) if rows else np.zeros((0, *np.shape(first)), np.asarray(first).dtype))
    return [np.asarray(len(seen), np.int64), *stacks]


def _while_meta(*inputs, cond_block: Program, body_block: Program, num_loop_vars: int, history: bool = False):
    _check_block_inputs(cond_block, "cond_block", inputs, "while")
    _check_block_inputs(body_block, "body_block", inputs, "while")
    (c,) = _out_metas(cond_block)
    if c.dtype.name != "bool":
        raise ArgumentError(f"while: cond_block must return a bool tensor, got {c!r}")
    body = _out_metas(body_block)
    if len(body) != num_loop_vars:
        raise ArgumentError(f"while: body_block returns {len(body)} values for {num_loop_vars} loop variables")
    metas = [body_block.values[v].meta for v in body_block.feeds[:num_loop_vars]]
    if history:
        from oar._core import dtypes as _dtypes

        metas += [TensorMeta((), _dtypes.int64)] + [TensorMeta((None, *m.shape), m.dtype) for m in metas]
    return metas[0] if len(metas) == 1 else tuple(metas)


while_op = Op("while", reference=_while_reference, meta=_while_meta, traits=TRAITS, num_outputs=None)


@while_op.defgrad
def _while_grad(ctx, *grads):
    n = ctx.attrs["num_loop_vars"]
    cond_block, body_block = ctx.attrs["cond_block"], ctx.attrs["body_block"]

    def run(xs):
        carried, captured = list(xs[:n]), list(xs[n:])
        while _truth(run_block_tensors(cond_block, carried + captured)[0]._data):
            carried = run_block_tensors(body_block, carried + captured)
        return carried

    return tuple(_vjp(run, list(ctx.inputs), grads))


# ------------------------------------------------------------------------------------------
# running blocks op by op through dispatch (training replay, gradients)
# ------------------------------------------------------------------------------------------
def run_block_tensors(block: Program, tensors) -> list:
    """Run ``block`` on tensors by dispatching each node through the active mode (autograd
    records every op; control-flow nodes inside run the same way); its outputs as tensors."""
    from oar._core import dispatch as _dispatch
    from oar._core.autograd import _set_grad_enabled
    from oar._core.tensor import Tensor

    env = dict(zip(block.feeds, tensors))
    for name, vid in block.constants.items():
        env[vid] = Tensor._wrap(block.constant_data[name], "cpu", True, None, 0, None)
    for node in block.nodes:
        args = tuple(env[v] for v in node.inputs)
        if node.no_grad and _dispatch.grad_enabled:
            previous = _set_grad_enabled(False)
            try:
                result = replay_node(node, args)
            finally:
                _set_grad_enabled(previous)
        else:
            result = replay_node(node, args)
        if len(node.outputs) == 1 and type(result) is not tuple:
            env[node.outputs[0]] = result
        else:
            env.update(zip(node.outputs, result))
    return [env[r.id] for r in block.outputs]


def replay_node(node, args):
    """Dispatch one program node on tensors; a control-flow node runs its blocks op by op."""
    from oar._core.dispatch import OPS

    return replay_dispatch(OPS.get(node.op), args, dict(node.attrs))


def replay_dispatch(op, args, attrs):
    """``dispatch``, except that a ``cond`` / ``while`` runs its blocks' ops one by one (autograd
    records the path that ran, an outer mode such as autocast sees every op)."""
    from oar._core.dispatch import dispatch

    if op.name == "cond":
        pred, *operands = args
        block = attrs["true_block"] if _truth(_numpy(pred)) else attrs["false_block"]
        return _result(run_block_tensors(block, operands))
    if op.name == "while":
        n = attrs["num_loop_vars"]
        carried, captured = list(args[:n]), list(args[n:])
        seen = []
        while _truth(_numpy(run_block_tensors(attrs["cond_block"], carried + captured)[0])):
            seen.append(carried)
            carried = run_block_tensors(attrs["body_block"], carried + captured)
        if not attrs.get("history"):
            return _result(carried)
        from oar._core.tensor import Tensor

        stacks = [Tensor._wrap(a, "cpu", True, None, 0, None)._to_backend(args[0]._backend)
                  for a in _history_arrays([[_numpy(t) for t in vs] for vs in seen], [_numpy(t) for t in args[:n]])]
        return _result(carried + stacks)  # (only the backward reads them: no gradient through them)
    return dispatch(op, args, attrs)


def _numpy(t):
    from oar._core.dispatch import BACKENDS

    return BACKENDS.get(t._backend).to_numpy(t._data)


def _vjp(fn, xs, grads) -> list:
    """The gradients of ``fn(xs)`` (a list of tensors) with respect to ``xs`` given the output
    gradients ``grads``, by running ``fn`` again under autograd (None where none flows)."""
    from oar._core import dispatch as _dispatch
    from oar._core.autograd import _set_grad_enabled, grad

    create_graph = _dispatch.grad_enabled  # the backward itself is being recorded
    if create_graph:
        leaves = list(xs)
    else:
        leaves = []
        for x in xs:
            d = x.detach()
            d.stop_gradient = x.stop_gradient
            leaves.append(d)
    previous = _set_grad_enabled(True)
    try:
        outs = fn(leaves)
        pairs = [(o, g) for o, g in zip(outs, grads) if g is not None and not o.stop_gradient]
        wanted = [i for i, x in enumerate(leaves) if not x.stop_gradient]
        result: list = [None] * len(xs)
        if pairs and wanted:
            got = grad([o for o, _ in pairs], [leaves[i] for i in wanted], [g for _, g in pairs],
                       create_graph=create_graph, allow_unused=True)
            for i, g in zip(wanted, got):
                result[i] = g
    finally:
        _set_grad_enabled(previous)
    return result


CONTROL_FLOW_OPS = {"cond": cond_op, "while": while_op}
OPS = [cond_op, while_op]
METHODS: dict = {}  # no Tensor methods
__all__ = ["cond_op", "while_op", "run_block_tensors", "replay_dispatch", "CONTROL_FLOW_OPS"]
