"""oar's plugin system: markers, the manager, the registries, and what plugin authors subclass.

Plugin authors read ``oar.hookspecs`` (the manual) and ``docs/plugins.md``.

>>> import oar.plugins
>>> "add" in oar.plugins.registries().ops
True
"""

from __future__ import annotations

import pluggy

from oar._core.dispatch import Backend, Mode
from oar._core.op import (
    AMP_FP32,
    AMP_LOW_PRECISION,
    AMP_PROMOTE,
    PLUGIN_PRIORITY,
    REFERENCE_PRIORITY,
    KernelRegistry,
    Op,
    OpRegistry,
    TensorMeta,
)
from oar._core.passes import Pass
from oar._core.registry import Registry
from oar.plugins._manager import (
    ENTRY_POINT_GROUP,
    PluginInfo,
    Registries,
    get_manager,
    load_plugins,
    plugin_infos,
    register,
    registries,
    unregister,
)

hookimpl = pluggy.HookimplMarker("oar")
from oar.hookspecs import hookspec  # noqa: E402 - after hookimpl, the order pluggy documents

__all__ = [
    "hookimpl", "hookspec", "Op", "Pass", "TensorMeta", "Backend", "Mode", "Registry", "OpRegistry",
    "KernelRegistry", "Registries", "PluginInfo", "registries", "load_plugins", "plugin_infos",
    "register", "unregister", "get_manager", "ENTRY_POINT_GROUP", "AMP_FP32", "AMP_LOW_PRECISION",
    "AMP_PROMOTE", "PLUGIN_PRIORITY", "REFERENCE_PRIORITY",
]
