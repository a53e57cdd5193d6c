"""docs/hapi.md's example runs and says what it shows; the docstring examples of oar.hapi run."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

import oar.callbacks
import oar.hapi
import oar.hapi.callbacks
import oar.hapi.model
import oar.hapi.progressbar

DOC = Path(__file__).resolve().parents[3] / "docs" / "hapi.md"


def test_hapi_page_example_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (block,) = re.findall(r"^```python\n(.*?)^```$", DOC.read_text(), re.MULTILINE | re.DOTALL)
    namespace: dict = {}
    exec(compile(block, str(DOC), "exec"), namespace)
    assert namespace["result"]["acc"] >= 0.95 and namespace["logits"].shape == (364, 10)
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["lenet.pdopt", "lenet.pdparams"]
    assert capsys.readouterr().out.count("Eval samples: 364") == 5


@pytest.mark.parametrize("module", [oar.hapi, oar.hapi.model, oar.hapi.callbacks, oar.hapi.progressbar, oar.callbacks],
                         ids=lambda m: m.__name__)
def test_docstring_examples_run(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
