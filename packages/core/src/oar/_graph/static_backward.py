"""Deriving the backward of a captured forward ``Program`` into the same Program.

``append_backward(program, feeds)`` walks the forward nodes in reverse and runs each op's
gradient rule -- written with oar ops -- under a ``TracingMode`` whose table already maps the
forward values to real tensors. The ops a rule calls are therefore recorded as nodes of the
program (the *backward section*, after the forward nodes), reading the forward values they need
by their ids. Contributions to one value's gradient are summed with ``add`` nodes, as eager
autograd sums them. The gradient flowing into each differentiable output of the forward is a
program input named ``<output>@GRAD``; the gradients of the parameters and inputs that need one
are the program's marked outputs.

Which values need a gradient follows eager exactly: an op node records a gradient when it did
not run under ``no_grad``, its op has a gradient rule, and one of its inputs needs a gradient;
then its floating outputs need one. Feeds and parameters need one when ``stop_gradient`` is
False in the call being derived for.

The rules run on the real forward values of the ``feeds`` given (the forward is evaluated once
for that, without side effects: the random generator is put back, no state is written). A rule
that reads a traced value into Python would bake one answer in: that is a graph break and the
program is not derivable. A rule may bake a *size* in (``mean``'s gradient divides by the
element count): ``derive_backward`` derives a second time at another size of the dynamic dims
and keeps one program for every size only when the two are the same.

A ``cond`` node's backward is a ``cond`` on the same predicate whose two blocks are the derived
backwards of the two branches (``_cond_backward``): each takes the operands, the output
gradients and their has-gradient flags, *recomputes* its branch's forward from the operands
(the forward cond saves nothing extra) and runs the branch's rules; it returns a gradient and a
flag per operand that needs one. The flags carry eager's convention that a parameter the taken
branch never reads gets no gradient at all (``.grad`` None, skipped by optimizers), not zeros:
they become the program output ``"has_grad"`` and the training node hands None where one is
false. Nested conds derive the same way.

A ``while`` node's backward (``_while_backward``) needs every iteration's values: the forward
node is switched to ``history=True`` (it also returns its iteration count and each loop
variable at the start of every iteration, stacked), and the backward is a ``while`` that runs
the body's derived backward from the last iteration down, carrying the loop variables'
gradients and summing the captured values' (parameters') gradients, with flags as for cond.

Programs the rules cannot express -- a block that draws random numbers (recomputing it would
draw others), a loop variable that changes shape across iterations (its iterations cannot be
stacked), an input written in place -- raise ``NotDerivable``; ``to_static`` then trains by
replaying the forward through eager autograd (``Executor.replay``).

Example::

    >>> import oar
    >>> from oar._graph.static_backward import append_backward
    >>> f = oar.jit.to_static(lambda x: (oar.exp(x) * x).sum())
    >>> x = oar.ones([3])
    >>> _ = f(x)
    >>> x.stop_gradient = False
    >>> train = append_backward(f.concrete_program, [x])
    >>> [n.op for n in train.backward_nodes]  # d(sum)/d(.) is broadcast; x is used twice: one add
    ['broadcast_to', 'multiply', 'multiply', 'multiply', 'add']
    >>> train.grads == [(("feed", 0), train.program.outputs["grads"]["x@GRAD"].id)]
    True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from oar._engine import dtypes
from oar._engine.autograd import _set_grad_enabled
from oar._engine.dispatch import dispatch, eager_mode
from oar._engine.op import TensorMeta
from oar._engine.registries import BACKENDS, OPS
from oar._engine.tensor import Tensor
from oar._graph.program import Program, ValueRef, attr_key, iter_refs, program_signature
from oar._graph.tracing import TracingMode
from oar._ops.creation import zeros_like
from oar._ops.elementwise import logical_or
from oar._ops.indexing import index_select
from oar._ops.random import get_rng_state, set_rng_state
from oar._ops.shape import reshape, squeeze
from oar.errors import GradientError, OarError, ShapeError

# Ops that hold sub-programs (control flow): their gradient is not one rule over tensors.
CONTROL_FLOW_OPS = frozenset({"cond", "while", "while_loop", "conditional_block", "select_input"})


class NotDerivable(OarError, ValueError):
    """The backward of this program cannot be derived from its ops' gradient rules."""


class RuleContext:
    """The ``ctx`` a gradient rule receives while its backward is derived: the forward values of
    one node as tensors (bound to program values by the tracer), like an autograd ``Node``."""

    __slots__ = ("op", "attrs", "_inputs", "_outputs", "needs_input_grad", "backend")

    def __init__(self, op, attrs, inputs, outputs, needs_input_grad, backend):
        self.op = op
        self.attrs = attrs
        self._inputs = inputs
        self._outputs = outputs
        self.needs_input_grad = needs_input_grad
        self.backend = backend

    @property
    def inputs(self) -> tuple:
        return self._inputs

    def input(self, i: int):
        return self._inputs[i]

    @property
    def outputs(self) -> tuple:
        return self._outputs

    def output(self, i: int):
        return self._outputs[i]

    @property
    def out(self):
        return self._outputs[0]

    @property
    def in_shapes(self) -> tuple:
        return tuple(tuple(t._data.shape) for t in self._inputs)


class BackwardProgram:
    """A forward program followed by its derived backward section, as one ``Program``.

    - ``program``: the forward nodes, then the backward nodes (``program.meta["backward_start"]``
      is the index of the first); its feeds are the forward's, then one ``@GRAD`` feed per
      differentiable output; its outputs are ``{"outputs": <the forward's>, "grads": {...}}``.
    - ``forward_count``: how many nodes the forward section has.
    - ``grad_feeds``: ``[(output value id, its @GRAD feed id), ...]``.
    - ``grads``: ``[(("param", name) | ("feed", index), gradient value id), ...]``: the gradients
      the backward produces (a parameter or input that gets none is not listed).
    - ``flags``: ``[(key, bool value id), ...]`` for the gradients that exist only on some runs
      (they flow out of one branch of a ``cond``): where the flag is false the gradient is None,
      as in eager (program output ``"has_grad"``).
    """

    def __init__(self, program: Program, forward_count: int, grad_feeds: list, grads: list, flags=()):
        self.program = program
        self.forward_count = forward_count
        self.grad_feeds = grad_feeds
        self.grads = grads
        self.flags = list(flags)

    @property
    def forward_nodes(self) -> list:
        return self.program.nodes[:self.forward_count]

    @property
    def backward_nodes(self) -> list:
        return self.program.nodes[self.forward_count:]

    def __str__(self) -> str:
        return str(self.program)

    __repr__ = __str__


def check_derivable(program: Program) -> None:
    """Raise ``NotDerivable`` when some part of ``program`` has no gradient rule over tensors."""
    for kind, _, _ in program.updates:
        if kind == "feed":
            raise NotDerivable("the program writes one of its inputs in place")
    _check_nodes(program, "")


def _check_nodes(program: Program, where: str) -> None:
    for i, node in enumerate(program.nodes):
        at = f"{where}node #{i} {node.op!r}"
        if node.op in ("cond", "while"):
            names = ("true_block", "false_block") if node.op == "cond" else ("cond_block", "body_block")
            for name in names:
                block = node.attrs[name]
                if any(n.op not in CONTROL_FLOW_OPS and n.op in OPS._entries and "random" in OPS.get(n.op).traits
                       for n in block.nodes):
                    # The backward recomputes the block: it would draw other numbers than the forward.
                    raise NotDerivable(f"{at}: its {name} draws random numbers")
                _check_nodes(block, f"{at} {name}: ")
            if node.op == "while":
                body = node.attrs["body_block"]
                for k in range(node.attrs["num_loop_vars"]):
                    outer, inner = program.values[node.inputs[k]].shape, body.values[body.feeds[k]].shape
                    if any(a is not None and b is None for a, b in zip(outer, inner)):
                        # Its iterations cannot be stacked for the backward to read them.
                        raise NotDerivable(f"{at}: loop variable {k} changes shape across iterations")
            continue
        if node.op in CONTROL_FLOW_OPS or any(isinstance(a, Program) for a in node.attrs.values()):
            raise NotDerivable(f"{at} holds sub-programs the backward cannot be derived for")
        if node.op not in OPS._entries:
            raise NotDerivable(f"{where}node #{i}: op {node.op!r} is not registered")


def _rng():
    return get_rng_state()


def _set_rng(state) -> None:
    if state is not None:
        set_rng_state(state)


def _is_float(dtype) -> bool:
    return dtype.np.kind in "fcV"  # V: ml_dtypes' bfloat16


def evaluate_forward(program: Program, feeds: Sequence) -> dict[int, Tensor]:
    """Every forward value of ``program`` on ``feeds``, as tensors without autograd; no state is
    written and the random generator is left as it was."""
    eager = eager_mode()
    env: dict[int, Tensor] = {}
    for vid, t in zip(program.feeds, feeds):
        env[vid] = Tensor._wrap(t._data, t._backend, True, None, 0, None)
    for name, vid in program.params.items():
        t = program.param_tensors[name]
        env[vid] = Tensor._wrap(t._data, t._backend, True, None, 0, None)
    backend = feeds[0]._backend if feeds else program.meta.get("device", "cpu")
    for name, vid in program.constants.items():
        env[vid] = Tensor._wrap(program.constant_data[name], "cpu", True, None, 0, None)._to_backend(backend)
    rng = _rng()
    previous = _set_grad_enabled(False)
    try:
        for node in program.nodes:
            result = eager.apply(OPS.get(node.op), tuple(env[v] for v in node.inputs), dict(node.attrs))
            for vid, r in zip(node.outputs, result if type(result) is tuple else (result,)):
                env[vid] = r
    finally:
        _set_grad_enabled(previous)
        _set_rng(rng)
    return env


def values_needing_grad(program: Program, feeds_need: Sequence[bool], params_need: dict[str, bool]) -> set[int]:
    """The value ids that need a gradient, by eager's rule (see the module docstring)."""
    need = {vid for vid, n in zip(program.feeds, feeds_need) if n}
    need.update(vid for name, vid in program.params.items() if params_need.get(name))
    for node in program.nodes:
        if node.no_grad or OPS.get(node.op).grad is None or not any(v in need for v in node.inputs):
            continue
        need.update(v for v in node.outputs if _is_float(program.values[v].dtype))
    return need


def append_backward(program: Program, feeds: Sequence[Tensor]) -> BackwardProgram:
    """The forward ``program`` with its backward section appended (a new Program; ``program`` is
    not changed), for the feeds and parameters whose ``stop_gradient`` is False.

    ``feeds`` are tensors in the program's feed order: the gradient rules run on their forward
    values. Raises ``NotDerivable`` when a node has no gradient rule over tensors, or a rule reads
    a traced value into Python.
    """
    check_derivable(program)
    if len(feeds) != len(program.feeds):
        raise ValueError(f"append_backward: {len(feeds)} feeds for a program of {len(program.feeds)}")
    env = evaluate_forward(program, feeds)
    need = values_needing_grad(program, [not t.stop_gradient for t in feeds],
                               {name: not t.stop_gradient for name, t in program.param_tensors.items()})
    # The forward values are leaves that need a gradient where eager's would: a rule that
    # differentiates a re-run of unfused ops with autograd (the fused ops' rules) sees the same.
    for vid in need:
        env[vid].stop_gradient = False
    train = program.clone()
    forward_count = len(train.nodes)
    backend = feeds[0]._backend if feeds else program.meta.get("device", "cpu")
    tracer = _backward_tracer(train, env)

    # One @GRAD feed per distinct computed output that needs a gradient. An output that is a feed
    # or a parameter itself is the caller's own tensor: its gradient does not pass through here.
    produced = {v for node in program.nodes for v in node.outputs}
    grads = _Grads()
    grad_feeds = []
    for ref in iter_refs(program.outputs):
        vid = ref.id
        if vid in grads.value or vid not in need or vid not in produced:
            continue
        value = train.values[vid]
        feed = train.add_feed(value.shape, value.dtype, f"{value.name or vid}@GRAD")
        g = _array_tensor(np.ones(env[vid]._data.shape, env[vid]._data.dtype), backend)
        tracer._bind(g, feed.id)
        tracer.dynamic.add(feed.id)
        grads.add(vid, g)
        grad_feeds.append((vid, feed.id))

    previous = _set_grad_enabled(False)
    try:
        with tracer:
            _sweep(program, env, need, grads, tracer, backend)
            # The marked outputs: read the gradients' values while the tracer is still active.
            keys = [(("feed", i), vid) for i, vid in enumerate(program.feeds)]
            keys += [(("param", name), vid) for name, vid in program.params.items()]
            targets, flags = [], []
            for key, vid in keys:
                if vid in need and vid in grads.value:
                    targets.append((key, tracer.value_of(grads.value[vid])))
                    if vid in grads.flag:
                        flags.append((key, tracer.value_of(grads.flag[vid])))
    finally:
        _set_grad_enabled(previous)
    if tracer.broken is not None:
        raise NotDerivable(f"a gradient rule cannot be captured: {tracer.broken.reason}")

    def label(key) -> str:
        kind, target = key
        return f"{target}@GRAD" if kind == "param" else f"{train.values[program.feeds[target]].name}@GRAD"

    train.outputs = {"outputs": program.outputs, "grads": {label(k): ValueRef(v) for k, v in targets}}
    if flags:
        train.outputs["has_grad"] = {label(k): ValueRef(v) for k, v in flags}
    train.meta["backward_start"] = forward_count
    train.prune()
    train.validate()
    return BackwardProgram(train, forward_count, grad_feeds, targets, flags)


def _array_tensor(array, backend: str) -> Tensor:
    return Tensor._wrap(array, "cpu", True, None, 0, None)._to_backend(backend)


def _backward_tracer(program: Program, env: dict[int, Tensor]):
    """A tracer recording into ``program`` whose table maps its forward values to ``env``."""
    tracer = TracingMode(program)
    tracer.grad_at_entry = False  # backward nodes are not "no_grad" nodes of the user's function
    for vid, t in env.items():
        tracer._bind(t, vid)
        tracer.dynamic.add(vid)
    return tracer


class _Grads:
    """The gradients summed so far, by value id.

    A gradient that flows out of one branch of a ``cond`` only exists on the runs that take that
    branch: eager autograd then leaves ``.grad`` None (an optimizer skips the parameter), which a
    zero gradient would not match (Adam still moves it). Such a gradient has a ``flag``: a bool
    tensor of the program, true on the runs where eager would have produced it. No flag: it
    exists on every run.
    """

    __slots__ = ("value", "flag")

    def __init__(self):
        self.value: dict[int, Tensor] = {}
        self.flag: dict[int, Tensor] = {}

    def add(self, vid: int, g: Tensor, flag: Tensor | None = None) -> None:
        if vid not in self.value:
            self.value[vid] = g
            if flag is not None:
                self.flag[vid] = flag
            return
        self.value[vid] = self.value[vid] + g
        old = self.flag.get(vid)
        if old is flag:
            return
        if old is None or flag is None:
            self.flag.pop(vid, None)
        else:
            self.flag[vid] = logical_or(old, flag)

    def presence(self, vids) -> Tensor | None:
        """The flag of a gradient computed from the gradients of ``vids`` (those that exist)."""
        flags = []
        for v in vids:
            if v in self.value:
                f = self.flag.get(v)
                if f is None:
                    return None
                flags.append(f)
        out = flags[0]
        for f in flags[1:]:
            out = logical_or(out, f)
        return out


def _sweep(program: Program, env: dict, need: set, grads: _Grads, tracer, backend: str) -> None:
    """Run the gradient rules of ``program``'s nodes in reverse under ``tracer`` (active), summing
    into ``grads``."""
    for index in range(len(program.nodes) - 1, -1, -1):
        node = program.nodes[index]
        out_grads = [grads.value.get(v) for v in node.outputs]
        if all(g is None for g in out_grads) or node.no_grad:
            continue
        op = OPS.get(node.op)
        needs = tuple(v in need for v in node.inputs)
        if op.grad is None or not any(needs):
            continue
        if node.op in ("cond", "while"):
            if node.op == "cond":
                _cond_backward(node, env, need, grads, tracer, backend)
            else:
                _while_backward(node, index, env, need, grads, tracer, backend)
            if tracer.broken is not None:
                break
            continue
        flag = grads.presence(node.outputs)
        outputs = tuple(env[v] for v in node.outputs)
        if any(g is None for g in out_grads) and getattr(op, "materialize_grads", True):
            # Zeros for the outputs that got no gradient, as eager autograd materializes them.
            out_grads = [g if g is not None else zeros_like(o) for g, o in zip(out_grads, outputs)]
        ctx = RuleContext(op, node.attrs, tuple(env[v] for v in node.inputs), outputs, needs, backend)
        in_grads = op.grad(ctx, *out_grads)
        if not isinstance(in_grads, (tuple, list)):
            in_grads = (in_grads,)
        if len(in_grads) != len(node.inputs):
            raise GradientError(f"the gradient rule of op {node.op!r} returned {len(in_grads)} gradients "
                                f"for {len(node.inputs)} inputs")
        for i, (vid, g, needed) in enumerate(zip(node.inputs, in_grads, needs)):
            if g is None or not needed or i in op.nondiff_inputs:  # indices and masks get none
                continue
            if not isinstance(g, Tensor):
                raise GradientError(f"the gradient rule of op {node.op!r} returned a {type(g).__name__}, "
                                    f"expected an oar Tensor")
            grads.add(vid, g, flag)
        if tracer.broken is not None:
            break


def _cond_backward(node, env: dict, need: set, grads: _Grads, tracer, backend: str) -> None:
    """Emit the backward of a ``cond`` node: a ``cond`` on the same predicate whose blocks are the
    derived backwards of the two branches.

    Each backward block takes (the operands, one gradient per output, one has-gradient flag per
    output) and returns (a gradient per operand that needs one, then a flag per such operand). It
    recomputes its branch's forward from the operands (nothing of the branch is saved by the
    forward cond), then runs the branch's gradient rules. An operand the branch does not reach
    gets zeros with a false flag.
    """
    pred_vid, *operand_vids = node.inputs
    wanted = [i for i, v in enumerate(operand_vids) if v in need]
    operands = [env[v] for v in operand_vids]
    out_grads, out_flags = _output_grads(node.outputs, env, grads, backend)
    # The branches are derived by tracers of their own: this one steps off the mode stack meanwhile.
    tracer.__exit__(None, None, None)
    try:
        blocks = {name: _branch_backward(node.attrs[name], operands, [v in need for v in operand_vids],
                                         out_grads, out_flags, wanted, f"cond's {name}", backend)
                  for name in ("true_block", "false_block")}
    finally:
        tracer.__enter__()
    results = dispatch(OPS.get("cond"), (env[pred_vid], *operands, *out_grads, *out_flags), blocks)
    results = results if isinstance(results, tuple) else (results,)
    for j, i in enumerate(wanted):
        grads.add(operand_vids[i], results[j], results[len(wanted) + j])


def _branch_backward(block: Program, operands: list, operand_need: list, out_grads: list, out_flags: list,
                     wanted: list, where: str, backend: str) -> Program:
    """The backward block of one branch of a ``cond`` (see ``_cond_backward``)."""
    # The branch not taken may, on these operands, divide by zero: its values only serve the rules
    # (for shapes and dtypes), never the gradients of this run.
    with np.errstate(all="ignore"):
        return _branch_backward_of(block, operands, operand_need, out_grads, out_flags, wanted, where, backend)


def _branch_backward_of(block, operands, operand_need, out_grads, out_flags, wanted, where, backend) -> Program:
    env = evaluate_forward(block, operands)
    need = values_needing_grad(block, operand_need, {})
    for vid in need:
        env[vid].stop_gradient = False
    bwd = block.clone()
    tracer = _backward_tracer(bwd, env)
    grads = _Grads()
    feeds = []
    for i, (ref, g) in enumerate(zip(block.outputs, out_grads)):
        value = block.values[ref.id]
        feed = bwd.add_feed(value.shape, value.dtype, f"out{i}@GRAD")
        feeds.append((ref.id, feed.id, _array_tensor(np.ones(env[ref.id]._data.shape, g._data.dtype), backend)))
    for i, (ref, f) in enumerate(zip(block.outputs, out_flags)):
        feed = bwd.add_feed((), f.dtype, f"out{i}@HAS_GRAD")
        feeds.append((ref.id, feed.id, _array_tensor(np.array(True), backend)))
    for _, fid, t in feeds:
        tracer._bind(t, fid)
        tracer.dynamic.add(fid)
    n = len(block.outputs)
    for (vid, _, g), (_, _, flag) in zip(feeds[:n], feeds[n:]):
        if vid in need:  # an output that is an operand itself passes its gradient straight through
            grads.add(vid, g, flag)
    with tracer:
        _sweep(block, env, need, grads, tracer, backend)
        outs, flags = [], []
        for i in wanted:
            vid = block.feeds[i]
            if vid in grads.value:
                g, flag = grads.value[vid], grads.flag.get(vid)
                flag = flag if flag is not None else _array_tensor(np.array(True), backend)
            else:
                g, flag = zeros_like(env[vid]), _array_tensor(np.array(False), backend)
            outs.append(tracer.value_of(g))
            flags.append(tracer.value_of(flag))
    if tracer.broken is not None:
        raise NotDerivable(f"in {where}: a gradient rule cannot be captured: {tracer.broken.reason}")
    bwd.outputs = [ValueRef(v) for v in outs + flags]
    _drop_unread(bwd)
    bwd.validate()
    return bwd


def _fresh(t: Tensor) -> Tensor:
    """A tensor object of its own over ``t``'s buffer (a tracer binds tensors by identity)."""
    return Tensor._wrap(t._data, t._backend, True, None, 0, None)


def _trace_block(feeds: list, build, where: str) -> Program:
    """A closed block traced from ``build()`` (which returns its output tensors) with ``feeds``:
    ``[(tensor, meta, name), ...]``."""
    block = Program()
    tracer = TracingMode(block)
    tracer.grad_at_entry = False
    tensors = []
    for t, meta, name in feeds:
        t = _fresh(t)
        v = block.add_feed(meta.shape, meta.dtype, name)
        tracer._bind(t, v.id)
        tracer.dynamic.add(v.id)
        tensors.append(t)
    with tracer:
        outs = build(*tensors)
        ids = [tracer.value_of(t) for t in outs]
    if tracer.broken is not None:
        raise NotDerivable(f"in {where}: a gradient rule cannot be captured: {tracer.broken.reason}")
    block.outputs = [ValueRef(v) for v in ids]
    _drop_unread(block)
    block.validate()
    return block


def _drop_unread(block: Program) -> None:
    """Drop the nodes of a derived block whose values no output needs (the recomputed forward
    nodes no rule reads), then the values and constants left unused. A derived block draws no
    random numbers (``check_derivable``), so every node is free of effects."""
    used = {r.id for r in block.outputs}
    kept = []
    for node in reversed(block.nodes):
        if any(v in used for v in node.outputs):
            kept.append(node)
            used.update(node.inputs)
    block.nodes = kept[::-1]
    block.prune()


def _inline(block: Program, tensors: list) -> list:
    """Dispatch ``block``'s nodes on ``tensors`` through the active mode (a tracer records them;
    control-flow nodes stay nodes); its outputs."""
    env = dict(zip(block.feeds, tensors))
    for name, vid in block.constants.items():
        env[vid] = _array_tensor(block.constant_data[name], tensors[0]._backend)
    for node in block.nodes:
        result = dispatch(OPS.get(node.op), tuple(env[v] for v in node.inputs), dict(node.attrs))
        env.update(zip(node.outputs, result if type(result) is tuple else (result,)))
    return [env[r.id] for r in block.outputs]


def _while_backward(node, index: int, env: dict, need: set, grads: _Grads, tracer, backend: str) -> None:
    """Emit the backward of a ``while`` node.

    The forward node is switched to ``history=True``: it also returns its iteration count ``k``
    and every loop variable at the start of each iteration, stacked along a new first dim. The
    backward is a ``while`` that counts ``j`` from ``k - 1`` down to 0, reads iteration ``j``'s
    loop variables from the stacks and runs the body's derived backward (which recomputes that
    one iteration's forward): the loop variables' gradients are carried from iteration to
    iteration, the captured values' (parameters') gradients are summed over the iterations. Each
    gradient carries its has-gradient flag as in ``_cond_backward`` (a parameter the loop never
    reaches -- zero iterations -- gets None, as in eager).
    """
    n = node.attrs["num_loop_vars"]
    body = node.attrs["body_block"]
    loop_in, captured_in = node.inputs[:n], node.inputs[n:]
    # A loop variable needs a gradient when its initial value does, or the body makes it depend
    # on one that does (iterated to a fixed point).
    lv_need = [v in need for v in loop_in]
    cap_need = [v in need for v in captured_in]
    while True:
        inner = values_needing_grad(body, lv_need + cap_need, {})
        grown = [a or body.outputs[i].id in inner for i, a in enumerate(lv_need)]
        if grown == lv_need:
            break
        lv_need = grown
    wanted = [i for i, a in enumerate(lv_need + cap_need) if a]
    wanted_cap = [i - n for i in wanted if i >= n]

    # 1. The forward node records its iterations.
    forward = tracer.program.nodes[index]
    metas = OPS.get("while").meta(*[tracer.program.values[v].meta for v in node.inputs],
                                  **{**node.attrs, "history": True})[n:]
    history_ids = [tracer.program.new_value(m.shape, m.dtype).id for m in metas]
    forward.attrs = {**forward.attrs, "history": True}
    forward.outputs = list(forward.outputs) + history_ids
    eager = eager_mode()
    try:
        recorded = eager.apply(OPS.get("while"), tuple(env[v] for v in node.inputs), {**node.attrs, "history": True})
    except ShapeError as exc:  # a loop variable whose dynamic dim changes across iterations
        raise NotDerivable(str(exc)) from exc
    for vid, t in zip(history_ids, recorded[n:]):
        env[vid] = t
        tracer._bind(t, vid)
        tracer.dynamic.add(vid)
    count, stacks = recorded[n], list(recorded[n + 1:])

    # 2. The body's backward, as a block (derived on the initial values: the rules need shapes).
    out_grads, out_flags = _output_grads(node.outputs[:n], env, grads, backend)
    loop_init = [env[v] for v in loop_in]
    captured = [env[v] for v in captured_in]
    tracer.__exit__(None, None, None)  # the blocks are traced by tracers of their own
    try:
        with np.errstate(all="ignore"):
            body_bwd = _branch_backward_of(body, loop_init + captured, lv_need + cap_need, out_grads, out_flags,
                                           wanted, "while's body_block", backend)
        values = tracer.program.values
        false = _array_tensor(np.array(False), backend)
        j_meta = values[history_ids[0]].meta
        feeds = [(_array_tensor(np.array(0, np.int64), backend), j_meta, "j")]
        feeds += [(g, values[v].meta, f"out{i}@GRAD") for i, (g, v) in enumerate(zip(out_grads, node.outputs))]
        feeds += [(f, _bool_meta(), f"out{i}@HAS_GRAD") for i, f in enumerate(out_flags)]
        feeds += [(zeros_like(captured[c]), values[captured_in[c]].meta, f"in{c}@GRAD") for c in wanted_cap]
        feeds += [(false, _bool_meta(), f"in{c}@HAS_GRAD") for c in wanted_cap]
        # Tracing reads iteration 0 of a one-row history (the real one may have none).
        feeds += [(_first_row(t), values[v].meta, f"history{i}") for i, (t, v) in
                  enumerate(zip(loop_init, history_ids[1:]))]
        feeds += [(t, values[v].meta, f"captured{i}") for i, (t, v) in enumerate(zip(captured, captured_in))]
        w = len(wanted_cap)

        def split(xs):
            j, xs = xs[0], list(xs[1:])
            g, f, xs = xs[:n], xs[n:2 * n], xs[2 * n:]
            acc, facc, xs = xs[:w], xs[w:2 * w], xs[2 * w:]
            return j, g, f, acc, facc, xs[:n], xs[n:]

        def cond_fn(*xs):
            return [xs[0] >= 0]

        def body_fn(*xs):
            j, g, f, acc, facc, hist, caps = split(xs)
            at = reshape(j, [1])
            now = [squeeze(index_select(h, at, 0), [0]) for h in hist]
            outs = _inline(body_bwd, now + caps + g + f)
            got, got_flags = outs[:len(wanted)], outs[len(wanted):]
            g, f, acc, facc = list(g), list(f), list(acc), list(facc)
            for k, i in enumerate(wanted):
                if i < n:
                    g[i], f[i] = got[k], got_flags[k]
                else:
                    c = wanted_cap.index(i - n)
                    acc[c], facc[c] = acc[c] + got[k], logical_or(facc[c], got_flags[k])
            return [j - 1, *g, *f, *acc, *facc]

        cond_block = _trace_block(feeds, cond_fn, "while's backward")
        body_block = _trace_block(feeds, body_fn, "while's backward")
    finally:
        tracer.__enter__()

    # 3. The backward loop, from the last iteration down.
    start = count - 1
    init = [start, *out_grads, *out_flags]
    init += [zeros_like(captured[c]) for c in wanted_cap] + [_array_tensor(np.array(False), backend) for _ in wanted_cap]
    num = len(init)
    results = dispatch(OPS.get("while"), (*init, *stacks, *captured),
                       {"cond_block": cond_block, "body_block": body_block, "num_loop_vars": num})
    g, f = results[1:1 + n], results[1 + n:1 + 2 * n]
    acc, facc = results[1 + 2 * n:1 + 2 * n + w], results[1 + 2 * n + w:]
    for i in wanted:
        if i < n:
            grads.add(loop_in[i], g[i], f[i])
    for c, (a, fa) in zip(wanted_cap, zip(acc, facc)):
        grads.add(captured_in[c], a, fa)


def _bool_meta():
    return TensorMeta((), dtypes.bool_)


def _first_row(t: Tensor) -> Tensor:
    a = np.asarray(BACKENDS.get(t._backend).to_numpy(t._data))
    return _array_tensor(a[None].copy(), t._backend)


def _output_grads(outputs, env: dict, grads: _Grads, backend: str):
    """The gradients of a control-flow node's outputs, zeros where none flows, with their flags."""
    out_grads, out_flags = [], []
    for v in outputs:
        g = grads.value.get(v)
        if g is None:  # materialized, as eager does, but flagged absent
            out_grads.append(zeros_like(env[v]))
            out_flags.append(_array_tensor(np.array(False), backend))
        else:
            flag = grads.flag.get(v)
            out_grads.append(g)
            out_flags.append(flag if flag is not None else _array_tensor(np.array(True), backend))
    return out_grads, out_flags


def generalize_sizes(a: BackwardProgram, b: BackwardProgram) -> bool:
    """Make ``a`` (derived at one size of the dynamic dims) hold for every size, given ``b`` derived
    at another size; True when it does (``a`` is then changed in place).

    Gradient rules restore saved shapes (``flatten``'s gradient reshapes to ``[N, 16, 5, 5]``):
    where the two programs differ only in one entry of a ``reshape`` target, that entry -- the
    size that follows the dynamic dim -- becomes -1, inferred at run time. Any other difference (a
    size baked into a constant, as ``mean``'s ``1/N``) leaves ``a`` for its size only.
    """
    pa, pb = a.program, b.program
    if len(pa.nodes) != len(pb.nodes):
        return False
    patches = []
    for na, nb in zip(pa.nodes, pb.nodes):
        if na.op != nb.op:
            return False
        if attr_key(na.attrs) == attr_key(nb.attrs):
            continue
        if na.op != "reshape" or set(na.attrs) != {"shape"} or set(nb.attrs) != {"shape"}:
            return False
        sa, sb = list(na.attrs["shape"]), list(nb.attrs["shape"])
        differ = [i for i, (x, y) in enumerate(zip(sa, sb)) if x != y]
        if len(sa) != len(sb) or len(differ) != 1 or -1 in sa or -1 in sb:
            return False
        patches.append((na, nb, differ[0]))
    if not patches:
        return True
    before = [(na.attrs, nb.attrs) for na, nb, _ in patches]
    for na, nb, i in patches:
        for node in (na, nb):
            shape = list(node.attrs["shape"])
            shape[i] = -1
            node.attrs = {"shape": shape}
    if program_signature(pa) != program_signature(pb):
        for (na, nb, _), (attrs_a, attrs_b) in zip(patches, before):
            na.attrs, nb.attrs = attrs_a, attrs_b
        return False
    for na, _, i in patches:
        value = pa.values[na.outputs[0]]
        value.shape = tuple(None if k == i else d for k, d in enumerate(value.shape))
    return True


__all__ = ["append_backward", "generalize_sizes", "BackwardProgram", "NotDerivable", "RuleContext", "check_derivable"]
