"""The plugin's autotuner: the fastest configuration per key, timed once with its own timer."""

from __future__ import annotations

import time

import oar_triton.autotune as autotune_module
import pytest
from oar_triton.autotune import Autotuner
from oar_triton.timing import do_bench


def test_in_the_interpreter_the_first_configuration_serves_without_timing():
    calls = []
    tuner = Autotuner("k", [{"BLOCK": 64}, {"BLOCK": 128}])
    assert tuner.choose(("f32", 10), calls.append) == {"BLOCK": 64}
    assert calls == [] and tuner.timings == {}


def test_the_fastest_configuration_is_kept_per_key(monkeypatch):
    monkeypatch.setattr(autotune_module, "interpreting", lambda: False)  # time them (with the host clock here)
    delays = {16: 0.012, 32: 0.001, 64: 0.030}  # ten times apart: load on the machine cannot reorder them
    runs = []

    def run(config):
        runs.append(config["BLOCK"])
        time.sleep(delays[config["BLOCK"]])

    tuner = Autotuner("k", [{"BLOCK": b} for b in delays])
    assert tuner.choose("small", run) == {"BLOCK": 32}
    timed = len(runs)
    assert timed == 3 * (3 + 10)  # each candidate: warm-up and timed runs
    assert tuner.choose("small", run) == {"BLOCK": 32} and len(runs) == timed  # cached: no more timing
    assert len(tuner.timings["small"]) == 3 and min(tuner.timings["small"]) == tuner.timings["small"][1]


def test_do_bench_reports_milliseconds():
    assert do_bench(lambda: time.sleep(0.005), warmup=1, rep=5) >= 5.0  # a sleep lasts at least as asked


def test_an_autotuner_needs_a_configuration():
    with pytest.raises(ValueError, match="needs at least one configuration"):
        Autotuner("k", [])
