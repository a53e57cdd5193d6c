"""``Layer.float16()`` / ``bfloat16()`` (Paddle's names: cast the floating state in place, except
the excluded layers') and ``Layer.register_state_dict_hook`` -- what oar.amp's decorate uses."""

from __future__ import annotations

import pytest

import oar.nn as nn
from oar.errors import ArgumentError


def net():
    return nn.Sequential(nn.Conv2D(1, 2, 3), nn.BatchNorm2D(2), nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4)))


def dtypes(model):
    return {name: t.dtype.name for name, t in model.state_dict().items()}


def test_float16_keeps_the_batch_norms_by_default():
    model = net().float16()
    assert dtypes(model) == {"0.weight": "float16", "0.bias": "float16", "1.weight": "float32", "1.bias": "float32",
                             "1._mean": "float32", "1._variance": "float32", "2.0.weight": "float16",
                             "2.0.bias": "float16", "2.1.weight": "float16", "2.1.bias": "float16"}


def test_excluded_layers_by_type_and_by_instance():
    model = net().bfloat16(excluded_layers=[nn.LayerNorm])
    assert dtypes(model)["1.weight"] == "bfloat16" and dtypes(model)["2.1.weight"] == "float32"
    model = net()
    model.bfloat16(excluded_layers=model[2])  # an instance keeps its sublayers' too
    assert dtypes(model)["2.0.weight"] == "float32" and dtypes(model)["0.weight"] == "bfloat16"
    with pytest.raises(ArgumentError, match="bfloat16: excluded_layers must hold oar.nn.Layer types or instances"):
        net().bfloat16(excluded_layers=["conv"])


def test_a_state_dict_hook_sees_the_dict_and_may_replace_it():
    model = net()
    seen = []
    handle = model[2].register_state_dict_hook(lambda state: seen.append(sorted(state)))
    model.state_dict()
    assert seen[-1] == sorted(model.state_dict(use_hook=False))  # the holder's whole dict
    model[2].state_dict()
    assert seen[-1] == ["0.bias", "0.weight", "1.bias", "1.weight"]
    handle.remove()
    count = len(seen)
    model.state_dict()
    assert len(seen) == count
    model.register_state_dict_hook(lambda state: {"only": state["0.weight"]})
    assert list(model.state_dict()) == ["only"]
