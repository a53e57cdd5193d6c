"""QuantConfig: Paddle's precedence (global < parent < type < name < layer), skip_quant, the
layer types to quantize, and errors that name the layer."""

from __future__ import annotations

import pytest

import oar
from oar import nn
from oar.quantization import PTQ, QAT, QuantConfig, QuantConfigError, QuantedConv2D, QuantedLinear
from oar.quantization.observers import (
    AbsMaxChannelWiseWeightObserver,
    AbsMaxChannelWiseWeightObserverLayer,
    AbsmaxObserver,
    AbsmaxObserverLayer,
    MovingAverageAbsmaxObserver,
    MovingAverageAbsmaxObserverLayer,
)
from oar.vision.models import LeNet


def lenet():
    return LeNet().eval()


def kinds(model):
    """{path: (activation observer class name, weight observer class name)} of the quantized layers."""
    out = {}
    for path, layer in model.named_sublayers():
        if isinstance(layer, (QuantedLinear, QuantedConv2D)):
            out[path] = tuple(None if q is None else type(q).__name__
                              for q in (layer.activation_quanter, layer.weight_quanter))
    return out


def test_the_global_config_quantizes_every_linear_and_conv2d():
    model = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=AbsmaxObserver())).quantize(lenet())
    assert kinds(model) == {p: ("AbsmaxObserverLayer", "AbsmaxObserverLayer")
                            for p in ("features.0", "features.3", "fc.0", "fc.1", "fc.2")}
    assert type(model.features[1]).__name__ == "ReLU"  # other layers stay as they are


def test_each_layer_gets_its_own_observer():
    model = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=AbsmaxObserver())).quantize(lenet())
    assert model.fc[0].activation_quanter is not model.fc[1].activation_quanter
    assert model.fc[0].activation_quanter is not model.fc[0].weight_quanter


def test_precedence_global_parent_type_name_layer():
    model = lenet()
    config = QuantConfig(activation=AbsmaxObserver(), weight=AbsmaxObserver())                    # 1 global
    config.add_layer_config(model.fc, activation=MovingAverageAbsmaxObserver(), weight=None)     # 2 parent (fc)
    config.add_type_config(nn.Conv2D, activation=None, weight=AbsMaxChannelWiseWeightObserver())  # 3 type
    config.add_type_config(nn.Linear, activation=AbsmaxObserver(), weight=AbsmaxObserver())       # 3 type, over the parent's
    config.add_name_config("fc.1", activation=None, weight=AbsMaxChannelWiseWeightObserver())    # 4 name (path)
    config.add_name_config(model.features[3].full_name(), activation=MovingAverageAbsmaxObserver(),
                           weight=None)                                                            # 4 name (full name)
    config.add_layer_config(model.features[3], activation=AbsmaxObserver(), weight=AbsmaxObserver())  # 5 layer
    config.add_layer_config(model.fc[2], activation=None, weight=None)                           # 5 layer: off
    quantized = PTQ(config).quantize(model)
    assert kinds(quantized) == {
        "features.0": (None, "AbsMaxChannelWiseWeightObserverLayer"),   # type over global
        "features.3": ("AbsmaxObserverLayer", "AbsmaxObserverLayer"),   # layer over name over type
        "fc.0": ("AbsmaxObserverLayer", "AbsmaxObserverLayer"),         # type over parent (Paddle's order)
        "fc.1": (None, "AbsMaxChannelWiseWeightObserverLayer"),         # name over type
    }
    assert type(quantized.fc[2]) is nn.Linear


def test_a_container_config_reaches_its_children():
    model = lenet()
    config = QuantConfig(activation=None, weight=None)
    config.add_layer_config(model.fc, activation=AbsmaxObserver(), weight=AbsMaxChannelWiseWeightObserver())
    assert set(kinds(PTQ(config).quantize(model))) == {"fc.0", "fc.1", "fc.2"}


def test_the_layer_config_holds_on_the_copy_quantize_makes():
    model = lenet()
    config = QuantConfig(activation=None, weight=None)
    config.add_layer_config([model.fc[0], model.features[0]], activation=AbsmaxObserver(), weight=AbsmaxObserver())
    quantized = PTQ(config).quantize(model)  # inplace=False: a deep copy, found again by full name
    assert set(kinds(quantized)) == {"features.0", "fc.0"}
    assert type(model.fc[0]) is nn.Linear


def test_skip_quant_leaves_a_layer_and_its_sublayers_alone():
    model = lenet()
    model.fc[1].skip_quant = True
    model.features.skip_quant = True
    quantized = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=AbsmaxObserver())).quantize(model)
    assert set(kinds(quantized)) == {"fc.0", "fc.2"}


def test_quantizable_layer_type_narrows_what_is_quantized():
    config = QuantConfig(activation=AbsmaxObserver(), weight=AbsmaxObserver(), quantizable_layer_type=["Conv2D"])
    assert set(kinds(PTQ(config).quantize(lenet()))) == {"features.0", "features.3"}
    config = QuantConfig(activation=AbsmaxObserver(), weight=AbsmaxObserver(), quantizable_layer_type=[nn.Linear])
    assert set(kinds(PTQ(config).quantize(lenet()))) == {"fc.0", "fc.1", "fc.2"}


def test_a_layer_type_without_a_quantized_layer_is_refused():
    config = QuantConfig(activation=AbsmaxObserver(), weight=None, quantizable_layer_type=["Embedding"])
    with pytest.raises(QuantConfigError, match="'Embedding' has no quantized layer"):
        PTQ(config).quantize(lenet())
    config = QuantConfig(activation=None, weight=None)
    config.add_type_config(nn.ReLU, activation=AbsmaxObserver())
    with pytest.raises(QuantConfigError, match=r"layer 'features.1' \(ReLU\).*only"):
        PTQ(config).quantize(lenet())


def test_names_and_layers_that_are_not_in_the_model_are_errors():
    config = QuantConfig(activation=AbsmaxObserver(), weight=AbsmaxObserver())
    config.add_name_config("fc.7", weight=AbsmaxObserver())
    with pytest.raises(QuantConfigError, match="no layer of LeNet is named 'fc.7'.*fc.0"):
        PTQ(config).quantize(lenet())
    config = QuantConfig(activation=AbsmaxObserver(), weight=AbsmaxObserver())
    config.add_layer_config(nn.Linear(2, 2), weight=AbsmaxObserver())
    with pytest.raises(QuantConfigError, match="'linear_.*' is not part of LeNet"):
        PTQ(config).quantize(lenet())


def test_a_channel_wise_activation_is_an_error_naming_the_layer():
    config = QuantConfig(activation=None, weight=AbsmaxObserver())
    config.add_name_config("fc.1", activation=AbsMaxChannelWiseWeightObserver())
    with pytest.raises(QuantConfigError, match=r"'fc.1' \(Linear\).*channel-wise.*for weights"):
        PTQ(config).quantize(lenet())


def test_a_channel_wise_weight_on_an_unknown_layout_is_an_error_naming_the_layer():
    class Scaled(nn.Layer):  # a weight and a bias, but no known channel axis
        def __init__(self):
            super().__init__()
            self.weight = self.create_parameter([3, 3])
            self.bias = self.create_parameter([3], is_bias=True)

    class Wide(nn.Linear):
        pass

    config = QuantConfig(activation=None, weight=AbsMaxChannelWiseWeightObserver())
    config.add_qat_layer_mapping(Scaled, QuantedLinear)
    with pytest.raises(QuantConfigError, match=r"layer '1' \(Scaled\).*channel-wise"):
        PTQ(config).quantize(nn.Sequential(nn.Linear(3, 3), Scaled()))
    config.add_qat_layer_mapping(Wide, QuantedLinear)
    quantized = PTQ(config).quantize(nn.Sequential(Wide(2, 2)))  # a Linear subclass has Linear's layout
    assert quantized[0].weight_quanter.quant_axis() == 1


def test_factories_not_classes():
    with pytest.raises(QuantConfigError, match=r"pass an instance, AbsmaxObserver\(\)"):
        QuantConfig(activation=AbsmaxObserver, weight=None)
    with pytest.raises(QuantConfigError, match="expected a subclass of oar.nn.Layer"):
        QuantConfig(activation=None, weight=None).add_type_config("Linear", weight=AbsmaxObserver())
    with pytest.raises(QuantConfigError, match="expected a QuantConfig"):
        PTQ({"activation": AbsmaxObserver()})


def test_quantconfig_errors_are_value_errors():
    assert issubclass(QuantConfigError, ValueError)


def test_details_lists_each_layers_config():
    ptq = PTQ(QuantConfig(activation=MovingAverageAbsmaxObserver(moving_rate=0.5), weight=AbsmaxObserver()))
    ptq.quantize(lenet())
    text = str(ptq)
    assert "(fc.0) Linear: activation: MovingAverageAbsmaxObserver(moving_rate=0.5, quant_bits=8)" in text
    assert AbsmaxObserverLayer and AbsMaxChannelWiseWeightObserverLayer and MovingAverageAbsmaxObserverLayer


def test_oar_quantization_and_oar_slim_are_lazy_attributes_of_oar():
    assert oar.quantization.PTQ is PTQ and oar.slim.QAT is QAT
