"""Paddle 3's AMP op lists (``paddle/amp/amp_lists.py``), by Paddle's operator names, and how they
map onto oar's ops.

What an op does under ``auto_cast`` is read first from the op itself: its AMP category
(``oar.ops.amp_category``: ``low_precision`` ops form the white list, ``fp32`` ops the black list of
level O1, the ``promote`` ones follow their inputs). Paddle's lists add what a category cannot say:

- ``EXTRA_BLACK_LIST``: ops kept in float32 at O1 *and* O2 (their low-precision gradients are slow);
- ``ONLY_FP16_WHITE_LIST``: ops in the white list for float16 only;
- ``FP16_BLACK_LIST`` and ``WHITE_LIST``: the default lists themselves, which oar's categories
  follow; where an op's declared category differs, the plugin overrides it
  (``CATEGORY_OVERRIDES``, registered through ``oar_register_amp_categories``).

The lists name Paddle's operators (``conv2d``, ``matmul_v2``, ``elementwise_add``,
``lookup_table_v2``); ``resolve`` turns such a name -- or an oar op name (``conv``, ``add``), or a
Paddle API name an op serves (``max_pool2d``) -- into oar's op names, and so do
``auto_cast``'s ``custom_white_list`` and ``custom_black_list``.

>>> from oar.amp.amp_lists import resolve
>>> resolve("elementwise_add"), resolve("conv2d"), resolve("linear_interp_v2")
(('add',), ('conv',), ('interpolate',))
"""

from __future__ import annotations

from oar.ops import AMP_FP32
from oar.plugins import registries

# The set of ops that support float16 and bfloat16 and are numerically safe and performance-critical.
WHITE_LIST = {
    "conv2d",
    "einsum",
    "matmul",
    "matmul_v2",
    "max_pool2d_with_index",
    "mul",
    "fused_gemm_epilogue",
    "fused_rotary_position_embedding",
    "flash_attn",
}

# The ops that support float16 but not bfloat16.
ONLY_FP16_WHITE_LIST = {
    "fake_quantize_dequantize_abs_max",
    "fake_quantize_dequantize_moving_average_abs_max",
    "fused_attention",
    "fused_feedforward",
}

FP16_WHITE_LIST = WHITE_LIST | ONLY_FP16_WHITE_LIST

# Numerically dangerous in low precision, with effects seen downstream.
FP16_BLACK_LIST = {
    "tan", "acos", "asin", "sinh", "cosh", "atanh", "tanh_shrink", "erfinv", "exp", "expm1", "log",
    "log10", "log2", "reciprocal", "rsqrt", "pow", "square", "reduce_sum", "mean", "reduce_mean",
    "reduce_prod", "cumprod", "cumsum", "dist", "pnorm", "frobenius_norm", "renorm", "group_norm",
    "layer_norm", "softmax", "softmin", "softplus", "log_softmax", "softmax_with_cross_entropy",
    "sigmoid_cross_entropy_with_logits", "c_softmax_with_cross_entropy", "cross_entropy", "cross_entropy2",
    "nll_loss", "huber_loss", "triplet_margin_loss", "log_loss", "hsigmoid_loss", "margin_cross_entropy",
}

# Their float16/bfloat16 gradients are slower than float32's: float32 at O1 and O2.
EXTRA_BLACK_LIST = {
    "linear_interp_v2",
    "nearest_interp_v2",
    "bilinear_interp_v2",
    "bicubic_interp_v2",
    "trilinear_interp_v2",
    "lookup_table",
    "lookup_table_v2",
    "scatter",
}

BF16_WHITE_LIST = WHITE_LIST
BF16_BLACK_LIST = FP16_BLACK_LIST


def white_list() -> dict:
    """Paddle's default white lists by dtype and level (Paddle's operator names)."""
    return {
        "float16": {"OD": FP16_WHITE_LIST, "O1": FP16_WHITE_LIST, "O2": FP16_WHITE_LIST},
        "bfloat16": {"OD": BF16_WHITE_LIST, "O1": BF16_WHITE_LIST, "O2": BF16_WHITE_LIST},
    }


def black_list() -> dict:
    """Paddle's default black lists by dtype and level: at OD every op outside the white list runs
    in float32 anyway."""
    return {
        "float16": {"OD": set(), "O1": FP16_BLACK_LIST | EXTRA_BLACK_LIST, "O2": EXTRA_BLACK_LIST},
        "bfloat16": {"OD": set(), "O1": BF16_BLACK_LIST | EXTRA_BLACK_LIST, "O2": EXTRA_BLACK_LIST},
    }


# Paddle operator names that are neither an oar op's name nor a Paddle API name one serves.
PADDLE_OPERATORS = {
    "conv2d": ("conv",), "conv3d": ("conv",), "depthwise_conv2d": ("conv",),
    "conv2d_transpose": ("conv_transpose",), "conv3d_transpose": ("conv_transpose",),
    "depthwise_conv2d_transpose": ("conv_transpose",),
    "matmul_v2": ("matmul",), "mul": ("matmul",), "fused_gemm_epilogue": ("fused_linear",),
    "elementwise_add": ("add",), "elementwise_sub": ("subtract",), "elementwise_mul": ("multiply",),
    "elementwise_div": ("divide",), "elementwise_max": ("maximum",), "elementwise_min": ("minimum",),
    "elementwise_floordiv": ("floor_divide",), "elementwise_mod": ("remainder",),
    "reduce_sum": ("sum",), "reduce_mean": ("mean",), "reduce_prod": ("prod",), "reduce_max": ("max",),
    "reduce_min": ("min",), "pnorm": ("p_norm",),
    "lookup_table": ("embedding",), "lookup_table_v2": ("embedding",),
    "linear_interp_v2": ("interpolate",), "nearest_interp_v2": ("interpolate",),
    "bilinear_interp_v2": ("interpolate",), "bicubic_interp_v2": ("interpolate",),
    "trilinear_interp_v2": ("interpolate",),
    "pool2d": ("avg_pool", "max_pool"), "pool3d": ("avg_pool", "max_pool"),
    "cross_entropy": ("softmax_with_cross_entropy",), "cross_entropy2": ("softmax_with_cross_entropy",),
    "fake_quantize_dequantize_abs_max": ("fake_quantize_dequantize",),
    "fake_quantize_dequantize_moving_average_abs_max": ("fake_quantize_dequantize",),
}

# Where an op's declared category differs from Paddle's default lists (FP16_BLACK_LIST names these).
CATEGORY_OVERRIDES = {name: AMP_FP32 for name in ("tan", "reciprocal", "rsqrt", "acos", "asin", "atanh", "cosh", "sinh")}


_API_INDEX: list = [None, {}]  # (the op names it was built from, the index)


def _api_index() -> dict[str, tuple[str, ...]]:
    """The last part of every Paddle API name an op serves (``nn.functional.max_pool2d`` -> ``max_pool``)."""
    ops = registries().ops
    names = frozenset(ops)
    if _API_INDEX[0] != names:  # built again when a plugin added or removed ops
        index: dict[str, list[str]] = {}
        for name in sorted(names):
            for api in ops.get(name).paddle or ():
                index.setdefault(api.rsplit(".", 1)[-1], []).append(name)
        _API_INDEX[:] = [names, {api: tuple(found) for api, found in index.items()}]
    return _API_INDEX[1]


def resolve(name: str) -> tuple[str, ...]:
    """oar's op names for ``name``: an oar op name, a Paddle operator name (``elementwise_add``)
    or a Paddle API name an op serves (``max_pool2d``); ``()`` where oar has no such op."""
    ops = registries().ops
    if name in ops:
        return (name,)
    if name in PADDLE_OPERATORS:
        return tuple(n for n in PADDLE_OPERATORS[name] if n in ops)
    return _api_index().get(name, ())


def resolve_all(names) -> set[str]:
    """The oar op names of every Paddle list name in ``names`` that oar has."""
    return {op for name in names for op in resolve(name)}
