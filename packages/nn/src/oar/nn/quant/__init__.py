"""``oar.nn.quant``: int8 inference and quantization primitives, under Paddle's ``paddle.nn.quant`` names.

- ``weight_quantize`` / ``weight_dequantize``: per-output-channel symmetric int8 weights
  (``algo="weight_only_int8"`` or ``"llm.int8"``), stored ``[out_features, in_features]``.
- ``weight_only_linear``: float activations times an int8 weight.
- ``llm_int8_linear``: LLM.int8(), int8 activations and weights with outlier columns in float.
- ``quantize_linear`` / ``dequantize_linear`` / ``fake_quantize_dequantize``: the QDQ ops of
  slim's quantization passes and of ONNX export, per tensor or per channel.
- ``matmul_int8``: the exact int8 x int8 -> int32 GEMM.
- ``quantized_linear`` / ``quantized_conv2d``: int8 layers (int8 activations and weights, int32
  sums, float32 out with bias and activation) that oar-slim's ``quantized_ops`` pass runs.

>>> import oar
>>> from oar.nn import quant
>>> w = oar.randn([64, 32])
>>> q, scale = quant.weight_quantize(w)
>>> y = quant.weight_only_linear(oar.randn([2, 64]), q, weight_scale=scale)
>>> y.shape
[2, 32]

oar-numba registers compiled kernels for these ops (docs/numba.md).
"""

from oar.nn.functional.quant import (
    dequantize_linear,
    fake_quantize_dequantize,
    llm_int8_linear,
    matmul_int8,
    quantize_linear,
    quantized_conv2d,
    quantized_linear,
    weight_dequantize,
    weight_only_linear,
    weight_quantize,
)

__all__ = ["weight_quantize", "weight_dequantize", "weight_only_linear", "llm_int8_linear", "matmul_int8",
           "quantize_linear", "dequantize_linear", "fake_quantize_dequantize", "quantized_linear", "quantized_conv2d"]
