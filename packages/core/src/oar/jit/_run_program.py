"""Training through a captured program: the forward and the derived backward run by executors.

When a to_static call needs gradients, ``TrainingPrograms.run`` executes the forward section
with the executor (keeping alive the forward values the backward reads) and returns outputs
attached to ONE autograd node. That node's gradient rule runs the backward section -- the
gradient ops ``oar._graph.static_backward.append_backward`` derived from the ops' rules -- with the
incoming output gradients, and hands the gradients of the inputs and parameters back to the
autograd engine, which accumulates them into ``.grad`` (hooks, ``oar.grad``, ``retain_graph``
behave as in eager). A random op's draw (dropout's mask) is a forward value: the backward reads
the very mask the forward used. A gradient that flows out of one ``cond`` branch only comes with
a flag output: where it is false the node hands None (eager leaves ``.grad`` None there).

A call in eval mode whose program writes no state and draws no random numbers (a model after
``model.eval()``, called without ``no_grad``) runs the inference program instead, as fast as under
``no_grad``; its outputs hang on one ``RecomputeOp`` node, which runs the training forward again
only when a backward reaches it (``run_recomputing``): a backward after an eval call is rare (input
gradients, saliency maps), the forward it pays twice then is cheap next to what every other call
saves.

Derived programs are cached per (which inputs and parameters need a gradient, and -- when a
gradient rule bakes a size in -- the inputs' shapes). A program that cannot be derived
(``NotDerivable``) is remembered, and the caller replays the forward through eager autograd.
"""

from __future__ import annotations

import warnings

import numpy as np

from oar._engine import eager as _eager
from oar._engine.autograd import enable_grad, grad
from oar._engine.registries import BACKENDS, OPS
from oar._engine.tape import Node
from oar._engine.tensor import Tensor
from oar._graph.executor import Executor, _tensors_of
from oar._graph.passes import optimize
from oar._graph.program import Program, ValueRef, iter_refs, map_refs
from oar._graph.static_backward import BackwardProgram, NotDerivable, _rng, _set_rng, append_backward, generalize_sizes
from oar.errors import GradientError


def _another_size(n: int) -> int:
    return 3 if n == 2 else 2


# The sizes a dynamic dim of size n is traced again at, in order of preference: the first for which
# the capture's Python decides the same (``oar._graph.symbolic.ShapeGuards``) is taken.
OTHER_SIZES = (_another_size, lambda n: n + 1, lambda n: n + 2, lambda n: 2 * n + 1, lambda n: n - 1 if n > 1 else n + 3)


def resized_dynamic_dims(t: Tensor, shape, size_of=_another_size) -> Tensor:
    """``t`` with every dim that ``shape`` marks dynamic (None) at another size, ``size_of(n)``
    (rows repeated or dropped): tracing again with it tells whether a program depends on those sizes."""
    a = np.asarray(BACKENDS.get(t._backend).to_numpy(t._data))
    for axis, d in enumerate(shape):
        if d is None:
            n = a.shape[axis]
            m = size_of(n)
            a = np.take(a, np.arange(m) % n, axis=axis) if n else np.zeros(
                a.shape[:axis] + (m,) + a.shape[axis + 1:], a.dtype)
    other = Tensor._wrap(np.ascontiguousarray(a), "cpu", t.stop_gradient, None, 0, None)._to_backend(t._backend)
    other.stop_gradient = t.stop_gradient
    return other


def _other_sizes(program: Program, feeds) -> list | None:
    """Feeds whose dynamic dims have another size, or None when the program has no dynamic dim."""
    shapes = [program.values[vid].shape for vid in program.feeds]
    if not any(None in shape for shape in shapes):
        return None
    return [resized_dynamic_dims(t, shape) if None in shape else t for t, shape in zip(feeds, shapes)]


def _version(t: Tensor) -> int:
    return t._vc[0] if t._vc is not None else 0


def _check_versions(versions) -> None:
    """Refuse a backward that would read an input or parameter changed in place since the forward
    (``versions``: [(tensor, its version at the forward)]), as eager autograd refuses it."""
    for t, version in versions:
        if _version(t) != version:
            raise GradientError(
                f"a to_static program needs its input or parameter of shape {list(t._data.shape)} "
                f"({t.dtype.name}) for the backward pass, but that tensor was modified in place after the "
                f"forward (version {version} -> {_version(t)}); call .clone() before the in-place op")


class TrainingPlan:
    """A derived forward+backward program split into two executable sections."""

    def __init__(self, derived: BackwardProgram, level: int, enable=(), disable=()):
        self.derived = derived
        train = derived.program
        start = derived.forward_count
        forward_ids = set(train.feeds[:len(train.feeds) - len(derived.grad_feeds)]) | set(train.params.values())
        forward_ids.update(v for node in train.nodes[:start] for v in node.outputs)
        grad_feed_ids = [g for _, g in derived.grad_feeds]

        # The backward section: @GRAD feeds and the forward values it reads in, the gradients out.
        bwd = train.clone()
        bwd.nodes = bwd.nodes[start:]
        read = {v for node in bwd.nodes for v in node.inputs} | {v for _, v in derived.grads + derived.flags}
        saved = sorted(v for v in read if v in forward_ids)
        bwd.feeds = grad_feed_ids + saved
        bwd.params, bwd.param_tensors, bwd.param_kinds = {}, {}, {}
        # The gradients, then the flags of those that exist only on some runs (out of a cond branch).
        bwd.outputs = [ValueRef(v) for _, v in derived.grads + derived.flags]
        bwd.updates = []
        bwd.meta = {k: v for k, v in bwd.meta.items() if k != "backward_start"}
        bwd.prune()
        bwd = optimize(bwd, level, inference=False, enable=enable, disable=disable)
        still = {v for node in bwd.nodes for v in node.inputs} | {r.id for r in iter_refs(bwd.outputs)}
        self.saved = [v for v in saved if v in still]
        bwd.feeds = grad_feed_ids + self.saved
        self.backward_program = bwd

        # The forward section: the forward's outputs (one slot per distinct value) and the saved values.
        fwd = train.clone()
        fwd.nodes = fwd.nodes[:start]
        fwd.feeds = fwd.feeds[:len(fwd.feeds) - len(grad_feed_ids)]
        self.output_ids = list(dict.fromkeys(r.id for r in iter_refs(derived.program.outputs["outputs"])))
        fwd.outputs = [ValueRef(v) for v in self.output_ids + self.saved]
        fwd.meta = {k: v for k, v in fwd.meta.items() if k != "backward_start"}
        fwd.prune()
        self.forward_program = fwd
        self.structure = derived.program.outputs["outputs"]

        self.node_outputs = [self.output_ids.index(v) for v, _ in derived.grad_feeds]  # positions in output_ids
        feeds = train.feeds[:len(train.feeds) - len(grad_feed_ids)]
        self.targets = [key for key, _ in derived.grads]
        position = {key: k for k, key in enumerate(self.targets)}
        self.flagged = [position[key] for key, _ in derived.flags]  # the gradients each flag belongs to
        self.saved_set = set(self.saved)
        # The inputs and parameters the backward reads: a change in place before it is an error, as in eager.
        feed_index = {vid: i for i, vid in enumerate(feeds)}
        param_name = {vid: name for name, vid in train.params.items()}
        self.watched = [("feed", feed_index[v]) if v in feed_index else ("param", param_name[v])
                        for v in self.saved if v in feed_index or v in param_name]
        self.saved_outputs = [k for k, (v, _) in enumerate(derived.grad_feeds) if v in self.saved_set]
        device = train.meta.get("device", "cpu")
        self.forward = Executor(fwd, device, hoist_parameters=False)
        self.backward = Executor(bwd, device, hoist_parameters=False)
        # For create_graph=True: the forward again, under eager autograd, with no state written.
        again = fwd.clone()
        again.outputs = [ValueRef(v) for v, _ in derived.grad_feeds]
        again.updates = []
        self.replay = Executor(again, device, hoist_parameters=False)
        self.random = any("random" in op.traits for op in self.forward.ops)

    def run(self, feeds):
        """Run the forward; returns the output structure, differentiable outputs on one node."""
        program = self.forward_program
        rng = _rng() if self.random else None  # before the forward draws
        computed = self.forward.run(feeds)  # also writes the state updates (running statistics)
        n = len(self.output_ids)
        outs, saved = computed[:n], [t._data for t in computed[n:]]
        params = self.derived.program.param_tensors
        inputs = tuple(feeds[t] if kind == "feed" else params[t] for kind, t in self.targets)
        if not self.node_outputs or not inputs:
            node_tensors = {}
        else:
            datas = tuple(outs[k]._data for k in self.node_outputs)
            vcs = tuple([0] for _ in datas)
            watched = [feeds[t] if kind == "feed" else params[t] for kind, t in self.watched]
            op = RunProgramOp(self, saved, feeds, rng, [(t, _version(t)) for t in watched])
            node = Node(op, {}, inputs, datas, vcs, outs[0]._backend if outs else "cpu")
            node_tensors = {self.output_ids[k]: Tensor._wrap(d, outs[k]._backend, False, node, j, vc)
                            for j, (k, d, vc) in enumerate(zip(self.node_outputs, datas, vcs))}
        feed_of = {vid: i for i, vid in enumerate(program.feeds)}
        plain = dict(zip(self.output_ids, outs))

        def tensor(ref: ValueRef):
            t = node_tensors.get(ref.id)
            if t is not None:
                return t
            if ref.id in feed_of:
                return feeds[feed_of[ref.id]]
            if program.is_param(ref.id):
                return program.param_tensors[program.values[ref.id].name]
            return plain[ref.id]

        return map_refs(self.structure, tensor)


class RunProgramOp:
    """The "op" of one training call's autograd node: its rule runs the backward section."""

    __slots__ = ("plan", "saved", "feeds", "rng", "versions")
    name = "run_program"
    traits = frozenset()
    materialize_grads = True

    def __init__(self, plan: TrainingPlan, saved: list, feeds, rng, versions: list):
        self.plan = plan
        self.saved = saved
        self.versions = versions  # [(input or parameter the backward reads, its version at the forward)]
        self.feeds = feeds  # for create_graph=True only
        self.rng = rng  # the random state the forward started from, when it draws

    def grad(self, node: Node, *grads):
        plan = self.plan
        node._check_alive()
        # The saved forward values must be as the forward left them, as eager autograd checks.
        _check_versions(self.versions)
        for k in plan.saved_outputs:
            if node._out_vcs[k][0] != 0:
                raise GradientError(
                    f"output {k} of a to_static program is needed for the backward pass, but it was modified in "
                    f"place after the forward; call .clone() before the in-place op")
        if _eager.grad_enabled:  # create_graph=True: the gradients must be differentiable
            return self._differentiable_grad(node, grads)
        results = plan.backward.run([g._data for g in grads] + self.saved)
        n = len(plan.targets)
        grads_out = list(results[:n])
        for k, flag in zip(plan.flagged, results[n:]):
            if not bool(np.asarray(BACKENDS.get(flag._backend).to_numpy(flag._data))):
                grads_out[k] = None  # the branch that ran never reached it: eager leaves .grad None
        return tuple(grads_out)

    def _differentiable_grad(self, node: Node, grads) -> tuple:
        """Replay the forward under eager autograd (the same random draws, no state written) and
        differentiate that tape, so that the gradients can be differentiated again."""
        inputs = list(node.inputs)
        now = _rng()
        _set_rng(self.rng)
        try:
            outs = self.plan.replay.replay(self.feeds)
        finally:
            _set_rng(now)
        return tuple(grad(outs, inputs, list(grads), retain_graph=True, create_graph=True, allow_unused=True))

    def release(self) -> None:
        self.saved = self.feeds = self.versions = None

    def __repr__(self) -> str:
        return "<oar run_program>"


class TrainingPrograms:
    """The derived training programs of one capture, and what happened last (for tests and docs).

    ``last_plan`` is the plan the last training call ran (None if it replayed), ``not_derivable``
    the reason a program could not be derived (then every training call replays).
    """

    def __init__(self, program: Program, level: int, enable=(), disable=()):
        self.program = program  # the forward, after the training-safe passes
        self.level, self.enable, self.disable = level, tuple(enable), tuple(disable)
        self._plans: dict = {}
        self.not_derivable: str | None = None
        self.last_plan: TrainingPlan | None = None

    def plan_for(self, feeds) -> TrainingPlan | None:
        """The plan for these feeds (derived on first use), or None when the program is not derivable."""
        if self.not_derivable is not None:
            self.last_plan = None
            return None
        params = self.program.param_tensors
        flags = (tuple(t.stop_gradient for t in feeds), tuple(p.stop_gradient for p in params.values()))
        plan = self._plans.get(flags)
        if plan is None:
            shapes = tuple(tuple(t._data.shape) for t in feeds)
            plan = self._plans.get((flags, shapes))
            if plan is None:
                try:
                    plan = self._derive(feeds, flags, shapes)
                except NotDerivable as exc:
                    self.not_derivable = str(exc)
                    plan = None
                except Exception as exc:  # noqa: BLE001 - a rule that fails here still works in eager
                    self.not_derivable = f"deriving the backward failed: {type(exc).__name__}: {exc}"
                    warnings.warn(f"to_static: {self.not_derivable}; training replays the forward through eager "
                                  f"autograd instead (same results, slower)", RuntimeWarning, stacklevel=4)
                    plan = None
        self.last_plan = plan
        return plan

    def _derive(self, feeds, flags, shapes) -> TrainingPlan:
        derived = append_backward(self.program, feeds)
        other = _other_sizes(self.program, feeds)
        generic = False
        if other is not None:
            try:
                generic = generalize_sizes(derived, append_backward(self.program, other))
            except Exception:  # noqa: BLE001 - a size the program cannot take: derive per size
                generic = False
        plan = TrainingPlan(derived, self.level, self.enable, self.disable)
        self._plans[flags if generic or other is None else (flags, shapes)] = plan
        return plan


def recomputable(program: Program) -> bool:
    """Whether calls of ``program`` may run the inference program and recompute the training
    forward only for a backward (``run_recomputing``): captured in eval mode, no state written
    back (a running statistic would be updated twice), no random op (a second run would draw
    other numbers)."""
    return program.meta.get("training") is False and not program.updates and \
        not any(name in OPS and "random" in OPS.get(name).traits for name in program.op_names())


def run_recomputing(inference: Executor, train, feeds, params):
    """The inference program's outputs, the computed float ones attached to one ``RecomputeOp``
    node whose gradient rule runs ``train(feeds)`` (the training forward, recorded) and
    differentiates that: what a call that needs autograd returns, at the inference program's cost."""
    result = inference.run(feeds)
    tracked = [*feeds, *params]
    inputs = tuple([t for t in tracked if not t.stop_gradient])
    if not inputs:
        return result
    if type(result) is Tensor:  # the common call: one computed output (the executor made it)
        flat = [result]
        positions = [0] if result._data.dtype.kind in "fc" and not any([result is t for t in tracked]) else []
    else:
        passed = {id(t) for t in tracked}
        flat = _tensors_of(result)
        positions, seen = [], set()
        for k, t in enumerate(flat):
            if id(t) not in passed and id(t) not in seen and t._data.dtype.kind in "fc":
                seen.add(id(t))
                positions.append(k)
    if not positions:
        return result
    datas = tuple(flat[k]._data for k in positions)
    vcs = tuple([0] for _ in datas)
    # What the recomputation reads that the node's own input checks do not cover.
    unchecked = [(t, _version(t)) for t in tracked if t.stop_gradient]
    node = Node(RecomputeOp(train, list(feeds), positions, unchecked), {}, inputs, datas, vcs, flat[0]._backend)
    for j, (k, vc) in enumerate(zip(positions, vcs)):
        t = flat[k]
        t.stop_gradient, t._node, t._out_index, t._vc = False, node, j, vc
    return result


class RecomputeOp:
    """The "op" of an eval-mode call's node (``run_recomputing``): its rule runs the training
    forward again, recorded, and differentiates it."""

    __slots__ = ("train", "feeds", "positions", "versions")
    name = "run_program"
    traits = frozenset()
    materialize_grads = True

    def __init__(self, train, feeds: list, positions: list[int], versions: list):
        self.train = train  # feeds -> the output structure, attached to autograd
        self.feeds = feeds
        self.positions = positions  # the node's outputs: their indices in the flat output structure
        self.versions = versions

    def grad(self, node: Node, *grads):
        node._check_alive()
        _check_versions(self.versions)
        inputs = list(node.inputs)  # checks the inputs that need a gradient the same way
        create = _eager.grad_enabled
        with enable_grad():
            flat = _tensors_of(self.train(self.feeds))
        outs, out_grads = [], []
        for k, g in zip(self.positions, grads):
            if not flat[k].stop_gradient:
                outs.append(flat[k])
                out_grads.append(g)
        if not outs:
            return (None,) * len(inputs)
        return tuple(grad(outs, inputs, out_grads, retain_graph=create, create_graph=create, allow_unused=True))

    def release(self) -> None:
        self.feeds = self.versions = None

    def __repr__(self) -> str:
        return "<oar run_program, recomputed for the backward>"
