"""Core's own plugin: registers the cpu backend, core's ops, passes and thread control through the
same hooks as any third-party plugin (``oar.hookspecs``).

The static graph's ops and passes are registered as ``Lazy`` entries: the graph
(``oar._graph``) is imported when a program needs them, never by eager code.
"""

from __future__ import annotations

from oar._engine.device import CPUBackend
from oar._engine.registries import Lazy
from oar._engine.threads import limit_blas_threads
from oar._ops import ALL_OPS
from oar.plugins import hookimpl

# The static graph's ops and passes by name, with the module that defines each (pipeline order
# within a phase is registration order: this order).
GRAPH_OPS = {"cond": "oar._graph.control_flow:cond_op", "while": "oar._graph.control_flow:while_op"}
GRAPH_PASSES = {
    "constant_folding": "oar._graph.passes",
    "common_subexpression_elimination": "oar._graph.passes",
    "remove_detach": "oar._graph.passes",
    "remove_identity_ops": "oar._graph.passes",
    "dead_code_elimination": "oar._graph.passes",
    "fuse_elementwise": "oar._graph.fusion",
}


@hookimpl
def oar_register_backends(backends):
    backends.register("cpu", CPUBackend())


@hookimpl
def oar_register_ops(ops):
    for op in ALL_OPS:
        ops.add(op)
    for name, target in GRAPH_OPS.items():
        ops.add(Lazy(target), name=name)


@hookimpl
def oar_register_passes(passes):
    for name, module in GRAPH_PASSES.items():
        passes.register(name, Lazy(f"{module}:{name}"))


@hookimpl
def oar_register_thread_controls(thread_controls):
    thread_controls.register("blas", limit_blas_threads)


@hookimpl
def oar_register_config_groups(config_groups):
    # oar-run's `export=jit`: a plain node (core does not import Hydra), instantiated as
    # functools.partial(oar.jit.save) and called as export(layer, path_prefix, input_spec=[...]).
    config_groups.register("export/jit", {"_target_": "oar.jit.save", "_partial_": True})
