"""docs/slim.md's walkthrough runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "slim.md"


@pytest.mark.skipif(not DOC.is_file(), reason="docs/slim.md is in the repository, not in the wheel")
def test_walkthrough_runs(capsys):
    (code,) = re.findall(r"^```python\n(.*?)^```$", DOC.read_text(), re.MULTILINE | re.DOTALL)
    exec(compile(code, str(DOC), "exec"), {"__name__": "slim_doc"})
    assert capsys.readouterr().out.strip() == "oar.int8 [364, 10]"
