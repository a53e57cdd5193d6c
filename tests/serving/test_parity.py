"""check_parity and ``python -m oar.inference check``: a deployed model that disagrees with the
training code is found, at the value where it began."""

from __future__ import annotations

import doctest
import importlib
import subprocess
import sys

import numpy as np
import pytest

import oar
from oar.inference import check_parity
from oar.static.passes import emit, graph_pass, replace_nodes

from .conftest import lenet_docs, lenet_input


def test_a_faithful_deployment_passes(saved):
    layer = oar.jit.load(saved["lenet"])
    report = check_parity(layer, saved["lenet"], [lenet_input(4)])
    assert report.ok, str(report)
    assert [d.name for d in report.outputs] == ["output_0"]
    assert report.intermediates and all(d.ok for d in report.intermediates)
    assert "outputs (eager vs Predictor)" in str(report)


@graph_pass(phase="fold", level=2, inference_only=True)
def relu_off_by_a_little(program):
    """A buggy fusion: every relu output shifted by 1e-2."""
    replaced = {}
    for node in program.nodes:
        if node.op == "relu":
            relu = emit(program, "relu", node.inputs)
            shift = emit(program, "scale", relu.outputs, {"scale": 1.0, "bias": 1e-2}, out=node.outputs)
            replaced[id(node)] = [relu, shift]
    return replace_nodes(program, replaced)


class BuggyPassPlugin:
    @oar.plugins.hookimpl
    def oar_register_passes(self, passes):
        passes.register("relu_off_by_a_little", relu_off_by_a_little)


def test_a_pass_that_changes_results_is_found_where_it_began(tmp_path):
    layer = oar.nn.Sequential(oar.nn.Linear(6, 8), oar.nn.ReLU(), oar.nn.Linear(8, 3))
    layer.eval()
    prefix = str(tmp_path / "mlp")
    oar.jit.save(layer, prefix, input_spec=[oar.static.InputSpec([None, 6], "float32", "x")])
    oar.plugins.register(BuggyPassPlugin(), name="buggy-pass")
    try:
        report = check_parity(layer, prefix, [np.random.default_rng(0).random((5, 6), dtype=np.float32)])
    finally:
        oar.plugins.unregister("buggy-pass")
    assert not report.ok
    assert not report.outputs[0].ok and report.outputs[0].max_abs > 1e-3
    first = report.first_difference()
    assert first is not None and first.op == "relu", str(report)
    assert "first difference at" in str(report)


def test_the_command_line_check(saved, tmp_path):
    x = tmp_path / "x.npy"
    np.save(x, lenet_input(2))
    done = subprocess.run([sys.executable, "-m", "oar.inference", "check", saved["lenet"], "--input", str(x)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "parity within" in done.stdout and "output_0" in done.stdout and ": ok" in done.stdout
    wrong = tmp_path / "wrong.npy"
    np.save(wrong, np.zeros([2, 3], "float32"))
    done = subprocess.run([sys.executable, "-m", "oar.inference", "check", saved["lenet"], "--input", str(wrong)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "input 'image'" in done.stderr


def test_parity_of_the_docs_lenet_through_every_pass(tmp_path):
    layer = lenet_docs()
    prefix = str(tmp_path / "lenet")
    layer.eval()
    oar.jit.save(layer, prefix, input_spec=[oar.static.InputSpec([None, 1, 28, 28], "float32", "x")])
    assert check_parity(layer, prefix, [lenet_input(3)]).ok


@pytest.mark.parametrize("name", ["oar.inference", "oar.inference.config", "oar.inference.predictor",
                                  "oar.inference.parity", "oar.serving"])
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0 or name == "oar.serving", f"{name} has no examples"
