"""``oar-run serve=oar``: after training, a serving folder that ``oar-serve`` serves as it is."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from oar.inference import Config, create_predictor
from oar.serving import ServerProcess

from .conftest import assert_close
from .test_server import infer_json, request

pytest.importorskip("oar_hydra", reason="oar-hydra (oar-run) is not installed in this session")


def test_oar_run_writes_a_serving_folder_that_serves(tmp_path):
    run_dir = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "oar_hydra", "data.limit=160", "trainer.epochs=1",
                           "trainer.verbose=0", "serve=oar", "serve.port=8123", f"hydra.run.dir={run_dir}"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    folder = run_dir / "serving"
    version = folder / "models" / "lenet" / "1"
    assert (version / "model.json").is_file() and (version / "model.pdiparams").is_file()
    assert f"oar-serve --model-repository {folder / 'models'} --host 127.0.0.1 --port 8123" in \
        (folder / "README.md").read_text()
    x = np.random.default_rng(0).random((2, 1, 28, 28), dtype=np.float32)
    with ServerProcess(str(folder / "models")) as server:
        status, _, answer = request(server, "POST", "/v2/models/lenet/infer", infer_json(x))
    assert status == 200
    expected = create_predictor(Config(str(run_dir / "inference" / "lenet"))).infer([x])[0]
    assert_close(answer["outputs"][0]["data"], expected)
