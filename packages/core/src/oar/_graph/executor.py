"""Running a ``Program``: a planned inference path and an autograd replay.

``Executor(program)`` prepares once what every run needs:

- each node's op and, for inference, its kernel, looked up once from the node's input dtypes
  (the kernel registry's ``resolve_kernel``), so a run is a loop of kernel calls on arrays;
- a memory plan: every value lives in a slot, and the slots a node reads for the last time are
  dropped right after it (numpy frees the buffer when nothing else holds it). An elementwise
  numpy kernel whose first input dies at that node writes its result into that input's buffer
  when nothing else references it (checked with the buffer's reference count at run time);
- the *parameter prelude*: nodes that read only parameters and constants (the folded weights of
  conv + batch norm) run once and are reused until a parameter changes (its version counter or
  buffer does), so a folded model pays for folding once per weight update, not per call.

``run(feeds)`` (inference) does no autograd bookkeeping. ``replay(feeds)`` dispatches every
node through the active mode with its tensors, so the tape is recorded as in eager mode and
``loss.backward()`` and optimizers work: training through to_static gets its gradients from the
same op rules.

A kernel that raises names the user's line that recorded its node (``OpNode.where``, kept at
capture) in the message: an oar error keeps its type (``add_location``); any other exception is
explained by the op's meta on the actual inputs, as eager does (a ``ShapeError`` for shapes that
do not fit), or becomes a ``KernelError``. Nothing of that runs unless a kernel raised.

Observers (``observe``) see every node's outputs of every inference run while they are active
(slim's calibration collects activation ranges this way); without one, a run pays one check.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable

import numpy as np

from oar._engine import dtypes as _dt
from oar._engine import eager as _eager
from oar._engine import profiling as _profiling
from oar._engine.autograd import _set_grad_enabled
from oar._engine.dispatch import dispatch as _dispatch
from oar._engine.eager import resolve_kernel
from oar._engine.inplace import apply_inplace
from oar._engine.memory import allocation_error
from oar._engine.op import TensorMeta
from oar._engine.registries import BACKENDS, OPS
from oar._engine.tensor import Tensor
from oar._engine.threads import num_threads, run_in_parts
from oar._graph.program import OpNode, Program, ValueRef, iter_refs, map_refs
from oar._graph.tracing import add_location
from oar.errors import KernelError, OarError

_getrefcount = sys.getrefcount
# A buffer referenced only by its slot, the local name and getrefcount's argument is free to reuse.
_FREE_REFS = 3

# Ops whose training replay is not a plain dispatch: control flow runs its blocks' ops one by one
# (autograd records the path that ran). Filled by oar._graph.control_flow, which defines them.
REPLAYS: dict[str, Callable] = {}

_observers: list[Callable[[Program, OpNode, list], None]] = []


@contextlib.contextmanager
def observe(fn: Callable[[Program, OpNode, list], None]):
    """``with observe(fn):`` every inference run of a program (``Executor.run``, a jit.load'ed
    model, a Predictor) calls ``fn(program, node, outputs)`` after each node, ``outputs`` the
    node's output arrays (None for one that nothing reads, freed at once). Batches run whole
    while an observer is active. Nested observers all see every node.

    >>> import oar
    >>> from oar.jit import to_static
    >>> from oar.static.passes import observe
    >>> f = to_static(lambda x: oar.exp(x) * 2.0)
    >>> _ = f(oar.ones([2]))
    >>> seen = []
    >>> with observe(lambda program, node, outputs: seen.append((node.op, outputs[0].max()))):
    ...     _ = f(oar.ones([2]))
    >>> [(op, round(float(m), 3)) for op, m in seen]
    [('exp', 2.718), ('multiply', 5.437)]
    """
    _observers.append(fn)
    try:
        yield fn
    finally:
        _observers.remove(fn)


def _watched() -> bool:
    """Whether each node of a run is to be seen: an observer, a profiler or the memory count is on."""
    return bool(_observers or _profiling.recorders or _profiling.TENSOR_MEMORY.on)


def _version(t: Tensor) -> int:
    return t._vc[0] if t._vc is not None else 0


def _tensors_of(structure) -> list:
    """The tensors of an output structure (a tensor, or lists, tuples and dicts of them), in order."""
    if isinstance(structure, Tensor):
        return [structure]
    if isinstance(structure, dict):
        return [t for v in structure.values() for t in _tensors_of(v)]
    if isinstance(structure, (list, tuple)):
        return [t for v in structure for t in _tensors_of(v)]
    return []


def _result_of(backend: str):
    """How a kernel's result is kept: a numpy scalar as an array on the cpu; another backend's
    buffers as they are."""
    return np.asarray if backend == "cpu" else _same


def _same(out):
    return out


def _flatten_batch(kernel, attrs: dict, rank: int):
    def flatten(x):
        if x.ndim == rank and x.size:
            return x.reshape(x.shape[0], -1)
        return kernel(x, **attrs)  # what the plan did not expect (an empty batch): the op's rules

    return flatten


# A batch is split when each part gets at least this many samples and input elements: below, the
# hand-off to another thread (tens of microseconds) costs more than the part's work.
SPLIT_MIN_ROWS = 8
SPLIT_MIN_ELEMENTS = 8192


def _per_sample(op, node, values, batched) -> bool:
    """Whether ``node`` keeps samples apart: its outputs' sample ``i`` from its batched inputs'."""
    in_shapes = [values[v].shape for v in node.inputs]
    if "elementwise" in op.traits:
        rank = len(values[node.outputs[0]].shape)
        for v, shape in zip(node.inputs, in_shapes):
            if v in batched:
                if len(shape) != rank:  # broadcast against a longer shape: the first dim is not the batch's
                    return False
            elif len(shape) == rank and shape[0] != 1:
                return False
        return True
    if node.inputs[0] not in batched or any(v in batched for v in node.inputs[1:]):
        return False
    rule = op.per_sample
    if callable(rule):
        return bool(rule(node.attrs, in_shapes, [values[v].shape for v in node.outputs]))
    return rule is True


def _spreads_batch(kernel) -> bool:
    """Whether ``kernel`` runs a large batch on several threads itself (``kernel.batch_parallel``)."""
    return bool(getattr(kernel, "batch_parallel", False))


def _bound_step(kernel, ins, out, attrs, dead, asarray):
    """``run(env)`` for a step of one to three inputs and one output. The result is a local of
    ``run``, gone when it returns: a later step's buffer reuse sees exact reference counts."""
    ndarray = np.ndarray
    if len(ins) == 1:
        (a,) = ins

        def run(env):
            r = kernel(env[a], **attrs)
            env[out] = r if type(r) is ndarray else asarray(r)
            for s in dead:
                env[s] = None
    elif len(ins) == 2:
        a, b = ins

        def run(env):
            r = kernel(env[a], env[b], **attrs)
            env[out] = r if type(r) is ndarray else asarray(r)
            for s in dead:
                env[s] = None
    else:
        a, b, c = ins

        def run(env):
            r = kernel(env[a], env[b], env[c], **attrs)
            env[out] = r if type(r) is ndarray else asarray(r)
            for s in dead:
                env[s] = None
    return run


class Executor:
    """Runs ``program`` on feeds (tensors in the program's feed order).

    Each node's kernel is looked up once. A kernel may offer ``kernel.bind(attrs)``: called once
    per node with the node's attributes, it returns a callable taking the input arrays alone
    (what the attributes decide, worked out once), or None to be called as usual. A kernel that
    keeps state in its bound callable must allow calls from several threads.

    After ``oar.set_num_threads(n > 1)``, an inference program whose ops are all per sample
    (``Op.per_sample``, elementwise ops, reshapes that keep the batch first) and whose feeds
    and outputs all have a dynamic first dim runs a large enough batch in ``n`` parts, one per
    thread (``run_in_parts``), and joins the outputs: one hand-off per call. Unless one of its
    kernels says it spreads a batch over the threads itself (``kernel.batch_parallel = True``,
    as oar-numba's convolutions and linears do in compiled code, without the GIL): the parts'
    Python threads would only add their hand-offs to that.

    >>> import oar
    >>> from oar.jit import to_static
    >>> f = to_static(lambda x: (x * 2.0).sum())
    >>> _ = f(oar.ones([3]))
    >>> from oar.static.passes import Executor
    >>> Executor(f.concrete_program).run([oar.ones([3])]).item()
    6.0
    """

    def __init__(self, program: Program, backend: str = "cpu", *, reuse_buffers: bool = True,
                 hoist_parameters: bool = True):
        self.program = program
        self.backend = backend
        values = program.values
        self.slot = {vid: i for i, vid in enumerate(values)}
        self.nslots = len(self.slot)
        self.ops = [OPS.get(n.op) for n in program.nodes]
        self.feed_slots = [self.slot[v] for v in program.feeds]
        self.param_slots = [(self.slot[vid], program.param_tensors[name]) for name, vid in program.params.items()]
        # a program's constants are numpy data; on another backend they are uploaded once
        upload = (lambda a: a) if backend == "cpu" else BACKENDS.get(backend).from_numpy
        self.const_slots = [(self.slot[vid], upload(program.constant_data[name]))
                            for name, vid in program.constants.items()]
        kept = {self.slot[v] for v in program.output_ids()}
        self.kept = kept

        # The parameter prelude: nodes whose inputs are parameters, constants or prelude outputs.
        static = {self.slot[v] for v in (*program.params.values(), *program.constants.values())}
        prelude = []
        if hoist_parameters:
            for i, (node, op) in enumerate(zip(program.nodes, self.ops)):
                if node.inputs and "random" not in op.traits and all(self.slot[v] in static for v in node.inputs):
                    prelude.append(i)
                    static.update(self.slot[v] for v in node.outputs)
        self.prelude = set(prelude)
        prelude_outputs = {self.slot[v] for i in prelude for v in program.nodes[i].outputs}
        prelude_params = {self.slot[v] for i in prelude for v in program.nodes[i].inputs} & \
            {s for s, _ in self.param_slots}
        self.prelude_params = [(s, t) for s, t in self.param_slots if s in prelude_params]
        self.prelude_outputs = sorted(prelude_outputs)
        self._cached_slots = set(prelude_outputs)  # values reused across runs: returned as copies
        self._prelude_key = None
        self._prelude_values: dict[int, np.ndarray] = {}

        # Last use of each slot among the main nodes (the prelude's values are cached separately).
        main = [i for i in range(len(program.nodes)) if i not in self.prelude]
        last: dict[int, int] = {}
        for pos, i in enumerate(main):
            for v in program.nodes[i].inputs:
                last[self.slot[v]] = pos
        frees: list[list[int]] = [[] for _ in main]
        for s, pos in last.items():
            if s not in kept:
                frees[pos].append(s)
        for pos, i in enumerate(main):  # outputs nobody reads die at once
            for v in program.nodes[i].outputs:
                s = self.slot[v]
                if s not in last and s not in kept:
                    frees[pos].append(s)
        self.main = main
        self.frees = frees
        self._split = self._splittable()
        self.reuse_buffers = reuse_buffers
        self._steps = None
        self._prelude_steps = None

    # -- inference ----------------------------------------------------------------------------
    def _kernel(self, i: int):
        node, op = self.program.nodes[i], self.ops[i]
        values = self.program.values
        if node.inputs:
            key = (self.backend, values[node.inputs[0]].dtype.np)
        else:
            key = (node.attrs.get("place") or self.backend, _dt.get_dtype(node.attrs["dtype"]).np)
        kernel = op._kernels.get(key)
        return kernel if kernel is not None else resolve_kernel(op, key[0], key[1])

    def _build_steps(self, indices, frees, produced: set) -> list:
        values = self.program.values
        steps = []
        for pos, i in enumerate(indices):
            node = self.program.nodes[i]
            kernel = self._kernel(i)
            ins = tuple(self.slot[v] for v in node.inputs)
            outs = tuple(self.slot[v] for v in node.outputs)
            dead = tuple(frees[pos]) if frees is not None else ()
            inplace = False
            if (self.reuse_buffers and isinstance(kernel, np.ufunc) and kernel.nout == 1 and len(outs) == 1
                    and ins and ins[0] in dead and ins[0] in produced and ins.count(ins[0]) == 1):
                a, o = values[node.inputs[0]], values[node.outputs[0]]
                inplace = a.dtype is o.dtype and a.dtype.is_floating and a.shape == o.shape
            # A variadic op (split) returns a tuple even for one output: keep the tuple form for it.
            single = len(outs) == 1 and self.ops[i].num_outputs == 1
            attrs = node.attrs
            if node.op == "flatten" and single and len(ins) == 1:
                rank = len(values[node.inputs[0]].shape or ())
                if rank >= 2 and attrs.get("start_axis") == 1 and attrs.get("stop_axis") in (-1, rank - 1):
                    # flatten all but the batch (before a classifier's linears): a plain reshape,
                    # without the op's axis arithmetic on every call
                    kernel, attrs = _flatten_batch(kernel, attrs, rank), {}
            if frees is not None and _spreads_batch(kernel):  # a main step's kernel spreads the
                self._split = False  # batch itself (see Executor)
            bind = getattr(kernel, "bind", None)
            if bind is not None and not inplace:
                bound = bind(attrs)  # the kernel specialised for this node's attributes (see Executor)
                if bound is not None:
                    kernel, attrs = bound, {}
            steps.append((kernel, ins, outs[0] if single else outs, attrs, dead, inplace, i))
            produced.update(outs)
        return steps

    def _bind_steps(self, steps) -> tuple:
        """Each step as a closure ``run(env)`` with its slots bound, and the node index of each.

        The common step (one to three inputs, one output, no buffer reuse) does only its kernel
        call and slot writes: no per-step unpacking of fields it does not use, no branches on
        its kind (a batch-1 run is mostly this loop's overhead)."""
        runs = []
        for step in steps:
            kernel, ins, out, attrs, dead, inplace, _ = step
            if inplace or type(out) is not int or not 1 <= len(ins) <= 3:
                runs.append(self._general_step(step))
            else:
                runs.append(_bound_step(kernel, ins, out, attrs, dead, _result_of(self.backend)))
        return tuple(runs), tuple(step[-1] for step in steps)

    def _prepare(self) -> None:
        if self._steps is None:
            produced: set = set()
            self._prelude_steps = self._build_steps(sorted(self.prelude), None, set())
            self._steps = self._build_steps(self.main, self.frees, produced)
            self._prelude_runs = self._bind_steps(self._prelude_steps)
            self._runs = self._bind_steps(self._steps)
            self._template = [None] * self.nslots
            for s, a in self.const_slots:
                self._template[s] = a
            out = self.program.outputs
            computed = isinstance(out, ValueRef) and self.program.producers().get(out.id) is not None
            self._single_output = self.slot[out.id] if computed else None
            if self._single_output in self._cached_slots:
                self._single_output = None
            constants = {self.slot[v] for v in self.program.constants.values()}
            self._flat_outputs = [(self.slot[r.id], self.slot[r.id] in constants or self.slot[r.id] in self._cached_slots)
                                  for r in iter_refs(self.program.outputs)]

    def _splittable(self) -> bool:
        """Whether every sample of every output depends on the same sample of the feeds alone."""
        program, values = self.program, self.program.values
        if program.updates or not program.feeds:
            return False
        batched = set()
        for v in program.feeds:
            shape = values[v].shape
            if not shape or shape[0] is not None:
                return False
            batched.add(v)
        for i in self.main:
            node, op = program.nodes[i], self.ops[i]
            if not any(v in batched for v in node.inputs):  # from parameters and constants alone:
                if any(None in values[v].shape for v in node.outputs):  # the same in every part,
                    return False  # unless its shape is the batch's
                continue
            if "random" in op.traits or not _per_sample(op, node, values, batched):
                return False
            for v in node.outputs:
                shape = values[v].shape
                if not shape or shape[0] is not None:
                    return False
                batched.add(v)
        return all(r.id in batched for r in iter_refs(program.outputs))

    def _parts(self, feeds) -> int:
        """How many parts to run this call's batch in: 1 unless splitting pays (see ``Executor``)."""
        threads = num_threads()
        if threads <= 1 or not self._split:
            return 1
        arrays = [t._data if isinstance(t, Tensor) else t for t in feeds]
        first = arrays[0]
        rows = first.shape[0] if getattr(first, "ndim", 0) else 0
        if rows < 2 * SPLIT_MIN_ROWS or first.size < 2 * SPLIT_MIN_ELEMENTS or type(first) is not np.ndarray:
            return 1
        if any(type(a) is not np.ndarray or not a.ndim or a.shape[0] != rows for a in arrays):
            return 1  # feeds of different batch sizes: the program's shapes decide, in one piece
        return min(threads, rows // SPLIT_MIN_ROWS)

    def _run_split(self, feeds, parts: int) -> object:
        arrays = [t._data if isinstance(t, Tensor) else np.asarray(t) for t in feeds]
        rows = arrays[0].shape[0]
        base = self._template.copy()
        for s, t in self.param_slots:
            base[s] = t._data
        if self.prelude:
            self._run_prelude(base)
        bounds = [rows * k // parts for k in range(parts + 1)]
        slots = [s for s, _ in self._flat_outputs]
        results: list = [None] * parts

        def part(k: int) -> None:
            env = base.copy()
            for s, a in zip(self.feed_slots, arrays):
                env[s] = a[bounds[k]:bounds[k + 1]]
            self._execute(self._runs, env)
            results[k] = [env[s] for s in slots]

        run_in_parts(part, parts)
        env = base
        for i, s in enumerate(slots):
            env[s] = np.concatenate([r[i] for r in results])
        if self._single_output is not None:
            return Tensor._wrap(env[self._single_output], self.backend, True, None, 0, None)
        return self._outputs(env, feeds)

    def _run_prelude(self, env: list) -> None:
        key = [(id(t._data), t._vc[0] if t._vc is not None else 0) for _, t in self.prelude_params]
        if key != self._prelude_key:
            self._prelude_key = None
            self._execute(self._prelude_runs, env)
            self._prelude_values = [(s, env[s]) for s in self.prelude_outputs]
            self._prelude_key = key
        else:
            for s, a in self._prelude_values:
                env[s] = a

    def run(self, feeds) -> object:
        """Run for inference: ``feeds`` are tensors (or arrays) in feed order; returns the output
        structure with new tensors (``stop_gradient=True``) for the computed values."""
        if self._steps is None:
            self._prepare()
        if self._split and not _watched():  # a small batch (batch 1) is told apart at the cost of one shape read
            first = feeds[0]._data if isinstance(feeds[0], Tensor) else feeds[0]
            if getattr(first, "ndim", 0) and first.shape[0] >= 2 * SPLIT_MIN_ROWS:
                parts = self._parts(feeds)
                if parts > 1:
                    return self._run_split(feeds, parts)
        env = self._template.copy()  # the constants are in place already
        for s, t in zip(self.feed_slots, feeds):
            env[s] = t._data if type(t) is Tensor or isinstance(t, Tensor) else t
        for s, t in self.param_slots:
            env[s] = t._data
        if self.prelude:
            self._run_prelude(env)
        self._execute(self._runs, env)
        if self.program.updates:
            for kind, target, vid in self.program.updates:
                self._write_state(self._state_tensor(kind, target, feeds), env[self.slot[vid]])
        if self._single_output is not None:  # the common case: one computed tensor
            return Tensor._wrap(env[self._single_output], self.backend, True, None, 0, None)
        return self._outputs(env, feeds)

    def run_arrays(self, arrays) -> list:
        """Run for inference on arrays (in feed order); the outputs' arrays as a flat list, in the
        order of the output structure's values. No tensor is made on the way in or out: this is
        how a control-flow block runs once per loop iteration (``oar._graph.control_flow``), where
        wrapping and unwrapping cost more than a small body's kernels."""
        if self._steps is None:
            self._prepare()
        if self.program.updates:  # state written back needs the tensors: the general path
            return [t._data for t in _tensors_of(self.run(list(arrays)))]
        if self._split and not _watched() and getattr(arrays[0], "ndim", 0) and \
                arrays[0].shape[0] >= 2 * SPLIT_MIN_ROWS:  # a large batch in parts, as run() does
            parts = self._parts(arrays)
            if parts > 1:
                return [t._data for t in _tensors_of(self._run_split(arrays, parts))]
        env = self._template.copy()
        for s, a in zip(self.feed_slots, arrays):
            env[s] = a
        for s, t in self.param_slots:
            env[s] = t._data
        if self.prelude:
            self._run_prelude(env)
        self._execute(self._runs, env)
        # A constant or a cached prelude value is shared from run to run: the caller gets a copy.
        return [env[s].copy() if copy else env[s] for s, copy in self._flat_outputs]

    def _execute(self, bound, env: list) -> None:
        if _watched():
            return self._execute_observed(bound, env)
        runs, nodes = bound
        pos = 0
        try:
            for run in runs:
                run(env)
                pos += 1
        except OarError as exc:
            add_location(exc, self.program.nodes[nodes[pos]].where)
            raise
        except Exception as exc:
            raise self._explain(nodes[pos], env, exc) from exc

    def _execute_observed(self, bound, env: list) -> None:
        runs, nodes = bound
        recorders, memory = _profiling.recorders, _profiling.TENSOR_MEMORY.on
        for run, i in zip(runs, nodes):
            start = _profiling.now_ns()
            try:
                run(env)
            except OarError as exc:
                add_location(exc, self.program.nodes[i].where)
                raise
            except Exception as exc:
                raise self._explain(i, env, exc) from exc
            node = self.program.nodes[i]
            outputs = [env[self.slot[v]] for v in node.outputs]
            if memory:
                _profiling.track_outputs(outputs)
            if recorders:
                end = _profiling.now_ns()
                for recorder in recorders:
                    recorder.program_node(self.program, i, node, start, end)
            for fn in list(_observers):
                fn(self.program, node, outputs)

    def _general_step(self, step):
        """A step that may reuse its first input's buffer, has several outputs or many inputs."""
        kernel, ins, out, attrs, dead, inplace, _ = step
        asarray = _result_of(self.backend)

        def run(env: list) -> None:
            if inplace:
                a = env[ins[0]]
                if a.base is None and _getrefcount(a) == _FREE_REFS and a.flags.writeable:
                    env[ins[0]] = None
                    try:
                        env[out] = kernel(a, *[env[j] for j in ins[1:]], out=a, **attrs)
                    except ValueError:  # a broadcast that grows the output: no reuse
                        env[out] = kernel(a, *[env[j] for j in ins[1:]], **attrs)
                    del a
                    for s in dead:
                        env[s] = None
                    return
                del a
            result = kernel(*[env[j] for j in ins], **attrs)
            if type(out) is int:
                env[out] = result if type(result) is np.ndarray else asarray(result)
            else:
                for s, r in zip(out, result):
                    env[s] = r if type(r) is np.ndarray else asarray(r)
            result = r = None  # the slots hold them now: a buffer's reference count must be exact
            for s in dead:
                env[s] = None

        return run

    def _explain(self, i: int, env: list, exc: Exception) -> Exception:
        """The oar error for a kernel's exception at node ``i``, naming the user's line: what the
        op's meta says of the actual inputs (as eager's ``explain_failure``), or a KernelError."""
        node = self.program.nodes[i]
        arrays = [env[self.slot[v]] for v in node.inputs]
        shown = ", ".join(f"{_dt.NP_TO_DTYPE.get(a.dtype, a.dtype)}{list(a.shape)}" if a is not None else "?"
                          for a in arrays)
        if all(a is not None and a.dtype in _dt.NP_TO_DTYPE for a in arrays):
            try:
                self.ops[i].meta(*[TensorMeta(tuple(a.shape), _dt.NP_TO_DTYPE[a.dtype]) for a in arrays],
                                 **node.attrs)
            except OarError as err:  # the inputs do not fit the op: eager would raise this
                return add_location(err, node.where)
            except Exception:  # noqa: BLE001 - a meta that fails itself explains nothing: the kernel's error
                pass
        too_big = allocation_error(f"program op #{i} {node.op!r}", exc, detail=f"; inputs ({shown}), attributes {node.attrs}")
        if too_big is not None:
            return add_location(too_big, node.where)
        return add_location(KernelError(f"program op #{i} {node.op!r} failed on inputs ({shown}) with attributes "
                                        f"{node.attrs}: {type(exc).__name__}: {exc}"), node.where)

    def _state_tensor(self, kind, target, feeds) -> Tensor:
        return self.program.param_tensors[target] if kind == "param" else feeds[target]

    @staticmethod
    def _write_state(t: Tensor, value) -> None:
        """Write ``value`` into the state tensor ``t`` in place (as ``apply_inplace`` would)."""
        data = value._data if isinstance(value, Tensor) else value
        if t._data is data:
            return
        if (type(t._data) is np.ndarray and type(data) is np.ndarray and t._data.flags.writeable
                and (t._data.base is None or t._view is not None)  # a view writes into its base's memory
                and t._data.shape == data.shape and t._data.dtype == data.dtype):
            np.copyto(t._data, data)
        else:
            t._set_buffer(np.array(data, dtype=t._data.dtype, copy=True))
        t._bump_version()

    def _outputs(self, env: list, feeds) -> object:
        program = self.program
        feed_of = {vid: i for i, vid in enumerate(program.feeds)}
        made: dict[int, Tensor] = {}

        def tensor(ref: ValueRef) -> Tensor:
            t = made.get(ref.id)
            if t is None:
                if ref.id in feed_of and isinstance(feeds[feed_of[ref.id]], Tensor):
                    t = feeds[feed_of[ref.id]]
                elif program.is_param(ref.id):
                    t = program.param_tensors[program.values[ref.id].name]
                else:
                    data = env[self.slot[ref.id]]
                    if program.is_constant(ref.id) or self.slot[ref.id] in self._cached_slots:
                        data = data.copy()  # the caller may change it in place; the cached value stays
                    t = Tensor._wrap(data, self.backend, True, None, 0, None)
                made[ref.id] = t
            return t

        return map_refs(program.outputs, tensor)

    # -- training: replay through dispatch ------------------------------------------------------
    def replay(self, feeds) -> object:
        """Run every node through the active mode with tensors (autograd records the tape, an
        outer mode such as autocast sees each op), then write back the state updates."""
        program = self.program
        env: list = [None] * self.nslots
        for s, t in zip(self.feed_slots, feeds):
            env[s] = t
        for s, t in self.param_slots:
            env[s] = t
        for s, a in self.const_slots:
            env[s] = Tensor._wrap(a, self.backend, True, None, 0, None)
        dispatch = _replay_dispatch if any(n.op in REPLAYS for n in program.nodes) else _dispatch
        frees = {i: self.frees[pos] for pos, i in enumerate(self.main)}
        for i, (node, op) in enumerate(zip(program.nodes, self.ops)):
            args = tuple(env[self.slot[v]] for v in node.inputs)
            try:
                if node.no_grad and _eager.grad_enabled:
                    previous = _set_grad_enabled(False)
                    try:
                        result = dispatch(op, args, dict(node.attrs))
                    finally:
                        _set_grad_enabled(previous)
                else:
                    result = dispatch(op, args, dict(node.attrs))
            except OarError as exc:  # eager's error for this node, naming the user's line
                add_location(exc, node.where)
                raise
            if len(node.outputs) == 1 and type(result) is not tuple:
                env[self.slot[node.outputs[0]]] = result
            else:
                for v, r in zip(node.outputs, result):
                    env[self.slot[v]] = r
            for s in frees.get(i, ()):
                env[s] = None
        for kind, target, vid in program.updates:
            value = env[self.slot[vid]]
            t = self._state_tensor(kind, target, feeds)
            if kind == "param":
                previous = _set_grad_enabled(False)
                try:
                    apply_inplace(t, value, "to_static state update")
                finally:
                    _set_grad_enabled(previous)
            else:
                apply_inplace(t, value, "to_static input update")
        feed_of = {vid: i for i, vid in enumerate(program.feeds)}

        def tensor(ref: ValueRef):
            if ref.id in feed_of:
                return feeds[feed_of[ref.id]]
            t = env[self.slot[ref.id]]
            if program.is_constant(ref.id):
                t = Tensor._wrap(t._data.copy(), self.backend, True, None, 0, None)
            return t

        return map_refs(program.outputs, tensor)


def _replay_dispatch(op, args, attrs):
    """``dispatch``, except for the ops that replay their own way (``REPLAYS``: control flow)."""
    replay = REPLAYS.get(op.name)
    return replay(op, args, attrs) if replay is not None else _dispatch(op, args, attrs)
