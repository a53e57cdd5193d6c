"""The examples in oar.io's docstrings run and say what they show."""

from __future__ import annotations

import doctest

import pytest

import oar.io
import oar.io._collate
import oar.io._dataloader
import oar.io._dataset
import oar.io._sampler
import oar.io._worker


@pytest.mark.parametrize("module", [oar.io, oar.io._collate, oar.io._dataloader, oar.io._dataset, oar.io._sampler,
                                    oar.io._worker], ids=lambda m: m.__name__)
def test_docstring_examples_run(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
