"""Core's own plugin: registers the cpu backend and core's ops through the same hooks as any
third-party plugin (``oar.hookspecs``)."""

from __future__ import annotations

from oar.plugins import hookimpl


@hookimpl
def oar_register_backends(backends):
    from oar._core.dispatch import CPUBackend

    backends.register("cpu", CPUBackend())


@hookimpl
def oar_register_ops(ops):
    from oar._core.fusion import fused_elementwise_op
    from oar._ops import ALL_OPS

    for op in ALL_OPS:
        ops.add(op)
    ops.add(fused_elementwise_op)  # made by the fusion pass, from core's elementwise ops


@hookimpl
def oar_register_passes(passes):
    from oar._core.passes import BUILTIN_PASSES

    for p in BUILTIN_PASSES:
        passes.register(p.name, p)


@hookimpl
def oar_register_thread_controls(thread_controls):
    from oar._core.threads import limit_blas_threads

    thread_controls.register("blas", limit_blas_threads)


@hookimpl
def oar_register_config_groups(config_groups):
    # oar-run's `export=jit`: a plain node (core does not import Hydra), instantiated as
    # functools.partial(oar.jit.save) and called as export(layer, path_prefix, input_spec=[...]).
    config_groups.register("export/jit", {"_target_": "oar.jit.save", "_partial_": True})
