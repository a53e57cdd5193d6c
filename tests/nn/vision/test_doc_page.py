"""docs/vision.md stays true: its Python example runs."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[3] / "docs" / "vision.md"


def test_vision_page_example_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"^```python\n(.*?)^```$", DOC.read_text(), re.MULTILINE | re.DOTALL)
    assert blocks
    for block in blocks:
        namespace: dict = {}
        exec(compile(block, str(DOC), "exec"), namespace)
    assert namespace["image"].shape == [1, 28, 28] and len(namespace["train"]) == 1433
