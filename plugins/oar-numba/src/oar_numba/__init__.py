"""oar-numba: numba-compiled CPU kernels for oar-nn's hot ops, registered over the numpy references.

Installing the distribution is all it takes: oar finds it through the entry point ``numba`` of
the group ``oar`` and dispatches these kernels for float32 and float64 on ``cpu``.
``OAR_DISABLE_PLUGINS=numba`` turns them off; ``oar.set_num_threads(n)`` sizes numba's threads
together with BLAS's. ``KERNELS`` maps each op name to the kernel registered for it:

>>> from oar_numba import KERNELS
>>> sorted(KERNELS)[:3]
['adaptive_avg_pool_grad', 'adaptive_max_pool', 'avg_pool']
"""

from oar_numba import _activation, _conv, _embedding, _fused, _group_norm, _linear, _loss, _norm, _pooling, _quant

__version__ = "0.1.0"

KERNELS = {
    "conv": _conv.conv,
    "conv_transpose": _conv.conv_transpose,
    "conv_weight_grad": _conv.conv_weight_grad,
    "max_pool": _pooling.max_pool,
    "max_pool_grad": _pooling.max_pool_grad,
    "adaptive_avg_pool_grad": _pooling.adaptive_avg_pool_grad,
    "adaptive_max_pool": _pooling.adaptive_max_pool,
    "batch_norm": _norm.batch_norm,
    "batch_norm_grad": _norm.batch_norm_grad,
    "batch_norm_infer": _norm.batch_norm_infer,
    "layer_norm": _norm.layer_norm,
    "layer_norm_grad": _norm.layer_norm_grad,
    "softmax_grad": _activation.softmax_grad,
    "softmax_with_cross_entropy": _loss.softmax_with_cross_entropy,
    "embedding_grad": _embedding.embedding_grad,
    "relu": _activation.relu,
    "relu_grad": _activation.relu_grad,
    "gelu": _activation.gelu,
    "where": _activation.where,
    "linear": _linear.linear,
    "max_pool_infer": _fused.max_pool_infer,
    "fused_conv2d": _fused.fused_conv2d,
    "fused_elementwise": _fused.fused_elementwise,
    "softmax_with_cross_entropy_grad": _loss.softmax_with_cross_entropy_grad,
    "log_softmax": _loss.log_softmax,
    "log_softmax_grad": _loss.log_softmax_grad,
    "group_norm": _group_norm.group_norm,
    "group_norm_grad": _group_norm.group_norm_grad,
    "avg_pool": _pooling.avg_pool,
    "avg_pool_grad": _pooling.avg_pool_grad,
    "quantize_linear": _quant.quantize_linear,
    "dequantize_linear": _quant.dequantize_linear,
    "fake_quantize_dequantize": _quant.fake_quantize_dequantize,
    "matmul_int8": _quant.matmul_int8,
    "weight_only_linear": _quant.weight_only_linear,
    "llm_int8_linear": _quant.llm_int8_linear,
}

# Other ways to compute an op, which oar.incubate.autotune times against the kernel above on the
# shapes a model runs (docs/autotune.md): op -> [(name, kernel)]. Each takes every input the op
# takes; a path that does not apply to a call hands it to the path the kernel would pick.
ALTERNATIVES = {
    "conv": [("numba.bands", _conv.conv_bands), ("numba.im2col", _conv.conv_im2col),
             ("numpy.reference", _conv._ref.conv_op.reference)],
    "conv_weight_grad": [("numba.bands", _conv.conv_weight_grad_bands),
                         ("numba.channels_last", _conv.conv_weight_grad_channels_last),
                         ("numba.im2col", _conv.conv_weight_grad_im2col),
                         ("numpy.reference", _conv._ref.conv_weight_grad_op.reference)],
    "max_pool": [("numpy.reference", _pooling._ref.max_pool_op.reference)],
}

# The dtype a kernel is registered for is its op's first input's: int8 for the ops that take an
# int8 tensor first; float32 and float64 (plugin.DTYPES) for the rest.
KERNEL_DTYPES = {"dequantize_linear": ("int8",), "matmul_int8": ("int8",)}

__all__ = ["ALTERNATIVES", "KERNELS", "KERNEL_DTYPES"]
