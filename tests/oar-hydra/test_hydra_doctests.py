"""The examples in oar-hydra's docstrings run and give what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["oar_hydra", "oar_hydra.app", "oar_hydra.callbacks", "oar_hydra.data", "oar_hydra.schedules",
           "oar_hydra.schema", "oar_hydra.sweep"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0, f"{name} has no examples"
