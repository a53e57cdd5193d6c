"""``oar-run strategy=dp``: started plainly, oar-run runs the job as ranks through
``python -m oar.distributed.launch`` and waits; rank 0 alone writes the run directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("oar_hydra")


def test_oar_run_strategy_dp_trains_on_two_ranks_and_writes_the_run_directory_once(tmp_path):
    run_dir = tmp_path / "run"
    env = {**os.environ, "OAR_DISTRIBUTED_TIMEOUT": "60"}
    for name in ("PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM", "HYDRA_FULL_ERROR"):
        env.pop(name, None)
    # Launching the ranks is what is tested, so the plain command runs here; the launcher it starts
    # bounds the ranks as the launch fixture does, and the timeout bounds the whole job.
    done = subprocess.run([sys.executable, "-m", "oar_hydra", "strategy=dp", "strategy.nproc_per_node=2", "model=mlp",
                           "trainer.epochs=1", "data.limit=300", "export=none", f"hydra.run.dir={run_dir}"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["ranks"] == 2 and metrics["choices"]["strategy"] == "dp"
    assert 0.3 < metrics["test_accuracy"] <= 1.0  # 300 images, one epoch: well above chance (0.1)
    assert sorted(p.name for p in run_dir.rglob("metrics.json")) == ["metrics.json"]
    assert sorted(p.name for p in (run_dir / "ranks").glob("workerlog.*")) == ["workerlog.0", "workerlog.1"]
    log = (run_dir / "oar-run.log").read_text()
    assert "running this job as 2 ranks" in log and log.count("Epoch 1/1") == 1
    assert "Epoch" not in (run_dir / "ranks" / "workerlog.1").read_text()
