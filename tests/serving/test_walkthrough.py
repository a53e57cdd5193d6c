"""docs/serving.md's walk-through, examples/serve_lenet.py, runs: train, save, check parity, serve
from two replicas on two ports, and answer tritonclient's requests from both."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "serve_lenet.py"


def test_the_walkthrough_runs():
    done = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "answers equal the Predictor's" in done.stdout and "| output_0 | output |" in done.stdout
