"""The plugin author's manual: every hook through which a package extends oar.

A plugin is a module (or object) with functions marked ``@oar.hookimpl`` whose names are the
hooks below. Publish it through the entry-point group ``oar`` in your ``pyproject.toml``::

    [project.entry-points.oar]
    my_plugin = "my_package.oar_plugin"

oar loads entry points once, lazily -- on the first op call or registry lookup, not at
``import oar`` -- and calls each plugin's registration hooks with oar's registries. Every
registration hook is *historic*: a plugin registered late (``oar.plugins.register``) is still
called with every registry, so load order never matters. oar's own packages (core, nn, slim,
serving, distributed) register through these same hooks.

What a plugin author imports is public and stable: ``oar.plugins`` (``hookimpl``, ``Lazy``,
the registries), ``oar.ops`` (``Op``, ``TensorMeta``, dispatch, meta helpers, traits, AMP
categories, lowerings), ``oar.static.passes`` (``Pass``, phases, the rewrite toolkit, the
executor's observer) and ``oar.errors``. Nothing under ``oar._*``. The op names and attributes
a pass, a kernel or a lowering is keyed by are listed in ``docs/ops.md``.

``OAR_DISABLE_PLUGINS=name1,name2`` blocks plugins by entry-point name; ``OAR_TRACE_PLUGINS=1``
logs every hook call to stderr; ``python -m oar plugins`` lists each loaded plugin, its
version and what it registered. A plugin that raises while loading or registering is reported
by name in a ``oar.errors.PluginWarning``, its partial registrations are removed, and the other
plugins keep working.

Every registry records which plugin registered each entry; names must be unique unless the
registration passes ``override=True``. Kernels are the exception: several kernels may serve one
(op, backend, dtype) and the highest ``priority`` wins (the numpy reference kernel has priority
0; plugins default to 100). Any registry takes ``oar.plugins.Lazy("module:attribute")`` in place
of an object, imported on first use: a pass, a serving backend or a strategy whose module pulls in
a heavy library (the static graph, onnxruntime, mpi4py) costs nothing until someone uses it.

A complete worked example lives in ``examples/oar-plugin-example/`` and ``docs/plugins.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import pluggy

if TYPE_CHECKING:  # names for the annotations only: this module imports nothing of oar at run time
    import numpy as np

    from oar.plugins import KernelRegistry, LoweringRegistry, OpRegistry, Registry, ThreadControls
    from oar.static.passes import Program

hookspec = pluggy.HookspecMarker("oar")


# -- what the registries hold ------------------------------------------------------------------------
class Kernel(Protocol):
    """A kernel: ``fn(*arrays, **attrs)`` takes the backend's arrays and the op's attributes and
    returns an array or a tuple of arrays, exactly as the op's reference kernel does.

    Two optional attributes tell the static-graph executor more:

    - ``fn.bind(attrs)``: returns a callable of the arrays alone for one program node with those
      attributes (its checks and look-ups done once), or None; called once per node. Eager calls
      always go through ``fn`` itself. A bound callable that keeps state must allow calls from
      several threads.
    - ``fn.batch_parallel = True``: the kernel spreads a large batch over the threads
      ``oar.set_num_threads`` allows by itself (compiled code, without the GIL); the executor then
      runs a program that holds it in one piece instead of in per-thread parts of the batch.
    """

    def __call__(self, *arrays: Any, **attrs: Any) -> Any: ...


class Backend(Protocol):
    """A device kind: storage and availability (subclass ``oar.plugins.Backend``). Its kernels are
    registered separately, under its name, with ``oar_register_kernels``."""

    name: str

    def is_available(self) -> bool: ...

    def device_count(self) -> int: ...

    def from_numpy(self, array: np.ndarray) -> Any: ...

    def to_numpy(self, data: Any) -> np.ndarray:
        """A new host array of the values (``Tensor.numpy()`` hands it to the user as it is)."""

    def zeros(self, shape: tuple, np_dtype: Any) -> Any: ...

    def full(self, shape: tuple, value: Any, np_dtype: Any) -> Any: ...

    def copy(self, data: Any) -> Any:
        """A new buffer with the values of ``data`` (a leaf's ``.grad`` gets its own)."""

    # Optional, read by ``oar.device.cuda`` where a backend has them (a GPU backend's): memory
    # statistics ``memory_allocated(device)``, ``max_memory_allocated(device)``, ``memory_reserved``,
    # ``max_memory_reserved``, ``reset_max_memory_allocated``, ``reset_max_memory_reserved``,
    # ``empty_cache()``, ``synchronize()``, ``get_device_name(device)``, ``get_device_properties(device)``,
    # ``get_device_capability(device)``; ``unavailable_reason()`` (what ``set_device`` tells a user
    # when ``is_available()`` is False); ``supports_dtype(name)`` (oar-amp's float16/bfloat16 queries).
    # A backend's kernels receive its own buffers: objects with numpy's ``shape``, ``ndim``, ``size``
    # and ``dtype`` (a numpy dtype), ``strides`` (in elements), ``is_contiguous()``, ``data_ptr()``, and
    # ``astype(dtype)`` where core casts for a kernel.


class Pass(Protocol):
    """A program rewrite (``oar.static.passes.Pass``, or ``@graph_pass`` on a function).

    ``phase`` places it in the pipeline (``oar.static.passes.PHASES``: simplify, fold, quantize,
    fuse, fuse_elementwise; within a phase, registration order); ``level`` is the smallest
    optimisation level that runs it; ``inference_only`` keeps it out of training programs;
    ``opt_in`` runs it only when named in ``optimize(..., enable=[name])``. A pass must leave the
    program's outputs unchanged within float tolerance.
    """

    name: str
    phase: str
    level: int
    inference_only: bool
    opt_in: bool

    def __call__(self, program: Program) -> Program: ...


# A lowering is how one op is written in one target, in the form that target's consumer reads:
# "numpy_out" (core's elementwise fusion): fn(*arrays, out=buffer_or_None, **attrs);
# "numba" (oar-numba's fused loops): (expression template, ((attribute, default), ...));
# "onnx" (oar-onnx): fn(node, ctx), node the program's OpNode, ctx an oar.onnx.LoweringContext that
# names the node's tensors and writes ONNX nodes (ctx.emit(op_type, inputs, outputs, **attributes));
# docs/onnx.md and docs/plugins.md show one.
Lowering: TypeAlias = Any


class Runner(Protocol):
    """A loaded model of a serving backend: named input arrays in, named output arrays out.

    ``input_specs`` and ``output_specs`` list the model's tensors in order as
    ``{"name": "image", "shape": [-1, 1, 28, 28], "dtype": "float32"}`` (-1: any size); the
    Predictor checks inputs against them before calling. Calls may come from several threads at
    once (a server's); ``clone()``, where a runner has it, returns one over the same weights for
    one more thread (without it the runner itself serves every thread).
    A runner may also offer ``run_list(arrays) -> list`` (inputs and outputs in spec order), which
    the Predictor prefers to the dict form.
    """

    input_specs: list[dict]
    output_specs: list[dict]

    def __call__(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]: ...

    def clone(self) -> Runner: ...


class ServingBackend(Protocol):
    """An inference engine for the Predictor and the server: loads a saved model into a ``Runner``.

    ``program_path`` is the model's program file (``prefix.json`` of ``oar.jit.save``; a backend
    of another format reads what it needs beside it); ``settings`` is
    ``oar.inference.Config.to_dict()`` plus ``"params_file"``: place, threads,
    optimization_level, deleted_passes, memory_optim, ir_debug. A backend ignores what it does
    not implement and says so in its docs."""

    def __call__(self, program_path: str, settings: Mapping[str, Any]) -> Runner: ...


class ThreadControl(Protocol):
    """Sets one CPU thread pool to ``n`` threads (clamping to what it can run). ``fn.per_thread =
    True`` where the setting holds for the calling thread only (numba's)."""

    def __call__(self, n: int) -> None: ...


# -- the hooks ------------------------------------------------------------------------------------
@hookspec(historic=True)
def oar_register_backends(backends: Registry[Backend]) -> None:
    """Register devices: ``backends.register("gpu", MyBackend())``.

    ``oar.set_device(name)`` selects one; ``oar.ops.get_backend(name)`` returns it.
    """


@hookspec(historic=True)
def oar_register_ops(ops: OpRegistry) -> None:
    """Register new ops: ``ops.add(oar.ops.Op("my_op", reference=..., meta=..., ...))``.

    An op carries its meta function (shape/dtype inference), its numpy reference kernel
    (registered on ``cpu`` at priority 0 by ``ops.add``), its gradient rule written with oar ops
    (``@my_op.defgrad``) or the ``"nondiff"`` trait, its traits, its AMP category and its
    lowerings (``@my_op.lowering(target)``). Calling the ``Op`` object dispatches it in the active
    mode (eager, to_static tracing, autocast). ``ops.add(Lazy("module:my_op"), name="my_op")``
    registers an op whose module is imported when the op is first looked up.
    """


@hookspec(historic=True)
def oar_register_kernels(kernels: KernelRegistry) -> None:
    """Register kernels (``Kernel``) for existing ops: ``kernels.register("conv", "cpu", fn,
    dtypes=["float32"], priority=100)``.

    The key is (op name, backend, dtype); the highest priority among the kernels that declare the
    dtype wins. ``docs/ops.md`` lists the op names and attributes a kernel receives.

    Where an op has several ways to compute the same result whose speed depends on the shapes or
    the machine, register the others as alternatives of the key: ``kernels.register_alternative(
    "conv", "cpu", conv_im2col, name="my_plugin.im2col", dtypes=["float32"])``. The winning kernel
    still serves every call; ``oar.incubate.autotune.set_config({"kernel": {"enable": True}})``
    times it and the alternatives on the shapes a model runs and keeps the fastest per shape
    (docs/autotune.md). An alternative must accept every input the op takes (handing the ones it
    has no path for to another kernel) and agree with the others within the dtype's rounding.
    """


@hookspec(historic=True)
def oar_register_layers(layers: Registry[type]) -> None:
    """Register ``oar.nn.Layer`` subclasses by name: ``layers.register("MyBlock", MyBlock)``.

    Named layers can be built from configs (Hydra ``_target_`` or by name) and are listed by
    ``python -m oar plugins``.
    """


@hookspec(historic=True)
def oar_register_passes(passes: Registry[Pass]) -> None:
    """Register graph passes (``Pass``) on the static-graph Program:
    ``passes.register("fuse_foo", Lazy("my_package.passes:fuse_foo"))``.

    Register passes lazily: ``oar.static.passes``, which a pass module imports, loads the static
    graph, which an eager program should not pay for. Passes rewrite IR nodes keyed by op name.
    """


@hookspec(historic=True)
def oar_register_amp_categories(amp: Registry[str]) -> None:
    """Override the AMP category of ops by name: ``amp.register("my_op", "fp32", override=True)``.

    Categories: ``"low_precision"`` (run in float16/bfloat16 under autocast), ``"fp32"`` (always
    float32), ``"promote"`` (the widest dtype among the inputs). An op's own ``amp`` attribute is
    the default; ``oar.ops.amp_category(op)`` gives the one that applies.
    """


@hookspec(historic=True)
def oar_register_op_lowerings(lowerings: LoweringRegistry) -> None:
    """Say how ops are written in a target (``Lowering``): ``lowerings.add("onnx", "conv", fn)``.

    One ``(target, op)`` table serves every consumer: core's elementwise fusion (``numpy_out``),
    oar-numba's fused loops (``numba``), exporters (``onnx``). An op's own ``@op.lowering(target)``
    lands here too; ``oar.ops.lowering(target, op_name)`` reads it. An exporter that meets an op
    without a lowering names the op.
    """


@hookspec(historic=True)
def oar_register_distributed_strategies(strategies: Registry[Any]) -> None:
    """Register distributed training strategies by name: ``strategies.register("dp", Lazy("pkg:Wrapper"))``.

    A strategy is a callable that takes a Layer and returns the Layer that trains it across ranks;
    oar-distributed registers ``"dp"`` (``oar.DataParallel``). Register lazily: the plugin loads
    with every program's first op, the collectives only when a job uses them.
    """


@hookspec(historic=True)
def oar_register_serving_backends(serving_backends: Registry[ServingBackend]) -> None:
    """Register inference engines (``ServingBackend``) for the Predictor and the server:
    ``serving_backends.register("onnxruntime", Lazy("my_package.serving:load"))``."""


@hookspec(historic=True)
def oar_register_thread_controls(thread_controls: ThreadControls) -> None:
    """Register a CPU thread pool (``ThreadControl``) that ``oar.set_num_threads(n)`` sizes:
    ``thread_controls.register("numba", fn)``.

    ``fn(n)`` is called on every ``oar.set_num_threads``, and at once when registered after one.
    Core registers ``"blas"`` (numpy's BLAS, through threadpoolctl when installed). The executor's
    threads that run parts of a batch set the ``per_thread`` controls to one thread for themselves.
    """


@hookspec(historic=True)
def oar_register_config_groups(config_groups: Registry[Any]) -> None:
    """Contribute Hydra config groups to ``oar-run``: ``config_groups.register("amp/fp16", node)``.

    The key is ``"<group>/<option>"``; ``node`` is a dataclass instance or dict with a
    ``_target_``. A group whose package is not installed is absent from ``oar-run``.
    """


__all__ = [
    "hookspec", "Kernel", "Backend", "Pass", "Lowering", "Runner", "ServingBackend", "ThreadControl",
    "oar_register_backends", "oar_register_ops", "oar_register_kernels", "oar_register_layers", "oar_register_passes",
    "oar_register_amp_categories", "oar_register_op_lowerings", "oar_register_distributed_strategies",
    "oar_register_serving_backends", "oar_register_thread_controls", "oar_register_config_groups",
]
