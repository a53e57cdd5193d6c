"""``fused_elementwise``: a chain of fusible elementwise ops run as one op.

The elementwise-fusion pass (``oar._graph.fusion``) turns connected elementwise nodes into one
node of this op; its ``chain`` attribute lists the steps as plain JSON data::

    %5: float32[8, 16] = fused_elementwise(%x, %b) {chain: [['scale', [0], {...}], ['add', [2, 1], {}],
                                                             ['tanh', [3], {}]]}

Each step is ``[op name, argument indices, attributes]``: indices below the number of inputs
name the node's inputs, the others earlier steps (input count + step index); the last step is
the result. A step's op must carry the ``fusible`` trait (numpy broadcasting, a float result in
the inputs' dtype); all inputs share one float dtype.

The reference kernel evaluates the chain with numpy, writing into a dying temporary where a
step's ``numpy_out`` lowering allows it (one buffer for the whole chain in the common case) and
calling the step op's reference kernel otherwise; the oar-numba plugin compiles one loop per
distinct chain. The gradient is the chain re-run with its own ops, differentiated by autograd.
"""

from __future__ import annotations

import numpy as np

from oar._engine.autograd import enable_grad, grad
from oar._engine.dispatch import dispatch
from oar._engine.op import NUMPY_OUT, Op, TensorMeta
from oar._engine.registries import LOWERINGS
from oar._engine.registries import OPS as REGISTERED
from oar.errors import ArgumentError, DTypeError


def _step_op(name: str, k: int) -> Op:
    op = REGISTERED.lookup(name)
    if op is None or "fusible" not in op.traits:
        fusible = sorted(n for n, o in REGISTERED.items() if "fusible" in o.traits)
        raise ArgumentError(f"fused_elementwise: step {k} names op {name!r}, which is not fusible; "
                            f"fusible ops: {fusible}")
    return op


def check_chain(chain, n_inputs: int) -> None:
    """Raise unless ``chain`` is a list of steps over fusible ops reading earlier values only."""
    if not isinstance(chain, (list, tuple)) or not chain:
        raise ArgumentError("fused_elementwise: chain must be a non-empty list of [op, args, attrs] steps")
    for k, step in enumerate(chain):
        name, args, _ = step
        _step_op(name, k)
        if not all(isinstance(a, int) and 0 <= a < n_inputs + k for a in args):
            raise ArgumentError(f"fused_elementwise: step {k} ({name}) reads {list(args)}, but only values "
                                f"0..{n_inputs + k - 1} exist before it")


def check_dtypes(arrays) -> None:
    """Raise unless the arrays share one dtype (what the pass fuses; steps then keep it)."""
    dtype = arrays[0].dtype if arrays else None
    for a in arrays:
        if a.dtype != dtype:
            raise DTypeError(f"fused_elementwise: every input must have one float dtype, got "
                             f"{', '.join(str(x.dtype) for x in arrays)}")


def _fused_meta(*inputs: TensorMeta, chain) -> TensorMeta:
    check_chain(chain, len(inputs))
    if len({m.dtype for m in inputs}) > 1 or not inputs[0].dtype.is_floating:
        raise DTypeError(f"fused_elementwise: every input must have one float dtype, got "
                         f"{', '.join(m.dtype.name for m in inputs)}")
    metas = list(inputs)
    for name, args, attrs in chain:
        metas.append(REGISTERED.get(name).meta(*[metas[a] for a in args], **attrs))
    return metas[-1]


def plan_chain(chain, n_inputs: int) -> list[tuple]:
    """``(into, reference, args, attrs, reusable, dying)`` per step: ``into`` is the step op's
    ``numpy_out`` lowering (None without one), ``reusable`` an argument (a temporary of the chain)
    read for the last time by that step, whose buffer ``into`` may write into; ``dying`` are the
    temporaries no later step reads."""
    last: dict[int, int] = {}
    for k, (_, args, _) in enumerate(chain):
        for a in args:
            last[a] = k
    plan = []
    for k, (name, args, attrs) in enumerate(chain):
        into = LOWERINGS.find(NUMPY_OUT, name)
        dying = tuple(a for a in dict.fromkeys(args) if a >= n_inputs and last[a] == k)
        reusable = None
        if into is not None:
            reusable = next((a for a in dying if list(args).count(a) == 1), None)
        plan.append((into, REGISTERED.get(name).reference, tuple(args), dict(attrs), reusable, dying))
    return plan


_PLANS: dict[tuple, tuple] = {}  # (id(chain), inputs, build) -> (chain, value): one list per program node
_MAX_PLANS = 4096


def cached_for(chain, n_inputs: int, build):
    """``build(chain, n_inputs)``, checked and computed once per chain object (a program node's
    attribute, the same list on every run) and kept while that object is."""
    key = (id(chain), n_inputs, build)
    hit = _PLANS.get(key)
    if hit is not None and hit[0] is chain:
        return hit[1]
    check_chain(chain, n_inputs)
    if len(_PLANS) >= _MAX_PLANS:
        _PLANS.clear()
    value = build(chain, n_inputs)
    _PLANS[key] = (chain, value)
    return value


def evaluate_chain(arrays, chain) -> np.ndarray:
    """The chain's result on numpy ``arrays`` (the reference kernel of ``fused_elementwise``)."""
    n = len(arrays)
    check_dtypes(arrays)
    values = list(arrays)
    owned = [False] * n  # whether a value is a buffer of this chain's own (never an input's)
    for into, reference, args, attrs, reusable, dying in cached_for(chain, n, plan_chain):
        xs = [values[a] for a in args]
        out = values[reusable] if reusable is not None and owned[reusable] else None
        try:
            result = into(*xs, out=out, **attrs) if into is not None else reference(*xs, **attrs)
        except (ValueError, TypeError):
            if out is None:
                raise
            # the result is larger than the dying temporary (broadcasting), or of another dtype
            result = into(*xs, out=None, **attrs)
        result = np.asarray(result)
        fresh = into is not None or not any(np.may_share_memory(result, a) for a in arrays)
        for a in dying:  # a dead temporary's memory goes back at once
            values[a] = None
        xs = out = None
        values.append(result)
        owned.append(fresh and result.flags.writeable)
    result = values[-1]
    return result.astype(arrays[0].dtype, copy=False) if result.dtype != arrays[0].dtype else result


def _fused_kernel(*arrays, chain):
    return evaluate_chain(arrays, chain)  # the chain is checked once, when its plan is made


fused_elementwise_op = Op(
    "fused_elementwise", paddle=(), reference=_fused_kernel, meta=_fused_meta, traits=("elementwise",),
    dtypes=("float32", "float64"),  # float16 and bfloat16 compute in float32
)


@fused_elementwise_op.defgrad
def _fused_grad(ctx, g):
    # The chain again, step by step with its own ops, differentiated by autograd: the gradient
    # is exactly the unfused ops' (and can be differentiated again).
    wanted = [i for i, need in enumerate(ctx.needs_input_grad) if need]
    with enable_grad():
        values = list(ctx.inputs)
        for name, args, attrs in ctx.attrs["chain"]:
            values.append(dispatch(REGISTERED.get(name), tuple(values[a] for a in args), dict(attrs)))
        grads = grad(values[-1], [ctx.inputs[i] for i in wanted], grad_outputs=g, create_graph=True,
                     allow_unused=True)
    result = [None] * len(ctx.inputs)
    for i, gi in zip(wanted, grads):
        result[i] = gi
    return tuple(result)


def fused_elementwise(*inputs, chain):
    """Run an elementwise ``chain`` (see the module docstring) on tensors as one op.

    >>> import oar
    >>> from oar.ops import fused_elementwise
    >>> x = oar.to_tensor([-1.0, 2.0])
    >>> fused_elementwise(x, oar.to_tensor([1.0, 1.0]), chain=[["add", [0, 1], {}], ["tanh", [2], {}]]).shape
    [2]
    """
    return dispatch(fused_elementwise_op, tuple(inputs), {"chain": chain})


OPS = [fused_elementwise_op]
METHODS: dict = {}  # no Tensor methods
__all__: list = []  # not at oar's top level: programs make it (oar.ops.fused_elementwise calls it)
