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
- ``deprecated(update_to, since, reason, level)``: mark an API deprecated, as Paddle's decorator:
  a notice at the top of its docstring; with ``level=1`` a ``VisibleDeprecationWarning`` on each
  call (once the running version reaches ``since``), with ``level=2`` a RuntimeError.
- ``require_version(min_version, max_version)``: fail unless the Paddle API oar implements
  (``PADDLE_API_VERSION``, 3.3.1) is in the range -- code written for Paddle asks about Paddle's
  API, so that is what it is compared with, not oar's own version.
- ``try_import(module_name, err_msg)``: import a module, or raise an ImportError naming the pip
  package that provides it.
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

import functools
import importlib
import inspect
import re
import types
import warnings
from collections.abc import Callable, Iterable

from oar._engine.serialization import atomic_file as atomic_file
from oar.errors import ArgumentError
from oar.utils.convert_paddle import convert_paddle as convert_paddle
from oar.utils.install_check import run_check as run_check

# The Paddle release whose public API oar follows: what require_version and deprecated compare with.
PADDLE_API_VERSION = "3.3.1"
# Modules whose pip package has another name (Paddle's try_import knows cv2 alone).
_PIP_NAMES = {"cv2": "opencv-python", "PIL": "pillow", "sklearn": "scikit-learn", "yaml": "pyyaml"}
_VERSION_FORMAT = re.compile(r"\d+(\.\d+){0,3}")


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


__all__ = [
    "atomic_file", "convert_paddle", "lazy_exports", "public_dir", "run_check", "deprecated", "require_version",
    "try_import", "VisibleDeprecationWarning", "PADDLE_API_VERSION",
]


class VisibleDeprecationWarning(UserWarning):
    """A deprecation warning Python shows by default (a DeprecationWarning is hidden outside
    ``__main__``), as Paddle's."""


def _version_parts(version: str) -> list[int]:
    parts = [int(part) for part in version.split(".") if part.isdigit()]
    return parts + [0] * (4 - len(parts))


def deprecated(update_to: str = "", since: str = "", reason: str = "", level: int = 0):
    """Mark a function or class deprecated, as ``paddle.utils.deprecated``.

    The docstring gains a warning naming the replacement ``update_to`` (an ``oar.``/``paddle.``
    name), the version ``since`` and the ``reason``. ``level`` 0 does only that; 1 also warns
    (``VisibleDeprecationWarning``) on every call once the Paddle API version reaches ``since``
    (always without ``since``); 2 makes every call raise a RuntimeError.

    >>> import warnings
    >>> from oar.utils import deprecated
    >>> @deprecated(update_to="oar.add", since="2.0", reason="use add", level=1)
    ... def plus(a, b):
    ...     return a + b
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     plus(1, 2), caught[0].category.__name__
    (3, 'VisibleDeprecationWarning')
    """
    for arg, value in (("update_to", update_to), ("since", since), ("reason", reason)):
        if not isinstance(value, str):
            raise ArgumentError(f"deprecated: {arg} must be a str, got {type(value).__name__}")
    if isinstance(level, bool) or not isinstance(level, int) or level not in (0, 1, 2):
        raise ArgumentError(f"deprecated: level must be 0, 1 or 2, got {level!r}")
    since, update_to, reason = since.strip(), update_to.strip(), reason.strip()
    if update_to and not update_to.startswith(("oar.", "paddle.")):
        raise ArgumentError(f"deprecated: update_to must name an API starting with 'oar.' or 'paddle.', got "
                            f"{update_to!r}")

    def decorator(func):
        message = f'API "{func.__module__}.{func.__name__}" is deprecated'
        message += f" since {since}" if since else ""
        message += ", and will be removed in future versions."
        message += f' Please use "{update_to}" instead.' if update_to else ""
        message += f"\n    Reason: {reason}" if reason else ""
        if func.__doc__:
            func.__doc__ = "\n\nWarning:\n    " + message + "\n\n" + inspect.cleandoc(func.__doc__)
        if level == 0:
            return func
        warns = not since or _version_parts(PADDLE_API_VERSION) >= _version_parts(since)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            if level == 2:
                raise RuntimeError(f'API "{func.__module__}.{func.__name__}" has been deprecated.')
            if warns:
                warnings.warn(f"\nWarning:\n{message}", category=VisibleDeprecationWarning, stacklevel=2)
            return func(*args, **kwargs)

        return wrapper

    return decorator


def require_version(min_version: str, max_version: str | None = None) -> None:
    """Raise unless the Paddle API oar implements (``PADDLE_API_VERSION``) is at least
    ``min_version`` and at most ``max_version``; versions are ``'2'`` to ``'2.5.1.0'``.

    >>> from oar.utils import require_version
    >>> require_version("2.0", "3.4")
    >>> require_version("4.0")
    Traceback (most recent call last):
    ...
    RuntimeError: VersionError: PaddlePaddle version 4.0 or higher is required, but oar implements 3.3.1's API
    """
    for arg, value in (("min_version", min_version), ("max_version", max_version)):
        if value is None and arg == "max_version":
            continue
        if not isinstance(value, str):
            raise TypeError(f"require_version: '{arg}' must be a str, but received {type(value).__name__}")
        match = _VERSION_FORMAT.match(value)
        if match is None or match.group() != value:
            raise ArgumentError(f"require_version: '{arg}' must be in format '\\d+(\\.\\d+){{0,3}}', like "
                                f"'1.5.2.0', but received {value!r}")
    installed = _version_parts(PADDLE_API_VERSION)
    if max_version is not None:
        if not _version_parts(min_version) <= installed <= _version_parts(max_version):
            raise RuntimeError(f"VersionError: PaddlePaddle version in [{min_version}, {max_version}] required, but "
                               f"oar implements {PADDLE_API_VERSION}'s API")
    elif installed < _version_parts(min_version):
        raise RuntimeError(f"VersionError: PaddlePaddle version {min_version} or higher is required, but oar "
                           f"implements {PADDLE_API_VERSION}'s API")


def try_import(module_name: str, err_msg: str | None = None) -> types.ModuleType:
    """Import ``module_name``, or raise an ImportError saying which pip package to install
    (``err_msg`` replaces that message).

    >>> from oar.utils import try_import
    >>> try_import("json").__name__
    'json'
    >>> try_import("no_such_module.sub")
    Traceback (most recent call last):
    ...
    ImportError: Failed importing no_such_module.sub: it is an optional dependency, install it with `pip install no_such_module`
    """
    top = module_name.split(".")[0]
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        message = err_msg or (f"Failed importing {module_name}: it is an optional dependency, install it with "
                              f"`pip install {_PIP_NAMES.get(top, top)}`")
        raise ImportError(message) from exc
