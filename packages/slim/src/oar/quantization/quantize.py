"""``PTQ`` and ``QAT`` (Paddle's ``paddle.quantization``): ``quantize`` puts quanters into a copy
of the model, ``convert`` turns the calibrated or trained copy into an INT8 model.

::

    ptq = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=AbsMaxChannelWiseWeightObserver()))
    observed = ptq.quantize(model)           # eval mode; observers watch, outputs stay float
    for x in calibration_batches: observed(x)
    int8_model = ptq.convert(observed)       # int8 weight buffers, QDQ on activations
    oar.jit.save(int8_model, "lenet_int8", input_spec=[...])

QAT is the same with fake quanters (``FakeQuanterWithAbsMaxObserver``) and a training loop between
``quantize`` (train mode) and ``convert``.
"""

from __future__ import annotations

import copy

from oar.nn import Layer

from .base import BaseObserver, BaseQuanter
from .config import QuantConfig, QuantConfigError
from .format import LinearQuanterDequanter
from .quanted import ConvertibleQuantedLayer


def _check_model(where: str, model) -> None:
    if not isinstance(model, Layer):
        raise QuantConfigError(f"{where}: expected an oar.nn.Layer, got {type(model).__name__}")


class Quantization:
    """What PTQ and QAT share: the config (copied), the layer replacement and ``convert``."""

    def __init__(self, config: QuantConfig):
        if not isinstance(config, QuantConfig):
            raise QuantConfigError(f"{type(self).__name__}: expected a QuantConfig, got {type(config).__name__}")
        self._config = copy.deepcopy(config)

    def quantize(self, model: Layer, inplace: bool = False) -> Layer:
        raise NotImplementedError

    def _prepare(self, model: Layer) -> Layer:
        self._config._specify(model)
        self._convert_to_quant_layers(model, "")
        return model

    def _convert_to_quant_layers(self, model: Layer, prefix: str) -> None:
        config = self._config
        for name, child in list(model.named_children()):
            path = f"{prefix}.{name}" if prefix else name
            if getattr(child, "skip_quant", False):
                continue
            if config._is_quantifiable(child) and config._mapped_type(child) is not None:
                model._sub_layers[name] = config._get_qat_layer(child, path)
            elif type(child) not in config.customized_leaves:
                self._convert_to_quant_layers(child, path)

    def convert(self, model: Layer, inplace: bool = False) -> Layer:
        """The INT8 model: every quantized layer's weight becomes an int8 buffer with its
        per-channel (or per-tensor) step, every activation quanter a quantize/dequantize pair.

        Refuses an activation observer that saw no data (``PTQ``: run calibration batches through
        the quantized model first), naming the layer.
        """
        _check_model(f"{type(self).__name__}.convert", model)
        _model = model if inplace else copy.deepcopy(model)
        self._convert_helper(_model, "")
        return _model

    def _convert_helper(self, model: Layer, prefix: str) -> None:
        for name, child in list(model.named_children()):
            path = f"{prefix}.{name}" if prefix else name
            if isinstance(child, ConvertibleQuantedLayer):
                for quanter_name in child.activation_quanters():
                    quanter = getattr(child, quanter_name, None)
                    if isinstance(quanter, BaseObserver):
                        quanter.cal_thresholds()
                        if not quanter.observed():
                            raise QuantConfigError(
                                f"{type(self).__name__}.convert: the activation observer of layer {path!r} "
                                f"({type(quanter).__name__}) has seen no data: run calibration batches through the "
                                "model that quantize() returned before convert()")
                child._convert()
            elif isinstance(child, BaseQuanter):
                if isinstance(child, BaseObserver):
                    child.cal_thresholds()
                model._sub_layers[name] = LinearQuanterDequanter.from_quanter(child)
            else:
                self._convert_helper(child, path)

    def _details(self) -> str:
        return self._config.details()

    def __str__(self) -> str:
        return self._details()

    __repr__ = __str__


class PTQ(Quantization):
    """Post-training quantization (Paddle's ``paddle.quantization.PTQ``).

    >>> import oar
    >>> from oar.quantization import PTQ, QuantConfig
    >>> from oar.quantization.observers import AbsmaxObserver, AbsMaxChannelWiseWeightObserver
    >>> ptq = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=AbsMaxChannelWiseWeightObserver()))
    >>> model = oar.nn.Sequential(oar.nn.Linear(8, 4), oar.nn.ReLU(), oar.nn.Linear(4, 2))
    >>> observed = ptq.quantize(model)
    >>> _ = observed(oar.randn([16, 8]))  # calibration
    >>> int8 = ptq.convert(observed)
    >>> int8[0].weight.dtype.name, int8(oar.randn([3, 8])).shape
    ('int8', [3, 2])
    """

    def quantize(self, model: Layer, inplace: bool = False) -> Layer:
        """The model with observers, for calibration: in eval mode, outputs unchanged.

        ``inplace=False`` quantizes a deep copy (in eval mode); ``inplace=True`` needs the model
        in eval mode already (``model.eval()``), as in Paddle.
        """
        _check_model("PTQ.quantize", model)
        if inplace:
            if model.training:
                raise QuantConfigError("PTQ.quantize: post-training quantization works on a model in eval mode; "
                                       "call model.eval() first")
            _model = model
        else:
            _model = copy.deepcopy(model)
            _model.eval()
        return self._prepare(_model)


class QAT(Quantization):
    """Quantization-aware training (Paddle's ``paddle.quantization.QAT``).

    >>> import oar
    >>> from oar.quantization import QAT, QuantConfig
    >>> from oar.quantization.quanters import FakeQuanterWithAbsMaxObserver
    >>> quanter = FakeQuanterWithAbsMaxObserver(moving_rate=0.9)
    >>> qat = QAT(QuantConfig(activation=quanter, weight=quanter))
    >>> model = qat.quantize(oar.nn.Sequential(oar.nn.Linear(8, 2)))
    >>> model(oar.randn([4, 8])).sum().backward()  # the fake quanters pass the gradient through
    >>> model[0].weight.grad is not None
    True
    >>> qat.convert(model)[0].weight.dtype.name
    'int8'
    """

    def quantize(self, model: Layer, inplace: bool = False) -> Layer:
        """The model with fake quanters, in train mode: train it as usual, then ``convert``."""
        _check_model("QAT.quantize", model)
        if not model.training:
            raise QuantConfigError("QAT.quantize: quantization-aware training works on a model in train mode; "
                                   "call model.train() first")
        _model = model if inplace else copy.deepcopy(model)
        return self._prepare(_model)
