"""The op: defined once, read by everything.

An ``Op`` is one object holding its name, a meta function (shape and dtype inference), a
reference numpy kernel, a gradient rule written with oar ops, its traits and its AMP category.
Eager execution, tracing, autograd, AMP, graph passes and exporters all read this definition.

Kernels live in the ``KernelRegistry`` under the key (op name, backend, dtype) with a priority;
the reference kernel is registered at priority 0 when the op is registered, and plugins add
faster kernels above it. The eager dispatcher resolves a kernel once per (backend, dtype) and
caches it on the op, so a call is a dict lookup.

Example -- an op and its gradient, side by side::

    exp = Op("exp", reference=np.exp, meta=same_meta, traits={"elementwise"}, float_only=True)

    @exp.defgrad
    def _exp_grad(ctx, g):
        return g * ctx.out
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import numpy as np

from oar._core import dtypes as _dt
from oar._core.registry import Registry, current_source, ensure_plugins_loaded
from oar.errors import DTypeError, RegistryError

# Kernel priorities: the numpy reference is the floor, plugins register above it.
REFERENCE_PRIORITY = 0
PLUGIN_PRIORITY = 100

# AMP categories (Paddle's white / black / gray lists).
AMP_LOW_PRECISION = "low_precision"  # run in float16/bfloat16 under autocast (matmul, conv)
AMP_FP32 = "fp32"  # always run in float32 (exp, log, softmax, losses, reductions)
AMP_PROMOTE = "promote"  # run in the widest dtype among the inputs (elementwise, shape ops)

KNOWN_TRAITS = frozenset({
    "elementwise",  # output[i] depends on input[i] only (after broadcasting): fusable
    "binary",  # two tensor inputs broadcast against each other
    "reduction",  # reduces over `axis`
    "shape",  # moves or reshapes data, no arithmetic
    "view",  # output may alias the input's memory
    "nondiff",  # no gradient: integer/bool outputs, comparisons, argmax, ...
    "random",  # draws from the global generator
    "inplace",  # writes into its first input
    "creation",  # makes a tensor from attributes only
})


def same_samples(attrs: dict, in_shapes: list, out_shapes: list) -> bool:
    """The ``per_sample`` rule of reshapes (reshape, flatten, squeeze, unsqueeze): the first dim
    is the batch (dynamic) before and after, and the rest are static with as many elements, so
    that each sample's elements stay together, in order."""
    before, after = in_shapes[0], out_shapes[0]
    if not before or not after or before[0] is not None or after[0] is not None:
        return False
    if None in before[1:] or None in after[1:]:
        return False
    return math.prod(before[1:]) == math.prod(after[1:])


def axis_not_batch(attr: str) -> Callable[[dict, list, list], bool]:
    """The ``per_sample`` rule of an op that works along the axis named by attribute ``attr``
    (softmax's ``axis``, layer norm's ``begin_norm_axis``): per sample unless that axis is the
    first, the batch's."""

    def rule(attrs: dict, in_shapes: list, out_shapes: list) -> bool:
        return attrs[attr] % len(in_shapes[0]) != 0

    return rule


class TensorMeta(NamedTuple):
    """What tracing knows about a value: its shape (``None`` for a dynamic dim) and dtype."""

    shape: tuple
    dtype: _dt.DType

    def __repr__(self) -> str:
        dims = ", ".join("?" if d is None else str(d) for d in self.shape)
        return f"{self.dtype.name}[{dims}]"


class Op:
    """One operation of oar; calling it dispatches through the active mode (eager, tracing, ...).

    Arguments:
        name: unique name, also the key of its kernels and of IR nodes.
        reference: numpy kernel ``(*arrays, **attrs) -> array | tuple[array, ...]``.
        meta: ``(*TensorMeta, **attrs) -> TensorMeta | tuple[TensorMeta, ...]``; raises an
            ``oar.errors`` exception naming the argument when the inputs do not fit.
        traits: a subset of ``KNOWN_TRAITS``.
        amp: the AMP category (``"low_precision"``, ``"fp32"`` or ``"promote"``).
        float_only: integer and bool inputs compute in the default float dtype.
        promote: tensor inputs are cast to their common dtype (``PROMOTION_TABLE``) first.
        dtypes: dtypes the reference kernel supports natively; other float dtypes compute in
            float32 and are cast back.
        num_outputs: number of outputs (``None``: the kernel returns a variable-length tuple).
        nondiff_inputs: indices of inputs that never get a gradient (indices, masks).
        per_sample: whether sample ``i`` (index ``i`` of the first dim) of every output depends
            on sample ``i`` of the first input alone, the other inputs being the same for every
            sample (weights, a bias): True, or ``rule(attrs, in_shapes, out_shapes) -> bool``
            for ops where the attributes decide (an axis other than 0). Elementwise ops are per
            sample by their trait. The executor runs the batch of an inference program whose
            ops are all per sample in parts on several threads (``Executor``).
    """

    __slots__ = (
        "name", "reference", "meta", "grad", "traits", "amp", "float_only", "promote", "dtypes",
        "num_outputs", "nondiff_inputs", "view", "per_sample", "_kernels", "__weakref__",
    )

    def __init__(
        self,
        name: str,
        *,
        reference: Callable[..., Any],
        meta: Callable[..., Any],
        grad: Callable[..., Any] | None = None,
        traits: Iterable[str] = (),
        amp: str = AMP_PROMOTE,
        float_only: bool = False,
        promote: bool = False,
        dtypes: Iterable[_dt.DType] | None = None,
        num_outputs: int | None = 1,
        nondiff_inputs: Iterable[int] = (),
        per_sample: bool | Callable[[dict, list, list], bool] = False,
    ):
        traits = frozenset(traits)
        unknown = traits - KNOWN_TRAITS
        if unknown:
            raise ValueError(f"op {name!r}: unknown traits {sorted(unknown)}; known: {sorted(KNOWN_TRAITS)}")
        if amp not in (AMP_LOW_PRECISION, AMP_FP32, AMP_PROMOTE):
            raise ValueError(f"op {name!r}: unknown AMP category {amp!r}")
        if not (isinstance(per_sample, bool) or callable(per_sample)):
            raise ValueError(f"op {name!r}: per_sample must be True, False or a rule "
                             f"(attrs, in_shapes, out_shapes) -> bool, got {per_sample!r}")
        self.name = name
        self.reference = reference
        self.meta = meta
        self.grad = grad
        self.traits = traits
        self.view = "view" in traits  # read on every eager call: a slot, not a set lookup
        self.amp = amp
        self.float_only = float_only
        self.promote = promote
        self.dtypes = frozenset(dtypes) if dtypes is not None else frozenset(_dt.ALL_DTYPES)
        self.num_outputs = num_outputs
        self.nondiff_inputs = frozenset(nondiff_inputs)
        self.per_sample = per_sample
        self._kernels: dict[tuple[str, np.dtype], Callable[..., Any]] = {}

    @property
    def differentiable(self) -> bool:
        return "nondiff" not in self.traits

    def defgrad(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        """Decorator: set the gradient rule ``rule(ctx, *out_grads) -> grad | tuple[grad | None, ...]``.

        ``ctx.inputs``, ``ctx.outputs`` (``ctx.out`` for the first), ``ctx.attrs`` and
        ``ctx.needs_input_grad`` are available; write the rule with oar ops so that it runs on
        every backend and can be differentiated again.
        """
        self.grad = rule
        return rule

    def __call__(self, *inputs, **attrs):
        from oar._core.dispatch import dispatch

        return dispatch(self, inputs, attrs)

    def __repr__(self) -> str:
        return f"<oar op {self.name}>"


class OpRegistry(Registry):
    """All ops by name. Registering an op also registers its reference kernel on ``cpu``."""

    def __init__(self, kernels: KernelRegistry):
        super().__init__("op")
        self._kernel_registry = kernels

    def add(self, op: Op, *, override: bool = False) -> Op:
        """Register ``op`` (an ``Op``) and its reference kernel."""
        if not isinstance(op, Op):
            raise RegistryError(f"op registry: expected an oar Op, got {type(op).__name__}")
        self.register(op.name, op, override=override)
        self._kernel_registry.register(
            op.name, "cpu", op.reference, dtypes=op.dtypes, priority=REFERENCE_PRIORITY
        )
        return op

    def remove_source(self, source: str) -> None:
        super().remove_source(source)


class KernelEntry(NamedTuple):
    priority: int
    dtypes: frozenset | None
    fn: Callable[..., Any]
    source: str


class KernelRegistry:
    """Kernels keyed by (op name, backend, dtype), each with a priority; the highest wins.

    >>> import numpy as np
    >>> from oar.plugins import registries
    >>> kernels = registries().kernels
    >>> kernels.register("exp", "cpu", np.exp, dtypes=["float32"], priority=50)  # doctest: +SKIP
    """

    def __init__(self):
        self._table: dict[tuple[str, str], list[KernelEntry]] = {}
        self._ops: OpRegistry | None = None

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

    def _invalidate(self, op_name: str) -> None:
        if self._ops is not None:
            op = self._ops._entries.get(op_name)
            if op is not None:
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
        return sorted({f"{op}@{backend}" for (op, backend), es in self._table.items() for e in es if e.source == source})

    def remove_source(self, source: str) -> None:
        for key, entries in self._table.items():
            kept = [e for e in entries if e.source != source]
            if len(kept) != len(entries):
                entries[:] = kept
                self._invalidate(key[0])


def _cast_outputs(out, np_dtype):
    if isinstance(out, tuple):
        return tuple(o.astype(np_dtype) if o.dtype.kind == "f" else o for o in out)
    return out.astype(np_dtype) if out.dtype.kind == "f" else out


def resolve_kernel(op: Op, backend: str, np_dtype: np.dtype) -> Callable[..., Any]:
    """Find the kernel for (op, backend, dtype), wrapping it for dtypes it computes in another.

    Called on a cache miss only; the result is cached on the op.
    """
    from oar._core.dispatch import KERNELS, OPS

    if op.name not in OPS._entries:
        ensure_plugins_loaded()
        if op.name not in OPS._entries:
            raise RegistryError(
                f"op {op.name!r} is not registered: the package that defines it did not register it "
                f"through the 'oar' plugin entry points (is it installed with pip, and not blocked by "
                f"OAR_DISABLE_PLUGINS?)"
            )
    dtype = _dt.NP_TO_DTYPE.get(np_dtype)
    if dtype is None:
        raise DTypeError(f"op {op.name!r}: unsupported dtype {np_dtype}")
    entry = KERNELS.lookup(op.name, backend, dtype)
    if entry is not None:
        kernel = entry.fn
    elif op.float_only and not dtype.is_floating:
        # Integer and bool inputs of float math (exp, sin, mean, ...) compute in the default float.
        inner = resolve_kernel(op, backend, _dt.default_float().np)
        target = _dt.default_float().np

        def kernel(*arrays, **attrs):
            return inner(*(a.astype(target) for a in arrays), **attrs)
    elif dtype in (_dt.float16, _dt.bfloat16) and KERNELS.lookup(op.name, backend, _dt.float32):
        inner = KERNELS.lookup(op.name, backend, _dt.float32).fn

        def kernel(*arrays, **attrs):
            up = (a.astype(np.float32) if a.dtype == np_dtype else a for a in arrays)
            return _cast_outputs(inner(*up, **attrs), np_dtype)
    else:
        supported = sorted({d.name for e in KERNELS.candidates(op.name, backend) for d in (e.dtypes or _dt.ALL_DTYPES)})
        if not supported:
            backends = KERNELS.backends_of(op.name)
            raise DTypeError(
                f"op {op.name!r} has no kernel on backend {backend!r} (it has kernels on {backends}); "
                f"install the plugin that provides {backend!r} kernels"
            )
        raise DTypeError(f"op {op.name!r} does not support dtype {dtype.name}; supported: {supported}")
    op._kernels[(backend, np_dtype)] = kernel
    return kernel
