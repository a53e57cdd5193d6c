"""oar.slim's quantization sensitivity on the digits LeNet: one row per quantizable layer, drops
against a baseline recomputed here, each layer's metric recomputed with another mechanism
(skip_quant), the mixed-precision search meeting its budget with float weights where it says,
and the JSON table."""

from __future__ import annotations

import copy
import doctest
import json

import numpy as np
import pytest

import oar
import oar.slim.sensitivity
from oar import nn
from oar.errors import ArgumentError, SerializationError
from oar.quantization import PTQ, QuantConfig
from oar.quantization.observers import AbsMaxChannelWiseWeightObserver, AbsmaxObserver
from oar.slim.sensitivity import (
    LayerSensitivity,
    QuantSensitivity,
    load_sensitivities,
    mixed_precision_config,
    quant_sensitivity,
    quantizable_layers,
)

from .conftest import accuracy

LENET_LAYERS = {"features.0": "Conv2D", "features.3": "Conv2D", "fc.0": "Linear", "fc.1": "Linear", "fc.2": "Linear"}


def two_bit_config() -> QuantConfig:
    # int8 costs this LeNet nothing (docs/slim.md); 2-bit weights make the layers differ.
    return QuantConfig(activation=AbsmaxObserver(), weight=AbsMaxChannelWiseWeightObserver(quant_bits=2))


def calib_batches(digits) -> list[np.ndarray]:
    return [digits["x_train"][b * 64:(b + 1) * 64] for b in range(4)]


def test_docstring_examples_run():
    assert doctest.testmod(oar.slim.sensitivity, optionflags=doctest.ELLIPSIS).failed == 0


@pytest.fixture(scope="module")
def evaluate(digits):
    return lambda model: accuracy(model, digits["x_test"], digits["y_test"])


@pytest.fixture(scope="module")
def table(float_lenet, digits, evaluate):
    return quant_sensitivity(float_lenet, evaluate, calib_batches(digits), config=two_bit_config(), print_table=False)


def test_quantizable_layers_are_the_conv_and_linear_layers(float_lenet):
    assert quantizable_layers(float_lenet) == LENET_LAYERS
    model = copy.deepcopy(float_lenet)
    model.fc[1].skip_quant = True
    assert list(quantizable_layers(model)) == ["features.0", "features.3", "fc.0", "fc.2"]


def test_one_row_per_quantizable_layer_with_drops_from_the_float_baseline(table, float_lenet, evaluate):
    assert {row.layer: row.layer_type for row in table.layers} == LENET_LAYERS
    baseline = evaluate(float_lenet)
    assert baseline >= 0.93 and table.baseline == baseline
    for row in table.layers:
        assert row.drop == pytest.approx(baseline - row.metric, abs=1e-12)
    drops = [row.drop for row in table.layers]
    assert drops == sorted(drops, reverse=True)
    # features.3 (16x6x5x5 weights) is the layer 2-bit weights hurt: 96.4% -> 73.6%.
    assert table.ranking()[0] == "features.3" and table.layers[0].drop > 0.1
    assert table.quantized < baseline - 0.1


def test_each_metric_is_the_model_with_only_that_layer_quantized(table, float_lenet, digits, evaluate):
    # Recomputed with skip_quant on the other layers, not the name configs the tool uses.
    for row in table.layers:
        model = copy.deepcopy(float_lenet)
        for path, layer in model.named_sublayers():
            if path in LENET_LAYERS and path != row.layer:
                layer.skip_quant = True
        ptq = PTQ(two_bit_config())
        observed = ptq.quantize(model)
        with oar.no_grad():
            for batch in calib_batches(digits):
                observed(oar.to_tensor(batch))
        converted = ptq.convert(observed)
        assert sum(type(layer).__name__.startswith("Quanted") for layer in converted.sublayers()) == 1
        assert evaluate(converted) == row.metric, row.layer


def test_the_float_model_is_left_alone(float_lenet, digits, evaluate):
    before = {k: v.numpy().copy() for k, v in float_lenet.state_dict().items()}
    quant_sensitivity(float_lenet, evaluate, calib_batches(digits), layers=["fc.2"], print_table=False)
    assert type(float_lenet.fc[2]) is nn.Linear
    for k, v in float_lenet.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k])


def test_prints_the_table_sorted_by_drop(float_lenet, digits, evaluate, capsys):
    result = quant_sensitivity(float_lenet, evaluate, calib_batches(digits), config=two_bit_config(),
                               layers=["fc.1", "features.3"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("quantization sensitivity: float 0.96")
    assert lines[1].split() == ["layer", "type", "metric", "drop"]
    assert [line.split()[0] for line in lines[2:]] == ["features.3", "fc.1"] == result.ranking()


def test_unknown_or_unquantizable_layer_names_are_refused(float_lenet, digits, evaluate):
    with pytest.raises(ArgumentError, match=r"LeNet has no layer 'fc\.9'.*features\.0, features\.3, fc\.0"):
        quant_sensitivity(float_lenet, evaluate, calib_batches(digits), layers=["fc.9"])
    with pytest.raises(ArgumentError, match=r"'features\.1' is not quantized by this config"):
        quant_sensitivity(float_lenet, evaluate, calib_batches(digits), layers=["features.1"])


def test_calibration_data_and_eval_func_are_checked(float_lenet, digits, evaluate):
    with pytest.raises(ArgumentError, match="no batches"):
        quant_sensitivity(float_lenet, evaluate, [])
    with pytest.raises(ArgumentError, match=r"wrap one batch in a list"):
        quant_sensitivity(float_lenet, evaluate, oar.to_tensor(digits["x_train"][:8]))
    with pytest.raises(ArgumentError, match="eval_func must return a number"):
        quant_sensitivity(float_lenet, lambda m: "good", calib_batches(digits))


def test_calibration_data_may_be_a_generator(float_lenet, digits, evaluate, table):
    # A generator is read once and reused for every layer: the same numbers as with a list.
    batches = (b for b in calib_batches(digits))
    again = quant_sensitivity(float_lenet, evaluate, batches, config=two_bit_config(), print_table=False)
    assert again == table


def test_json_round_trip(table, tmp_path):
    path = tmp_path / "sensitivity.json"
    table.save(path)
    data = json.loads(path.read_text())
    assert data["format"] == "oar.slim.quant_sensitivity" and len(data["layers"]) == 5
    loaded = load_sensitivities(path)
    assert loaded == table and loaded.ranking() == table.ranking()
    assert all(isinstance(row, LayerSensitivity) for row in loaded.layers)


def test_load_refuses_other_files(tmp_path):
    (tmp_path / "pickle.json").write_bytes(b"\x80\x04\x95")
    (tmp_path / "other.json").write_text('{"layers": []}')
    (tmp_path / "newer.json").write_text('{"format": "oar.slim.quant_sensitivity", "version": 99}')
    (tmp_path / "damaged.json").write_text('{"format": "oar.slim.quant_sensitivity", "version": 1, "layers": [{}]}')
    for name, match in (("pickle", "not a JSON"), ("other", "not a sensitivity table"), ("newer", "version 99"),
                        ("damaged", "damaged")):
        with pytest.raises(SerializationError, match=match):
            load_sensitivities(tmp_path / f"{name}.json")


@pytest.fixture(scope="module")
def mixed(float_lenet, digits, evaluate, table):
    return mixed_precision_config(float_lenet, evaluate, calib_batches(digits), budget=0.03, sensitivities=table,
                                  config=two_bit_config(), print_table=False)


def test_mixed_precision_meets_the_budget_with_the_fewest_float_layers(mixed, table, evaluate):
    assert mixed.float_layers == ["features.3"]
    assert evaluate(mixed.model) == mixed.metric
    assert mixed.baseline - mixed.metric <= 0.03
    # The smallest k: every k tried before failed the budget (here k = 0, fully quantized).
    assert [k for k, _ in mixed.trials] == [0, 1]
    assert all(mixed.baseline - metric > 0.03 for _, metric in mixed.trials[:-1])
    assert mixed.trials[0][1] == table.quantized


def test_mixed_precision_keeps_its_float_layers_float(mixed):
    conv = mixed.model.features[3]
    assert type(conv) is nn.Conv2D and conv.weight.dtype is oar.float32 and "weight" in conv._parameters
    for path, layer in mixed.model.named_sublayers():
        if path in LENET_LAYERS and path != "features.3":
            assert type(layer).__name__.startswith("Quanted") and layer.weight.dtype is oar.int8, path


def test_mixed_precision_config_reproduces_its_model(mixed, float_lenet, digits, evaluate):
    ptq = PTQ(mixed.config)
    observed = ptq.quantize(float_lenet)
    with oar.no_grad():
        for batch in calib_batches(digits):
            observed(oar.to_tensor(batch))
    converted = ptq.convert(observed)
    assert type(converted.features[3]) is nn.Conv2D
    x = oar.to_tensor(digits["x_test"][:64])
    with oar.no_grad():
        np.testing.assert_array_equal(converted(x).numpy(), mixed.model(x).numpy())


def test_a_tighter_budget_keeps_more_layers_float(float_lenet, digits, evaluate, table, tmp_path, capsys):
    table.save(tmp_path / "s.json")
    result = mixed_precision_config(float_lenet, evaluate, calib_batches(digits), budget=0.01,
                                    sensitivities=load_sensitivities(tmp_path / "s.json"), config=two_bit_config())
    assert result.float_layers == table.ranking()[:len(result.float_layers)]
    assert len(result.float_layers) == len(result.trials) - 1 >= 2
    assert all(result.baseline - metric > 0.01 for _, metric in result.trials[:-1])
    assert result.drop <= 0.01 and evaluate(result.model) == result.metric
    out = capsys.readouterr().out
    assert out.startswith("mixed precision: float 0.96") and "kept in float: " + ", ".join(result.float_layers) in out


def test_mixed_precision_refuses_a_bad_budget_or_foreign_table(float_lenet, digits, evaluate):
    with pytest.raises(ArgumentError, match="must be >= 0"):
        mixed_precision_config(float_lenet, evaluate, calib_batches(digits), budget=-0.1)
    foreign = QuantSensitivity(1.0, 0.5, [LayerSensitivity("encoder.0", "Linear", 0.5, 0.5)])
    with pytest.raises(ArgumentError, match=r"no layer 'encoder\.0'"):
        mixed_precision_config(float_lenet, evaluate, calib_batches(digits), budget=0.01, sensitivities=foreign)
