"""The examples in oar-slim's docstrings run, and every public name is documented."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import oar.quantization
import oar.slim

MODULES = sorted({"oar.slim", *(m.name for m in pkgutil.walk_packages(oar.quantization.__path__, "oar.quantization."))}
                 | {"oar.quantization"})


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_public_names_have_docstrings():
    for name in oar.quantization.__all__:
        obj = getattr(oar.quantization, name)
        assert getattr(obj, "__doc__", None), name
