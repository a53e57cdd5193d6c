"""The module the ``oar`` entry point ``triton`` names: the ``gpu`` backend and its kernels.

Registering costs nothing heavy: the backend is a small object (it finds its driver when first
asked), and each kernel is registered through a thin function that imports its Triton module on
its first call, so a CPU-only program never imports Triton.
"""

from __future__ import annotations

import importlib

from oar_triton import optimizer
from oar_triton.backend import BACKEND
from oar_triton.kernels import KERNEL_MODULES
from oar_triton.kernels.lowerings import LOWERINGS, TRITON

from oar.plugins import PLUGIN_PRIORITY, hookimpl


@hookimpl
def oar_register_backends(backends):
    backends.register("gpu", BACKEND)


def _on_first_call(module_name: str, op_name: str):
    """A kernel that imports ``module_name`` on its first call and is then that module's kernel."""
    found = []

    def kernel(*arrays, **attrs):
        if not found:
            found.append(importlib.import_module(module_name).KERNELS[op_name])
        return found[0](*arrays, **attrs)

    kernel.__name__ = f"{op_name}@gpu"
    return kernel


@hookimpl
def oar_register_kernels(kernels):
    for module_name, ops in KERNEL_MODULES.items():
        for op_name, dtypes in ops.items():
            kernels.register(op_name, "gpu", _on_first_call(module_name, op_name), dtypes=dtypes,
                             priority=PLUGIN_PRIORITY)
    optimizer.register_update_rules()  # optimizer updates are no ops: they have a registry of their own


@hookimpl
def oar_register_op_lowerings(lowerings):
    for op_name, entry in LOWERINGS.items():  # how the generated elementwise kernels write each op
        lowerings.add(TRITON, op_name, entry)
