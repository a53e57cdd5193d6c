"""How each elementwise op is written in a Triton kernel: the ``"triton"`` lowerings.

The plugin registers them in oar's one ``(target, op)`` lowering table, beside ``numpy_out``,
``numba`` and ``onnx``; ``oar_triton.kernels.elementwise`` generates each op's kernel from its
entry. A lowering is ``(expression, parameters, arity, variants)``: the expression is written over
the loaded inputs ``{0}``, ``{1}``, ... (already in the compute type) and the parameters ``{p0}``,
``{p1}``, ...; ``parameters(attrs)`` returns their values from the op's attributes; ``variants``
maps ``"int"`` and ``"bool"`` to the expressions for integer and bool inputs where those differ
from the float one (an op of integers and bools only has None for its float expression) (integer inputs get their parameters as ints, as the reference kernels cast
attributes to the tensor's dtype; a float parameter reaches a kernel as float32, so one that must
be exact in float64 is given as an int, as ``round``'s ``10**decimals``). Besides ``tl``, an
expression may call the helpers ``_tanh``, ``_gelu_erf``, ``_gelu_tanh``, ``_pow`` and ``_ipow``
of ``oar_triton.kernels.elementwise`` and those of ``oar_triton.kernels.math`` (``_log1p``,
``_expm1``, ``_atan2``, ``_floor_divide``, ... : its ``HELPERS``), which compute the functions
libdevice would, without it.

Where the cpu raises on values (an integer division by zero, an integer to a negative power), a
kernel cannot: ``elementwise.REFUSED_VALUES`` finds them on the device before the launch and
raises the cpu's error.

``round`` refuses ``decimals`` beyond +-18 (``ArgumentError``), where ``10**decimals`` is no int64.

This module imports no Triton: the plugin reads it when it registers.
"""

from __future__ import annotations

import math

from oar.errors import ArgumentError

TRITON = "triton"


def _no_params(attrs: dict) -> tuple:
    return ()


def _params(*names_and_defaults):
    def read(attrs: dict) -> tuple:
        return tuple(float(attrs.get(name, default)) for name, default in names_and_defaults)

    return read


def _scale_params(attrs: dict) -> tuple:
    scale, bias = float(attrs.get("scale", 1.0)), float(attrs.get("bias", 0.0))
    return (scale, bias if attrs.get("bias_after_scale", True) else bias * scale)


def _clip_params(attrs: dict) -> tuple:
    low, high = attrs.get("min"), attrs.get("max")
    return (-math.inf if low is None else float(low), math.inf if high is None else float(high))


def _logit_params(attrs: dict) -> tuple:
    eps = attrs.get("eps")  # x is clipped to [eps, 1 - eps] (as the reference, in x's dtype)
    return (-math.inf, math.inf) if eps is None else (float(eps), 1.0 - float(eps))


def _round_params(attrs: dict) -> tuple:
    # integers, so that 10^|decimals| reaches the kernel exact (a float parameter is float32)
    decimals = int(attrs.get("decimals", 0))
    if abs(decimals) > 18:
        raise ArgumentError(f"round on the gpu: decimals={decimals} is out of the range it serves, [-18, 18] "
                            f"(10^|decimals| must fit int64)")
    return (decimals, 10 ** abs(decimals))


LOWERINGS = {
    "add": ("{0} + {1}", _no_params, 2, {"bool": "{0} | {1}"}),
    "subtract": ("{0} - {1}", _no_params, 2, {}),
    "multiply": ("{0} * {1}", _no_params, 2, {"bool": "{0} & {1}"}),
    "divide": ("{0} / {1}", _no_params, 2, {}),
    "maximum": ("tl.maximum({0}, {1}, propagate_nan=tl.PropagateNan.ALL)", _no_params, 2, {"int": "tl.maximum({0}, {1})", "bool": "{0} | {1}"}),
    "minimum": ("tl.minimum({0}, {1}, propagate_nan=tl.PropagateNan.ALL)", _no_params, 2, {"int": "tl.minimum({0}, {1})", "bool": "{0} & {1}"}),
    "equal": ("{0} == {1}", _no_params, 2, {}),
    "not_equal": ("{0} != {1}", _no_params, 2, {}),
    "less_than": ("{0} < {1}", _no_params, 2, {}),
    "less_equal": ("{0} <= {1}", _no_params, 2, {}),
    "greater_than": ("{0} > {1}", _no_params, 2, {}),
    "greater_equal": ("{0} >= {1}", _no_params, 2, {}),
    "logical_and": ("({0} != 0) & ({1} != 0)", _no_params, 2, {}),
    "logical_or": ("({0} != 0) | ({1} != 0)", _no_params, 2, {}),
    "logical_xor": ("({0} != 0) ^ ({1} != 0)", _no_params, 2, {}),
    "logical_not": ("{0} == 0", _no_params, 1, {}),
    "neg": ("-{0}", _no_params, 1, {}),
    "abs": ("tl.abs({0})", _no_params, 1, {}),
    "exp": ("tl.exp({0})", _no_params, 1, {}),
    "log": ("tl.log({0})", _no_params, 1, {}),
    "sqrt": ("tl.sqrt({0})", _no_params, 1, {}),
    "rsqrt": ("tl.rsqrt({0})", _no_params, 1, {}),
    "reciprocal": ("1.0 / {0}", _no_params, 1, {}),
    "sin": ("tl.sin({0})", _no_params, 1, {}),
    "cos": ("tl.cos({0})", _no_params, 1, {}),
    "floor": ("tl.floor({0})", _no_params, 1, {"int": "{0}"}),
    "ceil": ("tl.ceil({0})", _no_params, 1, {"int": "{0}"}),
    "erf": ("tl.erf({0})", _no_params, 1, {}),
    "sign": ("tl.where({0} > 0, 1.0, tl.where({0} < 0, -1.0, 0.0))", _no_params, 1, {"int": "tl.where({0} > 0, 1, tl.where({0} < 0, -1, 0))"}),
    "isnan": ("{0} != {0}", _no_params, 1, {}),
    "sigmoid": ("1.0 / (1.0 + tl.exp(-{0}))", _no_params, 1, {}),
    "tanh": ("_tanh({0})", _no_params, 1, {}),
    "relu": ("tl.where({0} < 0, 0.0, {0})", _no_params, 1, {}),
    "relu_grad": ("tl.where({0} > 0, {1}, 0.0)", _no_params, 2, {}),
    "silu": ("{0} / (1.0 + tl.exp(-{0}))", _no_params, 1, {}),
    "gelu": ("tl.where({p0} != 0, _gelu_tanh({0}), _gelu_erf({0}))", _params(("approximate", False)), 1, {}),
    "leaky_relu": ("tl.where({0} < 0, {0} * {p0}, {0})", _params(("negative_slope", 0.01)), 1, {}),
    "scale": ("{0} * {p0} + {p1}", _scale_params, 1, {}),
    "clip": ("tl.where({0} < {p0}, {p0}, tl.where({0} > {p1}, {p1}, {0}))", _clip_params, 1, {}),
    "pow": ("_pow({0}, {p0})", _params(("factor", 1.0)), 1, {"int": "_ipow({0}, {p0})"}),
    "where": ("tl.where({2}, {0}, {1})", _no_params, 3, {}),
    "cast": ("{0}", _no_params, 1, {}),
    "assign": ("{0}", _no_params, 1, {}),
    # -- logarithms, exponentials, trigonometry (oar_triton.kernels.math) --------------------------
    "log1p": ("_log1p({0})", _no_params, 1, {}),
    "expm1": ("_expm1({0})", _no_params, 1, {}),
    "log2": ("_log({0}) * 1.4426950408889634", _no_params, 1, {}),
    "log10": ("_log({0}) * 0.4342944819032518", _no_params, 1, {}),
    "tan": ("tl.sin({0}) / tl.cos({0})", _no_params, 1, {}),
    "atan": ("_atan({0})", _no_params, 1, {}),
    "asin": ("_asin({0})", _no_params, 1, {}),
    "acos": ("_acos({0})", _no_params, 1, {}),
    "sinh": ("_sinh({0})", _no_params, 1, {}),
    "cosh": ("_cosh({0})", _no_params, 1, {}),
    "asinh": ("_asinh({0})", _no_params, 1, {}),
    "acosh": ("_acosh({0})", _no_params, 1, {}),
    "atanh": ("_atanh({0})", _no_params, 1, {}),
    "sinc": ("tl.where({0} == 0, 1.0, tl.sin(3.141592653589793 * {0}) / (3.141592653589793 * {0}))", _no_params, 1,
             {}),
    "logit": ("tl.log(_clamp({0}, {p0}, {p1}) / (1.0 - _clamp({0}, {p0}, {p1})))", _logit_params, 1, {}),
    # -- rounding and classification -----------------------------------------------------------------
    "trunc": ("_trunc({0})", _no_params, 1, {"int": "{0}"}),
    "round": ("_round({0}, {p0}, {p1})", _round_params, 1, {"int": "_round_int({0}, {p0}, {p1})"}),
    "isinf": ("tl.abs({0}) == float('inf')", _no_params, 1, {"int": "{0} != {0}", "bool": "{0} != {0}"}),
    "isfinite": ("tl.abs({0}) < float('inf')", _no_params, 1, {"int": "{0} == {0}", "bool": "{0} == {0}"}),
    "signbit": ("_signbit({0})", _no_params, 1, {"int": "{0} < 0"}),
    # -- bits (integers and bool): no float expression
    "bitwise_and": (None, _no_params, 2, {"int": "{0} & {1}", "bool": "{0} & {1}"}),
    "bitwise_or": (None, _no_params, 2, {"int": "{0} | {1}", "bool": "{0} | {1}"}),
    "bitwise_xor": (None, _no_params, 2, {"int": "{0} ^ {1}", "bool": "{0} ^ {1}"}),
    "bitwise_not": (None, _no_params, 1, {"int": "~{0}", "bool": "{0} == 0"}),
    # -- binary arithmetic ---------------------------------------------------------------------------------
    "floor_divide": ("_floor_divide({0}, {1})", _no_params, 2, {"int": "_floor_divide_int({0}, {1})"}),
    "remainder": ("_remainder({0}, {1})", _no_params, 2, {"int": "_remainder_int({0}, {1})"}),
    "elementwise_pow": ("_power({0}, {1})", _no_params, 2, {"int": "_power_int({0}, {1})"}),
    "atan2": ("_atan2({0}, {1})", _no_params, 2, {}),
    "hypot": ("_hypot({0}, {1})", _no_params, 2, {}),
    "logaddexp": ("_logaddexp({0}, {1})", _no_params, 2, {}),
    "copysign": ("tl.where(_signbit({1}), -tl.abs({0}), tl.abs({0}))", _no_params, 2,
                 {"int": "tl.where({1} < 0, -tl.abs({0}), tl.abs({0}))"}),
    "heaviside": ("tl.where({0} > 0, 1.0, tl.where({0} == 0, {1}, 0.0))", _no_params, 2,
                  {"int": "tl.where({0} > 0, 1, tl.where({0} == 0, {1}, 0))"}),
    # the one that is not nan; y on a tie (numpy's choice between 0.0 and -0.0)
    "fmax": ("tl.where({1} != {1}, {0}, tl.where(({0} != {0}) | ({1} >= {0}), {1}, {0}))", _no_params, 2,
             {"int": "tl.maximum({0}, {1})"}),
    "fmin": ("tl.where({1} != {1}, {0}, tl.where(({0} != {0}) | ({1} <= {0}), {1}, {0}))", _no_params, 2,
             {"int": "tl.minimum({0}, {1})"}),
    "masked_fill": ("tl.where({1} != 0, {2}, {0})", _no_params, 3, {}),  # inputs (x, mask, value)
    # -- activations (oar.nn) -----------------------------------------------------------------------------
    # expm1 of min(x, 0) as the reference's: -0.0 gives +0.0, nan stays nan
    "elu": ("tl.where({0} > 0, {0}, {p0} * _expm1(tl.where({0} >= 0, 0.0, {0})))", _params(("alpha", 1.0)), 1, {}),
    "selu": ("{p0} * tl.where({0} > 0, {0}, {p1} * _expm1(tl.where({0} >= 0, 0.0, {0})))",
             _params(("scale", 1.0507009873554805), ("alpha", 1.6732632423543772)), 1, {}),
    "hardsigmoid": ("_clamp({0} * {p0} + {p1}, 0.0, 1.0)", _params(("slope", 0.1666667), ("offset", 0.5)), 1, {}),
    "hardswish": ("{0} * _clamp({0} + 3.0, 0.0, 6.0) / 6.0", _no_params, 1, {}),
    "softplus": ("tl.where({0} * {p0} > {p1}, {0}, _log1p(tl.exp(tl.where({0} * {p0} > {p1}, {p1}, {0} * {p0}))) / {p0})",
                 _params(("beta", 1.0), ("threshold", 20.0)), 1, {}),
    "softsign": ("{0} / (1.0 + tl.abs({0}))", _no_params, 1, {}),
    "mish": ("{0} * _tanh(tl.where({0} > 20.0, {0}, _log1p(tl.exp(tl.where({0} > 20.0, 20.0, {0})))))", _no_params, 1,
             {}),
    "gelu_grad": ("tl.where({p0} != 0, _gelu_tanh_grad({0}, {1}, _tanh(0.7978845608028654 * ({0} + 0.044715 * {0} * {0} * {0}))), "
                  "_gelu_erf_grad({0}, {1}))",
                  _params(("approximate", False)), 2, {}),
}


# The dtypes each op is served in on the gpu (the others reach it through core's casts or refuse).
_ARITHMETIC = ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8")
_COMPARABLE = _ARITHMETIC + ("bool",)
_FLOATS = ("float16", "bfloat16", "float32", "float64")
_INTEGERS = ("int8", "int16", "int32", "int64", "uint8")
DTYPES = {name: _FLOATS for name in LOWERINGS}
# core's elementwise fusion chains fusible float ops: one kernel generated from their lowerings
DTYPES["fused_elementwise"] = _FLOATS
DTYPES.update({name: _ARITHMETIC for name in ("subtract", "neg", "abs", "scale", "clip", "sign", "floor", "ceil", "pow",
                                              "isnan")})
DTYPES.update({name: _COMPARABLE for name in ("add", "multiply", "maximum", "minimum")})
DTYPES.update({name: _ARITHMETIC for name in ("trunc", "round", "signbit", "copysign", "heaviside", "fmax", "fmin",
                                              "floor_divide", "remainder", "elementwise_pow")})
DTYPES.update({name: _COMPARABLE for name in ("isinf", "isfinite", "masked_fill")})
DTYPES.update({name: _INTEGERS + ("bool",) for name in ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not")})
DTYPES.update({name: _COMPARABLE for name in ("equal", "not_equal", "less_than", "less_equal", "greater_than",
                                              "greater_equal", "logical_and", "logical_or", "logical_xor",
                                              "logical_not", "where", "cast", "assign")})
