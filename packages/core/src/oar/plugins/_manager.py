"""The plugin manager: builtin plugins, entry points of the group ``oar``, tracing and blocking."""

from __future__ import annotations

import os
import sys
import threading
import warnings
from dataclasses import dataclass, field
from importlib import import_module
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any

import pluggy

from oar import hookspecs
from oar._engine import registries as _registry
from oar._engine.registries import REGISTRIES, Registries
from oar._version import __version__
from oar.errors import PluginError, PluginWarning

ENTRY_POINT_GROUP = "oar"
BUILTIN_PLUGINS = {"oar.core": "oar._builtin"}  # name -> module, registered like any plugin


def _hook_kwargs(r: Registries) -> dict[str, dict[str, Any]]:
    """The keyword argument of each registration hook (``oar.hookspecs``): the registry it fills."""
    return {
        "oar_register_backends": {"backends": r.backends},
        "oar_register_ops": {"ops": r.ops},
        "oar_register_kernels": {"kernels": r.kernels},
        "oar_register_layers": {"layers": r.layers},
        "oar_register_passes": {"passes": r.passes},
        "oar_register_amp_categories": {"amp": r.amp},
        "oar_register_op_lowerings": {"lowerings": r.lowerings},
        "oar_register_distributed_strategies": {"strategies": r.strategies},
        "oar_register_serving_backends": {"serving_backends": r.serving_backends},
        "oar_register_config_groups": {"config_groups": r.config_groups},
        "oar_register_thread_controls": {"thread_controls": r.thread_controls},
    }


@dataclass
class PluginInfo:
    """What ``python -m oar plugins`` shows for one plugin."""

    name: str
    version: str
    module: str
    status: str = "loaded"  # "loaded", "blocked" or "failed"
    error: str = ""
    registered: dict[str, list[str]] = field(default_factory=dict)


_lock = threading.RLock()
_manager: pluggy.PluginManager | None = None
_registries = REGISTRIES
_infos: dict[str, PluginInfo] = {}


def registries() -> Registries:
    """oar's registries (ops, kernels, backends, layers, passes, ...), plugins loaded."""
    _registry.ensure_plugins_loaded()
    return _registries


def _disabled_names() -> set[str]:
    return {n.strip() for n in os.environ.get("OAR_DISABLE_PLUGINS", "").split(",") if n.strip()}


def _new_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager("oar")
    pm.add_hookspecs(hookspecs)
    if os.environ.get("OAR_TRACE_PLUGINS", "") not in ("", "0"):
        pm.trace.root.setwriter(lambda message: sys.stderr.write(f"[oar plugins] {message}"))
        pm.enable_tracing()
    # Historic calls made before any plugin is registered: each plugin registered afterwards is
    # called with the remembered registries, one plugin at a time, so entries know their source.
    for hook_name, kwargs in _hook_kwargs(_registries).items():
        getattr(pm.hook, hook_name).call_historic(kwargs=kwargs)
    return pm


def _registered_by(name: str) -> dict[str, list[str]]:
    found = {}
    for kind, reg in _registries.all().items():
        names = reg.names_from(name)
        if names:
            found[kind] = names
    return found


def _remove_registrations(name: str) -> None:
    removed_ops = [op for op in map(_registries.ops._entries.get, _registries.ops.names_from(name))
                   if hasattr(op, "_kernels")]  # (a lazy op never imported has no cached lookups)
    for reg in _registries.all().values():
        reg.remove_source(name)
    # A removed op may still hold its cached kernel lookups (the kernel registry clears the cache of
    # ops that are still registered only); without this its Op object would keep running.
    for op in removed_ops:
        op._kernels.clear()


def register(plugin: Any, name: str | None = None, version: str = "") -> None:
    """Register a plugin object or module now (its historic hooks run at once).

    >>> import types, oar
    >>> p = types.ModuleType("my_plugin")
    >>> oar.plugins.register(p, name="my_plugin")  # doctest: +SKIP
    """
    manager = load_plugins()
    name = name or getattr(plugin, "__name__", None) or repr(plugin)
    if manager.get_plugin(name) is not None:  # the failure path below would remove the existing one
        raise PluginError(f"a plugin named {name!r} is already registered; unregister it first or choose another name")
    _register_one(name, plugin, version, module=getattr(plugin, "__name__", type(plugin).__name__))


def unregister(name: str) -> None:
    """Remove a plugin and everything it registered."""
    with _lock:
        if _manager is not None and _manager.get_plugin(name) is not None:
            _manager.unregister(name=name)
        _remove_registrations(name)
        _infos.pop(name, None)


def _register_one(name: str, plugin: Any, version: str, module: str) -> bool:
    assert _manager is not None
    try:
        with _registry.registering_as(name):
            _manager.register(plugin, name=name)
    except Exception as exc:  # a broken plugin must not take the others down
        if _manager.get_plugin(name) is not None:
            _manager.unregister(name=name)
        _remove_registrations(name)
        _infos[name] = PluginInfo(name, version, module, "failed", f"{type(exc).__name__}: {exc}")
        warnings.warn(
            f"oar: plugin {name!r} ({module}) failed to register and was skipped: "
            f"{type(exc).__name__}: {exc}",
            PluginWarning,
            stacklevel=3,
        )
        return False
    _infos[name] = PluginInfo(name, version, module, "loaded", "", _registered_by(name))
    return True


def load_plugins() -> pluggy.PluginManager:
    """Load oar's builtin plugins and the entry points of group ``oar`` (once; later calls return)."""
    global _manager
    if _manager is not None:
        return _manager
    with _lock:
        if _manager is not None:
            return _manager
        _manager = _new_manager()
        _registry.mark_plugins_loaded()  # lookups from inside plugin hooks must not recurse
        blocked = _disabled_names()
        for name, module_name in BUILTIN_PLUGINS.items():
            _register_one(name, import_module(module_name), __version__, module_name)
        for ep in _entry_points():
            version = ep.dist.version if getattr(ep, "dist", None) is not None else ""
            if ep.name in blocked:
                _manager.set_blocked(ep.name)
                _infos[ep.name] = PluginInfo(ep.name, version, ep.value, "blocked", "OAR_DISABLE_PLUGINS")
                continue
            if _manager.get_plugin(ep.name) is not None or ep.name in _infos:
                continue
            try:
                plugin = ep.load()
            except Exception as exc:
                _infos[ep.name] = PluginInfo(ep.name, version, ep.value, "failed", f"{type(exc).__name__}: {exc}")
                warnings.warn(
                    f"oar: plugin {ep.name!r} ({ep.value}) failed to load and was skipped: "
                    f"{type(exc).__name__}: {exc}",
                    PluginWarning,
                    stacklevel=2,
                )
                continue
            _register_one(ep.name, plugin, version, ep.value)
        return _manager


def _entry_points():
    seen = set()
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        if ep.name not in seen:  # an editable and a regular install of one package: load once
            seen.add(ep.name)
            yield ep


def plugin_infos() -> list[PluginInfo]:
    """Every plugin oar knows: loaded, blocked or failed, with what each registered."""
    load_plugins()
    for info in _infos.values():
        if info.status == "loaded":
            info.registered = _registered_by(info.name)
    return list(_infos.values())


def get_manager() -> pluggy.PluginManager:
    return load_plugins()


def _module_of(plugin: Any) -> str:
    return plugin.__name__ if isinstance(plugin, ModuleType) else type(plugin).__name__
