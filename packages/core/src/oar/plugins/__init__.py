"""oar's plugin system: markers, the manager, the registries, and what plugin authors subclass.

Plugin authors read ``oar.hookspecs`` (the manual) and ``docs/plugins.md``; an op's author also
``oar.ops``, a pass's ``oar.static.passes``.

>>> import oar.plugins
>>> "add" in oar.plugins.registries().ops
True
"""

from __future__ import annotations

import pluggy

from oar._engine.device import Backend
from oar._engine.dispatch import Mode
from oar._engine.op import AMP_FP32, AMP_LOW_PRECISION, AMP_PROMOTE, Op, TensorMeta
from oar._engine.registries import (
    PLUGIN_PRIORITY,
    REFERENCE_PRIORITY,
    KernelRegistry,
    Lazy,
    LoweringRegistry,
    OpRegistry,
    Registries,
    Registry,
    ThreadControls,
)
from oar.plugins._manager import (
    BUILTIN_PLUGINS,
    ENTRY_POINT_GROUP,
    PluginInfo,
    get_manager,
    load_plugins,
    plugin_infos,
    register,
    registries,
    unregister,
)

hookimpl = pluggy.HookimplMarker("oar")
from oar.hookspecs import hookspec  # noqa: E402 - after hookimpl, the order pluggy documents


def __getattr__(name: str):
    # ``Pass`` lives with the static graph (oar.static.passes); it is reached from here on first use
    # so that importing oar.plugins (every plugin does) does not import the graph.
    if name == "Pass":
        from oar.static.passes import Pass  # deferred (import time): the static graph loads with it

        return Pass
    raise AttributeError(f"module 'oar.plugins' has no attribute {name!r}")


__all__ = [
    "hookimpl", "hookspec", "Op", "TensorMeta", "Backend", "Mode", "Registry", "OpRegistry", "KernelRegistry",
    "LoweringRegistry", "ThreadControls", "Lazy", "Registries", "PluginInfo", "registries", "load_plugins",
    "plugin_infos", "register", "unregister", "get_manager", "ENTRY_POINT_GROUP", "BUILTIN_PLUGINS", "AMP_FP32",
    "AMP_LOW_PRECISION", "AMP_PROMOTE", "PLUGIN_PRIORITY", "REFERENCE_PRIORITY",
]
