"""oar-triton's tests run the gpu backend's kernels in Triton's interpreter, on the CPU.

``TRITON_INTERPRET=1`` is set here, before Triton or the plugin's kernel modules are imported
(Triton reads it when a kernel is decorated); on a machine with a GPU, ``scripts/gpu_check.sh``
runs the GPU tests instead (``OAR_TRITON_ON_GPU=1`` keeps the interpreter off).
"""

from __future__ import annotations

import os

if os.environ.get("OAR_TRITON_ON_GPU") != "1":
    os.environ["TRITON_INTERPRET"] = "1"

import pytest  # noqa: E402

import oar  # noqa: E402


@pytest.fixture
def gpu():
    """New tensors go to the gpu inside the test; the cpu again after it."""
    oar.set_device("gpu")
    yield "gpu"
    oar.set_device("cpu")
