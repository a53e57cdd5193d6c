"""Launching real multi-process jobs from the tests: ``launch(code, nproc=2)`` writes ``code`` to a
script and runs it through ``python -m oar.distributed.launch`` (real MPI processes), bounded by a
timeout so that no test can hang the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("mpi4py")


@dataclass
class Launched:
    returncode: int
    stdout: str
    stderr: str
    log_dir: Path

    def log(self, rank: int) -> str:
        """What rank ``rank`` printed (its ``workerlog.<rank>``)."""
        return (self.log_dir / f"workerlog.{rank}").read_text(encoding="utf-8", errors="replace")

    def check(self) -> Launched:
        assert self.returncode == 0, f"the job failed ({self.returncode}):\n{self.stdout}\n{self.stderr}\n" + "\n".join(
            f"--- workerlog.{r}\n{self.log(r)}" for r in range(8) if (self.log_dir / f"workerlog.{r}").exists())
        return self


@pytest.fixture
def launch(tmp_path):
    """``launch(code, nproc=2, args=(), timeout=120, env=None, launcher_args=())`` -> ``Launched``;
    ``code=None`` runs the launcher without a script (``launcher_args=("--check",)``)."""
    counter = [0]

    def run(code: str | None, nproc: int = 2, args=(), timeout: float = 120, env: dict | None = None,
            launcher_args=()) -> Launched:
        counter[0] += 1
        target = []
        if code is not None:
            script = tmp_path / f"job{counter[0]}.py"
            script.write_text(textwrap.dedent(code), encoding="utf-8")
            target = [str(script), *map(str, args)]
        log_dir = tmp_path / f"log{counter[0]}"
        environment = {**os.environ, "OAR_DISTRIBUTED_TIMEOUT": "60", **(env or {})}
        command = [sys.executable, "-m", "oar.distributed.launch", "--nproc_per_node", str(nproc),
                   "--log_dir", str(log_dir), *launcher_args, *target]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=environment,
                              cwd=tmp_path)
        return Launched(done.returncode, done.stdout, done.stderr, log_dir)

    return run
