"""From a Python function to its converted twin: source, tree, rewrite, compile, rebuild.

The converted function is compiled from the rewritten *tree* (``compile(tree, filename, "exec")``,
never from a string) with the user's line numbers, inside a maker function whose parameters are
the original's free variables and the runtime name ``__oar_jst``. It is then rebuilt around the
original's own globals, defaults and closure cells, so that it reads and writes the same module
globals and enclosing variables, and ``super()`` finds its ``__class__`` cell. The converted code
reaches the runtime helpers (``oar.jit.dy2static.runtime``) and ``convert_call`` through that one
name.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import logging
import os
import sys
import sysconfig
import textwrap
import types
import weakref

from oar.jit._guards import draws_python_random
from oar.jit.dy2static import runtime
from oar.jit.dy2static import transformer as _t
from oar.jit.dy2static.transformer import RUNTIME, Unsupported

_MAKER = _t.PREFIX + "make"
_NOT_CONVERTED = object()

# code object -> (converted code, why not) ; function -> converted function
_CODE_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_FUNCTION_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_SKIPPED_DIRS: list[str] = []
ENABLED = [True]  # oar.jit.enable_to_static sets it: False runs every to_static function eagerly
# oar.jit.set_verbosity / set_code_level set these: what convert_function logs to the "oar.jit" logger.
LOG_OPTIONS = {"verbosity": 0, "verbosity_to_stdout": False, "code_level": 0, "code_to_stdout": False}
_LOGGER = logging.getLogger("oar.jit")


class StaticFunctionBase:
    """What ``convert_call`` recognises: ``oar.jit``'s ``StaticFunction`` (defined above this
    module, which must not import it) derives from it and holds ``dygraph_function`` and
    ``_instance``."""

    dygraph_function = None
    _instance = None


def _skipped_dirs() -> tuple[str, ...]:
    """oar's own packages, the standard library and installed packages: not user code."""
    if not _SKIPPED_DIRS:  # every distribution's oar/ folder (the namespace's __path__)
        dirs = [os.path.abspath(p) for p in sys.modules["oar"].__path__]
        paths = sysconfig.get_paths()
        dirs += [os.path.abspath(paths[k]) for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths]
        _SKIPPED_DIRS.extend(d + os.sep for d in dirs)
    return tuple(_SKIPPED_DIRS)


def is_user_function(fn) -> bool:
    """A plain Python function that is neither oar's, nor the standard library's or an installed
    package's, nor marked ``oar.jit.not_to_static``."""
    if not isinstance(fn, types.FunctionType) or getattr(fn, "_oar_not_to_static", False):
        return False
    if RUNTIME in fn.__code__.co_freevars:  # defined inside converted code: converted with it
        return False
    filename = fn.__code__.co_filename
    if filename.startswith("<frozen"):
        return False
    # ``<stdin>``, ``<string>``: no source to read (conversion says so); notebook cells have one.
    return filename.startswith("<") or not os.path.abspath(filename).startswith(_skipped_dirs())


def why_not_converted(fn) -> str | None:
    """Why ``fn`` runs unconverted (None when it converts)."""
    entry = _CODE_CACHE.get(fn.__code__) if isinstance(fn, types.FunctionType) else None
    return entry[1] if entry is not None else None


def convert_function(fn):
    """The converted twin of the user function ``fn``, or ``fn`` itself when it cannot be
    converted (no source, an unsupported construct, not user code; ``why_not_converted`` says
    which). Outside a capture the twin behaves exactly as ``fn``.

    >>> def sign(x):
    ...     return 1 if x > 0 else -1
    >>> convert_function(sign)(-3)  # doctest: +SKIP
    -1
    """
    if not is_user_function(fn):
        return fn
    try:
        cached = _FUNCTION_CACHE.get(fn)
    except TypeError:
        return fn
    if cached is not None:
        return fn if cached is _NOT_CONVERTED else cached
    code, why = _converted_code(fn)
    converted = _NOT_CONVERTED if code is None else _rebuild(fn, code)
    _FUNCTION_CACHE[fn] = converted
    if LOG_OPTIONS["verbosity"] > 0 or LOG_OPTIONS["code_level"] > 0:
        _log_conversion(fn, why)
    return fn if converted is _NOT_CONVERTED else converted


def _log_conversion(fn, why: str | None) -> None:
    """What set_verbosity / set_code_level ask for: whether ``fn`` converted, and its new code."""
    name = f"{fn.__qualname__} ({fn.__code__.co_filename}:{fn.__code__.co_firstlineno})"
    messages = []
    if LOG_OPTIONS["verbosity"] > 0:
        messages.append((LOG_OPTIONS["verbosity_to_stdout"],
                         f"converted {name}" if why is None else f"not converted {name}: {why}"))
    if LOG_OPTIONS["code_level"] > 0 and why is None:
        messages.append((LOG_OPTIONS["code_to_stdout"], f"converted code of {name}:\n{converted_source(fn)}"))
    for to_stdout, message in messages:
        _LOGGER.info(message)
        if to_stdout:
            print(message)


def _converted_code(fn) -> tuple[types.CodeType | None, str | None]:
    entry = _CODE_CACHE.get(fn.__code__)
    if entry is None:
        try:
            entry = (_compile(fn), None)
        except Unsupported as e:
            entry = (None, str(e))
        _CODE_CACHE[fn.__code__] = entry
    return entry


def _compile(fn) -> types.CodeType:
    code = fn.__code__
    module = _converted_tree(fn)
    module_code = compile(module, code.co_filename, "exec", dont_inherit=True)
    namespace: dict = {"__builtins__": builtins}
    # Runs only the generated ``def`` of the maker (a code object compiled from the tree above).
    exec(module_code, namespace)  # noqa: S102
    inner = namespace[_MAKER](*([None] * (1 + len(code.co_freevars))))
    return inner.__code__


def _converted_tree(fn) -> ast.Module:
    """The rewritten function inside its maker, as a module tree with the user's line numbers."""
    code = fn.__code__
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        raise Unsupported("a generator or coroutine")
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise Unsupported(f"its source is not available ({e})") from None
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except SyntaxError:  # a lambda or a def whose source lines are not a statement on their own
        raise Unsupported("its source does not parse on its own (a lambda?)") from None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef) or tree.body[0].name != code.co_name:
        raise Unsupported("its source is not one def statement (a lambda?)")
    ast.increment_lineno(tree, first - 1)
    fdef = tree.body[0]
    # Decorators, defaults and annotations were evaluated when the original was defined; the
    # converted function takes the original's objects.
    fdef.decorator_list = []
    fdef.returns = None
    fdef.args.defaults = []
    fdef.args.kw_defaults = [None] * len(fdef.args.kwonlyargs)
    for a in ast.walk(fdef.args):
        if isinstance(a, ast.arg):
            a.annotation = None
    owner = _mangling_class(fdef, code)
    if owner is not None:
        _t.mangle_private_names(fdef, owner)
    for node in ast.walk(fdef):
        if isinstance(node, ast.Name) and node.id.startswith(_t.PREFIX):
            raise Unsupported(f"the name {node.id} (the prefix {_t.PREFIX} is reserved)", node)
    _t.note_outer_stores(fdef)
    if "__class__" in code.co_freevars:
        _explicit_super(fdef)
    _t.ExpressionTransformer().visit(fdef)
    shadowed = "range" in code.co_freevars or "range" in fn.__globals__ or "range" in code.co_varnames
    _t.FunctionConverter(shadowed_range=shadowed).convert(fdef)
    maker_args = [ast.arg(arg=RUNTIME)] + [ast.arg(arg=n) for n in code.co_freevars]
    maker = ast.FunctionDef(
        name=_MAKER,
        args=ast.arguments(posonlyargs=[], args=maker_args, vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                           defaults=[]),
        body=[fdef, ast.Return(value=ast.Name(id=fdef.name, ctx=ast.Load()))], decorator_list=[], returns=None,
        type_comment=None)
    ast.copy_location(maker, fdef)
    module = ast.Module(body=[maker], type_ignores=[])
    ast.fix_missing_locations(module)
    return module


def _explicit_super(fdef: ast.FunctionDef) -> None:
    """``super()`` -> ``super(__class__, self)``: the zero-argument form finds its arguments in
    the frame that calls it, which in converted code may be a generated branch function."""
    positional = [*fdef.args.posonlyargs, *fdef.args.args]
    for node in _t.walk_scope(fdef.body):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super" \
                and not node.args and not node.keywords:
            if not positional:
                raise Unsupported("super() in a function without arguments", node)
            node.args = [ast.Name(id="__class__", ctx=ast.Load()), ast.Name(id=positional[0].arg, ctx=ast.Load())]


def _mangling_class(fdef: ast.FunctionDef, code: types.CodeType) -> str | None:
    """The class whose private-name mangling (``self.__x`` -> ``self._Cls__x``) the original was
    compiled with, read off its bytecode's names; None when it uses no private name."""
    private = {n for node in ast.walk(fdef) for n in _identifiers(node)
               if n.startswith("__") and not n.endswith("__")}
    if not private:
        return None
    names: set[str] = set()
    stack = [code]
    while stack:
        c = stack.pop()
        names.update(c.co_names, c.co_varnames, c.co_freevars, c.co_cellvars)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    for p in private:
        for n in names:
            if n.endswith(p) and n.startswith("_") and len(n) > len(p) + 1 and not n.startswith("__"):
                return n[1:-len(p)]
    return None


def _identifiers(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.arg):
        return [node.arg]
    return []


def _rebuild(fn, code: types.CodeType):
    original = fn.__code__.co_freevars
    cells = []
    for name in code.co_freevars:
        if name == RUNTIME:
            cells.append(types.CellType(_runtime_namespace()))
        elif name in original:
            cells.append(fn.__closure__[original.index(name)])
        else:  # cannot happen: the rewrite adds no free variable of its own
            raise Unsupported(f"converted code needs the free variable {name}")
    new = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, tuple(cells) or None)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    new.__doc__ = fn.__doc__
    new.__dict__.update(fn.__dict__)
    return new


def converted_source(fn) -> str:
    """The converted code of ``fn`` as Python source, to read (it is never run as text); raises
    ``ValueError`` saying why when ``fn`` cannot be converted.

    >>> def f(x):
    ...     return x if x > 0 else -x
    >>> print(converted_source(f))  # doctest: +SKIP
    """
    try:
        maker = _converted_tree(fn).body[0]
    except Unsupported as e:
        raise ValueError(f"{getattr(fn, '__qualname__', fn)} is not converted: {e}") from None
    return ast.unparse(maker.body[0])


def convert_call(fn):
    """``fn`` converted when it is a user function (or method, or a user Layer's forward) called
    while a function is captured; ``fn`` itself otherwise. The user functions are listed in the
    tracer's ``called`` (to_static guards the Python values they read); a call into Python's or
    numpy's random generators breaks the graph at its line."""
    tracer = runtime._tracer()
    if tracer is None or not ENABLED[0]:
        return fn
    drawn = draws_python_random(fn)
    if drawn is not None:
        tracer.break_graph(f"the function calls {drawn}(), Python-side randomness that a program would replay as "
                           f"the number drawn at capture; use oar.rand / oar.randn / oar.randint (drawn anew on "
                           f"every call)")
        return fn
    if isinstance(fn, StaticFunctionBase):
        inner = convert_function(fn.dygraph_function)
        inst = fn._instance
        tracer.note_call(fn.dygraph_function, inst)
        return inner if inst is None else types.MethodType(inner, inst)
    if isinstance(fn, types.FunctionType):
        if is_user_function(fn):
            tracer.note_call(fn, None)
        return convert_function(fn)
    if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType):
        if is_user_function(fn.__func__):
            tracer.note_call(fn.__func__, fn.__self__)
        inner = convert_function(fn.__func__)
        return fn if inner is fn.__func__ else types.MethodType(inner, fn.__self__)
    forward = getattr(type(fn), "forward", None)
    if isinstance(forward, StaticFunctionBase):
        forward = forward.dygraph_function
    if isinstance(forward, types.FunctionType) and callable(getattr(fn, "named_parameters", None)) \
            and is_user_function(forward) and not inspect.isclass(fn):
        tracer.note_call(forward, fn)
        converted = convert_function(forward)
        if converted is not forward:
            return _LayerCall(fn, converted)
    return fn


class _LayerCall:
    """Calls a Layer (its hooks included) with its forward converted, for this call only."""

    __slots__ = ("layer", "forward")

    def __init__(self, layer, forward):
        self.layer, self.forward = layer, forward

    def __call__(self, *args, **kwargs):
        layer = self.layer
        had = "forward" in layer.__dict__
        saved = layer.__dict__.get("forward")
        layer.__dict__["forward"] = types.MethodType(self.forward, layer)
        try:
            return layer(*args, **kwargs)
        finally:
            if had:
                layer.__dict__["forward"] = saved
            else:
                del layer.__dict__["forward"]


_RUNTIME_NAMESPACE: list = []


def _runtime_namespace() -> types.SimpleNamespace:
    """What ``__oar_jst`` is in converted code: the runtime helpers and ``convert_call``."""
    if not _RUNTIME_NAMESPACE:
        helpers = {name: getattr(runtime, name) for name in runtime.__all__}
        _RUNTIME_NAMESPACE.append(types.SimpleNamespace(**helpers, convert_call=convert_call))
    return _RUNTIME_NAMESPACE[0]


__all__ = ["convert_function", "convert_call", "is_user_function", "why_not_converted", "converted_source"]
