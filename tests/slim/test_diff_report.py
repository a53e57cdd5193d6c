"""oar.slim's per-layer diff report on the digits LeNet: the numbers equal numpy's on outputs
hooked here independently, a deliberately bad (4-bit) layer ranks first, layers are matched by
name across the float and the converted model, and the report saves as JSON."""

from __future__ import annotations

import copy
import doctest
import json

import numpy as np
import pytest

import oar
import oar.slim.diff
from oar.errors import ArgumentError
from oar.quantization import PTQ, QuantConfig
from oar.quantization.observers import AbsMaxChannelWiseWeightObserver, AbsmaxObserver
from oar.slim.diff import LayerDiff, compare_quantized

from .conftest import accuracy

LEAVES = ["features.0", "features.1", "features.2", "features.3", "features.4", "features.5", "fc.0", "fc.1", "fc.2"]
BAD = "features.3"


def test_docstring_examples_run():
    assert doctest.testmod(oar.slim.diff, optionflags=doctest.ELLIPSIS).failed == 0


def ptq(float_lenet, digits, bad: str | None = BAD):
    """int8 everywhere, 4-bit weights and activations on ``bad``."""
    config = QuantConfig(activation=AbsmaxObserver(), weight=AbsMaxChannelWiseWeightObserver())
    if bad is not None:
        config.add_name_config(bad, activation=AbsmaxObserver(quant_bits=4),
                               weight=AbsMaxChannelWiseWeightObserver(quant_bits=4))
    quantization = PTQ(config)
    observed = quantization.quantize(float_lenet)
    with oar.no_grad():
        for b in range(4):
            observed(oar.to_tensor(digits["x_train"][b * 64:(b + 1) * 64]))
    return observed, quantization.convert(observed)


@pytest.fixture(scope="module")
def models(float_lenet, digits):
    return ptq(float_lenet, digits)


@pytest.fixture(scope="module")
def x(digits) -> np.ndarray:
    return digits["x_test"][:96]


@pytest.fixture(scope="module")
def rows(float_lenet, models, x):
    return compare_quantized(float_lenet, models[1], x, print_table=False)


def hooked_outputs(model, names, x, inputs=False):
    """Each named layer's output (or inputs) on x, by this test's own hooks."""
    got, handles = {}, []
    layers = dict(model.named_sublayers())
    for name in names:
        def hook(layer, args, out, name=name):
            got[name] = args if inputs else out.numpy().astype(np.float64)
        handles.append(layers[name].register_forward_post_hook(hook))
    with oar.no_grad():
        model(oar.to_tensor(x))
    for handle in handles:
        handle.remove()
    return got


def test_one_row_per_leaf_layer_matched_by_name(rows):
    assert all(isinstance(row, LayerDiff) for row in rows)
    assert sorted(row.layer for row in rows) == sorted(LEAVES)
    by_name = {row.layer: row for row in rows}
    # The converted model keeps the float layer's path for its quantized layer.
    for name in ("features.0", "features.3", "fc.0", "fc.1", "fc.2"):
        assert (by_name[name].float_type, by_name[name].quantized_type) in {("Conv2D", "QuantedConv2D"),
                                                                             ("Linear", "QuantedLinear")}
    assert by_name["features.1"].quantized_type == "ReLU" and by_name["features.3"].shape == (96, 16, 10, 10)


def test_numbers_equal_numpy_on_hooked_outputs(rows, float_lenet, models, x):
    a = hooked_outputs(float_lenet, LEAVES, x)
    b = hooked_outputs(models[1], LEAVES, x)
    float_inputs = hooked_outputs(float_lenet, LEAVES, x, inputs=True)
    quantized_layers = dict(models[1].named_sublayers())
    for row in rows:
        fa, fb = a[row.layer].ravel(), b[row.layer].ravel()
        assert row.cosine == pytest.approx(np.dot(fa, fb) / np.sqrt(np.dot(fa, fa) * np.dot(fb, fb)), rel=1e-9)
        assert row.max_abs_error == pytest.approx(np.max(np.abs(fa - fb)), rel=1e-12)
        assert row.relative_error == pytest.approx(np.sqrt(np.sum((fa - fb) ** 2) / np.sum(fa ** 2)), rel=1e-9)
        with oar.no_grad():
            local = quantized_layers[row.layer](*float_inputs[row.layer]).numpy().astype(np.float64).ravel()
        assert row.local_relative_error == pytest.approx(np.linalg.norm(fa - local) / np.linalg.norm(fa), rel=1e-9)


def test_the_badly_quantized_layer_ranks_first(rows, float_lenet, models, digits):
    assert rows[0].layer == BAD
    assert rows[0].local_relative_error > 5 * rows[1].local_relative_error
    assert [row.local_relative_error for row in rows] == sorted((row.local_relative_error for row in rows),
                                                                reverse=True)
    # The bad layer is where accuracy went: int8 everywhere else keeps the float accuracy.
    reference = accuracy(float_lenet, digits["x_test"], digits["y_test"])
    assert accuracy(ptq(float_lenet, digits, bad=None)[1], digits["x_test"], digits["y_test"]) >= reference - 0.005
    assert accuracy(models[1], digits["x_test"], digits["y_test"]) < reference - 0.005


@pytest.mark.parametrize("bad", ["features.0", "fc.0", "fc.2"])
def test_other_bad_layers_rank_first_too(float_lenet, digits, x, bad):
    rows = compare_quantized(float_lenet, ptq(float_lenet, digits, bad=bad)[1], x, print_table=False)
    assert rows[0].layer == bad


def test_the_accumulated_error_alone_would_blame_a_later_layer(float_lenet, models, x):
    # Why the report sorts by the local error: the ReLU after the bad conv inherits its error.
    rows = compare_quantized(float_lenet, models[1], x, sort_by="relative_error", print_table=False)
    assert rows[0].layer != BAD and rows[0].local_relative_error == 0.0
    by_cosine = compare_quantized(float_lenet, models[1], x, sort_by="cosine", print_table=False)
    assert [r.cosine for r in by_cosine] == sorted(r.cosine for r in by_cosine)


def test_an_observed_model_matches_the_float_one(float_lenet, models, x):
    # Observers only watch: zero error everywhere, so the numbers above are the quantization's.
    rows = compare_quantized(float_lenet, models[0], x, print_table=False)
    assert all(r.max_abs_error == 0.0 and r.cosine == pytest.approx(1.0) for r in rows)


def test_prints_worst_first_and_saves_json(float_lenet, models, x, tmp_path, capsys):
    path = tmp_path / "diff.json"
    rows = compare_quantized(float_lenet, models[1], [x[:48], x[48:]], save_json=path)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["layer", "float", "quantized"]
    assert lines[1].split()[:3] == [BAD, "Conv2D", "QuantedConv2D"] and len(lines) == 1 + len(LEAVES)
    data = json.loads(path.read_text())
    assert data["format"] == "oar.slim.compare_quantized"
    assert [entry["layer"] for entry in data["layers"]] == [row.layer for row in rows]
    assert [LayerDiff(**{**e, "shape": tuple(e["shape"])}) for e in data["layers"]] == rows
    # Two batches of 48 compare as the one batch of 96.
    whole = {r.layer: r for r in compare_quantized(float_lenet, models[1], x, print_table=False)}
    for row in rows:
        assert row.relative_error == pytest.approx(whole[row.layer].relative_error, rel=1e-9)


def test_named_layers_and_unknown_names(float_lenet, models, x):
    rows = compare_quantized(float_lenet, models[1], x, layers=["features", "fc.2"], print_table=False)
    assert {r.layer for r in rows} == {"features", "fc.2"}
    with pytest.raises(ArgumentError, match=r"no layer 'fc\.7'.*features\.0"):
        compare_quantized(float_lenet, models[1], x, layers=["fc.7"])
    with pytest.raises(ArgumentError, match="share no layer names"):
        compare_quantized(float_lenet, oar.nn.Sequential(oar.nn.Linear(2, 2)), x)
    with pytest.raises(ArgumentError, match="sort_by"):
        compare_quantized(float_lenet, models[1], x, sort_by="snr")


def test_models_are_left_as_they_were(float_lenet, models, x):
    quantized = copy.deepcopy(models[1]).train()
    compare_quantized(float_lenet, quantized, x, print_table=False)
    assert quantized.training and all(layer.training for layer in quantized.sublayers())
    assert not float_lenet.training
    for model in (float_lenet, quantized):
        assert not any(layer._forward_post_hooks for layer in model.sublayers(include_self=True))
