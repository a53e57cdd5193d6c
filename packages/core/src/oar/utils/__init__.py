"""``oar.utils``: helpers for code built on oar, as ``paddle.utils``.

- ``atomic_file(path, mode)``: write a file so that readers see the old content or the whole new
  content, never a part (a temporary file in the same folder, fsync, rename): what ``oar.save``
  and ``oar.jit.save`` use, for callbacks and tools that write their own files.
- ``lazy_exports(namespace, exports)``: the ``__getattr__`` and ``__dir__`` of a package whose
  names load on first use (PEP 562): what a distribution whose plugin registers on every
  program's first op uses, so that registering imports none of its machinery.

>>> import os, tempfile
>>> from oar.utils import atomic_file
>>> path = os.path.join(tempfile.mkdtemp(), "notes.txt")
>>> with atomic_file(path, "w", encoding="utf-8") as f:
...     _ = f.write("done")
>>> open(path, encoding="utf-8").read()
'done'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from oar._engine.serialization import atomic_file as atomic_file


def lazy_exports(namespace: dict, exports: dict[str, list[str]]) -> tuple[Callable, Callable]:
    """``(__getattr__, __dir__)`` for a package whose public names load on first use.

    ``namespace`` is the package's ``globals()``; ``exports`` maps a module to the names it
    gives. A name is imported from its module when first read and kept in the namespace; a name
    that is not listed but is a submodule of the package is imported as one.

    >>> import types
    >>> package = types.ModuleType("example")
    >>> package.__getattr__, package.__dir__ = lazy_exports(vars(package), {"json": ["dumps"]})
    >>> package.dumps([1])
    '[1]'
    >>> "dumps" in package.__dir__()
    True
    """
    module_of = {name: module for module, names in exports.items() for name in names}
    package = namespace.get("__name__", "")

    def __getattr__(name: str):
        module = module_of.get(name)
        if module is None:
            try:
                value = importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        else:
            value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *module_of})

    return __getattr__, __dir__


__all__ = ["atomic_file", "lazy_exports"]
