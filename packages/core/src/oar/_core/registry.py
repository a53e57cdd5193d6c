"""Registries that plugins fill through the registration hooks.

Every entry remembers which plugin registered it (``source``), so that ``python -m oar plugins``
can say what each plugin added and a plugin that fails halfway can be removed cleanly.
Reading a registry first makes sure the plugins are loaded (once, lazily): importing oar loads
no plugin; the first lookup does.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from oar.errors import RegistryError

# The plugin whose registration hooks are running now; set by the plugin manager.
_current_source = ["oar"]
_plugins_loaded = [False]


def current_source() -> str:
    return _current_source[-1]


def ensure_plugins_loaded() -> None:
    """Load the entry-point plugins if that has not happened yet (cheap when it has)."""
    if not _plugins_loaded[0]:
        from oar.plugins._manager import load_plugins

        load_plugins()


class Registry:
    """A name -> object table of one extension point (layers, passes, strategies, ...).

    >>> from oar.plugins import registries
    >>> "dead_code_elimination" in registries().passes  # doctest: +SKIP
    True
    """

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, Any] = {}
        self._sources: dict[str, str] = {}

    def register(self, name: str, obj: Any, *, override: bool = False) -> Any:
        """Add ``obj`` under ``name``; a second registration of a name needs ``override=True``."""
        if not isinstance(name, str) or not name:
            raise RegistryError(f"{self.kind} registry: name must be a non-empty string, got {name!r}")
        if name in self._entries and not override:
            raise RegistryError(
                f"{self.kind} {name!r} is already registered by plugin {self._sources[name]!r}; "
                f"pass override=True to replace it"
            )
        self._entries[name] = obj
        self._sources[name] = current_source()
        return obj

    def get(self, name: str) -> Any:
        ensure_plugins_loaded()
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries)) or "none"
            raise RegistryError(f"no {self.kind} named {name!r} is registered (registered: {known})") from None

    def source_of(self, name: str) -> str:
        return self._sources[name]

    def names_from(self, source: str) -> list[str]:
        return [n for n, s in self._sources.items() if s == source]

    def remove_source(self, source: str) -> None:
        for name in self.names_from(source):
            del self._entries[name]
            del self._sources[name]

    def __contains__(self, name: object) -> bool:
        ensure_plugins_loaded()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        ensure_plugins_loaded()
        return iter(list(self._entries))

    def __len__(self) -> int:
        ensure_plugins_loaded()
        return len(self._entries)

    def items(self):
        ensure_plugins_loaded()
        return list(self._entries.items())

    def __repr__(self) -> str:
        return f"<{self.kind} registry: {len(self._entries)} entries>"
