"""oar-amp as a plugin: found through its entry point, registering the AMP categories Paddle's
lists give through core's hook (and nothing when blocked), light to load, its examples true."""

from __future__ import annotations

import doctest
import importlib
import json
import os
import subprocess
import sys

import pytest

MODULES = ["oar.amp", "oar.amp._auto_cast", "oar.amp._decorate", "oar.amp._grad_scaler", "oar.amp._plugin",
           "oar.amp._support", "oar.amp.amp_lists", "oar.amp.debugging"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0, f"{name} has no examples"


def run(code: str, **env) -> str:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={**os.environ, **env})
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_the_entry_point_registers_the_category_overrides():
    out = run("import json, oar; from oar.ops import amp_category\n"
              "print(json.dumps([amp_category('tan'), sorted(oar.plugins.registries().amp)]))")
    assert json.loads(out) == ["fp32", ["acos", "asin", "atanh", "cosh", "reciprocal", "rsqrt", "sinh", "tan"]]
    listing = subprocess.run([sys.executable, "-m", "oar", "plugins"], capture_output=True, text=True, timeout=120)
    assert "amp 0.1.0 [loaded] (oar.amp._plugin)" in listing.stdout


def test_blocked_it_registers_nothing():
    out = run("import oar; from oar.ops import amp_category; print(amp_category('tan'))", OAR_DISABLE_PLUGINS="amp")
    assert out == "promote"


def test_loading_the_plugin_loads_neither_the_scaler_nor_the_mode():
    out = run("import sys, oar\noar.exp(oar.ones([1]))\n"
              "print(sorted(m for m in sys.modules if m.startswith('oar.amp')))")
    assert out == str(["oar.amp", "oar.amp._plugin", "oar.amp.amp_lists"])
