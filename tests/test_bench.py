"""bench/run.py keeps working: a short run prints every workload and --write appends a dated section."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_bench_runner_prints_and_appends_a_table(tmp_path):
    output = tmp_path / "benchmarks.md"
    for _ in range(2):
        result = subprocess.run(
            [sys.executable, str(REPO / "bench" / "run.py"), "--calls", "50", "--repeats", "1", "--write",
             "--output", str(output)],
            capture_output=True, text=True, timeout=120,
        )
        assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| W")]
    assert [row.split("|")[1].strip() for row in rows] == ["W1 dispatch"] * 3 + ["W7 machine"] * 2
    for row in rows:
        assert float(row.split("|")[3]) > 0
    text = output.read_text()
    assert text.startswith("# Benchmarks")
    assert text.count("\n## ") == 2  # one dated section per run, appended
    assert text.count("--calls 50 --repeats 1 --write") == 2
