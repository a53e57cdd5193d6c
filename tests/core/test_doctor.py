"""Checking an install: ``oar.utils.run_check()`` trains a tiny model on every device and says what
is wrong; ``python -m oar doctor`` reports versions, plugins, BLAS, GPU, MPI and the environment
switches, and exits non-zero only when something is broken (a missing optional package is not).

The doctor runs in a subprocess, with fake distributions on its ``PYTHONPATH`` for a broken plugin
(``make_distribution`` of test_plugins) and imports blocked through ``sys.modules[name] = None``.
"""

from __future__ import annotations

import doctest
import importlib.util
import json
import sys

import numpy as np
import pytest

import oar
import oar.plugins
from oar.errors import OarError
from oar.utils import install_check
from tests.core.test_plugins import BROKEN_AT_IMPORT, make_distribution, run_python


def test_run_check_trains_on_cpu_and_says_so(capsys):
    oar.utils.run_check()
    out = capsys.readouterr().out
    assert "oar works well on 1 CPU." in out
    assert out.rstrip().endswith("oar is installed successfully! Let's start deep learning with oar now.")


def test_run_check_docstring_example_holds():
    (test,) = doctest.DocTestFinder().find(install_check.run_check, globs={})
    assert doctest.DocTestRunner().run(test).failed == 0


class _WrongMatmul:
    """A plugin whose matmul kernel adds 1 to every product: what a broken kernel looks like."""

    @oar.plugins.hookimpl
    def oar_register_kernels(self, kernels):
        kernels.register("matmul", "cpu", self.matmul_plus_one, dtypes=["float32"], priority=1000)

    @staticmethod
    def matmul_plus_one(x, y, transpose_x=False, transpose_y=False):
        return np.matmul(x.swapaxes(-1, -2) if transpose_x else x, y.swapaxes(-1, -2) if transpose_y else y) + 1


def test_run_check_names_a_wrong_kernel(capsys):
    oar.plugins.register(_WrongMatmul(), name="wrong_matmul")
    try:
        with pytest.raises(OarError, match="not installed correctly.*CPU: the forward pass"):
            oar.utils.run_check()
    finally:
        oar.plugins.unregister("wrong_matmul")
    out = capsys.readouterr().out
    assert "oar does not work on CPU: the forward pass (matmul + add) differs from numpy's" in out
    assert "installed successfully" not in out
    oar.utils.run_check()  # the right kernel is back


def test_run_check_names_a_training_that_does_not_learn(monkeypatch, capsys):
    monkeypatch.setattr(install_check, "_LEARNING_RATE", 0.0)  # gradients right, but the loss cannot fall
    with pytest.raises(OarError, match="training did not lower the loss"):
        oar.utils.run_check()


def doctor(path=None, *args: str, blocked: tuple[str, ...] = ()):
    """``python -m oar doctor *args`` with ``blocked`` modules unimportable."""
    code = (f"import sys; sys.modules.update(dict.fromkeys({list(blocked)!r}))\n"
            f"from oar.__main__ import main; sys.exit(main(['doctor', *{list(args)!r}]))")
    return run_python(["-c", code], path)


def test_doctor_reports_this_install_and_exits_0():
    result = doctor()
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"numpy: {np.__version__}" in result.stdout
    assert f"oar-core: {oar.__version__}" in result.stdout
    assert "oar.core 0.1.0 [loaded]" in result.stdout.replace(oar.__version__, "0.1.0")
    if importlib.util.find_spec("oar_triton") is None:
        assert "GPU: no GPU plugin installed (oar-triton)" in result.stdout
    assert "OAR_DISABLE_PLUGINS not set" in result.stdout
    assert "No problems found." in result.stdout


def test_doctor_json_parses_and_lists_the_loaded_plugins():
    result = doctor(None, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["dependencies"]["numpy"]["version"] == np.__version__
    plugins = {info["name"]: info["status"] for info in report["plugins"]}
    assert plugins["oar.core"] == "loaded"
    assert report["problems"] == []
    assert set(report["environment"]) >= {"OAR_DISABLE_PLUGINS", "OAR_TRACE_PLUGINS", "OAR_KEEP_FREED_MEMORY"}


def test_doctor_names_a_broken_plugin_and_exits_non_zero(tmp_path):
    make_distribution(tmp_path, "broken-import", "0.1", {"bad_import": "broken_import_plugin"},
                      {"broken_import_plugin": BROKEN_AT_IMPORT})
    result = doctor(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    problem = [line for line in result.stdout.splitlines() if line.startswith("PROBLEM:")]
    assert problem == ["PROBLEM: plugin 'bad_import' (broken_import_plugin) failed to load: RuntimeError: boom at "
                       "import. Fix: reinstall or fix the package that provides it, or skip it with "
                       "OAR_DISABLE_PLUGINS=bad_import"]
    assert "PluginWarning" not in result.stderr  # said once, with its fix, not also as a warning


def test_doctor_reports_a_missing_optional_dependency_without_failing():
    result = doctor(None, "--json", blocked=("mpi4py", "onnxruntime", "threadpoolctl"))
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    for name in ("mpi4py", "onnxruntime", "threadpoolctl"):
        assert report["dependencies"][name] == {"version": None, "required": False, "error": ""}
    assert report["mpi"] == {"mpi4py": None, "library": None}
    assert report["blas"]["threadpoolctl"] is None and report["blas"]["libraries"]  # numpy's build config instead
    text = doctor(None, blocked=("threadpoolctl",)).stdout
    assert "threadpoolctl not installed" in text and "threadpoolctl (optional): not installed" in text


def test_doctor_fails_on_a_missing_core_dependency():
    result = doctor(None, blocked=("safetensors",))
    assert result.returncode == 1
    assert "PROBLEM: oar-core's dependency safetensors is not installed. Fix: pip install safetensors" in result.stdout


def test_doctor_shows_switches_that_are_set_and_hides_secrets(monkeypatch):
    monkeypatch.setenv("OAR_DATA_HOME", "/data/oar")
    monkeypatch.setenv("OAR_SERVE_API_KEY", "s3cret")
    result = doctor()
    assert "OAR_DATA_HOME=/data/oar" in result.stdout
    assert "OAR_SERVE_API_KEY=(hidden)" in result.stdout and "s3cret" not in result.stdout


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
