"""The gpu backend's kernels, one module per family, and the ops and dtypes each serves.

The table is read when the plugin registers, without importing Triton: each module is imported
on its first kernel call (``oar_triton.plugin``). A module's ``KERNELS`` maps op names to kernel
functions ``fn(*device_arrays, **attrs)`` that return ``DeviceArray``s as the op's reference kernel
returns numpy arrays; ``tests/oar-triton/test_kernel_table.py`` checks the two agree.

float16 and bfloat16 kernels load and store the half type and compute in float32.
"""

from __future__ import annotations

from oar_triton.kernels.lowerings import DTYPES as ELEMENTWISE_DTYPES

FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("int8", "int16", "int32", "int64", "uint8")
BOOL = ("bool",)

ALL = FLOATS + INTS + BOOL

# Each family: op name -> the dtypes its gpu kernel serves.
SHAPE: dict[str, tuple[str, ...]] = {
    **{op: ALL for op in ("reshape", "flatten", "squeeze", "unsqueeze", "transpose", "broadcast_to", "slice",
                          "strided_slice", "getitem", "split", "unbind", "concat", "stack", "full_like", "tile", "flip",
                          "roll", "pad", "tril", "triu", "gather", "take_along_axis", "_take_along_axis", "setitem",
                          "masked_select", "nonzero", "gather_nd")},
    # scatters add with atomics: in float32 (half types), float64, int32 or int64
    **{op: FLOATS + ("int32", "int64") for op in ("getitem_grad", "_scatter_add_along_axis", "index_add",
                                                  "scatter_nd_add", "scatter")},
    "one_hot": INTS,
    "put_along_axis": FLOATS + INTS,
}
REDUCTION: dict[str, tuple[str, ...]] = {
    **{op: FLOATS + INTS for op in ("argmax", "argmin", "cumsum")},
    **{op: FLOATS for op in ("mean", "var", "std", "logsumexp")},
    **{op: ALL for op in ("sum", "prod", "max", "min", "amax", "amin", "all", "any")},
}
SOFTMAX: dict[str, tuple[str, ...]] = {
    op: FLOATS for op in ("softmax", "softmax_grad", "log_softmax", "log_softmax_grad", "softmax_with_cross_entropy",
                          "softmax_with_cross_entropy_grad", "nll_loss")
}
MATMUL: dict[str, tuple[str, ...]] = {
    **{op: FLOATS + INTS for op in ("matmul", "dot", "linear", "linear_grad")},
    "outer": ALL,
    "fused_linear": FLOATS,
    "matmul_int8": ("int8",),
    "quantized_linear": ("int8",),
}
NORM: dict[str, tuple[str, ...]] = {
    op: FLOATS for op in ("layer_norm", "layer_norm_grad", "group_norm", "group_norm_grad", "batch_norm",
                          "batch_norm_grad", "batch_norm_infer")
}
EMBEDDING: dict[str, tuple[str, ...]] = {"embedding": FLOATS, "embedding_grad": FLOATS}
RANDOM: dict[str, tuple[str, ...]] = {
    "uniform": FLOATS, "gaussian": FLOATS, "randint": INTS, "bernoulli": FLOATS + ("int32", "int64"),
}
CONV: dict[str, tuple[str, ...]] = {
    name: FLOATS for name in ("conv", "conv_transpose", "conv_weight_grad", "fused_conv2d")
}
POOLING: dict[str, tuple[str, ...]] = {
    name: FLOATS for name in ("max_pool", "max_pool_infer", "max_pool_grad", "avg_pool", "avg_pool_grad",
                              "adaptive_avg_pool", "adaptive_avg_pool_grad", "adaptive_max_pool")
}

KERNEL_MODULES: dict[str, dict[str, tuple[str, ...]]] = {
    "oar_triton.kernels.transfer": {"to_device": ALL},
    "oar_triton.kernels.elementwise": ELEMENTWISE_DTYPES,
    "oar_triton.kernels.shape": SHAPE,
    "oar_triton.kernels.reduction": REDUCTION,
    "oar_triton.kernels.softmax": SOFTMAX,
    "oar_triton.kernels.matmul": MATMUL,
    "oar_triton.kernels.norm": NORM,
    "oar_triton.kernels.embedding": EMBEDDING,
    "oar_triton.kernels.random": RANDOM,
    "oar_triton.kernels.conv": CONV,
    "oar_triton.kernels.pooling": POOLING,
}

# Modules whose Triton kernels serve no op (the optimizer updates, registered with oar-nn's update
# rules by ``oar_triton.optimizer``): compiled ahead of time with the others.
OTHER_KERNEL_MODULES = ("oar_triton.kernels.optimizer",)
