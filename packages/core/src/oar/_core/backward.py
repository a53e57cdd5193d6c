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

Programs the rules cannot express -- control-flow ops with sub-blocks, an input written in
place -- raise ``NotDerivable``; ``to_static`` then trains by replaying the forward through
eager autograd (``Executor.replay``).

Example::

    >>> import oar
    >>> from oar._core.backward import append_backward
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

from oar._core import dispatch as _dispatch
from oar._core.program import Program, ValueRef, iter_refs
from oar._core.tensor import Tensor
from oar.errors import GradientError, OarError

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
    """

    def __init__(self, program: Program, forward_count: int, grad_feeds: list, grads: list):
        self.program = program
        self.forward_count = forward_count
        self.grad_feeds = grad_feeds
        self.grads = grads

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
    from oar._core.dispatch import OPS

    for kind, _, _ in program.updates:
        if kind == "feed":
            raise NotDerivable("the program writes one of its inputs in place")
    for i, node in enumerate(program.nodes):
        # Their rules run sub-programs and choose a branch from a value: not one rule over tensors.
        if node.op in CONTROL_FLOW_OPS or any(isinstance(a, Program) for a in node.attrs.values()):
            raise NotDerivable(f"node #{i} {node.op!r} is control flow (it holds sub-programs)")
        if node.op not in OPS._entries:
            raise NotDerivable(f"node #{i}: op {node.op!r} is not registered")


def _rng():
    import sys

    if "oar._ops.random" not in sys.modules:
        return None
    from oar._ops.random import get_rng_state

    return get_rng_state()


def _set_rng(state) -> None:
    if state is not None:
        from oar._ops.random import set_rng_state

        set_rng_state(state)


def _is_float(dtype) -> bool:
    return dtype.np.kind in "fc"


def evaluate_forward(program: Program, feeds: Sequence) -> dict[int, Tensor]:
    """Every forward value of ``program`` on ``feeds``, as tensors without autograd; no state is
    written and the random generator is left as it was."""
    from oar._core.autograd import _set_grad_enabled
    from oar._core.dispatch import OPS

    eager = _dispatch._mode_stack[0]
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
    from oar._core.dispatch import OPS

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
    from oar._core.autograd import _set_grad_enabled
    from oar._core.dispatch import OPS
    from oar._core.tracing import TracingMode
    from oar._ops.creation import zeros_like

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

    tracer = TracingMode(train)
    tracer.grad_at_entry = False  # backward nodes are not "no_grad" nodes of the user's function
    for vid, t in env.items():
        tracer._bind(t, vid)
        tracer.dynamic.add(vid)

    # One @GRAD feed per distinct computed output that needs a gradient. An output that is a feed
    # or a parameter itself is the caller's own tensor: its gradient does not pass through here.
    produced = {v for node in program.nodes for v in node.outputs}
    grads: dict[int, Tensor] = {}
    grad_feeds = []
    for ref in iter_refs(program.outputs):
        vid = ref.id
        if vid in grads or vid not in need or vid not in produced:
            continue
        value = train.values[vid]
        feed = train.add_feed(value.shape, value.dtype, f"{value.name or vid}@GRAD")
        g = Tensor._wrap(np.ones(env[vid]._data.shape, env[vid]._data.dtype), "cpu", True, None, 0, None)
        g = g._to_backend(backend)
        tracer._bind(g, feed.id)
        tracer.dynamic.add(feed.id)
        grads[vid] = g
        grad_feeds.append((vid, feed.id))

    previous = _set_grad_enabled(False)
    try:
        with tracer:
            for index in range(forward_count - 1, -1, -1):
                node = program.nodes[index]
                out_grads = [grads.get(v) for v in node.outputs]
                if all(g is None for g in out_grads) or node.no_grad:
                    continue
                op = OPS.get(node.op)
                needs = tuple(v in need for v in node.inputs)
                if op.grad is None or not any(needs):
                    continue
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
                    grads[vid] = g if vid not in grads else grads[vid] + g
                if tracer.broken is not None:
                    break
            # The marked outputs: read the gradients' values while the tracer is still active.
            targets = []
            for i, vid in enumerate(program.feeds):
                if vid in need and vid in grads:
                    targets.append((("feed", i), tracer.value_of(grads[vid])))
            for name, vid in program.params.items():
                if vid in need and vid in grads:
                    targets.append((("param", name), tracer.value_of(grads[vid])))
    finally:
        _set_grad_enabled(previous)
    if tracer.broken is not None:
        raise NotDerivable(f"a gradient rule cannot be captured: {tracer.broken.reason}")

    def label(key) -> str:
        kind, target = key
        return f"{target}@GRAD" if kind == "param" else f"{train.values[program.feeds[target]].name}@GRAD"

    train.outputs = {"outputs": program.outputs, "grads": {label(k): ValueRef(v) for k, v in targets}}
    train.meta["backward_start"] = forward_count
    train.prune()
    train.validate()
    return BackwardProgram(train, forward_count, grad_feeds, targets)


def generalize_sizes(a: BackwardProgram, b: BackwardProgram) -> bool:
    """Make ``a`` (derived at one size of the dynamic dims) hold for every size, given ``b`` derived
    at another size; True when it does (``a`` is then changed in place).

    Gradient rules restore saved shapes (``flatten``'s gradient reshapes to ``[N, 16, 5, 5]``):
    where the two programs differ only in one entry of a ``reshape`` target, that entry -- the
    size that follows the dynamic dim -- becomes -1, inferred at run time. Any other difference (a
    size baked into a constant, as ``mean``'s ``1/N``) leaves ``a`` for its size only.
    """
    from oar._core.passes import attr_key

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
    from oar.jit.api import program_signature

    if program_signature(pa) != program_signature(pb):
        for (na, nb, _), (attrs_a, attrs_b) in zip(patches, before):
            na.attrs, nb.attrs = attrs_a, attrs_b
        return False
    for na, _, i in patches:
        value = pa.values[na.outputs[0]]
        value.shape = tuple(None if k == i else d for k, d in enumerate(value.shape))
    return True


__all__ = ["append_backward", "generalize_sizes", "BackwardProgram", "NotDerivable", "RuleContext", "check_derivable"]
