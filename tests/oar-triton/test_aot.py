"""Every gpu kernel compiles ahead of time for sm_90 (the H100/H200) on this machine, which has no
GPU: ``python -m oar_triton.aot`` in a process of its own, without Triton's interpreter."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest


def _aot(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    return subprocess.run([sys.executable, "-m", "oar_triton.aot", *args], capture_output=True, text=True, env=env,
                          timeout=900)


@pytest.mark.slow
def test_every_kernel_compiles_for_sm_90():
    result = _aot("--arch", "90", "--jobs", "2")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    summary = re.search(r"(\d+) of (\d+) kernel configurations compiled for sm_90", result.stdout)
    assert summary and summary.group(1) == summary.group(2) and int(summary.group(2)) > 300, result.stdout[-2000:]
    assert "FAILED" not in result.stdout
    families = {line.split()[1].split(".")[0] for line in result.stdout.splitlines() if line.startswith("sm_90 ")}
    assert families == {"elementwise", "shape", "reduction", "softmax", "matmul", "norm", "embedding", "random", "conv",
                        "pooling", "optimizer"}, families


def test_the_compiler_refuses_to_run_in_the_interpreter():
    env = dict(os.environ, TRITON_INTERPRET="1")
    result = subprocess.run([sys.executable, "-m", "oar_triton.aot", "-k", "fill"], capture_output=True, text=True,
                            env=env, timeout=300)
    assert result.returncode == 2 and "unset TRITON_INTERPRET" in result.stderr
