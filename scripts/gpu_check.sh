#!/usr/bin/env bash
# The gpu backend's checks on a machine with an NVIDIA GPU (issue #22), in one go, in under 8 minutes:
#   1. the oar-triton test suite compiled and run on the GPU (not in Triton's interpreter),
#      the GPU-only tests included (they skip elsewhere);
#   2. the GPU benchmarks (bench/gpu.py), printed as a table.
#
#   bash scripts/gpu_check.sh            # uses the python that has oar-triton, or builds .venv-gpu/
#   bash scripts/gpu_check.sh --write    # also appends the benchmark table to docs/benchmarks.md
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON=${OAR_GPU_PYTHON:-python3}
if ! "$PYTHON" -c "import oar_triton" 2>/dev/null; then
    # a fresh machine: a virtual environment with core, nn, amp and the plugin (needs the package index)
    python3 -m venv .venv-gpu
    PYTHON=.venv-gpu/bin/python
    "$PYTHON" -m pip install --quiet ./packages/core ./packages/nn ./plugins/oar-amp "./plugins/oar-triton[test]" pytest-xdist
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv

unset TRITON_INTERPRET
export OAR_TRITON_ON_GPU=1  # tests/oar-triton/conftest.py: no interpreter
if ! "$PYTHON" -c "import sys; from oar_triton.driver import CudaDriver, get_driver; sys.exit(not isinstance(get_driver(), CudaDriver))"; then
    echo "gpu_check.sh: no CUDA GPU is visible here: nothing to run (CI runs the interpreter suite and the sm_90 compile)" >&2
    exit 2
fi
# the AOT check needs no GPU (CI runs it); everything else runs here on the device
PARALLEL=""
"$PYTHON" -c "import xdist" 2>/dev/null && PARALLEL="-n 4"
timeout 360 "$PYTHON" -m pytest -q tests/oar-triton -k "not test_every_kernel_compiles" -p no:cacheprovider \
    --durations=10 $PARALLEL
timeout 180 "$PYTHON" bench/gpu.py "$@"
