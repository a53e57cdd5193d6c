"""oar.incubate.autotune: kernel alternatives in the registry, the choice per shape key, the cache
file, Paddle's config and its validation. The kernels here are fakes whose speed is made by
sleeping, so the fastest is known; no test passes on a timing other than "a choice was made"."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

import oar
from oar._engine.registries import registering_as
from oar.errors import ArgumentError
from oar.incubate import autotune
from oar.ops import Op, dispatch, same_meta
from oar.plugins import registries

SOURCE = "test_autotune"


def _slow(seconds: float, fn):
    def kernel(x, **attrs):
        time.sleep(seconds)
        return fn(x)
    return kernel


@pytest.fixture
def twice(tmp_path, monkeypatch):
    """An op ``autotune_twice`` whose kernel is slow on large inputs and whose alternative is slow
    on small ones: the choice differs per shape key. Calls are counted per kernel."""
    monkeypatch.setenv(autotune.CACHE_ENV, str(tmp_path / "autotune.json"))
    autotune.clear_cache()
    calls = {"default": 0, "fast_small": 0, "fast_large": 0}

    def counted(name, fn):
        def kernel(x, **attrs):
            calls[name] += 1
            return fn(x, **attrs)
        return kernel

    op = Op("autotune_twice", reference=lambda x: x * 2, meta=same_meta, traits={"nondiff"})
    kernels = registries().kernels
    with registering_as(SOURCE):
        registries().ops.add(op)
        kernels.register("autotune_twice", "cpu", counted("default", _slow(0.004, lambda x: x * 2)),
                         dtypes=["float32", "float64"])
        kernels.register_alternative("autotune_twice", "cpu",
                                     counted("fast_small", lambda x: _slow(0.0 if x.size < 100 else 0.02, lambda a: a + a)(x)),
                                     name="test.fast_small", dtypes=["float32", "float64"])
        kernels.register_alternative("autotune_twice", "cpu", counted("fast_large", _slow(0.012, lambda x: x * 2.0)),
                                     name="test.fast_large", dtypes=["float32"])
    yield op, calls
    autotune.set_config({"kernel": {"enable": False, "tuning_range": [1, 10]}, "layout": {"enable": False},
                         "dataloader": {"enable": False, "tuning_steps": 500}})
    autotune.clear_cache()
    kernels.remove_source(SOURCE)
    registries().ops.remove_source(SOURCE)


def run(op, shape, dtype="float32"):
    return dispatch(op, (oar.ones(shape, dtype=dtype),), {}).numpy()


def test_alternatives_are_listed_with_the_kernel_first(twice):
    kernels = registries().kernels
    names = [n for n, _ in kernels.alternatives("autotune_twice", "cpu", oar.ops.get_dtype("float32"))]
    assert names == ["default", "test.fast_small", "test.fast_large"]
    names64 = [n for n, _ in kernels.alternatives("autotune_twice", "cpu", oar.ops.get_dtype("float64"))]
    assert names64 == ["default", "test.fast_small"]  # alternatives declare their dtypes
    assert "autotune_twice@cpu:test.fast_small" in kernels.names_from(SOURCE)
    assert kernels.alternatives("exp", "cpu", oar.ops.get_dtype("float32")) == []


def test_off_means_no_timing_and_the_plain_kernel(twice):
    op, calls = twice
    autotune.set_config({"kernel": {"enable": False}})
    for _ in range(3):
        autotune.step()
        np.testing.assert_array_equal(run(op, [4]), np.full([4], 2.0, np.float32))
    assert calls == {"default": 3, "fast_small": 0, "fast_large": 0}
    assert not isinstance(op._kernels[("cpu", np.dtype("float32"))], autotune.TunedKernel)
    assert autotune.choices() == {}


def test_the_fastest_is_chosen_per_shape_key_and_results_agree(twice):
    op, calls = twice
    autotune.set_config({"kernel": {"enable": True, "tuning_range": [1, 3]}})
    before = run(op, [4])  # step 0: before the range, the op's kernel, nothing timed
    assert calls["fast_small"] == 0 and autotune.choices() == {}
    autotune.step()
    small, large = run(op, [4]), run(op, [1000])
    np.testing.assert_allclose(small, before)
    np.testing.assert_allclose(large, np.full([1000], 2.0))
    chosen = {key.split("|")[3]: value["chosen"] for key, value in autotune.choices().items()}
    assert chosen == {"float32[4]": "test.fast_small", "float32[1000]": "default"}
    every = [v["ms"] for v in autotune.choices().values()]
    assert all(set(ms) == {"default", "test.fast_small", "test.fast_large"} for ms in every)
    counted = dict(calls)
    run(op, [4])  # tuned: the chosen kernel alone runs
    assert calls["fast_small"] == counted["fast_small"] + 1 and calls["default"] == counted["default"]


def test_turning_tuning_off_puts_the_plain_kernel_back(twice):
    op, _ = twice
    key = ("cpu", np.dtype("float32"))
    autotune.set_config({"kernel": {"enable": True}})
    run(op, [4])
    assert isinstance(op._kernels[key], autotune.TunedKernel)
    autotune.set_config({"kernel": {"enable": False}})
    assert key not in op._kernels  # forgotten: the next call resolves the plain kernel again
    run(op, [4])
    assert not isinstance(op._kernels[key], autotune.TunedKernel)
    autotune.set_config({"kernel": {"enable": True}})
    oar.ones([2]).exp()  # an op without alternatives is never wrapped
    assert not any(isinstance(k, autotune.TunedKernel) for k in registries().ops.get("exp")._kernels.values())


def test_shapes_first_seen_after_the_range_are_not_timed(twice):
    op, calls = twice
    autotune.set_config({"kernel": {"enable": True, "tuning_range": [1, 2]}})
    for _ in range(3):
        autotune.step()
    assert not autotune.tuning()
    run(op, [7])
    assert calls == {"default": 1, "fast_small": 0, "fast_large": 0} and autotune.choices() == {}


def test_the_cache_file_is_written_and_reused(twice):
    op, calls = twice
    autotune.set_config({"kernel": {"enable": True, "tuning_range": [0, 5]}})
    run(op, [4])
    data = json.loads(autotune.cache_path().read_text())
    section = data["machines"][autotune.machine_key()]
    assert list(section.values()) == ["test.fast_small"] and "autotune_twice|cpu|float32|" in next(iter(section))
    # a new process: no choice in memory, the file's is used without timing, even outside the range
    autotune.set_config({"kernel": {"enable": False}})
    autotune._cache = None
    autotune._tuned.clear()
    autotune._chosen_names.clear()
    autotune.set_config({"kernel": {"enable": True, "tuning_range": [5, 6]}})
    calls.update({name: 0 for name in calls})
    run(op, [4])
    assert calls == {"default": 0, "fast_small": 1, "fast_large": 0}
    assert autotune.choices()[next(iter(section))] == {"chosen": "test.fast_small", "ms": {}}


def test_a_disagreeing_alternative_is_left_out(twice, recwarn):
    op, _ = twice
    with registering_as(SOURCE):
        registries().kernels.register_alternative("autotune_twice", "cpu", lambda x: x * 3, name="test.wrong")
    autotune.set_config({"kernel": {"enable": True, "tuning_range": [0, 5]}})
    np.testing.assert_array_equal(run(op, [3], "float64"), [2.0, 2.0, 2.0])
    (value,) = autotune.choices().values()
    assert "test.wrong" not in value["ms"]
    assert any("test.wrong" in str(w.message) and "disagrees" in str(w.message) for w in recwarn)


def test_set_config_paddle_keys_and_json_file(tmp_path, twice):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"kernel": {"enable": True, "tuning_range": [2, 4]},
                                "dataloader": {"enable": True, "tuning_steps": 12}}))
    autotune.set_config(str(path))
    config = autotune.get_config()
    assert config["kernel"] == {"enable": True, "tuning_range": [2, 4]}
    assert autotune.dataloader_tuning_steps() == 12
    with pytest.warns(UserWarning, match="layout tuning has nothing to tune"):
        autotune.set_config(None)  # Paddle: None turns every kind on
    assert all(settings["enable"] for settings in autotune.get_config().values())


@pytest.mark.parametrize("config, message", [
    ({"kernal": {"enable": True}}, "unknown kind 'kernal'"),
    ({"kernel": {"enabled": True}}, r"unknown kernel setting\(s\) \['enabled'\]"),
    ({"kernel": {"enable": "yes"}}, "kernel.enable must be True or False"),
    ({"kernel": {"tuning_range": [5, 1]}}, "tuning_range must be"),
    ({"kernel": {"tuning_range": 10}}, "tuning_range must be"),
    ({"dataloader": {"tuning_steps": 0}}, "tuning_steps must be an int >= 1"),
    ({"layout": True}, "layout must be a dict"),
    ([1, 2], "config must be a dict"),
    ("/no/such/autotune.json", "cannot read the config file"),
])
def test_set_config_errors_are_clear(config, message):
    before = autotune.get_config()
    with pytest.raises(ArgumentError, match=message):
        autotune.set_config(config)
    assert autotune.get_config() == before  # a bad config changes nothing


def test_incubate_is_a_lazy_public_module():
    assert oar.incubate.autotune is autotune
    assert "set_config" in dir(autotune)
