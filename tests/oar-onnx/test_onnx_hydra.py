"""``oar-run export=onnx``: the trained model as ``<run>/inference/<model>.onnx``, checked against the
trained model through ONNX Runtime before the run reports success."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx_test_support import session

pytest.importorskip("oar_hydra", reason="oar-hydra (oar-run) is not installed in this session")


def test_oar_run_export_onnx_writes_a_checked_onnx_model(tmp_path):
    run_dir = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "oar_hydra", "data.limit=160", "trainer.epochs=1", "trainer.verbose=0",
                           "export=onnx", "export.opset_version=13", f"hydra.run.dir={run_dir}"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["export"] == "inference/lenet.onnx" and metrics["export_checked"] is True
    model = onnx.load(str(run_dir / "inference" / "lenet.onnx"))
    assert model.opset_import[0].version == 13
    sess = session(str(run_dir / "inference" / "lenet.onnx"))
    x = np.zeros([3, 1, 28, 28], np.float32)
    assert sess.run(None, {sess.get_inputs()[0].name: x})[0].shape == (3, 10)
