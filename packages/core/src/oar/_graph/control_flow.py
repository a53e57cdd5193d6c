"""Control flow in programs: the ``cond`` and ``while`` ops, and their capture by to_static.

**The ops.** Their attributes hold sub-programs (blocks). A block is a closed ``Program``: its
feeds are the node's operands (and, for ``while``, the loop variables first), it reads nothing
else, and its outputs are a list of values.

- ``cond(pred, *operands, true_block=, false_block=)``: runs the block that ``pred`` (a bool
  tensor of one element) picks on the operands; both blocks return as many values as the node
  has outputs.
- ``while(*loop_vars, *captured, cond_block=, body_block=, num_loop_vars=n)``: while
  ``cond_block`` returns True on (loop vars, captured), ``body_block`` maps them to the next loop
  vars; the outputs are the last loop vars. With ``history=True`` (set only in a training
  program whose backward is derived, ``oar._graph.static_backward``) the outputs also hold the
  iteration count and each loop var at the start of every iteration, stacked along a new first dim.

The reference kernels run the blocks with an ``Executor`` each (kernels looked up once per
block). Training replays the blocks' ops one by one (``replay_dispatch``, which this module puts
in the executor's ``REPLAYS``) so that autograd records the path that ran; the gradient rules
here serve a direct call of the op and recompute the taken path to differentiate it. The ops
carry the ``random`` trait: passes treat them as opaque nodes with effects (never folded,
merged, hoisted or dropped) since a block may draw random numbers.

**The capture** (``oar.static.nn.cond`` and ``while_loop``). Eagerly (no to_static capture
active) ``cond`` evaluates the predicate and calls one branch, and ``while_loop`` is a Python
loop: autograd records the ops that ran.

While ``to_static`` traces (a recording ``TracingMode`` is on the mode stack), each branch, and the
loop's ``cond`` and ``body``, is traced into a block held in the attributes of one ``cond`` /
``while`` node. Tracing runs on real tensors, so:

- every block is traced on the real values as a *shadow* run: the outside tensors' buffers are
  read-only meanwhile (an in-place write rebinds instead of writing) and are put back afterwards,
  with the random generator's state, so a branch that is not taken leaves no trace;
- the real result is then computed by running the taken branch (or the loop) once more, recorded
  into a scratch list that is dropped; the node's outputs are bound to that result, so the first
  call returns eager's values and autograd works on them.

A tensor computed inside a block and read outside it (leaked through a Python variable), or an
in-place write to an outside tensor inside a block, cannot be held by a program: the capture
breaks (``GraphBreak``), it never gives a wrong result.
"""

from __future__ import annotations

import numpy as np

from oar._engine import dtypes as _dt
from oar._engine import eager as _eager
from oar._engine.autograd import _set_grad_enabled, grad
from oar._engine.dispatch import _mode_stack, dispatch
from oar._engine.op import Op, TensorMeta
from oar._engine.registries import BACKENDS, OPS
from oar._engine.tensor import Tensor, _from_numpy, to_tensor
from oar._graph.executor import REPLAYS, Executor
from oar._graph.program import OpNode, Program, ValueRef
from oar._graph.tracing import TracingMode, user_location
from oar._ops.assign import assign
from oar._ops.random import get_rng_state, set_rng_state
from oar.errors import ArgumentError, DTypeError, OarError, ShapeError

# ------------------------------------------------------------------------------------------
# the ops
# ------------------------------------------------------------------------------------------
TRAITS = {"random", "alias"}  # a block may draw; an output may be an input itself (a while of no iteration)


def _block_executor(block: Program):
    executor = block.__dict__.get("_cf_executor")
    if executor is None:
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


cond_op = Op("cond", paddle=("static.nn.cond",), reference=_cond_reference, meta=_cond_meta, traits=TRAITS, num_outputs=None,
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
        metas += [TensorMeta((), _dt.int64)] + [TensorMeta((None, *m.shape), m.dtype) for m in metas]
    return metas[0] if len(metas) == 1 else tuple(metas)


while_op = Op("while", paddle=("static.nn.while_loop",), reference=_while_reference, meta=_while_meta, traits=TRAITS, num_outputs=None)


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
    env = dict(zip(block.feeds, tensors))
    for name, vid in block.constants.items():
        env[vid] = Tensor._wrap(block.constant_data[name], "cpu", True, None, 0, None)
    for node in block.nodes:
        args = tuple(env[v] for v in node.inputs)
        if node.no_grad and _eager.grad_enabled:
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
    return replay_dispatch(OPS.get(node.op), args, dict(node.attrs))


def replay_dispatch(op, args, attrs):
    """``dispatch``, except that a ``cond`` / ``while`` runs its blocks' ops one by one (autograd
    records the path that ran, an outer mode such as autocast sees every op)."""
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
        stacks = [_from_numpy(a, args[0]._backend)
                  for a in _history_arrays([[_numpy(t) for t in vs] for vs in seen], [_numpy(t) for t in args[:n]])]
        return _result(carried + stacks)  # (only the backward reads them: no gradient through them)
    return dispatch(op, args, attrs)


def _vjp(fn, xs, grads) -> list:
    """The gradients of ``fn(xs)`` (a list of tensors) with respect to ``xs`` given the output
    gradients ``grads``, by running ``fn`` again under autograd (None where none flows)."""
    create_graph = _eager.grad_enabled  # the backward itself is being recorded
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


REPLAYS["cond"] = REPLAYS["while"] = replay_dispatch


# ------------------------------------------------------------------------------------------
# capture
# ------------------------------------------------------------------------------------------
_MAX_RETRACES = 4  # a loop var whose shape changes is traced again with that dim dynamic


def active_tracer() -> TracingMode | None:
    """The to_static tracer that records now, if any."""
    for mode in reversed(_mode_stack):
        if isinstance(mode, TracingMode):
            return mode if mode.recording else None
    return None


def _numpy(t: Tensor) -> np.ndarray:
    return np.asarray(BACKENDS.get(t._backend).to_numpy(t._data))


def _describe(t) -> str:
    if isinstance(t, Tensor):
        return f"Tensor({t.dtype.name}{list(t._data.shape)})"
    return repr(t)


def check_pred(pred: Tensor, api: str, what: str = "pred") -> bool:
    """The value of a predicate tensor: bool dtype, one element (shape [] or [1])."""
    if pred.dtype.name != "bool":
        raise DTypeError(f"{api}: {what} must be a bool tensor (a comparison such as x > 0), got "
                         f"{_describe(pred)}")
    if int(np.prod(pred._data.shape, dtype=np.int64)) != 1:
        raise ShapeError(f"{api}: {what} must hold one element (shape [] or [1]), got {_describe(pred)}")
    return bool(_numpy(pred).reshape(-1)[0])


# ------------------------------------------------------------------------------------------
# nested structures of tensors
# ------------------------------------------------------------------------------------------
def flatten(obj, leaves: list):
    """The structure of ``obj`` with its tensors taken out (appended to ``leaves``)."""
    if isinstance(obj, Tensor):
        leaves.append(obj)
        return ("T",)
    if isinstance(obj, (list, tuple)):
        return (type(obj), tuple(flatten(o, leaves) for o in obj))
    if isinstance(obj, dict):
        return (dict, tuple((k, flatten(v, leaves)) for k, v in obj.items()))
    return ("L", obj)


def unflatten(spec, leaves):
    it = iter(leaves)

    def build(s):
        if s[0] == "T":
            return next(it)
        if s[0] == "L":
            return s[1]
        kind, items = s
        if kind is dict:
            return {k: build(v) for k, v in items}
        values = [build(v) for v in items]
        if kind is list:
            return values
        return kind(*values) if hasattr(kind, "_fields") else kind(values)

    return build(spec)


def _show(spec, leaves) -> str:
    it = iter(leaves)

    def show(s):
        if s[0] == "T":
            return _describe(next(it))
        if s[0] == "L":
            return repr(s[1])
        kind, items = s
        if kind is dict:
            return "{" + ", ".join(f"{k!r}: {show(v)}" for k, v in items) + "}"
        inner = ", ".join(show(v) for v in items)
        return f"[{inner}]" if kind is list else f"({inner}{',' if len(items) == 1 else ''})"

    return show(spec)


def _same_structure(a, b) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "T":
        return True
    if a[0] == "L":
        try:
            return bool(a[1] == b[1]) and type(a[1]) is type(b[1])
        except Exception:  # noqa: BLE001 - values that do not compare (arrays): not the same
            return False
    if len(a[1]) != len(b[1]):
        return False
    if a[0] is dict:
        return all(ka == kb and _same_structure(va, vb) for (ka, va), (kb, vb) in zip(a[1], b[1]))
    return all(_same_structure(x, y) for x, y in zip(a[1], b[1]))


# ------------------------------------------------------------------------------------------
# scopes: tracing a block into a node list of its own
# ------------------------------------------------------------------------------------------
class _Scope:
    """Records the ops run inside into a fresh node list (a block in the making).

    ``shadow=True``: the run must leave no trace -- outside tensors' buffers are read-only
    meanwhile and their data, version and autograd history are put back on exit, as is the random
    generator's state. Either way an in-place write to an outside tensor breaks the graph.
    """

    def __init__(self, tracer: TracingMode, shadow: bool, own=()):
        self.tracer = tracer
        self.shadow = shadow
        self.own = {id(t) for t in own}  # the loop variables' placeholders: the scope may write them
        self.nodes: list[OpNode] = []

    def __enter__(self):
        tracer, program = self.tracer, self.tracer.program
        self.saved_nodes = program.nodes
        program.nodes = []
        self.start = program._next_id
        tensors = {id(e[0]): e[0] for e in tracer.table.values()}
        for (_, _, t) in tracer.state.values():
            tensors.setdefault(id(t), t)
        for key in self.own:
            tensors.pop(key, None)
        self.kept = []
        for t in tensors.values():
            data = t._data
            writeable = type(data) is np.ndarray and data.flags.writeable
            self.kept.append((t, data, t._vc, t._vc[0] if t._vc is not None else 0, t._node, t._out_index,
                              t.stop_gradient, writeable))
            if self.shadow and writeable:
                data.flags.writeable = False
        # In-place writes into tensors from outside (including ones first read inside the scope,
        # which became constants or parameters): ``apply_inplace`` reports each through rebind.
        self.outer_writes: list = []
        self.previous_rebind = tracer.__dict__.get("rebind")
        inner_rebind = tracer.rebind

        def rebind(target, result):
            entry = tracer.table.get(id(target))
            if id(target) in self.own:
                pass
            elif entry is None or entry[0] is not target or not self.start <= entry[1] or \
                    program.is_constant(entry[1]) or program.is_param(entry[1]):
                self.outer_writes.append((target, None if entry is None else list(entry)))
            inner_rebind(target, result)

        tracer.rebind = rebind
        self.rng = None
        if self.shadow and "oar._ops.random" in __import__("sys").modules:

            self.rng = (get_rng_state(), tracer._rng)
        return self

    def __exit__(self, *exc):
        tracer, program = self.tracer, self.tracer.program
        self.nodes = program.nodes
        program.nodes = self.saved_nodes
        self.end = program._next_id
        if self.previous_rebind is None:
            del tracer.rebind
        else:
            tracer.rebind = self.previous_rebind
        written = bool(self.outer_writes)
        kept = {id(k[0]) for k in self.kept}
        if self.shadow:
            for t, entry in reversed(self.outer_writes):
                if id(t) in kept or entry is None or not program.is_constant(entry[1]):
                    continue
                # First read inside the scope: its values then are the constant's copy.
                t._data = np.array(program.constant_value(entry[1]), copy=True)
                if t._vc is not None:
                    t._vc[0] = entry[2]
        for t, data, vc, version, node, index, stop, writeable in self.kept:
            now = t._vc[0] if t._vc is not None else 0
            if t._data is not data or now != version:
                written = True
                if self.shadow:
                    # Its counter too: a write that gave t a new buffer gave it a counter of its own,
                    # and the old buffer's counter is shared with t's views.
                    t._data, t._vc = data, vc
                    if vc is not None:
                        vc[0] = version
                    t._node, t._out_index, t.stop_gradient = node, index, stop
            if self.shadow and writeable:
                data.flags.writeable = True
        if self.rng is not None:

            set_rng_state(self.rng[0])
            tracer._rng = self.rng[1]
        if written and tracer.recording and exc[0] is None:
            tracer.break_graph("a cond branch or while_loop body writes in place into a tensor from outside it "
                               "(x.add_(...), x[i] = v, running statistics, ...); a program cannot hold that: "
                               "compute a new tensor and return it instead")
        return False

    def values_made(self) -> range:
        return range(self.start, self.end)


def _drop(tracer: TracingMode, *scopes: _Scope) -> None:
    """Forget the values the scopes made (moved into blocks or thrown away): reading a tensor
    bound to one later breaks the graph."""
    program = tracer.program
    params = set(program.params.values())
    for scope in scopes:
        for vid in scope.values_made():
            if vid in params:
                continue
            tracer.hidden.add(vid)
            program.values.pop(vid, None)
        for name, vid in list(program.constants.items()):
            if scope.start <= vid < scope.end:
                del program.constants[name], program.constant_data[name]


def _free_values(scope: _Scope, outputs: list[int], args: list[int]) -> list[int]:
    """The outside values the scope's nodes (and outputs) read, in order of first read."""
    program = scope.tracer.program
    inner = {v for n in scope.nodes for v in n.outputs}
    inner.update(v for v in program.constants.values() if scope.start <= v < scope.end)
    skip = inner | set(args)
    free: list[int] = []
    for vid in [v for n in scope.nodes for v in n.inputs] + list(outputs):
        if vid not in skip and vid not in free:
            free.append(vid)
    return free


def _block(scope: _Scope, args: list[int], operands: list[int], outputs: list[int]) -> Program:
    """The scope's nodes as a closed block: feeds ``args + operands`` (new values of the same
    types), its constants moved in, ``outputs`` returned."""
    program = scope.tracer.program
    block = Program()
    mapping: dict[int, int] = {}
    for vid in [*args, *operands]:
        src = program.values[vid]
        v = program.new_value(src.shape, src.dtype)  # a new id, unique in the whole program
        del program.values[v.id]
        block.values[v.id] = v
        block.feeds.append(v.id)
        mapping[vid] = v.id
    for name, vid in program.constants.items():
        if scope.start <= vid < scope.end:
            # Named by its id (unique in the whole program), so that no printed name is shared
            # with a constant of the enclosing program.
            value = program.values[vid]
            value.name = f"const_v{vid}"
            block.values[vid] = value
            block.constants[value.name] = vid
            block.constant_data[value.name] = program.constant_data[name]
    for node in scope.nodes:
        for vid in node.outputs:
            block.values[vid] = program.values[vid]
        block.nodes.append(OpNode(node.op, [mapping.get(v, v) for v in node.inputs], node.outputs, node.attrs,
                                  node.no_grad, node.where))
    block.outputs = [ValueRef(mapping.get(v, v)) for v in outputs]
    block._next_id = max(block.values, default=-1) + 1
    return block


def _bind_outputs(tracer: TracingMode, tensors: list, metas: list[TensorMeta], made: range) -> tuple[list, list]:
    """New values for a control-flow node's outputs, bound to the real result tensors (a tensor
    from outside the node, or one given twice, is copied first: it must not be rebound)."""

    out_ids, results, seen = [], [], set()
    for t, m in zip(tensors, metas):
        entry = tracer.table.get(id(t))
        inside = entry is not None and entry[0] is t and entry[1] in made
        if not inside or id(t) in seen:
            tracer.recording = False  # an eager copy, autograd connected, not recorded
            try:
                t = assign(t)
            finally:
                tracer.recording = True
        seen.add(id(t))
        v = tracer.program.new_value(m.shape, m.dtype)
        tracer._bind(t, v.id)
        tracer.dynamic.add(v.id)
        out_ids.append(v.id)
        results.append(t)
    return out_ids, results


def _no_grad(tracer: TracingMode) -> bool:
    return tracer.grad_at_entry and not _eager.grad_enabled


# ------------------------------------------------------------------------------------------
# cond
# ------------------------------------------------------------------------------------------
def _call_branch(fn):
    return None if fn is None else fn()


def eager_cond(value: bool, true_fn, false_fn):
    return _call_branch(true_fn if value else false_fn)


def traced_cond(tracer: TracingMode, pred: Tensor, true_fn, false_fn):
    value = check_pred(pred, "cond")
    pred_vid = tracer.value_of(pred)
    if not tracer.recording:  # the predicate itself cannot be captured (a graph break)
        return eager_cond(value, true_fn, false_fn)
    traced = []
    for fn in (true_fn, false_fn):
        with _Scope(tracer, shadow=True) as scope:
            result = _call_branch(fn)
            leaves: list = []
            spec = flatten(result, leaves)
            out_vids = [tracer.value_of(t) for t in leaves] if tracer.recording else []
        traced.append((scope, spec, leaves, out_vids))
        if not tracer.recording:
            _drop(tracer, *(s for s, *_ in traced))
            return eager_cond(value, true_fn, false_fn)
    (ts, tspec, tleaves, tout), (fs, fspec, fleaves, fout) = traced
    try:
        _check_branches(tspec, tleaves, fspec, fleaves)
    except ArgumentError as exc:
        _drop(tracer, ts, fs)
        raise ArgumentError(f"{exc}{_at()}") from None
    if not tleaves:  # nothing a program needs: no node, just the taken branch
        _drop(tracer, ts, fs)
        return eager_cond(value, true_fn, false_fn)
    operands: list[int] = []
    for scope, out_vids in ((ts, tout), (fs, fout)):
        operands += [v for v in _free_values(scope, out_vids, []) if v not in operands]
    true_block = _block(ts, [], operands, tout)
    false_block = _block(fs, [], operands, fout)
    _drop(tracer, ts, fs)

    metas = [merge_metas(true_block.values[a.id].meta, false_block.values[b.id].meta, f"cond output {i}")
             for i, (a, b) in enumerate(zip(true_block.outputs, false_block.outputs))]
    # The real result: the taken branch once more, recorded into a list that is dropped.
    with _Scope(tracer, shadow=False) as real:
        result = eager_cond(value, true_fn, false_fn)
    _drop(tracer, real)
    if not tracer.recording:
        return result
    leaves = []
    spec = flatten(result, leaves)
    if not _same_outputs(spec, leaves, tspec if value else fspec, tleaves if value else fleaves):
        tracer.break_graph("a cond branch returned something else when run again (Python state that changes "
                           "between calls?); the program cannot hold it")
        return result
    out_ids, bound = _bind_outputs(tracer, leaves, metas, real.values_made())
    tracer.program.add_node("cond", [pred_vid, *operands], out_ids,
                            {"true_block": true_block, "false_block": false_block}, no_grad=_no_grad(tracer))
    return unflatten(spec, bound)


def _at() -> str:

    filename, lineno = user_location()
    return f" (at {filename}:{lineno})"


def _same_outputs(spec, leaves, traced_spec, traced_leaves) -> bool:
    """The real run returned what the traced run did (structure, dtypes, number of dims)."""
    return _same_structure(spec, traced_spec) and all(
        a.dtype is b.dtype and a._data.ndim == b._data.ndim for a, b in zip(leaves, traced_leaves))


def _check_branches(tspec, tleaves, fspec, fleaves) -> None:
    if not _same_structure(tspec, fspec):
        raise ArgumentError(
            f"cond: true_fn and false_fn must return the same structure (the same nesting, tensors at the "
            f"same places, equal non-tensor values); true_fn returned {_show(tspec, tleaves)} and false_fn "
            f"returned {_show(fspec, fleaves)}")
    for i, (a, b) in enumerate(zip(tleaves, fleaves)):
        if a.dtype is not b.dtype or a._data.ndim != b._data.ndim:
            raise ArgumentError(
                f"cond: output tensor {i} differs between the branches: true_fn returned {_describe(a)} and "
                f"false_fn returned {_describe(b)} (the dtype and the number of dims must agree; sizes may "
                f"differ); true_fn returned {_show(tspec, tleaves)}, false_fn returned {_show(fspec, fleaves)}")


# ------------------------------------------------------------------------------------------
# while_loop
# ------------------------------------------------------------------------------------------
def _as_list(out):
    if isinstance(out, list) or (isinstance(out, tuple) and not hasattr(out, "_fields")):
        return list(out)
    return [out]


def check_body_output(loop_vars: list, new: list, what: str = "body") -> None:
    lspec, lleaves = _spec(loop_vars)
    nspec, nleaves = _spec(new)
    if len(new) != len(loop_vars) or not _same_structure(_tensorize(lspec), _tensorize(nspec)):
        raise ArgumentError(
            f"while_loop: {what} must return the loop variables' structure ({len(loop_vars)} values: "
            f"{_show(lspec, lleaves)}), got {_show(nspec, nleaves)}")


def _spec(values):
    leaves: list = []
    return flatten(list(values), leaves), leaves


def _tensorize(spec):
    """Numbers count as tensors when comparing loop structures (a Python int may become one)."""
    if spec[0] == "T":
        return spec
    if spec[0] == "L":
        return ("T",) if isinstance(spec[1], (bool, int, float)) and not isinstance(spec[1], np.ndarray) else spec
    kind, items = spec
    if kind is dict:
        return (kind, tuple((k, _tensorize(v)) for k, v in items))
    return (kind, tuple(_tensorize(v) for v in items))


def _own_copy(values: list) -> list:
    """The loop variables as tensors of the loop's own (autograd-connected copies): an in-place
    op in the body (``i += 1``) changes the loop's tensor, never the caller's -- eagerly as in a
    captured program."""

    leaves: list = []
    spec = flatten(values, leaves)
    return unflatten(spec, [assign(t) for t in leaves])


def eager_while(cond, body, loop_vars: list) -> list:
    values = _own_copy(list(loop_vars))
    while True:
        p = cond(*values)
        if isinstance(p, Tensor):
            p = check_pred(p, "while_loop", "the value cond returns")
        if not p:
            return values
        new = _as_list(body(*values))
        check_body_output(values, new)
        values = new


def _to_tensors(values: list) -> list:
    """Python numbers among the loop variables become tensors (a program carries tensors)."""

    out = []
    for v in values:
        if isinstance(v, bool):
            v = to_tensor(v, dtype="bool")
        elif isinstance(v, int):
            v = to_tensor(v, dtype="int64")
        elif isinstance(v, float):
            v = to_tensor(v, dtype="float32")
        elif isinstance(v, (list, tuple)):
            v = type(v)(_to_tensors(list(v))) if not hasattr(v, "_fields") else type(v)(*_to_tensors(list(v)))
        elif isinstance(v, dict):
            v = dict(zip(v, _to_tensors(list(v.values()))))
        out.append(v)
    return out


def _conform(new: list, like: list) -> list:
    """Body outputs with Python numbers made tensors of the matching loop variable's dtype."""

    out = []
    for n, v in zip(new, like):
        if isinstance(v, Tensor) and isinstance(n, (bool, int, float)):
            n = to_tensor(np.full(v._data.shape, n, dtype=v.dtype.np))
        out.append(n)
    return out


def traced_while(tracer: TracingMode, cond, body, loop_vars: list) -> list:
    loop_vars = _to_tensors(list(loop_vars))
    spec, inits = _spec(loop_vars)
    init_ids = [tracer.value_of(t) for t in inits]
    if not tracer.recording:
        return eager_while(cond, body, loop_vars)
    program = tracer.program
    metas = [program.values[v].meta for v in init_ids]
    metas = [TensorMeta(m.shape, m.dtype) for m in metas]
    for _ in range(_MAX_RETRACES):
        # Placeholders: the loop variables as the blocks see them (fresh tensors, fresh values).
        holders, holder_ids = [], []
        for t, m in zip(inits, metas):
            h = Tensor._wrap(np.array(t._data, copy=True), t._backend, t.stop_gradient, None, 0, None)
            v = program.new_value(m.shape, m.dtype)
            tracer._bind(h, v.id)
            tracer.dynamic.add(v.id)
            holders.append(h)
            holder_ids.append(v.id)
        args = unflatten(spec, holders)
        with _Scope(tracer, shadow=True, own=holders) as cscope:
            p = cond(*args)
            if isinstance(p, Tensor):
                check_pred(p, "while_loop", "the value cond returns")
                p_vid = tracer.value_of(p)
        if not isinstance(p, Tensor) or not tracer.recording:
            # A Python condition (or a graph break): Python's loop, unrolled into the program.
            _drop_holders(tracer, holder_ids, cscope)
            return eager_while(cond, body, loop_vars)
        with _Scope(tracer, shadow=True, own=holders) as bscope:
            new = _as_list(body(*args))
            try:
                check_body_output(list(args), new)
            except ArgumentError as exc:
                raise ArgumentError(f"{exc}{_at()}") from None
            new = _conform(new, list(args))
            nspec, outs = _spec(new)
            out_ids = [tracer.value_of(t) for t in outs] if tracer.recording else []
        if not tracer.recording:
            _drop_holders(tracer, holder_ids, cscope, bscope)
            return eager_while(cond, body, loop_vars)
        grown = []
        for i, (m, t) in enumerate(zip(metas, outs)):
            if t.dtype is not m.dtype or t._data.ndim != len(m.shape):
                _drop_holders(tracer, holder_ids, cscope, bscope)
                raise ArgumentError(
                    f"while_loop: body must keep each loop variable's dtype and number of dims; loop variable {i} "
                    f"is {m!r} but body returns {_describe(t)}{_at()}")
            grown.append(TensorMeta(tuple(d if d == s else None for d, s in zip(m.shape, t._data.shape)), m.dtype))
        if grown == metas:
            break
        _drop_holders(tracer, holder_ids, cscope, bscope)
        metas = grown  # a dim changes across iterations: trace again with it dynamic
    operands: list[int] = []
    for scope, outputs in ((cscope, [p_vid]), (bscope, out_ids)):
        operands += [v for v in _free_values(scope, outputs, holder_ids) if v not in operands]
    cond_block = _block(cscope, holder_ids, operands, [p_vid])
    body_block = _block(bscope, holder_ids, operands, out_ids)
    _drop_holders(tracer, holder_ids, cscope, bscope)
    # The real result: the loop once more, recorded into a list that is dropped.
    with _Scope(tracer, shadow=False) as real:
        final = eager_while(cond, body, loop_vars)
    _drop(tracer, real)
    if not tracer.recording:
        return final
    fspec, leaves = _spec(final)
    if len(leaves) != len(metas) or any(t.dtype is not m.dtype or t._data.ndim != len(m.shape)
                                        for t, m in zip(leaves, metas)):
        tracer.break_graph("a while_loop returned something else when run again (Python state that changes "
                           "between calls?); the program cannot hold it")
        return final
    out_vids, bound = _bind_outputs(tracer, leaves, metas, real.values_made())
    program.add_node("while", [*init_ids, *operands], out_vids,
                     {"cond_block": cond_block, "body_block": body_block, "num_loop_vars": len(init_ids)},
                     no_grad=_no_grad(tracer))
    return unflatten(fspec, bound)


def _drop_holders(tracer: TracingMode, holder_ids: list[int], *scopes: _Scope) -> None:
    for vid in holder_ids:
        tracer.hidden.add(vid)
        tracer.program.values.pop(vid, None)
    _drop(tracer, *scopes)
