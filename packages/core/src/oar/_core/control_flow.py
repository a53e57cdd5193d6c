"""``oar.static.nn.cond`` and ``while_loop``: eager semantics, and tracing into control-flow nodes.

Eagerly (no to_static capture active) ``cond`` evaluates the predicate and calls one branch, and
``while_loop`` is a Python loop: autograd records the ops that ran.

While ``to_static`` traces (a recording ``TracingMode`` is on the mode stack), each branch, and the
loop's ``cond`` and ``body``, is traced into a *block*: a closed sub-``Program`` whose feeds are the
values it reads from outside (the loop variables first, for a loop), held in the attributes of one
``cond`` / ``while`` node (see ``oar._ops.control_flow``). Tracing runs on real tensors, so:

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

from oar._core import dispatch as _dispatch
from oar._core.op import TensorMeta
from oar._core.program import OpNode, Program, ValueRef
from oar._core.tensor import Tensor
from oar._core.tracing import TracingMode
from oar.errors import ArgumentError, DTypeError, ShapeError

_MAX_RETRACES = 4  # a loop var whose shape changes is traced again with that dim dynamic


def active_tracer() -> TracingMode | None:
    """The to_static tracer that records now, if any."""
    for mode in reversed(_dispatch._mode_stack):
        if isinstance(mode, TracingMode):
            return mode if mode.recording else None
    return None


def _numpy(t: Tensor) -> np.ndarray:
    return np.asarray(_dispatch.BACKENDS.get(t._backend).to_numpy(t._data))


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
            from oar._ops.random import get_rng_state

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
            from oar._ops.random import set_rng_state

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
                                  node.no_grad))
    block.outputs = [ValueRef(mapping.get(v, v)) for v in outputs]
    block._next_id = max(block.values, default=-1) + 1
    return block


def _bind_outputs(tracer: TracingMode, tensors: list, metas: list[TensorMeta], made: range) -> tuple[list, list]:
    """New values for a control-flow node's outputs, bound to the real result tensors (a tensor
    from outside the node, or one given twice, is copied first: it must not be rebound)."""
    from oar._ops.assign import assign

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
    return tracer.grad_at_entry and not _dispatch.grad_enabled


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
    from oar._ops.control_flow import merge_metas

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
    from oar._core.tracing import user_location

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
    from oar._ops.assign import assign

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
    from oar._core.tensor import to_tensor

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
    from oar._core.tensor import to_tensor

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
