"""``oar.jit``: dynamic to static -- capture eager code into a Program, run it, save it, load it.

>>> import oar
>>> from oar.static import InputSpec
>>> @oar.jit.to_static(input_spec=[InputSpec([None, 2], name="x")])
... def f(x):
...     return oar.tanh(x) * 3.0
>>> f(oar.zeros([4, 2])).shape
[4, 2]

``TranslatedLayer`` (what ``jit.load`` returns) is an ``oar.nn.Layer`` when oar-nn is installed;
it resolves on first use, so importing oar.jit never imports oar.nn.

``ignore_module(modules)`` makes ``to_static`` call the functions defined in those modules as
plain Python instead of converting them (oar's own packages, the standard library and installed
packages are never converted already). ``set_verbosity(level)`` logs, to the ``"oar.jit"``
logger at INFO, each function the converter meets and whether it converted (or why not);
``set_code_level(level)`` logs the converted code. Paddle's code levels pick one of its AST
transformers; oar rewrites in one step, so any level above 0 shows the final code. Both take
effect for functions converted afterwards (conversions are cached).
"""

import os
import types

from oar._graph.tracing import GraphBreakError as GraphBreakError
from oar.jit._save_load import load as load
from oar.jit._save_load import save as save
from oar.jit.api import StaticFunction as StaticFunction
from oar.jit.api import enable_to_static as enable_to_static
from oar.jit.api import not_to_static as not_to_static
from oar.jit.api import to_static as to_static
from oar.jit.dy2static import convert as _convert
from oar.jit.translated_layer import translated_layer_class

__all__ = ["to_static", "not_to_static", "enable_to_static", "save", "load", "TranslatedLayer", "StaticFunction",
           "GraphBreakError", "ignore_module", "set_code_level", "set_verbosity"]


def ignore_module(modules: list[types.ModuleType]) -> None:
    """Run the functions defined in ``modules`` (a module, or a package and everything under it)
    as Python under ``to_static``, without converting them.

    >>> import oar, json
    >>> oar.jit.ignore_module([json])
    """
    skipped = _convert._skipped_dirs()
    for module in modules:
        if not isinstance(module, types.ModuleType):
            raise TypeError(f"ignore_module: expected a list of modules, got {type(module).__name__}")
        paths = list(getattr(module, "__path__", None) or [])  # a package: its folders
        if not paths and getattr(module, "__file__", None):
            paths = [module.__file__]
        for path in paths:
            path = os.path.abspath(path) + (os.sep if os.path.isdir(path) else "")
            if path not in skipped:
                _convert._SKIPPED_DIRS.append(path)


def set_verbosity(level: int = 0, also_to_stdout: bool = False) -> None:
    """Log which functions ``to_static`` converts (level > 0) to the ``"oar.jit"`` logger, and to
    stdout with ``also_to_stdout``; 0 turns it off.

    >>> import oar
    >>> oar.jit.set_verbosity(0)
    """
    if isinstance(level, bool) or not isinstance(level, int):
        raise TypeError(f"set_verbosity: level must be an int, got {type(level).__name__}")
    _convert.LOG_OPTIONS.update(verbosity=level, verbosity_to_stdout=bool(also_to_stdout))


def set_code_level(level: int = 100, also_to_stdout: bool = False) -> None:
    """Log the code ``to_static`` converts each function to (level > 0; oar's conversion is one
    step, so every positive level shows the final code), as ``set_verbosity`` does.

    >>> import oar
    >>> oar.jit.set_code_level(0)
    """
    if isinstance(level, bool) or not isinstance(level, int):
        raise TypeError(f"set_code_level: level must be an int, got {type(level).__name__}")
    _convert.LOG_OPTIONS.update(code_level=level, code_to_stdout=bool(also_to_stdout))


def __getattr__(name: str):
    if name == "TranslatedLayer":
        cls = translated_layer_class()
        globals()["TranslatedLayer"] = cls
        return cls
    raise AttributeError(f"module 'oar.jit' has no attribute {name!r}")
