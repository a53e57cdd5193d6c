"""The Python state a capture depends on: what is guarded per call, and what is refused.

A program replays the ops a capture recorded; the Python around them ran once. So that a
program never silently differs from eager, ``oar.jit.api`` uses these pieces:

- ``ValueGuards``: the Python numbers, strings, bools and None (and tuples of them) that the
  captured code can read -- module globals and closure cells of the user functions that ran,
  attributes of their instance and of every sublayer whose ``forward`` names them -- with their
  values at capture. ``hold()`` compares them on every call (one C-level pass over a tuple); a
  changed one (``model.scale = 3.0``, ``GLOBAL_FACTOR = 5``) captures again. The names come from
  the functions' code (``co_names`` of the code and the code nested in it), so a value is guarded
  when the code could read it, whether or not the path taken did.
- ``draws_python_random(fn)``: a call into Python's or numpy's random generators
  (``random.random()``, ``np.random.rand()``, a ``np.random.Generator``'s methods): a program
  would replay the number drawn at capture, so the capture is refused (a graph break at that
  line); ``PythonRandomState`` is the net that notices a draw made where no call was seen.
- ``LayerAttributes``: the attributes, parameters, buffers and sublayers of the layer and its
  sublayers before the capture; one rebound or deleted inside the function (``self.calls += 1``,
  ``self.cache = t``) is a mutation a program would not repeat: refused, naming the line that
  stores it (found in the bytecode of the code that ran).
"""

from __future__ import annotations

import dis
import operator
import random
import types

import numpy as np

from oar._graph.symbolic import SymFloat, SymInt
from oar._graph.tracing import is_user_code

_SCALARS = (bool, int, float, complex, str, bytes, type(None), np.generic)
_MISSING = object()
_cell_contents = operator.attrgetter("cell_contents")
_is = operator.is_
_CODE_NAMES: dict = {}  # code object -> the names it and the code nested in it load or store


def guardable(value, depth: int = 0) -> bool:
    """A value compared by equality each call: a Python scalar, None, or a small tuple of them."""
    if isinstance(value, (SymInt, SymFloat)):
        return False
    if isinstance(value, _SCALARS):
        return True
    return type(value) is tuple and depth < 2 and len(value) <= 16 and all(guardable(v, depth + 1) for v in value)


def code_names(code: types.CodeType) -> frozenset:
    names = _CODE_NAMES.get(code)
    if names is None:
        found = set(code.co_names)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                found |= code_names(const)
        names = _CODE_NAMES[code] = frozenset(found)
    return names


def _function(fn):
    fn = getattr(fn, "dygraph_function", fn)  # a forward made a StaticFunction at class level
    return fn if isinstance(fn, types.FunctionType) else None


class ValueGuards:
    """The Python values a capture may have read, compared on each call (see the module docstring)."""

    __slots__ = ("dicts", "keys", "missing", "expected", "types", "cells", "cell_expected", "cell_types", "names")

    def __init__(self, entries: list, cells: list):
        self.dicts = tuple(d for d, _, _ in entries)
        self.keys = tuple(k for _, k, _ in entries)
        self.missing = (_MISSING,) * len(entries)
        self.expected = tuple(d[k] for d, k, _ in entries)
        self.types = tuple(map(type, self.expected))
        self.cells = tuple(c for c, _ in cells)
        self.cell_expected = tuple(c.cell_contents for c in self.cells)
        self.cell_types = tuple(map(type, self.cell_expected))
        self.names = [what for _, _, what in entries] + [what for _, what in cells]  # for reading, in tests

    @classmethod
    def collect(cls, called, layers) -> ValueGuards | None:
        """Guards for ``called`` ((function, instance or None) that ran) and ``layers`` (the
        layer and its sublayers: their forward's names); None when there is nothing to guard."""
        entries: list = []
        cells: list = []
        seen: set = set()

        def attributes(obj, names) -> None:
            attrs = getattr(obj, "__dict__", None)
            if type(attrs) is not dict:
                return
            for name in names:
                if name in attrs and name != "training" and (id(attrs), name) not in seen \
                        and guardable(attrs[name]):
                    seen.add((id(attrs), name))
                    entries.append((attrs, name, f"{type(obj).__name__}.{name}"))

        for fn, obj in called:
            fn = _function(fn)
            if fn is None:
                continue
            names = code_names(fn.__code__)
            if obj is not None:
                attributes(obj, names)
            if not is_user_code(fn.__code__):  # oar's own module state is not the user's to change
                continue
            module = fn.__globals__
            for name in names:
                if name in module and (id(module), name) not in seen and not name.startswith("__") \
                        and guardable(module[name]):
                    seen.add((id(module), name))
                    entries.append((module, name, f"global {name}"))
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
                try:
                    value = cell.cell_contents
                except ValueError:  # not bound yet
                    continue
                if id(cell) not in seen and guardable(value):
                    seen.add(id(cell))
                    cells.append((cell, f"closure variable {name}"))
        for layer in layers:
            forward = _function(type(layer).__dict__.get("forward") or getattr(type(layer), "forward", None))
            if forward is not None:
                attributes(layer, code_names(forward.__code__))
        if not entries and not cells:
            return None
        return cls(entries, cells)

    def hold(self) -> bool:
        """Whether every guarded value is still the one the capture saw: the same object (one
        C-level pass, the common case), else of the same type and equal."""
        if not all(map(_is, map(dict.get, self.dicts, self.keys, self.missing), self.expected)):
            now = tuple(map(dict.get, self.dicts, self.keys, self.missing))
            if now != self.expected or tuple(map(type, now)) != self.types:
                return False
        if self.cells:
            try:
                now = tuple(map(_cell_contents, self.cells))
            except ValueError:  # a cell emptied (del of a closure variable)
                return False
            return now == self.cell_expected and tuple(map(type, now)) == self.cell_types
        return True


# ------------------------------------------------------------------------------------------
# Python-side randomness
# ------------------------------------------------------------------------------------------
_RANDOM_OWNERS = (random.Random, np.random.RandomState, np.random.Generator, np.random.BitGenerator)


def draws_python_random(fn) -> str | None:
    """The name of ``fn`` when it is Python's or numpy's randomness (``random.random``,
    ``np.random.rand``, a Generator's method, ``np.random.default_rng``), else None."""
    owner = getattr(fn, "__self__", None)
    name = getattr(fn, "__name__", None) or type(fn).__name__
    if isinstance(owner, random.Random):
        return f"random.{name}"
    if isinstance(owner, _RANDOM_OWNERS):
        return f"numpy.random.{name}" if isinstance(owner, np.random.RandomState) else \
            f"numpy.random.{type(owner).__name__}.{name}"
    module = getattr(fn, "__module__", None)
    if isinstance(module, str) and (module == "random" or module.startswith("numpy.random")):
        return f"{'random' if module == 'random' else 'numpy.random'}.{name}"
    return None


class PythonRandomState:
    """The states of Python's and numpy's global generators, to tell whether a capture drew from
    them (the net under ``draws_python_random``) and to put them back after a dry capture."""

    def __init__(self):
        self.python = random.getstate()
        self.numpy = np.random.get_state()

    def changed(self) -> bool:
        name, keys, pos, has_gauss, gauss = np.random.get_state()
        _, keys0, pos0, has_gauss0, gauss0 = self.numpy
        return random.getstate() != self.python or pos != pos0 or has_gauss != has_gauss0 or gauss != gauss0 or \
            not np.array_equal(keys, keys0)

    def restore(self) -> None:
        random.setstate(self.python)
        np.random.set_state(self.numpy)


# ------------------------------------------------------------------------------------------
# attributes of the layer and its sublayers rebound inside the function
# ------------------------------------------------------------------------------------------
_STORES = ("_parameters", "_buffers", "_sub_layers")
_STORE_OPS = {"STORE_ATTR", "DELETE_ATTR"}


def _stores(layer) -> list[dict]:
    own = getattr(layer, "__dict__", None)
    if type(own) is not dict:
        return []
    return [own] + [own[s] for s in _STORES if type(own.get(s)) is dict]


class LayerAttributes:
    """What the layer and its sublayers hold before a capture (each store shallowly copied)."""

    def __init__(self, layers):
        self.saved = [(layer, [(store, dict(store)) for store in _stores(layer)]) for layer in layers]

    def changed(self) -> tuple | None:
        """(layer, attribute name) of the first attribute rebound, added or deleted, or None."""
        for layer, stores in self.saved:
            for store, before in stores:
                if len(store) != len(before) or any(store.get(k, _MISSING) is not v for k, v in before.items()):
                    names = [k for k in before.keys() | store.keys()
                             if store.get(k, _MISSING) is not before.get(k, _MISSING)]
                    return layer, sorted(names)[0]
        return None

    def restore(self) -> None:
        for _, stores in self.saved:
            for store, before in stores:
                store.clear()
                store.update(before)


def store_location(name: str, functions) -> tuple[str, int] | None:
    """(file, line) of the first ``obj.<name> = ...`` (or ``del``) in ``functions``' code."""
    for fn in functions:
        fn = _function(fn)
        if fn is None:
            continue
        stack = [fn.__code__]
        while stack:
            code = stack.pop()
            for ins in dis.get_instructions(code):
                if ins.opname in _STORE_OPS and ins.argval == name and ins.positions is not None:
                    return code.co_filename, ins.positions.lineno
            stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return None


def layer_methods(layer) -> list:
    """The functions of ``layer``'s class and its bases, each class's ``forward`` first."""
    found = []
    for cls in type(layer).__mro__:
        if cls is object:
            continue
        forward = cls.__dict__.get("forward")
        found += [forward] if forward is not None else []
        found += [v for k, v in cls.__dict__.items() if k != "forward" and isinstance(v, types.FunctionType)]
    return found


__all__ = ["ValueGuards", "guardable", "draws_python_random", "PythonRandomState", "LayerAttributes",
           "store_location", "layer_methods", "code_names"]
