"""Elementwise ops of oar-core: arithmetic, powers, math functions, rounding, comparisons, logic,
bits, casts and core's activations.

Each lowering writes the shortest node sequence that computes what the op's reference kernel
computes (numpy's rules, which are Paddle's), not the nearest ONNX op: integer ``floor_divide``
floors where ONNX's ``Div`` truncates, ``remainder`` takes the divisor's sign where ``Mod`` with
``fmod=1`` takes the dividend's, ``trunc`` and ``log1p`` have no ONNX op of their own. An op that
returns its input (a cast to the same dtype, ``assign``, ``floor`` of an integer, ``to_device``)
writes no node: its output is bound to the input's tensor (``ctx.bind``).

Float ops of integer inputs (``sqrt`` of an int64 tensor) compute in the output's float dtype, as
oar's kernels do: the input is cast first.
"""

from __future__ import annotations

import math

import numpy as np

from oar.onnx.lowerings import lowers, not_lowered


# -- dtype helpers (also used by the shape and reduction lowerings) ---------------------------------
def is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


def is_unsigned(dtype: str) -> bool:
    return dtype.startswith("uint")


def cast(ctx, name: str, source: str, target: str, out: str | None = None) -> str:
    """``name`` (of oar dtype ``source``) as ``target``: ``name`` itself when they agree."""
    if source == target and out is None:
        return name
    if source == target:
        return ctx.emit("Identity", [name], out)
    return ctx.emit("Cast", [name], out, to=ctx.onnx_dtype(target))


def input_as(ctx, node, i: int, dtype: str) -> str:
    """Input ``i`` of ``node`` in ``dtype`` (cast when it has another)."""
    return cast(ctx, ctx.name(node.inputs[i]), ctx.dtype(node.inputs[i]), dtype)


def inputs_as_output(node, ctx) -> list[str]:
    """The inputs in the dtype of the output (a float op of integer inputs computes in floats)."""
    dtype = ctx.dtype(node.outputs[0])
    return [input_as(ctx, node, i, dtype) for i in range(len(node.inputs))]


def out_name(node, ctx, i: int = 0) -> str:
    return ctx.name(node.outputs[i])


def static_number(ctx, vid):
    """The value of a constant input as a numpy array, or None for a value known at run time."""
    value = ctx.static_value(vid)
    return None if value is None else np.asarray(value)


# -- ops that are one ONNX node of their (dtype-matched) inputs ---------------------------------------
FLOAT_OPS = {  # ops on floats: integer inputs are cast to the float output first
    "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "sin": "Sin", "cos": "Cos", "tan": "Tan", "tanh": "Tanh",
    "sigmoid": "Sigmoid", "erf": "Erf", "reciprocal": "Reciprocal", "divide": "Div",
    "acos": "Acos", "asin": "Asin", "atan": "Atan", "acosh": "Acosh", "asinh": "Asinh", "atanh": "Atanh",
    "cosh": "Cosh", "sinh": "Sinh",
}
SAME_NODE = {
    "subtract": "Sub", "elementwise_pow": "Pow", "abs": "Abs", "sign": "Sign", "equal": "Equal",
    # relu is oar-nn's op; its lowering lives here, with the activations of core, as the plugin began
    "relu": "Relu",
}


@lowers(*FLOAT_OPS)
def lower_float_op(node, ctx):
    ctx.emit(FLOAT_OPS[node.op], inputs_as_output(node, ctx), out_name(node, ctx))


@lowers(*SAME_NODE)
def lower_same_node(node, ctx):
    ctx.emit(SAME_NODE[node.op], ctx.inputs(node), out_name(node, ctx))


# Numpy's arithmetic on bools is logic: True + True is True, True * False is False.
BOOL_FORM = {"add": ("Add", "Or"), "multiply": ("Mul", "And"), "maximum": ("Max", "Or"), "minimum": ("Min", "And")}


@lowers(*BOOL_FORM)
def lower_arithmetic(node, ctx):
    numeric, logical = BOOL_FORM[node.op]
    op_type = logical if ctx.dtype(node.outputs[0]) == "bool" else numeric
    ctx.emit(op_type, ctx.inputs(node), out_name(node, ctx))


COMPARISONS = {"greater_than": "Greater", "less_than": "Less", "greater_equal": "GreaterOrEqual",
               "less_equal": "LessOrEqual"}


@lowers(*COMPARISONS)
def lower_comparison(node, ctx):
    inputs = ctx.inputs(node)
    if ctx.dtype(node.inputs[0]) == "bool":  # ONNX orders numbers only; False < True as 0 < 1
        inputs = [input_as(ctx, node, i, "uint8") for i in range(2)]
    ctx.emit(COMPARISONS[node.op], inputs, out_name(node, ctx))


@lowers("not_equal")
def lower_not_equal(node, ctx):
    ctx.emit("Not", [ctx.emit("Equal", ctx.inputs(node))], out_name(node, ctx))


@lowers("neg")
def lower_neg(node, ctx):
    x, = ctx.inputs(node)
    dtype = ctx.dtype(node.inputs[0])
    if dtype == "bool":  # the kernel negates a bool as logical not
        ctx.emit("Not", [x], out_name(node, ctx))
    elif is_unsigned(dtype):  # ONNX's Neg has no unsigned form; 0 - x wraps as numpy's negative does
        ctx.emit("Sub", [ctx.constant(0, like=node.inputs[0]), x], out_name(node, ctx))
    else:
        ctx.emit("Neg", [x], out_name(node, ctx))


# -- integer-aware division ----------------------------------------------------------------------------
def _wrong_sign(ctx, mod: str, y_vid: int, y: str) -> str:
    """Where C's ``fmod(x, y)`` is nonzero with a sign other than ``y``'s: there numpy's floor
    division is one lower and its remainder ``mod + y`` (numpy's ``npy_divmod``)."""
    zero = ctx.constant(0, like=y_vid)
    known = static_number(ctx, y_vid)
    if known is not None and known.size and np.all(known > 0):
        return ctx.emit("Less", [mod, zero])
    if known is not None and known.size and np.all(known < 0):
        return ctx.emit("Greater", [mod, zero])
    # sign(mod) * sign(y) < 0: both nonzero, signs apart (a product of the values could underflow)
    y_sign = ctx.constant(np.sign(known), like=y_vid) if known is not None else ctx.emit("Sign", [y])
    return ctx.emit("Less", [ctx.emit("Mul", [ctx.emit("Sign", [mod]), y_sign]), zero])


@lowers("remainder")
def lower_remainder(node, ctx):
    x, y = ctx.inputs(node)
    if not is_float(ctx.dtype(node.outputs[0])):  # integer Mod with fmod=0 is Python's %
        ctx.emit("Mod", [x, y], out_name(node, ctx))
        return
    if ctx.opset >= 28:  # Mod gained the floored form for floats, with numpy's special cases
        ctx.emit("Mod", [x, y], out_name(node, ctx), fmod=0)
        return
    mod = ctx.emit("Mod", [x, y], fmod=1)
    ctx.emit("Where", [_wrong_sign(ctx, mod, node.inputs[1], y), ctx.emit("Add", [mod, y]), mod], out_name(node, ctx))


@lowers("floor_divide")
def lower_floor_divide(node, ctx):
    x, y = ctx.inputs(node)
    out = out_name(node, ctx)
    if not is_float(ctx.dtype(node.outputs[0])):
        # (x - x mod y) is a multiple of y, so Div's truncation is exact: the floored quotient
        # (for x within |y| of the dtype's limits, x - mod may wrap; oar raises on y == 0).
        ctx.emit("Div", [ctx.emit("Sub", [x, ctx.emit("Mod", [x, y])]), y], out)
        return
    # numpy's float floor division (npy_divmod, also Paddle's FloorDivideFunctor): the quotient of
    # x - fmod(x, y), one lower where fmod has the wrong sign, rounded to the nearest integer;
    # floor(x / y) alone is one off where x / y rounds up to an integer (1.0 // 0.1 is 9).
    mod = ctx.emit("Mod", [x, y], fmod=1)
    quotient = ctx.emit("Div", [ctx.emit("Sub", [x, mod]), y])
    one = ctx.constant(1, like=node.outputs[0])
    quotient = ctx.emit("Where", [_wrong_sign(ctx, mod, node.inputs[1], y), ctx.emit("Sub", [quotient, one]), quotient])
    known = static_number(ctx, node.inputs[1])
    if known is not None and np.all(known != 0):
        ctx.emit("Round", [quotient], out)
        return
    # A zero divisor gives x / 0 (inf or nan), as numpy's does.
    zero = ctx.constant(0, like=node.inputs[1])
    ctx.emit("Where", [ctx.emit("Equal", [y, zero]), ctx.emit("Div", [x, y]), ctx.emit("Round", [quotient])], out)


# -- powers and math functions --------------------------------------------------------------------------
@lowers("pow")
def lower_pow(node, ctx):
    x, = ctx.inputs(node)
    factor = node.attrs["factor"]
    if factor == 1:
        ctx.bind(node.outputs[0], x)
    elif factor == 2:  # numpy squares by x * x too
        ctx.emit("Mul", [x, x], out_name(node, ctx))
    else:
        ctx.emit("Pow", [x, ctx.constant(factor, like=node.inputs[0])], out_name(node, ctx))


@lowers("rsqrt")
def lower_rsqrt(node, ctx):
    x, = inputs_as_output(node, ctx)
    ctx.emit("Reciprocal", [ctx.emit("Sqrt", [x])], out_name(node, ctx))


@lowers("log2", "log10")
def lower_log_base(node, ctx):
    x, = inputs_as_output(node, ctx)
    base = ctx.constant(math.log(2.0 if node.op == "log2" else 10.0), like=node.outputs[0])
    ctx.emit("Div", [ctx.emit("Log", [x]), base], out_name(node, ctx))


@lowers("log1p")
def lower_log1p(node, ctx):
    # ONNX has no log1p, and log(1 + x) loses every digit of a small x. Kahan's correction:
    # with u = 1 + x rounded, log1p(x) = log(u) * x / (u - 1), exact where u - 1 == x (then
    # log(u) is already right, inf included) and x itself where u rounds to 1.
    x, = inputs_as_output(node, ctx)
    like = node.outputs[0]
    u = ctx.emit("Add", [x, ctx.constant(1, like=like)])
    d = ctx.emit("Sub", [u, ctx.constant(1, like=like)])
    log_u = ctx.emit("Log", [u])
    corrected = ctx.emit("Mul", [log_u, ctx.emit("Div", [x, d])])
    small = ctx.emit("Where", [ctx.emit("Equal", [d, ctx.constant(0, like=like)]), x, corrected])
    ctx.emit("Where", [ctx.emit("Equal", [d, x]), log_u, small], out_name(node, ctx))


# -- rounding ------------------------------------------------------------------------------------------
@lowers("floor", "ceil")
def lower_floor_ceil(node, ctx):
    x, = ctx.inputs(node)
    if not is_float(ctx.dtype(node.inputs[0])):  # an integer is its own floor
        ctx.bind(node.outputs[0], x)
        return
    ctx.emit("Floor" if node.op == "floor" else "Ceil", [x], out_name(node, ctx))


@lowers("trunc")
def lower_trunc(node, ctx):
    x, = ctx.inputs(node)
    if not is_float(ctx.dtype(node.inputs[0])):
        ctx.bind(node.outputs[0], x)
        return
    negative = ctx.emit("Less", [x, ctx.constant(0, like=node.inputs[0])])
    ctx.emit("Where", [negative, ctx.emit("Ceil", [x]), ctx.emit("Floor", [x])], out_name(node, ctx))


@lowers("round")
def lower_round(node, ctx):
    x, = ctx.inputs(node)
    decimals = int(node.attrs.get("decimals", 0))
    dtype = ctx.dtype(node.inputs[0])
    out = out_name(node, ctx)
    if not is_float(dtype):
        if decimals >= 0:  # numpy returns integers as they are
            ctx.bind(node.outputs[0], x)
            return
        # numpy rounds integers to tens, hundreds, ... in float64, halves to even
        scale = ctx.constant(10.0 ** -decimals, "float64")
        rounded = ctx.emit("Round", [ctx.emit("Div", [cast(ctx, x, dtype, "float64"), scale])])
        cast(ctx, ctx.emit("Mul", [rounded, scale]), "float64", dtype, out)
        return
    if decimals == 0:  # Round is half to even, as numpy's
        ctx.emit("Round", [x], out)
        return
    # numpy's own steps: rint(x * 10^d) / 10^d, or rint(x / 10^-d) * 10^-d, in x's dtype
    scale = ctx.constant(10.0 ** abs(decimals), like=node.inputs[0])
    first, second = ("Mul", "Div") if decimals > 0 else ("Div", "Mul")
    ctx.emit(second, [ctx.emit("Round", [ctx.emit(first, [x, scale])]), scale], out)


# -- clip, scale, where, masked_fill ------------------------------------------------------------------
def _integer_bounds(lo, hi, dtype: str):
    """The kernel's bounds for an integer tensor: float bounds round inward, bounds beyond the
    dtype's range are no bounds."""
    info = np.iinfo(np.dtype(dtype))
    lo = None if lo is None or lo <= info.min else int(np.clip(math.ceil(lo), info.min, info.max))
    hi = None if hi is None or hi >= info.max else int(np.clip(math.floor(hi), info.min, info.max))
    return lo, hi


@lowers("clip")
def lower_clip(node, ctx):
    x, = ctx.inputs(node)
    vid = node.inputs[0]
    lo, hi = node.attrs.get("min"), node.attrs.get("max")
    if not is_float(ctx.dtype(vid)):
        lo, hi = _integer_bounds(lo, hi, ctx.dtype(vid))
    if lo is None and hi is None:
        ctx.bind(node.outputs[0], x)
        return
    bounds = ["" if b is None else ctx.constant(b, like=vid) for b in (lo, hi)]
    ctx.emit("Clip", [x] + (bounds if hi is not None else bounds[:1]), out_name(node, ctx))


@lowers("scale")
def lower_scale(node, ctx):
    x, = ctx.inputs(node)
    vid = node.inputs[0]
    a = node.attrs
    scale, bias = a.get("scale", 1.0), a.get("bias", 0.0)
    if not is_float(ctx.dtype(vid)):  # Paddle casts scale and bias to an integer x's dtype
        scale, bias = int(scale), int(bias)
    steps = [("Mul", scale, 1), ("Add", bias, 0)]
    if not a.get("bias_after_scale", True):
        steps.reverse()
    steps = [(op, value) for op, value, identity in steps if value != identity]
    if not steps:
        ctx.bind(node.outputs[0], x)
        return
    for i, (op_type, value) in enumerate(steps):
        x = ctx.emit(op_type, [x, ctx.constant(value, like=vid)], out_name(node, ctx) if i == len(steps) - 1 else None)


def select(ctx, condition: str, a: str, b: str, dtype: str, out: str | None = None) -> str:
    """``a`` where ``condition``, else ``b``. ONNX Runtime has no Where of bool data: for bools,
    ``b ^ (condition & (a ^ b))``."""
    if dtype != "bool":
        return ctx.emit("Where", [condition, a, b], out)
    return ctx.emit("Xor", [b, ctx.emit("And", [condition, ctx.emit("Xor", [a, b])])], out)


@lowers("where")
def lower_where(node, ctx):
    x, y, condition = ctx.inputs(node)  # oar's data inputs come first
    select(ctx, condition, x, y, ctx.dtype(node.outputs[0]), out_name(node, ctx))


@lowers("masked_fill")
def lower_masked_fill(node, ctx):
    x, mask, value = ctx.inputs(node)
    select(ctx, mask, value, x, ctx.dtype(node.outputs[0]), out_name(node, ctx))


# -- classification ---------------------------------------------------------------------------------
def fill(ctx, value, dtype: str, like_vid: int, out: str | None = None) -> str:
    """A tensor shaped like value ``like_vid`` holding ``value``: an initializer for a small
    static shape, else ``Expand`` of a scalar (no large constant in the file)."""
    shape = ctx.shape(like_vid)
    static = None not in shape
    if static and int(np.prod(shape, dtype=np.int64)) <= 1024 and out is None:
        return ctx.constant(np.full(shape, value, dtype=np.dtype(dtype)))
    target = ctx.int64s(shape) if static else ctx.emit("Shape", [ctx.name(like_vid)])
    return ctx.emit("Expand", [ctx.constant(np.asarray(value, dtype=np.dtype(dtype))), target], out)


def _bind_fill(node, ctx, value) -> None:
    name = fill(ctx, value, ctx.dtype(node.outputs[0]), node.inputs[0])
    ctx.bind(node.outputs[0], name)


@lowers("isnan")
def lower_isnan(node, ctx):
    if not is_float(ctx.dtype(node.inputs[0])):
        _bind_fill(node, ctx, False)  # integers are never nan
        return
    ctx.emit("IsNaN", ctx.inputs(node), out_name(node, ctx))


@lowers("isinf")
def lower_isinf(node, ctx):
    if not is_float(ctx.dtype(node.inputs[0])):
        _bind_fill(node, ctx, False)
        return
    ctx.emit("IsInf", ctx.inputs(node), out_name(node, ctx))


@lowers("isfinite")
def lower_isfinite(node, ctx):
    if not is_float(ctx.dtype(node.inputs[0])):
        _bind_fill(node, ctx, True)
        return
    x, = ctx.inputs(node)  # |x| < inf is false for nan and for both infinities
    ctx.emit("Less", [ctx.emit("Abs", [x]), ctx.constant(np.inf, like=node.inputs[0])], out_name(node, ctx))


# -- logic and bits ------------------------------------------------------------------------------------
LOGICAL = {"logical_and": "And", "logical_or": "Or", "logical_xor": "Xor", "logical_not": "Not"}


@lowers(*LOGICAL)
def lower_logical(node, ctx):
    # numbers are true where nonzero (nan too): Cast to bool says so
    ctx.emit(LOGICAL[node.op], [input_as(ctx, node, i, "bool") for i in range(len(node.inputs))], out_name(node, ctx))


BITWISE = {"bitwise_and": ("BitwiseAnd", "And"), "bitwise_or": ("BitwiseOr", "Or"),
           "bitwise_xor": ("BitwiseXor", "Xor"), "bitwise_not": ("BitwiseNot", "Not")}


@lowers(*BITWISE)
def lower_bitwise(node, ctx):
    bitwise, logical = BITWISE[node.op]
    if ctx.dtype(node.outputs[0]) == "bool":
        ctx.emit(logical, ctx.inputs(node), out_name(node, ctx))
        return
    if ctx.opset < 18:
        raise ctx.unsupported(node, f"{bitwise} on integers needs opset 18 or newer (got {ctx.opset})")
    ctx.emit(bitwise, ctx.inputs(node), out_name(node, ctx))


# -- casts, copies, fills ------------------------------------------------------------------------------
@lowers("cast")
def lower_cast(node, ctx):
    x, = ctx.inputs(node)
    source, target = ctx.dtype(node.inputs[0]), ctx.dtype(node.outputs[0])
    if source == target:
        ctx.bind(node.outputs[0], x)
        return
    # float -> int truncates toward zero and number -> bool is "nonzero", as numpy's astype
    ctx.emit("Cast", [x], out_name(node, ctx), to=ctx.onnx_dtype(target))


@lowers("assign", "to_device")
def lower_identity(node, ctx):
    # ONNX tensors are immutable, so a copy (assign, clone) is the tensor itself; an exported
    # model runs on the device its runtime chooses, so a transfer is the identity.
    ctx.bind(node.outputs[0], ctx.name(node.inputs[0]))


@lowers("full_like")
def lower_full_like(node, ctx):
    dtype = ctx.dtype(node.outputs[0])
    value = np.asarray(node.attrs["fill_value"]).astype(np.dtype(dtype))  # the kernel's np.full cast
    ctx.bind(node.outputs[0], fill(ctx, value, dtype, node.inputs[0]))


not_lowered("random numbers: ONNX Runtime's generators draw other numbers than oar's, so an exported "
            "model could not give oar's results (export the model with the random part outside it)",
            "bernoulli", "gaussian", "uniform", "randint", "randperm", "multinomial")


not_lowered("complex tensors: ONNX Runtime has no complex kernels for these, and an exported model's inputs and "
            "outputs would have no complex type to take", "complex", "real", "imag", "angle", "conj", "as_complex",
            "as_real", "fft_c2c", "fft_c2r", "fft_r2c")
not_lowered("special functions with no ONNX op (gamma and Bessel functions, erfinv, the incomplete gamma "
            "function): written out of elementary nodes they would not give oar's accuracy",
            "lgamma", "digamma", "polygamma", "erfinv", "i0", "i0e", "i1", "i1e", "gammainc", "gammaincc")
not_lowered("not lowered yet: ONNX could write it from elementary nodes (Exp, Log, Mul, Where, BitShift, ...)",
            "expm1", "atan2", "hypot", "copysign", "nextafter", "heaviside", "fmax", "fmin", "frexp", "logaddexp",
            "logit", "sinc", "signbit", "gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift")
not_lowered("outputs whose size depends on the values (unique, histograms, bin counts) or sorting-based scans "
            "ONNX has no op for: export the model without them, or compute them after inference",
            "unique", "unique_consecutive", "histogram", "histogram_bin_edges", "histogramdd", "bincount",
            "searchsorted", "isin", "mode", "cummax", "cummin", "logcumsumexp")
not_lowered("a reinterpretation of the bytes as another dtype (Tensor.view(dtype)): ONNX has no bit cast",
            "view_dtype")
not_lowered("random numbers: ONNX Runtime's generators draw other numbers than oar's (see above)",
            "poisson", "binomial", "standard_gamma")
