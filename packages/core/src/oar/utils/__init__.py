"""``oar.utils``: helpers for code built on oar, as ``paddle.utils``.

- ``atomic_file(path, mode)``: write a file so that readers see the old content or the whole new
  content, never a part (a temporary file in the same folder, fsync, rename): what ``oar.save``
  and ``oar.jit.save`` use, for callbacks and tools that write their own files.
- ``convert_paddle(src, dst)``: turn a ``paddle.save`` checkpoint (a pickle) into a file of
  ``oar.save``'s format without executing anything in it (also ``python -m oar.utils.convert_paddle``).
- ``lazy_exports(namespace, exports)``: the ``__getattr__`` and ``__dir__`` of a package whose
  names load on first use (PEP 562): what a distribution whose plugin registers on every
  program's first op uses, so that registering imports none of its machinery.
- ``public_dir(namespace, subpackages)``: the ``__dir__`` of a package that lists its public API
  only, not the modules its imports bind on the way or ``annotations``.
- ``run_check()``: train a tiny model on every available device and say whether oar works, as
  ``paddle.utils.run_check()`` (``python -m oar doctor`` reports the rest of an install).

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
import types
from collections.abc import Callable, Iterable

from oar._engine.serialization import atomic_file as atomic_file
from oar.utils.convert_paddle import convert_paddle as convert_paddle
from oar.utils.install_check import run_check as run_check


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
        return sorted({*(name for name, value in namespace.items() if not _is_future_feature(value)), *module_of})

    return __getattr__, __dir__


def _is_future_feature(value: object) -> bool:
    """``annotations`` and the like, which ``from __future__ import ...`` binds in a module."""
    return type(value).__module__ == "__future__"


def public_dir(namespace: dict, subpackages: Iterable[str] = (), hide: Iterable[str] = ()) -> Callable[[], list[str]]:
    """The ``__dir__`` of a package that shows its public API only: the names in ``namespace`` (the
    package's ``globals()``, read at each call, so names bound later show too) that do not start with an
    underscore, less ``annotations`` and the modules the package's own imports bound on the way (such as
    ``oar.nn.layer``), except the public ``subpackages`` named, and less the names in ``hide`` (public to
    oar's own packages, not to users).

    >>> import types
    >>> package = types.ModuleType("example")
    >>> exec("from __future__ import annotations\\nimport json, json.decoder\\nfrom json import dumps", vars(package))
    >>> package.__dir__ = public_dir(vars(package), subpackages=["json"])
    >>> dir(package)
    ['dumps', 'json']
    """
    shown, hidden = set(subpackages), set(hide)

    def __dir__() -> list[str]:
        return sorted(name for name, value in namespace.items() if not name.startswith("_") and name not in hidden
                      and not _is_future_feature(value) and (not isinstance(value, types.ModuleType) or name in shown))

    return __dir__


__all__ = ["atomic_file", "convert_paddle", "lazy_exports", "public_dir", "run_check"]
