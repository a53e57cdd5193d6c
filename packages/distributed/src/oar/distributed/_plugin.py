"""oar-distributed's plugin: the strategies it registers through core's hook."""

from __future__ import annotations

from oar.plugins import Lazy, hookimpl


@hookimpl
def oar_register_distributed_strategies(strategies):
    strategies.register("dp", Lazy("oar.distributed:DataParallel"))
