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

``OAR_DISABLE_PLUGINS=name1,name2`` blocks plugins by entry-point name; ``OAR_TRACE_PLUGINS=1``
logs every hook call to stderr; ``python -m oar plugins`` lists each loaded plugin, its
version and what it registered. A plugin that raises while loading or registering is reported
by name in a ``oar.errors.PluginWarning``, its partial registrations are removed, and the other
plugins keep working.

Every registry records which plugin registered each entry; names must be unique unless the
registration passes ``override=True``. Kernels are the exception: several kernels may serve one
(op, backend, dtype) and the highest ``priority`` wins (the numpy reference kernel has priority
0; plugins default to 100).

A complete worked example lives in ``examples/oar-plugin-example/`` and ``docs/plugins.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from oar._core.op import KernelRegistry, OpRegistry
    from oar._core.registry import Registry

hookspec = pluggy.HookspecMarker("oar")


@hookspec(historic=True)
def oar_register_backends(backends: Registry) -> None:
    """Register devices: ``backends.register("gpu", MyBackend())``.

    A backend subclasses ``oar.plugins.Backend`` and owns storage (``from_numpy``,
    ``to_numpy``, ``zeros``, ``full``) and availability (``is_available``). Its kernels are
    registered separately, under its name, with ``oar_register_kernels``.
    ``oar.set_device(name)`` selects it.
    """


@hookspec(historic=True)
def oar_register_ops(ops: OpRegistry) -> None:
    """Register new ops: ``ops.add(oar.plugins.Op("my_op", reference=..., meta=..., ...))``.

    An op carries its meta function (shape/dtype inference), its numpy reference kernel
    (registered on ``cpu`` at priority 0 by ``ops.add``), its gradient rule written with oar ops
    (``@my_op.defgrad``) or the ``"nondiff"`` trait, its traits and its AMP category. Calling the
    ``Op`` object dispatches it in the active mode (eager, to_static tracing, autocast).
    """


@hookspec(historic=True)
def oar_register_kernels(kernels: KernelRegistry) -> None:
    """Register kernels for existing ops: ``kernels.register("conv2d", "cpu", fn, dtypes=["float32"], priority=100)``.

    The key is (op name, backend, dtype); the highest priority among the kernels that declare the
    dtype wins. ``fn(*arrays, **attrs)`` receives the backend's arrays and the op's attributes and
    returns an array or a tuple of arrays, exactly as the op's reference kernel does.

    Optionally ``fn.bind(attrs)`` returns a callable of the arrays alone for one static-graph node
    with those attributes (its checks and look-ups done once), or None; the executor calls it once
    per node (``oar._core.executor.Executor``). Eager calls always go through ``fn``.

    A kernel that spreads a large batch over the threads ``oar.set_num_threads`` allows by itself
    (compiled code, without the GIL) says so with ``fn.batch_parallel = True``: the executor then
    runs a program that holds it in one piece instead of in per-thread parts of the batch.
    """


@hookspec(historic=True)
def oar_register_layers(layers: Registry) -> None:
    """Register ``oar.nn.Layer`` subclasses by name: ``layers.register("MyBlock", MyBlock)``.

    Named layers can be built from configs (Hydra ``_target_`` or by name) and are listed by
    ``python -m oar plugins``.
    """


@hookspec(historic=True)
def oar_register_passes(passes: Registry) -> None:
    """Register graph passes on the static-graph Program: ``passes.register("fold_bn", pass_obj)``.

    A pass is a callable ``pass_obj(program) -> program`` with an attribute ``level`` (the
    smallest optimisation level that runs it) and ``inference_only`` (bool). Passes rewrite IR
    nodes keyed by op name; each must leave the Program's outputs unchanged within float tolerance.
    """


@hookspec(historic=True)
def oar_register_amp_categories(amp: Registry) -> None:
    """Override the AMP category of ops by name: ``amp.register("my_op", "fp32", override=True)``.

    Categories: ``"low_precision"`` (run in float16/bfloat16 under autocast), ``"fp32"`` (always
    float32), ``"promote"`` (the widest dtype among the inputs). An op's own ``amp`` attribute is
    the default; entries here take precedence.
    """


@hookspec(historic=True)
def oar_register_op_lowerings(lowerings: Registry) -> None:
    """Register per-op lowerings for exporters, keyed ``"<format>:<op name>"``.

    ``lowerings.register("onnx:conv2d", fn)``: the ONNX exporter (oar-onnx) calls ``fn(node, ctx)``
    for each IR node of that op. An export that meets an op without a lowering names the op.
    """


@hookspec(historic=True)
def oar_register_distributed_strategies(strategies: Registry) -> None:
    """Register distributed training strategies by name: ``strategies.register("dp", DataParallelStrategy)``."""


@hookspec(historic=True)
def oar_register_serving_backends(serving_backends: Registry) -> None:
    """Register inference engines for the Predictor and server: ``serving_backends.register("onnxruntime", factory)``.

    ``factory(program_path, config) -> runner`` where ``runner(inputs: dict[str, ndarray]) -> dict``.
    """


@hookspec(historic=True)
def oar_register_thread_controls(thread_controls: Registry) -> None:
    """Register a CPU thread pool that ``oar.set_num_threads(n)`` sizes: ``thread_controls.register("numba", fn)``.

    ``fn(n: int) -> None`` sets the pool to ``n`` threads (clamping to what the pool can run). It is
    called on every ``oar.set_num_threads``, and at once when registered after one. Core registers
    ``"blas"`` (numpy's BLAS, through threadpoolctl when installed). Mark ``fn.per_thread = True``
    when the setting holds for the calling thread only (numba's): the executor's threads that run
    parts of a batch then set it to one thread for themselves (``oar._core.threads.run_in_parts``).
    """


@hookspec(historic=True)
def oar_register_config_groups(config_groups: Registry) -> None:
    """Contribute Hydra config groups to ``oar-run``: ``config_groups.register("amp/fp16", node)``.

    The key is ``"<group>/<option>"``; ``node`` is a dataclass instance or dict with a
    ``_target_``. A group whose package is not installed is absent from ``oar-run``.
    """
