"""oar-nn's plugin: registers nn's ops, passes and layers through core's hooks, as any plugin does.

The passes are registered as ``Lazy`` entries, so importing nn (and loading its plugin) never
imports the static graph: it loads when a program is optimized.
"""

from __future__ import annotations

from oar.nn import layer as layer_module
from oar.nn.functional import ALL_OPS
from oar.plugins import Lazy, hookimpl

# oar.nn._passes's passes by name, in pipeline order within a phase (registration order).
PASSES = ["fold_batch_norm", "fuse_conv2d", "fuse_linear", "max_pool_drop_mask", "fuse_conv2d_max_pool"]


@hookimpl
def oar_register_ops(ops):
    for op in ALL_OPS:
        ops.add(op)


@hookimpl
def oar_register_passes(passes):
    for name in PASSES:
        passes.register(name, Lazy(f"oar.nn._passes:{name}"))


@hookimpl
def oar_register_layers(layers):
    for name, cls in layer_module.public_layers().items():
        layers.register(name, cls)
