"""oar-nn's plugin: registers nn's ops and layers through core's hooks, as any plugin does."""

from __future__ import annotations

from oar.plugins import hookimpl


@hookimpl
def oar_register_ops(ops):
    from oar.nn.functional import ALL_OPS

    for op in ALL_OPS:
        ops.add(op)


@hookimpl
def oar_register_passes(passes):
    from oar.nn._fusion import PASSES

    for p in PASSES:
        passes.register(p.name, p)


@hookimpl
def oar_register_layers(layers):
    from oar.nn import layer as layer_module

    for name, cls in layer_module.public_layers().items():
        layers.register(name, cls)
