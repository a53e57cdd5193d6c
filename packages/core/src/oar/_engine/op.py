"""The op: defined once, read by everything.

An ``Op`` is one object holding its name, a meta function (shape and dtype inference), a
reference numpy kernel, a gradient rule written with oar ops, its traits and its AMP category.
Eager execution, tracing, autograd, AMP, graph passes and exporters all read this definition.

Kernels live in the kernel registry (``oar._engine.registries``) under the key (op name,
backend, dtype) with a priority; the reference kernel is registered at priority 0 when the op is
registered, and plugins add faster kernels above it. The eager dispatcher resolves a kernel once
per (backend, dtype) and caches it on the op, so a call is a dict lookup.

How the op is written in another target (numpy writing into a buffer for elementwise fusion, a
numba expression, ONNX) is a *lowering*, declared next to the op with ``@op.lowering(target)`` or
registered by a plugin for an op it does not own (``oar_register_op_lowerings``); both land in one
``(target, op)`` table.

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

from oar._engine import dtypes as _dt
from oar._engine.dispatch import dispatch

# Kernel priorities: the numpy reference is the floor, plugins register above it.
REFERENCE_PRIORITY = 0
PLUGIN_PRIORITY = 100

# AMP categories (Paddle's white / black / gray lists).
AMP_LOW_PRECISION = "low_precision"  # run in float16/bfloat16 under autocast (matmul, conv)
AMP_FP32 = "fp32"  # always run in float32 (exp, log, softmax, losses, reductions)
AMP_PROMOTE = "promote"  # run in the widest dtype among the inputs (elementwise, shape ops)

# The lowering target of core's elementwise fusion: ``fn(*arrays, out=buffer_or_None, **attrs)``
# computes the op into ``out`` when given: a temporary of the chain that dies at this step, which
# may be one of ``arrays`` itself, so the result must not be written before its inputs are read.
NUMPY_OUT = "numpy_out"

KNOWN_TRAITS = frozenset({
    "elementwise",  # output[i] depends on input[i] only (after broadcasting): fusable
    "binary",  # two tensor inputs broadcast against each other
    "reduction",  # reduces over `axis`
    "shape",  # moves or reshapes data, no arithmetic
    "view",  # output is a view of input 0 (Paddle's view ops): in-place writes through it reach input 0
    "alias",  # output may be an input's memory without being a view (flip): it shares its version counter
    "nondiff",  # no gradient: integer/bool outputs, comparisons, argmax, ...
    "random",  # draws from the global generator
    "inplace",  # writes into its first input
    "creation",  # makes a tensor from attributes only
    "fusible",  # elementwise with numpy broadcasting, float in -> same float out: elementwise fusion may chain it
    "complex",  # kernel and gradient rule hold for complex tensors (see COMPLEX): complex64/128 join its dtypes
    "transfer",  # moves its input to the backend named by attribute `device` (to_device): the output lives there
})
# The trait of an op right for complex tensors as it is: numpy's kernel takes them, and the gradient
# rule is linear in the gradient (a reshape, a selection, a sum, a scatter) or conjugates where it
# multiplies by an input. Without it an op refuses complex inputs: its rule may miss a conjugate
# (prod, outer) or need an order complex numbers lack (max, sort, less_than).
COMPLEX = ("complex",)


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


def fmt_shape(shape) -> str:
    """A shape as errors print it: ``[?, 3]`` (``?`` for a dynamic dim)."""
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


class TensorMeta(NamedTuple):
    """What tracing knows about a value: its shape (``None`` for a dynamic dim) and dtype."""

    shape: tuple
    dtype: _dt.DType

    def __repr__(self) -> str:
        return f"{self.dtype.name}{fmt_shape(self.shape)}"


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
        promote: what inputs of different dtypes do (Paddle 3's rules, docs/core.md): ``True`` or
            ``"floats"`` (``PROMOTE_FLOATS``) casts floating inputs to the widest and raises a
            ``DTypeError`` for any other mix; ``"floats_0d"`` also lets a 0-d tensor operand
            follow the scalar rule (add, compare, ...); ``"same"`` raises for any mix (matmul,
            concat). ``False``: the kernel gets the inputs as they are (indices, masks).
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
        lowerings: ``{target: how this op is written there}``, as ``@op.lowering(target)`` adds.
        paddle: the Paddle API names this op serves, where the op's own name is not one of them
            (``conv`` serves ``nn.functional.conv1d``, ``conv2d`` and ``conv3d``); ``()`` for an
            op of programs and gradients only. The op name is what saved programs, passes,
            kernels and lowerings key on: ``docs/ops.md`` lists every op with its Paddle names.
    """

    __slots__ = (
        "name", "reference", "meta", "grad", "traits", "amp", "float_only", "promote", "dtypes",
        "num_outputs", "nondiff_inputs", "view", "aliases", "view_inverse", "per_sample", "lowerings", "paddle", "_kernels", "__weakref__",
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
        promote: bool | str = False,
        dtypes: Iterable[_dt.DType] | None = None,
        num_outputs: int | None = 1,
        nondiff_inputs: Iterable[int] = (),
        per_sample: bool | Callable[[dict, list, list], bool] = False,
        lowerings: dict[str, Any] | None = None,
        paddle: Iterable[str] | None = None,
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
        self.view = "view" in traits
        self.aliases = self.view or "alias" in traits  # read on every eager call: a slot, not a set lookup
        self.view_inverse = None  # set by defview_inverse
        self.amp = amp
        self.float_only = float_only
        promote = _dt.PROMOTE_FLOATS if promote is True else promote or None
        if promote is not None and promote not in _dt.PROMOTION_RULES:
            raise ValueError(f"op {name!r}: unknown promote rule {promote!r}; known: True, {_dt.PROMOTION_RULES}")
        self.promote = promote
        if dtypes is None:  # complex only with the trait that says the op is right for it (COMPLEX)
            dtypes = _dt.ALL_DTYPES if "complex" in traits else _dt.REAL_DTYPES
        self.dtypes = frozenset(dtypes)
        self.num_outputs = num_outputs
        self.nondiff_inputs = frozenset(nondiff_inputs)
        self.per_sample = per_sample
        self.lowerings: dict[str, Any] = dict(lowerings or {})  # target -> how this op is written there
        self.paddle = None if paddle is None else tuple(paddle)
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

    def defview_inverse(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        """Decorator for an op with the ``view`` trait: how an in-place write through its view
        reaches the base, ``rule(base, value, attrs, index) -> Tensor``: ``base`` with the elements
        that output ``index`` views replaced by ``value``, written with oar ops (a ``setitem``, a
        reshape back), so that autograd and to_static record it (``oar._engine.inplace``). A view
        op without one (``broadcast_to``) makes read-only views.
        """
        self.view_inverse = rule
        return rule

    def lowering(self, target: str) -> Callable[[Any], Any]:
        """Decorator: how this op is written in ``target``, registered with the op.

        Core's elementwise fusion reads target ``"numpy_out"``: ``fn(*arrays, out=buffer_or_None,
        **attrs)`` writes the result into ``out`` when given. Other targets are their consumer's
        (oar-numba's ``"numba"``, oar-onnx's ``"onnx"``); ``oar.ops.lowering(target, op_name)``
        reads any of them.
        """

        def register(fn):
            self.lowerings[target] = fn
            return fn

        return register

    def __call__(self, *inputs, **attrs):
        return dispatch(self, inputs, attrs)

    def __repr__(self) -> str:
        return f"<oar op {self.name}>"
