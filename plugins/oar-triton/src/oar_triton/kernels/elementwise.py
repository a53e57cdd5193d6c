"""Elementwise kernels, generated: one Triton kernel per op from how the op is written in Triton.

An op's lowering for target ``"triton"`` (``oar_triton.kernels.lowerings``) is an expression over
its loaded inputs and attribute parameters. From it this module writes a kernel that loads each input through its
own strides (a broadcast input has stride 0 where it repeats, a transposed one its own order),
computes in the op's compute type and stores a contiguous output; the output's shape and dtype
come from the op's meta function. A plugin that adds an elementwise op gets its gpu kernel by
registering a ``"triton"`` lowering (``oar_triton.kernels.lowerings`` says the form).

Indexing: dims that are contiguous in every operand are merged first; a kernel whose operands
are all contiguous and of the output's shape indexes with the flat offset alone (``STRIDED`` off).
"""

from __future__ import annotations

import linecache
import math

import numpy as np
import triton
import triton.language as tl
from oar_triton.array import DeviceArray
from oar_triton.backend import BACKEND, empty
from oar_triton.kernels.lowerings import DTYPES, LOWERINGS, TRITON
from oar_triton.kernels.math import HELPERS as MATH_HELPERS
from oar_triton.launch import TRITON_DTYPES, compute_dtype, launch

from oar.errors import ArgumentError, DTypeError, ShapeError
from oar.ops import TensorMeta, broadcast_shapes, get_dtype, lowering
from oar.plugins import registries

RANK = 6  # the most dims a kernel indexes after merging; more is refused with the shapes
BLOCK = 1024


@triton.jit
def _tanh(v):
    # tanh without libdevice (Triton's interpreter has none): the series near 0, where 1 - e^-2|x|
    # would cancel, and the exponential form elsewhere
    a = tl.abs(v)
    e = tl.exp(-2.0 * a)
    far = (1.0 - e) / (1.0 + e)
    v2 = v * v
    near = a * (1.0 + v2 * (-1.0 / 3.0 + v2 * (2.0 / 15.0 + v2 * (-17.0 / 315.0 + v2 * (62.0 / 2835.0)))))
    t = tl.where(a < 0.1, near, far)
    return tl.where(v < 0, -t, t)


@triton.jit
def _gelu_erf(v):
    return 0.5 * v * (1.0 + tl.erf(v * 0.7071067811865476))


@triton.jit
def _gelu_tanh(v):
    return 0.5 * v * (1.0 + _tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)))


@triton.jit
def _pow(v, p):
    # |x| ** p by exp and log; for x < 0 the result is real only for an integral p (negative for
    # an odd one), NaN otherwise, as numpy's
    a = tl.exp(p * tl.log(tl.abs(v)))
    integral = tl.floor(p) == p
    odd = integral & (tl.floor(p * 0.5) * 2.0 != p)
    negative = tl.where(odd, -a, tl.where(integral, a, float("nan")))
    return tl.where(p == 0, 1.0, tl.where(v < 0, negative, a))


@triton.jit
def _ipow(v, p):
    # integer powers by repeated products, exact as numpy's (p >= 0)
    r = v * 0 + 1
    for _ in range(p):
        r = r * v
    return r


# The names an expression may call besides tl (oar_triton.kernels.lowerings says the form).
HELPERS = {"tl": tl, "triton": triton, "_tanh": _tanh, "_gelu_erf": _gelu_erf, "_gelu_tanh": _gelu_tanh,
           "_pow": _pow, "_ipow": _ipow, **MATH_HELPERS}
_generated: dict[tuple, object] = {}  # the kernels written so far, by op and variant or by chain


def variant_of(dtype: np.dtype) -> str:
    """Which of a lowering's expressions values of ``dtype`` take: ``"float"``, ``"int"`` or ``"bool"``."""
    return {"b": "bool", "i": "int", "u": "int"}.get(np.dtype(dtype).kind, "float")


def _source(name: str, arity: int, steps: list[tuple[str, list[int], int]]) -> str:
    """A kernel that indexes each input through its strides, computes ``steps`` and stores the last
    contiguously. A step is ``(expression, the values it reads, its parameter count)``; values
    ``0..arity-1`` are the inputs, ``arity + j`` step j's result (one op is one step)."""
    n_params = sum(count for _, _, count in steps)
    dims = [f"d{d}" for d in range(1, RANK)]
    inputs = [f"x{k}" for k in range(arity)]
    strides = [f"s{k}_{d}" for k in range(arity) for d in range(RANK)]
    params = [f"q{j}" for j in range(n_params)]
    casts = [f"C{k}: tl.constexpr" for k in range(arity)]
    signature = ", ".join(["out", "n", *dims, *inputs, *strides, *params, "BLOCK: tl.constexpr",
                           "STRIDED: tl.constexpr", *casts])
    lines = [f"def {name}_kernel({signature}):",
             "    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)",
             "    mask = offs < n",
             "    if STRIDED:",
             "        rest = offs"]
    for d in range(RANK - 1, 0, -1):
        lines += [f"        i{d} = rest % d{d}", f"        rest = rest // d{d}"]
    lines.append("        i0 = rest")
    lines += [f"        o{k} = " + " + ".join(f"i{d} * s{k}_{d}" for d in range(RANK)) for k in range(arity)]
    lines.append("    else:")
    lines += [f"        o{k} = offs" for k in range(arity)]
    lines += [f"    v{k} = tl.load(x{k} + o{k}, mask=mask).to(C{k})" for k in range(arity)]
    first_param = 0
    for j, (expression, reads, count) in enumerate(steps):
        names = {f"p{i}": f"q{first_param + i}" for i in range(count)}
        lines.append(f"    v{arity + j} = " + expression.format(*[f"v{a}" for a in reads], **names))
        first_param += count
    lines.append(f"    tl.store(out + offs, v{arity + len(steps) - 1}.to(out.dtype.element_ty), mask=mask)")
    return "\n".join(lines)


def _compiled(name: str, text: str, label: str):
    """``{name}_kernel`` of ``text`` as a Triton kernel; the source is kept in ``linecache`` (Triton
    reads a kernel's source)."""
    text += "\n"
    filename = f"<oar_triton {label}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)  # mtime None: kept
    namespace = dict(HELPERS)
    exec(compile(text, filename, "exec"), namespace)  # noqa: S102 - written by _source from lowerings
    return triton.jit(namespace[f"{name}_kernel"])


def generated_kernel(name: str, variant: str = "float"):
    """Op ``name``'s kernel for ``variant`` inputs, written from its ``"triton"`` lowering on first
    use; its source is kept in ``linecache`` (Triton reads a kernel's source)."""
    kernel = _generated.get((name, variant))
    if kernel is None:
        expression, read, arity, variants = lowering(TRITON, name)
        expression = variants.get(variant, expression)
        if expression is None:  # (an op of integers and bools only: DTYPES never sends floats here)
            raise DTypeError(f"op {name!r} on the gpu has no kernel for {variant} values")
        text = _source(name, arity, [(expression, list(range(arity)), len(read({})))])
        kernel = _generated[(name, variant)] = _compiled(name, text, f"elementwise kernel {name} {variant}")
    return kernel


def chain_kernel(chain, arity: int) -> tuple[object, tuple]:
    """The kernel of a ``fused_elementwise`` chain over ``arity`` inputs (its steps' ``"triton"``
    lowerings in one kernel: every value between them stays in registers) and its parameters."""
    steps, params = [], []
    for name, args, attrs in chain:
        entry = lowering(TRITON, name)
        if entry is None or entry[0] is None:
            raise DTypeError(f"op 'fused_elementwise' on the gpu: step {name!r} has no \"triton\" lowering")
        expression, read, _, _ = entry
        values = read(attrs)
        steps.append((expression, list(args), len(values)))
        params.extend(values)
    key = ("fused", arity, tuple((name, tuple(args)) for name, args, _ in chain))
    kernel = _generated.get(key)
    if kernel is None:
        kernel = _generated[key] = _compiled("fused", _source("fused", arity, steps),
                                             f"fused_elementwise chain {len(_generated)}")
    return kernel, tuple(params)


def fused_elementwise(*arrays, chain):
    """``fused_elementwise`` on the gpu: the chain in one generated kernel (core's elementwise fusion
    builds the chains of a program; every step is a float op of the inputs' one dtype)."""
    shape = broadcast_shapes("fused_elementwise", *[a.shape for a in arrays])
    out = empty(shape, arrays[0].dtype)
    kernel, params = chain_kernel(chain, len(arrays))
    compute = compute_dtype(arrays[0].dtype)
    return run_elementwise(kernel, out, list(arrays), params, [compute] * len(arrays))


# -- indexing -------------------------------------------------------------------------------------
def broadcast_strides(array: DeviceArray, shape: tuple[int, ...]) -> list[int]:
    """``array``'s strides as an operand of an output of ``shape`` (0 along broadcast dims)."""
    lead = len(shape) - array.ndim
    strides = [0] * lead
    for dim, (size, stride) in enumerate(zip(array.shape, array.strides)):
        strides.append(0 if size == 1 and shape[lead + dim] != 1 else stride)
    return strides


def merge_dims(shape: tuple[int, ...], operand_strides: list[list[int]]) -> tuple[list[int], list[list[int]]]:
    """Merge neighbouring dims that every operand steps through contiguously; drop size-1 dims."""
    dims = [(size, [s[d] for s in operand_strides]) for d, size in enumerate(shape) if size != 1]
    merged: list[tuple[int, list[int]]] = []
    for size, strides in dims:
        if merged:
            last_size, last_strides = merged[-1]
            if all(ls == s * size for ls, s in zip(last_strides, strides)):
                merged[-1] = (last_size * size, strides)
                continue
        merged.append((size, strides))
    if not merged:
        merged = [(1, [0] * len(operand_strides))]
    return [m[0] for m in merged], [[m[1][k] for m in merged] for k in range(len(operand_strides))]


def run_elementwise(name, out: DeviceArray, inputs: list[DeviceArray], params: tuple,
                    casts: list, variant: str = "float") -> DeviceArray:
    """Launch op ``name``'s generated kernel (or the generated kernel ``name`` itself): ``out``
    (contiguous) from ``inputs`` broadcast to it."""
    n = out.size
    if n == 0:
        return out
    strided = any(a.shape != out.shape or not a.is_contiguous() for a in inputs)
    dims, strides = merge_dims(out.shape, [broadcast_strides(a, out.shape) for a in inputs])
    if len(dims) > RANK:
        label = name if isinstance(name, str) else "fused_elementwise"
        raise ShapeError(f"op {label!r} on the gpu: operands of shapes {[list(a.shape) for a in inputs]} with strides "
                         f"{[list(a.strides) for a in inputs]} need {len(dims)} dims of indexing; the kernels index "
                         f"at most {RANK} (make an operand contiguous first)")
    pad = RANK - len(dims)
    dims = [1] * pad + dims
    flat_strides = [s for operand in strides for s in [0] * pad + operand]
    constexprs = {f"C{k}": c for k, c in enumerate(casts)}
    grid = (triton.cdiv(n, BLOCK),)
    kernel = generated_kernel(name, variant) if isinstance(name, str) else name
    launch(kernel, grid, out, n, *dims[1:], *inputs, *flat_strides, *params, BLOCK=BLOCK,
           STRIDED=strided, **constexprs)
    return out


def _as_int(value: float) -> int:
    """An attribute as an integer parameter; an unbounded one (clip's missing min) as far as int64 goes."""
    return int(value) if math.isfinite(value) else (1 << 62 if value > 0 else -(1 << 62))


# Integer values the cpu refuses and a kernel cannot raise on: (input, op that marks them, message).
REFUSED_VALUES = {
    "floor_divide": (1, "equal", "floor_divide: integer division by zero (y has a zero element); cast to a float "
                                 "dtype for inf/nan results"),
    "remainder": (1, "equal", "remainder: integer division by zero (y has a zero element); cast to a float dtype "
                              "for inf/nan results"),
    "elementwise_pow": (1, "less_than", "pow: integer tensors cannot be raised to negative integer powers (y has a "
                                        "negative element); cast x to a float dtype first"),
}


def _refuse_values(name: str, arrays) -> None:
    """An ``ArgumentError`` where the cpu's kernel gives one, found on the device (one bool read back)."""
    from oar_triton.kernels.reduction import KERNELS as REDUCTIONS  # (reduction imports this module)

    index, marking_op, message = REFUSED_VALUES[name]
    values = arrays[index]
    marks = KERNELS[marking_op](values, BACKEND.zeros((), values.dtype))
    if BACKEND.to_numpy(REDUCTIONS["any"](marks, axis=None, keepdim=False)):
        raise ArgumentError(message)


def elementwise_kernel(name: str):
    """The gpu kernel of elementwise op ``name``, generated from its ``"triton"`` lowering (read on
    the first call: a plugin registers its op, lowering and kernel in any order)."""
    found = []

    def kernel(*arrays, **attrs):
        if not found:
            found.extend([registries().ops.lookup(name), lowering(TRITON, name)[1]])
        op, read = found
        metas = [TensorMeta(a.shape, get_dtype(a.dtype.name)) for a in arrays]
        meta = op.meta(*metas, **attrs)
        out_dtype = meta.dtype.np
        out = empty(meta.shape, out_dtype)
        casts = []
        for k, a in enumerate(arrays):
            if name == "where" and k == 2:  # where's inputs are (x, y, condition)
                casts.append(tl.int1)
            elif np.dtype(out_dtype).kind == "f":  # float results compute in the output's compute type
                casts.append(compute_dtype(out_dtype))
            else:  # comparisons and logic read values as they are (halves in float32)
                casts.append(compute_dtype(a.dtype))
        variant = variant_of(arrays[0].dtype)
        if variant == "int" and name in REFUSED_VALUES:
            _refuse_values(name, arrays)
        params = read(attrs)
        if variant != "float":  # the reference casts attributes to the tensor's integer dtype
            params = tuple(_as_int(p) for p in params)
        return run_elementwise(name, out, list(arrays), params, casts, variant)

    kernel.__name__ = f"{name}_gpu"
    return kernel


KERNELS = {name: elementwise_kernel(name) for name in DTYPES}
KERNELS["fused_elementwise"] = fused_elementwise


# -- used by the backend ------------------------------------------------------------------------
def strided_copy(data: DeviceArray) -> DeviceArray:
    """A contiguous copy of any view."""
    out = empty(data.shape, data.dtype)
    return run_elementwise("assign", out, [data], (), [TRITON_DTYPES[data.dtype]])


def cast(data: DeviceArray, dtype: np.dtype) -> DeviceArray:
    """``data``'s values as a new contiguous array of ``dtype``."""
    out = empty(data.shape, dtype)
    compute = compute_dtype(dtype) if dtype.kind == "f" else compute_dtype(data.dtype)
    return run_elementwise("cast", out, [data], (), [compute])


# -- ahead-of-time compilation (oar_triton.aot) ---------------------------------------------------
LOGICAL = {"equal", "not_equal", "less_than", "less_equal", "greater_than", "greater_equal", "logical_and",
           "logical_or", "logical_xor", "logical_not", "isnan"}
# Every op's expression in float32; the other compute paths (half types through float32, integer,
# bool) through the ops that have them, as one kernel template serves them all.
AOT_OTHER_PATHS = {"bfloat16": ("add", "exp", "where", "cast"), "int32": ("add", "pow", "sign", "clip"),
                   "bool": ("logical_and", "add", "where")}


def aot_configs() -> list[tuple]:
    """Each generated kernel in float32 and the other compute paths (``AOT_OTHER_PATHS``), strided
    (the variant with all of the indexing)."""
    from oar_triton.aot import POINTER_TYPES  # (aot imports the kernel modules)

    found = []
    wanted = [(name, "float32" if "float32" in dtypes else dtypes[0]) for name, dtypes in DTYPES.items()
              if name in LOWERINGS]
    wanted += [(name, dtype) for dtype, names in AOT_OTHER_PATHS.items() for name in names]
    for name, dtype in wanted:
        _, read, arity, _ = lowering(TRITON, name)
        ins = [TensorMeta((4,), get_dtype("bool" if name == "where" and k == 2 else dtype)) for k in range(arity)]
        out = TensorMeta((4,), get_dtype("bool" if name in LOGICAL else dtype))
        signature = {"out": POINTER_TYPES[out.dtype.name], "n": "i64", **{f"d{d}": "i64" for d in range(1, RANK)}}
        signature.update({f"x{k}": POINTER_TYPES[m.dtype.name] for k, m in enumerate(ins)})
        signature.update({f"s{k}_{d}": "i64" for k in range(arity) for d in range(RANK)})
        variant = variant_of(get_dtype(dtype).np)
        signature.update({f"q{j}": "fp32" if variant == "float" else "i64" for j in range(len(read({})))})
        constexprs = {"BLOCK": BLOCK, "STRIDED": True}
        for k, m in enumerate(ins):
            if name == "where" and k == 2:
                constexprs[f"C{k}"] = tl.int1
            else:
                constexprs[f"C{k}"] = compute_dtype(out.dtype.np if out.dtype.np.kind == "f" else m.dtype.np)
        signature.update({key: "constexpr" for key in constexprs})
        found.append((f"elementwise.{name}[{dtype}]", generated_kernel(name, variant), signature, constexprs))
    for dtype in ("float32", "bfloat16"):  # a fused chain: scale, then add the second input, then tanh
        chain = [["scale", [0], {"scale": 2.0, "bias": 1.0}], ["add", [2, 1], {}], ["tanh", [3], {}]]
        kernel, params = chain_kernel(chain, 2)
        signature = {"out": POINTER_TYPES[dtype], "n": "i64", **{f"d{d}": "i64" for d in range(1, RANK)},
                     "x0": POINTER_TYPES[dtype], "x1": POINTER_TYPES[dtype],
                     **{f"s{k}_{d}": "i64" for k in range(2) for d in range(RANK)},
                     **{f"q{j}": "fp32" for j in range(len(params))}}
        constexprs = {"BLOCK": BLOCK, "STRIDED": True, "C0": compute_dtype(get_dtype(dtype).np),
                      "C1": compute_dtype(get_dtype(dtype).np)}
        signature.update({key: "constexpr" for key in constexprs})
        found.append((f"elementwise.fused_elementwise[{dtype}]", kernel, signature, constexprs))
    return found


__all__ = ["KERNELS", "elementwise_kernel", "strided_copy", "run_elementwise", "generated_kernel", "aot_configs", "cast"]
