"""Helpers of the oar-hydra tests: run ``oar-run`` in a subprocess, writing only under tmp dirs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


class Finished:
    def __init__(self, result: subprocess.CompletedProcess, run_dir: Path):
        self.returncode, self.stdout, self.stderr = result.returncode, result.stdout, result.stderr
        self.run_dir = run_dir

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def metrics(self) -> dict:
        return json.loads((self.run_dir / "metrics.json").read_text())


@pytest.fixture
def oar_run(tmp_path):
    """``oar_run(*overrides, run_dir=None, multirun=False, pythonpath=())`` runs ``python -m oar_hydra``
    (the same entry point as the ``oar-run`` script) in ``tmp_path``, its run (or sweep)
    directory in ``tmp_path`` unless given."""
    counter = iter(range(1000))

    def run(*overrides: str, run_dir: Path | None = None, multirun: bool = False, pythonpath=(),
            timeout: float = 240, command=None) -> Finished:
        run_dir = run_dir or tmp_path / f"run{next(counter)}"
        where = f"hydra.sweep.dir={run_dir}" if multirun else f"hydra.run.dir={run_dir}"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([*map(str, pythonpath), env.get("PYTHONPATH", "")]).strip(os.pathsep)
        env.pop("HYDRA_FULL_ERROR", None)
        args = [*(command or [sys.executable, "-m", "oar_hydra"]), *(["-m"] if multirun else []), *overrides, where]
        result = subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd=tmp_path, env=env)
        return Finished(result, run_dir)

    return run
