"""docs/metric.md stays true: its Python example runs."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[3] / "docs" / "metric.md"


def test_metric_page_example_runs():
    blocks = re.findall(r"^```python\n(.*?)^```$", DOC.read_text(), re.MULTILINE | re.DOTALL)
    assert blocks
    for block in blocks:
        namespace: dict = {}
        exec(compile(block, str(DOC), "exec"), namespace)
    assert namespace["m"].name() == ["acc_top1", "acc_top2"] and namespace["auc"].accumulate() == 1.0
