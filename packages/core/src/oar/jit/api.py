"""``oar.jit.to_static``: capture a function or a Layer's forward into a ``Program`` and run that.

A ``StaticFunction`` keeps a cache of captured programs keyed by what the program depends on:
the tensor inputs' shapes (a dim an ``InputSpec`` leaves dynamic counts as ``None``), dtypes and
devices, which inputs are the same tensor, the non-tensor arguments, and the training flags of
the layer's sublayers. A call whose key misses captures again: the function runs eagerly under
the tracer (so the first call returns eager results) and the program is kept for the next calls.

A dim an ``InputSpec`` leaves dynamic is checked: the function is traced a second time with that
dim at another size (from the same rows, without side effects), and when the two programs differ
-- the size was baked into an attribute or a constant, as ``reshape(x, [x.shape[0], -1])`` does
-- the function is captured per size instead.

A capture is reused only while the Python it ran would decide the same (``Capture.holds``):
the decisions Python took on dynamic dims (``if x.shape[0] > 2``: ``oar._graph.symbolic``) must
come out the same for the call's shapes, and the Python numbers and strings the code can read
(globals, closure cells, the layer's and sublayers' attributes: ``oar.jit._guards``) must be
unchanged; otherwise the call captures again, and the captures of one key are kept side by side.
A capture that draws Python-side random numbers or rebinds an attribute of the layer is refused.

When the function cannot be captured (data-dependent Python, see ``oar._graph.tracing``) it falls
back to eager for good, with one ``UserWarning`` naming the file and line, or raises
``GraphBreakError`` under ``full_graph=True``.
"""

from __future__ import annotations

import copy
import functools
import inspect
import operator
import warnings
import weakref

import numpy as np

from oar._engine import eager as _eager
from oar._engine.device import current_device
from oar._engine.dispatch import _mode_stack, capture_keys, observers_only
from oar._engine.tensor import Tensor
from oar._graph.executor import Executor
from oar._graph.passes import optimize
from oar._graph.program import Program, program_signature
from oar._graph.symbolic import ShapeGuards, plain_attrs
from oar._graph.tracing import GraphBreak, GraphBreakError, TracingMode, add_location, location_of, user_location
from oar._ops.random import get_rng_state, set_rng_state
from oar.errors import ArgumentError
from oar.jit._guards import LayerAttributes, PythonRandomState, ValueGuards, layer_methods, store_location
from oar.jit._run_program import OTHER_SIZES, TrainingPrograms, recomputable, resized_dynamic_dims, run_recomputing
from oar.jit.dy2static.convert import ENABLED, StaticFunctionBase, convert_function
from oar.static.input import BuildStrategy, InputSpec


def enable_to_static(enable_to_static_bool: bool) -> None:
    """Turn to_static conversion on or off globally: off, every ``to_static`` function runs its
    Python eagerly (for debugging), as ``paddle.jit.enable_to_static``.

    >>> import oar
    >>> oar.jit.enable_to_static(False)
    >>> oar.jit.enable_to_static(True)
    """
    if not isinstance(enable_to_static_bool, bool):
        raise ArgumentError(f"enable_to_static: expected a bool, got {type(enable_to_static_bool).__name__}")
    ENABLED[0] = enable_to_static_bool


def _tracing_active() -> bool:
    return any(isinstance(m, TracingMode) for m in _mode_stack)


# ------------------------------------------------------------------------------------------
# arguments: tensors out, everything else into the cache key
# ------------------------------------------------------------------------------------------
def _flatten(obj, tensors: list, names: list, name: str):
    """A hashable key of ``obj``'s structure and non-tensor values; its tensors go to ``tensors``
    (with a name each in ``names``)."""
    if isinstance(obj, Tensor):
        tensors.append(obj)
        names.append(name)
        return ("T",)
    if obj is None or isinstance(obj, (bool, int, float, str, bytes)):
        return (type(obj).__name__, obj)
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, tuple(_flatten(o, tensors, names, f"{name}_{i}") for i, o in enumerate(obj)))
    if isinstance(obj, dict):
        return ("dict", tuple((k, _flatten(obj[k], tensors, names, f"{name}_{k}")) for k in obj))
    if isinstance(obj, np.ndarray):
        return ("ndarray", obj.shape, obj.dtype.str, obj.tobytes())
    if isinstance(obj, np.generic):
        return ("npscalar", obj.dtype.str, obj.item())
    try:
        hash(obj)
        return ("object", obj)  # by its own equality (functions, layers, enums: by identity)
    except TypeError:
        return ("id", id(obj), obj.__class__)


def _replace(obj, mapping: dict):
    """``obj`` with the tensors in ``mapping`` (by id) replaced."""
    if isinstance(obj, Tensor):
        return mapping.get(id(obj), obj)
    if isinstance(obj, list):
        return [_replace(o, mapping) for o in obj]
    if isinstance(obj, tuple):
        items = [_replace(o, mapping) for o in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
    if isinstance(obj, dict):
        return type(obj)((k, _replace(v, mapping)) for k, v in obj.items())
    return obj


def _spec_leaves(spec, out: list) -> None:
    if isinstance(spec, InputSpec):
        out.append(spec)
    elif isinstance(spec, (list, tuple)):
        for s in spec:
            _spec_leaves(s, out)
    elif isinstance(spec, dict):
        for s in spec.values():
            _spec_leaves(s, out)


def as_input_specs(obj, dynamic_batch: bool = False):
    """``obj`` (a call's arguments, or specs made by this function) with each tensor replaced by an
    ``InputSpec`` of its shape and dtype, the first dim dynamic with ``dynamic_batch``: how
    ``jit.save`` captures again a call made without input_spec."""
    if isinstance(obj, (Tensor, InputSpec)):
        shape = list(obj._data.shape) if isinstance(obj, Tensor) else list(obj.shape)
        if dynamic_batch and shape:
            shape[0] = None
        return InputSpec(shape, obj.dtype, None, obj.stop_gradient)
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return type(obj)(as_input_specs(o, dynamic_batch) for o in obj)
    if isinstance(obj, dict):
        return {k: as_input_specs(v, dynamic_batch) for k, v in obj.items()}
    return obj


def _example_tensor(spec: InputSpec, dynamic_size: int) -> Tensor:
    """A tensor that fits ``spec``: dynamic dims of ``dynamic_size``, floats in [0.1, 1), ints 0."""
    shape = tuple(dynamic_size if d == -1 else d for d in spec.shape)
    if spec.dtype.is_floating:
        count = int(np.prod(shape, dtype=np.int64))
        data = (0.1 + 0.9 * ((np.arange(count) * 0.618034) % 1.0)).reshape(shape).astype(spec.dtype.np)
    else:
        data = np.zeros(shape, spec.dtype.np)
    t = Tensor._wrap(data, "cpu", spec.stop_gradient, None, 0, None)
    if spec.name is not None:
        t.name = spec.name
    return t._to_backend(current_device())


def _from_specs(spec):
    """Arguments built from an input_spec structure (InputSpec leaves become example tensors)."""
    if isinstance(spec, InputSpec):
        return _example_tensor(spec, 2)
    if isinstance(spec, list):
        return [_from_specs(s) for s in spec]
    if isinstance(spec, tuple):
        return tuple(_from_specs(s) for s in spec)
    if isinstance(spec, dict):
        return {k: _from_specs(v) for k, v in spec.items()}
    return spec


class _Snapshot:
    """Saves tensors' values and the random generator's state, and puts them back: a capture that
    is not the user's call (the second trace of a dynamic dim, ``get_concrete_program``) must
    leave no trace -- no running statistics updated, no random numbers drawn."""

    def __init__(self, tensors):
        seen = set()
        self.saved = []
        for t in tensors:
            if id(t) not in seen and type(t._data) is np.ndarray:
                seen.add(id(t))
                self.saved.append((t, t._data, t._data.copy(), t._vc))
        self.rng = get_rng_state()
        self.python_rng = PythonRandomState()

    def restore(self) -> None:
        for t, data, saved, vc in self.saved:
            t._data, t._vc = data, vc  # the buffer and the counter its views share
            if data.flags.writeable:
                np.copyto(data, saved)
            else:
                t._data = saved
        set_rng_state(self.rng)
        self.python_rng.restore()


class Capture:
    """One cached program of a ``StaticFunction`` and the executors that run it."""

    def __init__(self, program: Program, strategy: BuildStrategy, backend: str):
        self.program = program
        self.strategy = strategy
        self.backend = backend
        self.params = list(program.param_tensors.values())
        self._infer: Executor | None = None
        self._train: Executor | None = None
        self._training: TrainingPrograms | None = None
        self._recomputable: bool | None = None  # see _run_program.run_recomputing
        self.shapes: ShapeGuards | None = None  # the decisions Python took on dynamic dims
        self.values: ValueGuards | None = None  # the Python values the captured code can read

    def holds(self, tensors) -> bool:
        """Whether a call with ``tensors`` would run the captured Python the same way."""
        if self.values is not None and not self.values.hold():
            return False
        return self.shapes is None or self.shapes.hold([t._data.shape for t in tensors])

    def _optimized(self, inference: bool) -> Program:
        s = self.strategy
        return optimize(self.program, s.optimization_level, inference=inference, enable=s.enable_passes,
                        disable=s.disable_passes)

    @property
    def inference_executor(self) -> Executor:
        if self._infer is None:
            self._infer = Executor(self._optimized(True), self.backend, reuse_buffers=self.strategy.memory_optimize)
        return self._infer

    @property
    def training_executor(self) -> Executor:
        if self._train is None:
            self._train = Executor(self._optimized(False), self.backend, hoist_parameters=False)
        return self._train

    @property
    def training_programs(self) -> TrainingPrograms:
        if self._training is None:
            s = self.strategy
            self._training = TrainingPrograms(self._optimized(False), s.optimization_level, s.enable_passes,
                                              s.disable_passes)
        return self._training

    def needs_autograd(self, feeds) -> bool:
        if len(_mode_stack) > 1 and not observers_only():  # autocast or another mode must see every op
            return True
        if not _eager.grad_enabled:
            return False
        return any(not t.stop_gradient for t in feeds) or any(not p.stop_gradient for p in self.params)

    @property
    def recomputable(self) -> bool:
        if self._recomputable is None:
            self._recomputable = recomputable(self.program)
        return self._recomputable

    def _train_forward(self, feeds):
        """The forward recorded for autograd, as a training call runs it."""
        plan = self.training_programs.plan_for(feeds)
        return plan.run(feeds) if plan is not None else self.training_executor.replay(feeds)

    def run(self, feeds):
        if len(_mode_stack) == 1 and not _eager.grad_enabled:  # inference, the hot path
            executor = self._infer if self._infer is not None else self.inference_executor
            return executor.run(feeds)
        if self.needs_autograd(feeds):
            if len(_mode_stack) == 1 and self.recomputable:  # eval mode: a backward is rare, pay for it then
                return run_recomputing(self.inference_executor, self._train_forward, feeds, self.params)
            if len(_mode_stack) == 1 or observers_only():  # the backward derived into the program (static_backward)
                plan = self.training_programs.plan_for(feeds)
                if plan is not None:
                    return plan.run(feeds)
            return self.training_executor.replay(feeds)  # not derivable, or autocast must see every op
        return self.inference_executor.run(feeds)


_training = operator.attrgetter("training")
# Captures kept side by side for one cache key (other guard outcomes); the oldest goes first.
MAX_VARIANTS = 8


def _none():
    return None


def _same(obj):
    return obj


class StaticFunction(StaticFunctionBase):
    """A function (or a bound Layer method) whose calls run captured programs.

    Made by ``oar.jit.to_static``; ``concrete_program`` is the last captured ``Program``,
    ``get_concrete_program(*args)`` captures for given arguments (or the input_spec) without
    running the call, ``rollback()`` gives the Python function back, ``dygraph_function`` is it.
    """

    def __init__(self, function, input_spec=None, build_strategy=None, full_graph: bool = False, instance=None,
                 weak: bool = False):
        if not callable(function):
            raise ArgumentError(f"to_static: expected a function or a Layer, got {type(function).__name__}")
        if input_spec is not None and not isinstance(input_spec, (list, tuple)):
            raise ArgumentError(f"to_static: input_spec must be a list or tuple of InputSpec, got "
                                f"{type(input_spec).__name__}")
        self.dygraph_function = function
        # A method bound through the class attribute holds its instance weakly: the per-instance
        # cache (a WeakKeyDictionary) must not keep the instance alive.
        if instance is None:
            self._instance_ref = _none
        elif weak:
            self._instance_ref = weakref.ref(instance)
        else:
            self._instance_ref = functools.partial(_same, instance)
        self._input_spec = list(input_spec) if input_spec is not None else None
        self._spec_leaves: list[InputSpec] = []
        if self._input_spec is not None:
            _spec_leaves(self._input_spec, self._spec_leaves)
        self._build_strategy = BuildStrategy.coerce(build_strategy)
        self._full_graph = bool(full_graph)
        self._cache: dict[tuple, Capture] = {}
        self._variants: dict[tuple, list[Capture]] = {}  # the guarded captures of a key
        self._last: Capture | None = None
        self._last_call: tuple | None = None  # (args, kwargs) of the last captured call, tensors as InputSpecs
        self._fast: tuple | None = None  # (the last hit's _fast_signature, its Capture)
        self._fallback: GraphBreak | None = None
        self._exact_keys: set = set()  # generalized keys whose programs depend on a dynamic dim's size
        self._warned_sizes = False
        self._layers = None
        self._bound: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        functools.update_wrapper(self, function)
        try:
            params = list(inspect.signature(function).parameters.values())
        except (TypeError, ValueError):
            params = []
        if instance is not None and params:
            params = params[1:]
        self._arg_names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]

    @property
    def _instance(self):
        return self._instance_ref()

    # -- binding ------------------------------------------------------------------------------
    def __get__(self, instance, owner=None):
        if instance is None or self._instance is not None:
            return self
        try:
            bound = self._bound.get(instance)
        except TypeError:
            bound = None
        if bound is None:
            bound = StaticFunction(self.dygraph_function, self._input_spec, self._build_strategy, self._full_graph,
                                   instance=instance, weak=True)
            try:
                self._bound[instance] = bound
            except TypeError:
                pass
        return bound

    @property
    def _name(self) -> str:
        return getattr(self.dygraph_function, "__qualname__", repr(self.dygraph_function))

    def _call_python(self, args, kwargs):
        if self._instance is not None:
            return self.dygraph_function(self._instance, *args, **kwargs)
        return self.dygraph_function(*args, **kwargs)

    def _call_converted(self, args, kwargs):
        """Call the function with its tensor-dependent control flow converted (``oar.jit.dy2static``)."""
        function = convert_function(self.dygraph_function)
        if self._instance is not None:
            return function(self._instance, *args, **kwargs)
        return function(*args, **kwargs)

    # -- calling ------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        # The hot path: a call of tensors alone like the last hit (same shapes, dtypes, devices,
        # no tensor twice, same layer modes, no mode active) runs that capture without building
        # the cache key (which walks the arguments and the input_spec: a quarter of a batch-1
        # LeNet call).
        fast = self._fast
        if fast is not None and not kwargs and len(_mode_stack) == 1 and ENABLED[0]:
            if self._fast_signature(args) == fast[0]:
                entry = fast[1]  # its shape guards held for these very shapes; the values may have changed
                if entry.values is None or entry.values.hold():
                    self._last = entry
                    return entry.run(list(args))
        if not ENABLED[0] or self._fallback is not None or _tracing_active():
            return self._call_python(args, kwargs)
        tensors: list = []
        names: list = []
        structure = self._structure(args, kwargs, tensors, names)
        key, shapes = self._key(structure, tensors)
        entry = self._lookup(key, tensors)
        if entry is not None:
            self._last = entry
            # (the hot path runs calls made outside every mode: never a capture keyed by one, autocast's)
            signature = None if kwargs or capture_keys() else self._fast_signature(args)
            self._fast = None if signature is None else (signature, entry)
            return entry.run(tensors)
        return self._capture(key, shapes, args, kwargs, tensors, names, dry=False)

    def _lookup(self, key, tensors) -> Capture | None:
        """The capture of ``key`` whose guards hold for ``tensors`` (the last one used first)."""
        entry = self._cache.get(key)
        if entry is None or entry.holds(tensors):
            return entry
        for other in self._variants.get(key, ()):
            if other is not entry and other.holds(tensors):
                self._cache[key] = other
                return other
        return None

    def _fast_signature(self, args) -> tuple | None:
        """What the hot path compares: each argument's exact shape, dtype and device, and the
        layer modes; None when an argument is not a plain Tensor or one is passed twice (the
        full key covers those)."""
        if len(args) == 1:  # the common call: one input tensor, without the loop and the id check
            a = args[0]
            if type(a) is not Tensor:
                return None
            data = a._data
            return (((data.shape, data.dtype, a._backend),), self._layer_flags())
        parts = []
        for a in args:
            if type(a) is not Tensor:
                return None
            data = a._data
            parts.append((data.shape, data.dtype, a._backend))
        if len(args) > 1 and len(set(map(id, args))) != len(args):
            return None
        return (tuple(parts), self._layer_flags())

    def _structure(self, args, kwargs, tensors, names):
        arg_names = [self._arg_names[i] if i < len(self._arg_names) else f"input_{i}" for i in range(len(args))]
        positional = tuple(_flatten(a, tensors, names, n) for a, n in zip(args, arg_names))
        keywords = tuple((k, _flatten(kwargs[k], tensors, names, k)) for k in sorted(kwargs))
        for i, spec in enumerate(self._spec_leaves[:len(tensors)]):
            if spec.name is not None:
                names[i] = spec.name
        return (positional, keywords)

    def _layer_flags(self) -> tuple:
        layers = self._layers
        if layers is None:
            inst = self._instance
            if inst is None or not hasattr(inst, "training"):
                return ()
            sub = getattr(inst, "sublayers", None)
            layers = self._layers = sub(include_self=True) if callable(sub) else [inst]
        return tuple(map(_training, layers))  # C-level map: this runs on every call

    def _key(self, structure, tensors) -> tuple[tuple, list]:
        specs = self._spec_leaves
        ids = [id(t) for t in tensors]
        same = tuple(ids.index(i) for i in ids) if len(set(ids)) != len(ids) else None
        flags = self._layer_flags()
        modes = capture_keys()  # what the active modes change in a capture (autocast's level, dtype)
        for exact in (False, True):
            shapes = []
            parts = []
            for i, t in enumerate(tensors):
                spec = specs[i] if i < len(specs) else None
                if not exact and spec is not None and spec.fits(t):
                    shape = spec.dynamic_shape
                else:
                    shape = tuple(t._data.shape)
                shapes.append(shape)
                parts.append((shape, t._data.dtype.str, t._backend))
            key = (structure, tuple(parts), same, flags, modes)
            if key not in self._exact_keys:
                break
        return key, shapes

    # -- capturing ----------------------------------------------------------------------------
    def _state(self) -> dict:
        inst = self._instance
        state: dict = {}
        if inst is not None and callable(getattr(inst, "named_parameters", None)):
            for name, p in inst.named_parameters():
                state.setdefault(id(p), (name, "parameter", p))
            for name, b in inst.named_buffers():
                state.setdefault(id(b), (name, "buffer", b))
        return state

    def _trace(self, args, kwargs, tensors, names, shapes, *, full_graph: bool, isolate: bool = False):
        """Run the converted function under a tracer; returns (program, result, tracer)."""
        program = Program()
        program.meta = {"function": self._name, "device": tensors[0]._backend if tensors else current_device()}
        flags = self._layer_flags()
        if flags:
            program.meta["training"] = bool(flags[0])
        tracer = TracingMode(program, self._state(), full_graph=full_graph, isolate=isolate,
                             guard_shapes=any(None in s for s in shapes))
        tracer.note_call(self.dygraph_function, self._instance)
        layers = self._layers or ()
        attributes = LayerAttributes(layers) if layers else None
        randomness = PythonRandomState()
        try:
            for t, shape, name in zip(tensors, shapes, names):
                tracer.feed(t, shape, name)
            with tracer:
                result = self._call_converted(args, kwargs)
            tracer.finish(result)
            if tracer.broken is None:
                self._check_python_state(tracer, attributes, randomness)
        except GraphBreakError:
            raise
        except Exception as exc:  # at capture: the message names the user's line (the type is kept)
            add_location(exc, location_of(exc))
            raise
        finally:
            tracer.restore()
            if tracer.shape_guards is not None:
                tracer.shape_guards.active = False  # a SymInt kept past the capture records nothing
            if isolate and attributes is not None:
                attributes.restore()
        if tracer.broken is not None and full_graph:
            raise GraphBreakError(f"to_static(full_graph=True): {self._name} cannot be captured: {tracer.broken}")
        return program, result, tracer

    def _check_python_state(self, tracer: TracingMode, attributes: LayerAttributes | None,
                            randomness: PythonRandomState) -> None:
        """Refuse what a program would not repeat: an attribute of the layer (or a sublayer)
        rebound, a draw from Python's or numpy's generators (where convert_call saw no call)."""
        changed = attributes.changed() if attributes is not None else None
        if changed is not None:
            layer, name = changed
            functions = [fn for fn, obj in tracer.called.values() if obj is layer] + layer_methods(layer)
            tracer.break_graph(
                f"the function sets the attribute {name!r} of {type(layer).__name__} (self.{name} = ...), which a "
                f"program would not do again on later calls; keep such state outside the to_static function, or "
                f"in a tensor updated in place", store_location(name, functions) or self._definition())
        elif randomness.changed():
            tracer.break_graph(
                "the function draws random numbers from Python's random or numpy.random, which a program would "
                "replay as the numbers drawn at capture; use oar.rand / oar.randn / oar.randint (drawn anew on "
                "every call)", self._definition())

    def _definition(self) -> tuple[str, int]:
        code = getattr(self.dygraph_function, "__code__", None)
        return (code.co_filename, code.co_firstlineno) if code is not None else user_location()

    def _same_for_other_sizes(self, program: Program, guards: ShapeGuards, args, kwargs, tensors, names,
                              shapes) -> str:
        """Trace again with every dynamic dim at another size for which Python decides the same
        (``guards``): "same" when the program is the same, "differs" when not, "nosize" when no
        size tried gives every decision its outcome."""
        for size_of in OTHER_SIZES:
            other_shapes = [tuple(size_of(n) if d is None else n for n, d in zip(t._data.shape, shape))
                            for t, shape in zip(tensors, shapes)]
            if guards.hold(other_shapes):
                break
        else:
            return "nosize"
        mapping = {}
        for t, shape in zip(tensors, shapes):
            if None not in shape or id(t) in mapping:
                continue
            mapping[id(t)] = resized_dynamic_dims(t, shape, size_of)
        if not mapping:
            return "same"
        snapshot = _Snapshot([t for (_, _, t) in self._state().values()])
        try:
            other_program, _, other = self._trace(_replace(args, mapping), _replace(kwargs, mapping),
                                                  [mapping.get(id(t), t) for t in tensors], names, shapes,
                                                  full_graph=False, isolate=True)
        except Exception:  # noqa: BLE001 - a size the function cannot take: capture per size
            return "differs"
        finally:
            snapshot.restore()
        same = other.broken is None and not other.shape_guards.baked and other.shape_guards.same_decisions(guards) \
            and program_signature(other_program) == program_signature(program)
        return "same" if same else "differs"

    def _capture(self, key, shapes, args, kwargs, tensors, names, *, dry: bool):
        if not dry:
            self._last_call = (as_input_specs(list(args)), as_input_specs(dict(kwargs)))
        snapshot = _Snapshot([t for (_, _, t) in self._state().values()]) if dry else None
        try:
            program, result, tracer = self._trace(args, kwargs, tensors, names, shapes, full_graph=self._full_graph,
                                                  isolate=dry)
        finally:
            if snapshot is not None:
                snapshot.restore()
        if tracer.shape_guards is not None:
            result = plain_attrs(result, None)  # the caller gets plain ints, as from the program
        if tracer.broken is not None:
            self._fall_back(tracer.broken)
            return result
        guards = tracer.shape_guards
        verdict = "same"
        if guards is not None:
            verdict = "differs" if guards.baked or guards.unknown else \
                self._same_for_other_sizes(program, guards, args, kwargs, tensors, names, shapes)
        if verdict == "nosize":  # only sizes like these decide the same: this capture serves these sizes only
            guards.pin([t._data.shape for t in tensors], shapes)
        elif verdict == "differs":
            self._exact_keys.add(key)
            if not self._warned_sizes:
                self._warned_sizes = True
                filename, lineno = user_location()
                warnings.warn_explicit(
                    f"to_static: the program of {self._name} depends on the size of a dim its input_spec leaves "
                    f"dynamic (a shape read from x.shape became an attribute or a constant, as in reshape to "
                    f"x.shape[0] or dropout's mask, or Python decided on a size it cannot tie to an input dim); it "
                    f"is captured again for each size",
                    UserWarning, filename, lineno)
            program = self._respecialized(program, tensors)
            key, _ = self._key(key[0], tensors)
        backend = program.meta.get("device", "cpu")
        entry = Capture(program, self._build_strategy, backend)
        entry.shapes = guards if guards is not None and guards.decisions else None
        entry.values = ValueGuards.collect(tracer.called.values(), self._layers or ())
        self._cache[key] = entry
        if entry.shapes is not None or entry.values is not None:
            variants = self._variants.setdefault(key, [])
            variants.append(entry)
            del variants[:-MAX_VARIANTS]
        self._last = entry
        return result

    @staticmethod
    def _respecialized(program: Program, tensors) -> Program:
        """The program with its feeds' dynamic dims set to the sizes it was captured with."""
        for vid, t in zip(program.feeds, tensors):
            program.values[vid].shape = tuple(t._data.shape)
        return program

    def _fall_back(self, broken: GraphBreak) -> None:
        self._fallback = broken
        self._fast = None
        warnings.warn_explicit(
            f"to_static: {self._name} runs eagerly from now on, it cannot be captured: {broken.reason} "
            f"(at {broken.filename}:{broken.lineno})",
            UserWarning, broken.filename, broken.lineno)

    # -- inspection ---------------------------------------------------------------------------
    def get_concrete_program(self, *args, **kwargs) -> Program:
        """The program for these arguments (or, with none, for the input_spec), capturing it
        without side effects if it is not cached. Raises ``GraphBreakError`` when the function
        cannot be captured."""
        if not args and not kwargs:
            if self._input_spec is None:
                raise ArgumentError(f"get_concrete_program: {self._name} has no input_spec; pass example "
                                    f"arguments or give to_static an input_spec")
            built = _from_specs(self._input_spec)
            args = tuple(built)
        if self._fallback is not None:
            raise GraphBreakError(f"{self._name} cannot be captured: {self._fallback}")
        tensors: list = []
        names: list = []
        structure = self._structure(args, kwargs, tensors, names)
        key, shapes = self._key(structure, tensors)
        entry = self._lookup(key, tensors)
        if entry is None:
            self._capture(key, shapes, args, kwargs, tensors, names, dry=True)
            if self._fallback is not None:
                raise GraphBreakError(f"{self._name} cannot be captured: {self._fallback}")
            entry = self._last
        self._last = entry
        return entry.program

    @property
    def concrete_program(self) -> Program:
        """The last captured program (captured from the input_spec when nothing was called yet)."""
        if self._last is not None:
            return self._last.program
        return self.get_concrete_program()

    @property
    def program_cache(self) -> dict:
        """The cached captures by key (read-only use)."""
        return self._cache

    def clear_cache(self) -> None:
        self._cache.clear()
        self._variants.clear()
        self._last = None
        self._fast = None

    def rollback(self):
        """Undo ``to_static``: a Layer gets its Python forward back; returns the Python function."""
        inst = self._instance
        if inst is not None and inst.__dict__.get("forward") is self:
            del inst.__dict__["forward"]
            return inst.forward
        return self.dygraph_function

    def __deepcopy__(self, memo):
        # A copied layer gets a fresh StaticFunction: captured programs hold the original's tensors.
        inst = self._instance
        clone = StaticFunction(self.dygraph_function, copy.deepcopy(self._input_spec, memo), self._build_strategy,
                               self._full_graph, instance=None if inst is None else copy.deepcopy(inst, memo))
        memo[id(self)] = clone
        return clone

    def __repr__(self) -> str:
        return f"<StaticFunction {self._name}>"


def _is_layer(obj) -> bool:
    return callable(getattr(obj, "forward", None)) and callable(getattr(obj, "named_parameters", None))


def to_static(function=None, input_spec=None, build_strategy=None, backend=None, full_graph: bool = False,
              **kwargs):
    """Capture ``function`` -- a function, a method, or a Layer (its forward) -- into a program that
    runs without Python per op, as ``paddle.jit.to_static``; a decorator with or without arguments.

    ``input_spec`` (a list of ``oar.static.InputSpec``, one per positional tensor argument) names
    the inputs and marks dynamic dims (``None``); ``build_strategy`` picks the passes (an
    ``oar.static.BuildStrategy``, an optimization level, or None for level 2); ``full_graph=True``
    raises ``GraphBreakError`` where the function cannot be captured instead of falling back to
    eager with a warning. ``backend`` is accepted for Paddle code (``None`` or ``"CINN"``: oar
    has one backend, its executor).

    >>> import oar
    >>> @oar.jit.to_static
    ... def f(x, y):
    ...     return oar.exp(x) + y * 2.0
    >>> f(oar.zeros([2]), oar.ones([2])).tolist()
    [3.0, 3.0]
    >>> print(f.concrete_program)  # doctest: +NORMALIZE_WHITESPACE
    program(%x: float32[2], %y: float32[2]) {
      constants:
        %const_0: float32[] = 2.0
      %2: float32[2] = exp(%x)
      %4: float32[2] = multiply(%y, %const_0)
      %5: float32[2] = add(%2, %4)
      return %5
    }
    """
    if backend not in (None, "CINN"):
        raise ArgumentError(f"to_static: backend must be None or 'CINN' (oar has one backend), got {backend!r}")
    unknown = set(kwargs) - {"property"}
    if unknown:
        raise ArgumentError(f"to_static: unexpected arguments {sorted(unknown)}")

    def convert(fn):
        if isinstance(fn, StaticFunction):
            return fn
        if _is_layer(fn) and not inspect.isfunction(fn) and not inspect.ismethod(fn):
            forward = type(fn).__dict__.get("forward") or type(fn).forward
            if isinstance(forward, StaticFunction):
                forward = forward.dygraph_function
            spec = input_spec
            static = StaticFunction(forward, spec, build_strategy, full_graph, instance=fn)
            object.__setattr__(fn, "forward", static)
            return fn
        if inspect.ismethod(fn):
            return StaticFunction(fn.__func__, input_spec, build_strategy, full_graph, instance=fn.__self__)
        return StaticFunction(fn, input_spec, build_strategy, full_graph)

    if function is None:
        return convert
    return convert(function)


def not_to_static(function=None):
    """Mark ``function`` to run as plain Python inside a to_static function: its control flow
    is not converted (``oar.jit.dy2static``), as ``paddle.jit.not_to_static``.

    >>> import oar
    >>> @oar.jit.not_to_static
    ... def helper(x):
    ...     return x * 2.0
    """
    if function is None:
        return not_to_static
    try:
        function._oar_not_to_static = True
    except (AttributeError, TypeError):  # a builtin or a C function: never converted anyway
        pass
    return function


__all__ = ["to_static", "not_to_static", "enable_to_static", "StaticFunction", "Capture"]
