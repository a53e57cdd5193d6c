"""Every registry oar has, each a single instance here, filled by plugins through the hooks.

``oar.hookspecs`` says what each registry holds; ``oar.plugins.registries()`` hands them out.
Every entry remembers which plugin registered it (``source``), so that ``python -m oar plugins``
can say what each plugin added and a plugin that fails halfway can be removed cleanly.

Reading a registry first makes sure the plugins are loaded (once, lazily): importing oar loads no
plugin; the first lookup does. The loader is not known here: the plugin manager, which sits above
the engine, hands it in (``set_plugin_loader``), so the engine never imports upward.

An entry may be *lazy*: ``Lazy("package.module:attribute")`` stands for an object that is imported
on first use, so that a plugin can register a pass, a serving backend or a strategy without
importing the module (and its dependencies) behind it until someone asks for it.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, fields
from typing import Any, Generic, NamedTuple, TypeVar

from oar._engine import dtypes as _dt
from oar._engine.op import Op
from oar.errors import RegistryError

# Kernel priorities: the numpy reference is the floor, plugins register above it.
REFERENCE_PRIORITY = 0
PLUGIN_PRIORITY = 100

# -- which plugin is registering, and loading the plugins ------------------------------------------
_sources = ["oar"]  # registrations made outside any plugin's hooks
_loader: Callable[[], Any] | None = None
_loaded = False


def current_source() -> str:
    """The plugin whose registration hooks are running now."""
    return _sources[-1]


@contextlib.contextmanager
def registering_as(source: str):
    """Attribute the registrations made inside to plugin ``source`` (the plugin manager's use)."""
    _sources.append(source)
    try:
        yield
    finally:
        _sources.pop()


def set_plugin_loader(loader: Callable[[], Any]) -> None:
    """Set what ``ensure_plugins_loaded`` calls the first time (``oar/__init__.py`` does)."""
    global _loader
    _loader = loader


def mark_plugins_loaded() -> None:
    """Called by the plugin manager as it starts loading: lookups from inside a plugin's hooks
    must not start a second load."""
    global _loaded
    _loaded = True


def ensure_plugins_loaded() -> None:
    """Load the entry-point plugins if that has not happened yet (cheap when it has)."""
    if not _loaded and _loader is not None:
        _loader()


class Lazy:
    """An entry imported on first use: ``Lazy("my_package.passes:fuse_foo")``.

    >>> from oar._engine.registries import Lazy
    >>> Lazy("json:dumps").resolve()([1])
    '[1]'
    """

    __slots__ = ("target",)

    def __init__(self, target: str):
        module, sep, attr = target.partition(":")
        if not sep or not module or not attr:
            raise RegistryError(f"a lazy entry names 'package.module:attribute', got {target!r}")
        self.target = target

    def resolve(self) -> Any:
        module, _, attr = self.target.partition(":")
        value: Any = importlib.import_module(module)
        for part in attr.split("."):
            value = getattr(value, part)
        return value

    def __repr__(self) -> str:
        return f"Lazy({self.target!r})"


T = TypeVar("T")


class Registry(Generic[T]):
    """A name -> object table of one extension point (layers, passes, strategies, ...).

    >>> from oar.plugins import registries
    >>> "dead_code_elimination" in registries().passes
    True
    """

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, Any] = {}
        self._sources: dict[str, str] = {}

    def register(self, name: str, obj: T | Lazy, *, override: bool = False) -> T | Lazy:
        """Add ``obj`` (or a ``Lazy`` reference to it) under ``name``; a second registration of a
        name needs ``override=True``."""
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

    def _resolved(self, name: str) -> Any:
        obj = self._entries[name]
        if type(obj) is Lazy:
            source = self._sources[name]
            try:
                target = obj.resolve()
            except (ImportError, AttributeError) as exc:
                raise RegistryError(
                    f"{self.kind} {name!r}, registered by plugin {source!r} as {obj!r}, cannot be imported: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            with registering_as(source):
                obj = self._resolve(name, target)
        return obj

    def _resolve(self, name: str, obj: Any) -> Any:
        """Put the imported object of a lazy entry in its place (subclasses may check it)."""
        self._entries[name] = obj
        return obj

    def get(self, name: str) -> T:
        ensure_plugins_loaded()
        if name not in self._entries:
            known = ", ".join(sorted(self._entries)) or "none"
            raise RegistryError(f"no {self.kind} named {name!r} is registered (registered: {known})")
        return self._resolved(name)

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

    def items(self) -> list[tuple[str, T]]:
        """Every entry, lazy ones imported."""
        ensure_plugins_loaded()
        return [(name, self._resolved(name)) for name in list(self._entries)]

    def __repr__(self) -> str:
        return f"<{self.kind} registry: {len(self._entries)} entries>"


class KernelEntry(NamedTuple):
    priority: int
    dtypes: frozenset | None
    fn: Callable[..., Any]
    source: str


class KernelRegistry:
    """Kernels keyed by (op name, backend, dtype), each with a priority; the highest wins.

    An op may also have *alternatives* for the same key (``register_alternative``): other ways to
    compute the same result (another loop order, numpy's path beside a compiled one) that
    ``oar.incubate.autotune`` times against the winning kernel on the shapes a model runs. The
    lookup never sees them: with autotune off (no ``tuner``) nothing on the eager path changes.

    >>> import numpy as np
    >>> from oar.plugins import registries
    >>> kernels = registries().kernels
    >>> kernels.register("exp", "cpu", np.exp, dtypes=["float32"], priority=50)  # doctest: +SKIP
    """

    def __init__(self):
        self._table: dict[tuple[str, str], list[KernelEntry]] = {}
        self._alternatives: dict[tuple[str, str], list[tuple[str, KernelEntry]]] = {}
        self._ops: OpRegistry | None = None
        # Called on a cache miss of an op with alternatives (``eager.resolve_kernel``), when set:
        # tuner(op name, backend, dtype, [(name, fn), ...]) -> the kernel to cache.
        self.tuner: Callable[..., Callable[..., Any]] | None = None

    def register(
        self,
        op: str,
        backend: str,
        fn: Callable[..., Any],
        *,
        dtypes: Iterable[Any] | None = None,
        priority: int = PLUGIN_PRIORITY,
    ) -> Callable[..., Any]:
        """Register ``fn`` as the kernel of ``op`` on ``backend`` for ``dtypes`` (all if None)."""
        dts = frozenset(_dt.get_dtype(d) for d in dtypes) if dtypes is not None else None
        entries = self._table.setdefault((op, backend), [])
        entries.append(KernelEntry(priority, dts, fn, current_source()))
        entries.sort(key=lambda e: -e.priority)
        self._invalidate(op)
        return fn

    def register_alternative(
        self,
        op: str,
        backend: str,
        fn: Callable[..., Any],
        *,
        name: str,
        dtypes: Iterable[Any] | None = None,
    ) -> Callable[..., Any]:
        """Register ``fn`` as another way to compute ``op`` on ``backend`` for ``dtypes`` (all if
        None): same arguments, same results within the dtype's rounding, for every input the op
        takes. ``name`` identifies it in autotune's cache file (``"<plugin>.<path>"``)."""
        dts = frozenset(_dt.get_dtype(d) for d in dtypes) if dtypes is not None else None
        self._alternatives.setdefault((op, backend), []).append(
            (name, KernelEntry(PLUGIN_PRIORITY, dts, fn, current_source())))
        self._invalidate(op)
        return fn

    def alternatives(self, op: str, backend: str, dtype: _dt.DType) -> list[tuple[str, Callable[..., Any]]]:
        """The alternatives of ``op`` on ``backend`` for ``dtype`` as (name, kernel), the kernel
        ``lookup`` finds first (named ``"default"``); empty when the op has no alternative."""
        ensure_plugins_loaded()
        found = [(n, e.fn) for n, e in self._alternatives.get((op, backend), ())
                 if e.dtypes is None or dtype in e.dtypes]
        default = self.lookup(op, backend, dtype)
        return [("default", default.fn), *found] if found and default is not None else []

    def ops_with_alternatives(self) -> list[str]:
        ensure_plugins_loaded()
        return sorted({op for (op, _), entries in self._alternatives.items() if entries})

    def set_tuner(self, tuner: Callable[..., Callable[..., Any]] | None) -> None:
        """Install (or, with None, remove) autotune's ``tuner``; the ops with alternatives forget
        their cached kernels so that the next call resolves them again."""
        self.tuner = tuner
        for op in self.ops_with_alternatives():
            self._invalidate(op)

    def _invalidate(self, op_name: str) -> None:
        if self._ops is not None:
            op = self._ops._entries.get(op_name)
            if isinstance(op, Op):  # (a lazy entry never imported has no cached lookups)
                op._kernels.clear()

    def candidates(self, op: str, backend: str) -> list[KernelEntry]:
        ensure_plugins_loaded()
        return list(self._table.get((op, backend), ()))

    def lookup(self, op: str, backend: str, dtype: _dt.DType) -> KernelEntry | None:
        """The highest-priority kernel of ``op`` on ``backend`` that supports ``dtype``, or None."""
        for entry in self.candidates(op, backend):
            if entry.dtypes is None or dtype in entry.dtypes:
                return entry
        return None

    def backends_of(self, op: str) -> list[str]:
        return sorted({b for (o, b) in self._table if o == op})

    def names_from(self, source: str) -> list[str]:
        return sorted({f"{op}@{backend}" for (op, backend), es in self._table.items() for e in es if e.source == source}
                      | {f"{op}@{backend}:{n}" for (op, backend), es in self._alternatives.items()
                         for n, e in es if e.source == source})

    def remove_source(self, source: str) -> None:
        for key, entries in self._table.items():
            kept = [e for e in entries if e.source != source]
            if len(kept) != len(entries):
                entries[:] = kept
                self._invalidate(key[0])
        for key, named in self._alternatives.items():
            kept_named = [(n, e) for n, e in named if e.source != source]
            if len(kept_named) != len(named):
                named[:] = kept_named
                self._invalidate(key[0])


class LoweringRegistry(Registry):
    """How each op is written in each target, keyed ``"<target>:<op name>"``: one table for core's
    elementwise fusion (``"numpy_out"``), oar-numba's fused loops (``"numba"``), ONNX export, ...

    >>> from oar.plugins import registries
    >>> registries().lowerings.find("numpy_out", "add")  # doctest: +ELLIPSIS
    <ufunc 'add'>
    """

    def __init__(self):
        super().__init__("op lowering")

    def add(self, target: str, op_name: str, fn: Any, *, override: bool = False) -> Any:
        """Register ``fn`` as how op ``op_name`` is written in ``target``."""
        return self.register(f"{target}:{op_name}", fn, override=override)

    def find(self, target: str, op_name: str) -> Any | None:
        """The lowering of ``op_name`` in ``target``, or None where there is none."""
        key = f"{target}:{op_name}"
        ensure_plugins_loaded()
        return self._resolved(key) if key in self._entries else None

    def ops_for(self, target: str) -> list[str]:
        """The ops that have a lowering in ``target``."""
        ensure_plugins_loaded()
        prefix = f"{target}:"
        return sorted(k[len(prefix):] for k in self._entries if k.startswith(prefix))


class OpRegistry(Registry):
    """All ops by name. Registering an op also registers its reference kernel on ``cpu`` and the
    lowerings declared with it (``Op.lowering``)."""

    def __init__(self, kernels: KernelRegistry, lowerings: LoweringRegistry):
        super().__init__("op")
        self._kernel_registry = kernels
        self._lowerings = lowerings
        kernels._ops = self

    def add(self, op: Op | Lazy, *, name: str | None = None, override: bool = False) -> Op | Lazy:
        """Register ``op`` (an ``Op``, or ``Lazy("module:attr")`` with its ``name``) and its
        reference kernel; a lazy op is imported when first looked up."""
        if type(op) is Lazy:
            if not name:
                raise RegistryError(f"op registry: a lazy op needs its name ({op!r})")
            return self.register(name, op, override=override)
        if not isinstance(op, Op):
            raise RegistryError(f"op registry: expected an oar Op, got {type(op).__name__}")
        self.register(op.name, op, override=override)
        self._register_parts(op)
        return op

    def _register_parts(self, op: Op) -> None:
        self._kernel_registry.register(op.name, "cpu", op.reference, dtypes=op.dtypes, priority=REFERENCE_PRIORITY)
        for target, fn in op.lowerings.items():
            self._lowerings.add(target, op.name, fn, override=True)

    def _resolve(self, name: str, obj: Any) -> Any:
        if not isinstance(obj, Op) or obj.name != name:
            raise RegistryError(f"op registry: the lazy op {name!r} resolved to {obj!r}, not the Op {name!r}")
        self._entries[name] = obj
        self._register_parts(obj)
        return obj

    def lookup(self, name: str) -> Op | None:
        """The op ``name`` (imported if lazy), or None where none is registered."""
        ensure_plugins_loaded()
        return self._resolved(name) if name in self._entries else None


class ThreadControls(Registry):
    """Thread controls by name: ``fn(n: int) -> None`` sets one pool's thread count."""

    def __init__(self):
        super().__init__("thread control")
        self.num_threads: int | None = None  # the last count set by oar.set_num_threads

    def register(self, name: str, obj: Callable[[int], Any], *, override: bool = False) -> Any:
        super().register(name, obj, override=override)
        if self.num_threads is not None:
            obj(self.num_threads)
        return obj


@dataclass(frozen=True)
class Registries:
    """Every registry a registration hook receives; ``oar.plugins.registries()`` returns it."""

    backends: Registry
    ops: OpRegistry
    kernels: KernelRegistry
    layers: Registry
    passes: Registry
    amp: Registry
    lowerings: LoweringRegistry
    strategies: Registry
    serving_backends: Registry
    config_groups: Registry
    thread_controls: ThreadControls

    def all(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


KERNELS = KernelRegistry()
LOWERINGS = LoweringRegistry()
OPS = OpRegistry(KERNELS, LOWERINGS)
BACKENDS = Registry("backend")
PASSES = Registry("pass")
AMP_CATEGORIES = Registry("AMP category")
THREAD_CONTROLS = ThreadControls()

REGISTRIES = Registries(
    backends=BACKENDS,
    ops=OPS,
    kernels=KERNELS,
    layers=Registry("layer"),
    passes=PASSES,
    amp=AMP_CATEGORIES,
    lowerings=LOWERINGS,
    strategies=Registry("distributed strategy"),
    serving_backends=Registry("serving backend"),
    config_groups=Registry("config group"),
    thread_controls=THREAD_CONTROLS,
)


def amp_category(op: Op | str) -> str:
    """The AMP category of ``op`` (an ``Op`` or its name): a plugin's override registered with
    ``oar_register_amp_categories`` when there is one, else the category the op declares.

    >>> from oar.ops import amp_category
    >>> amp_category("matmul"), amp_category("exp"), amp_category("add")
    ('low_precision', 'fp32', 'promote')
    """
    name = op if isinstance(op, str) else op.name
    if name in AMP_CATEGORIES:
        return AMP_CATEGORIES.get(name)
    found = op if isinstance(op, Op) else OPS.get(name)
    return found.amp
