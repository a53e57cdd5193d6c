"""Weight-only INT8 for Linear layers: int8 weights ``[out, in]`` with one scale per output
channel, float activations (``oar.nn.quant.weight_only_linear``), or LLM.int8()
(``llm_int8_linear``). No calibration: the weights are all it needs.
"""

from __future__ import annotations

import copy

import oar
from oar import nn
from oar.nn.quant import llm_int8_linear, weight_only_linear, weight_quantize

from .config import QuantConfigError

ALGOS = ("weight_only_int8", "llm.int8")


class WeightOnlyLinear(nn.Layer):
    """A Linear whose weight is an int8 buffer ``[out_features, in_features]`` with float32
    ``weight_scale [out_features]`` (the step, as ``weight_quantize`` returns it).

    >>> import oar
    >>> from oar.quantization import WeightOnlyLinear
    >>> fc = oar.nn.Linear(16, 4)
    >>> q = WeightOnlyLinear(fc)
    >>> q.weight.dtype.name, q.weight.shape
    ('int8', [4, 16])
    >>> x = oar.randn([2, 16])
    >>> bool((q(x) - fc(x)).abs().max() < 0.05)
    True
    """

    def __init__(self, layer: nn.Linear, algo: str = "weight_only_int8", threshold: float = 6.0):
        super().__init__()
        if algo not in ALGOS:
            raise QuantConfigError(f"WeightOnlyLinear: algo must be one of {list(ALGOS)}, got {algo!r}")
        with oar.no_grad():
            q, scale = weight_quantize(layer.weight.detach(), algo=algo)
        self.register_buffer("weight", q)
        self.register_buffer("weight_scale", scale)
        self.bias = layer.bias
        self.algo, self.threshold = algo, float(threshold)
        self.in_features, self.out_features = layer.weight.shape

    def forward(self, x):
        if self.algo == "llm.int8":
            return llm_int8_linear(x, self.weight, self.bias, weight_scale=self.weight_scale, threshold=self.threshold)
        return weight_only_linear(x, self.weight, self.bias, weight_scale=self.weight_scale)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, algo={self.algo!r}"


def weight_only_quantize(model: nn.Layer, algo: str = "weight_only_int8", inplace: bool = False,
                         threshold: float = 6.0) -> nn.Layer:
    """``model`` with every ``nn.Linear`` (not marked ``skip_quant``) replaced by a
    ``WeightOnlyLinear``: about 4x smaller weights, activations stay float.

    >>> import oar
    >>> from oar.quantization import weight_only_quantize
    >>> model = oar.nn.Sequential(oar.nn.Linear(8, 8), oar.nn.ReLU(), oar.nn.Linear(8, 2))
    >>> [type(layer).__name__ for layer in weight_only_quantize(model)]
    ['WeightOnlyLinear', 'ReLU', 'WeightOnlyLinear']
    """
    if not isinstance(model, nn.Layer):
        raise QuantConfigError(f"weight_only_quantize: expected an oar.nn.Layer, got {type(model).__name__}")
    if algo not in ALGOS:
        raise QuantConfigError(f"weight_only_quantize: algo must be one of {list(ALGOS)}, got {algo!r}")
    _model = model if inplace else copy.deepcopy(model)
    if isinstance(_model, nn.Linear):
        return WeightOnlyLinear(_model, algo, threshold)
    _replace(_model, algo, threshold)
    return _model


def _replace(layer: nn.Layer, algo: str, threshold: float) -> None:
    for name, child in list(layer.named_children()):
        if getattr(child, "skip_quant", False):
            continue
        if isinstance(child, nn.Linear):
            layer._sub_layers[name] = WeightOnlyLinear(child, algo, threshold)
        else:
            _replace(child, algo, threshold)
