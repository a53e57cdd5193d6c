"""``oar.jit.ignore_module``, ``set_verbosity`` and ``set_code_level``."""

from __future__ import annotations

import importlib
import logging
import textwrap
import warnings

import pytest

import oar
from oar.jit.dy2static import convert

HELPER = textwrap.dedent("""
    def branchy(x):
        if x.sum() > 0:
            return x + 1
        return x - 1
""")


@pytest.fixture
def helper_module(tmp_path, monkeypatch):
    """A fresh module of user code, with a data-dependent branch that only conversion captures."""

    def make(name):
        (tmp_path / f"{name}.py").write_text(HELPER)
        monkeypatch.syspath_prepend(str(tmp_path))
        return importlib.import_module(name)

    yield make
    skipped = convert._SKIPPED_DIRS
    skipped[:] = [path for path in skipped if not path.startswith(str(tmp_path))]


@pytest.fixture
def quiet_logs():
    yield
    oar.jit.set_verbosity(0)
    oar.jit.set_code_level(0)


def test_ignore_module_calls_its_functions_as_python(helper_module):
    converted, ignored = helper_module("h11_converted_helper"), helper_module("h11_ignored_helper")
    oar.jit.ignore_module([ignored])
    assert convert.is_user_function(converted.branchy) and not convert.is_user_function(ignored.branchy)

    @oar.jit.to_static
    def through_converted(x):
        return converted.branchy(x) * 2

    @oar.jit.to_static
    def through_ignored(x):
        return ignored.branchy(x) * 2

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the converted branch is captured: no fallback warning
        assert through_converted(oar.ones([2])).tolist() == [4.0, 4.0]
        assert through_converted(-oar.ones([2])).tolist() == [-4.0, -4.0]
    # Run as Python, the ignored module's `if` reads a traced tensor: to_static falls back to eager.
    with pytest.warns(UserWarning, match="runs eagerly"):
        assert through_ignored(oar.ones([2])).tolist() == [4.0, 4.0]
    with pytest.raises(TypeError, match="modules"):
        oar.jit.ignore_module(["json"])


def test_set_verbosity_and_code_level_log_the_conversion(helper_module, quiet_logs, caplog, capsys):
    module = helper_module("h11_logged_helper")
    oar.jit.set_verbosity(1)
    oar.jit.set_code_level(100, also_to_stdout=True)

    @oar.jit.to_static
    def f(x):
        return module.branchy(x)

    with caplog.at_level(logging.INFO, logger="oar.jit"):
        f(oar.ones([2]))
    logged = caplog.text
    assert "converted branchy" in logged and "converted code of branchy" in logged
    printed = capsys.readouterr().out
    assert "converted code of branchy" in printed  # the verbosity messages go to the logger only
    assert not any(line.startswith("converted branchy") for line in printed.splitlines())
    with pytest.raises(TypeError, match="level"):
        oar.jit.set_verbosity("high")


def test_logging_is_off_by_default(helper_module, caplog):
    module = helper_module("h11_silent_helper")

    @oar.jit.to_static
    def g(x):
        return module.branchy(x)

    with caplog.at_level(logging.INFO, logger="oar.jit"):
        g(oar.ones([2]))
    assert "converted" not in caplog.text
