"""ONNX Runtime on two exporters' files of the same model, alternating call by call at one thread:
how far apart the files' speeds are beyond the run-to-run noise of the W9 table.

    python bench/worker_torch.py W9 --threads 1 --quick --export-onnx-dir /tmp/w9-torch
    python bench/worker_oar.py W9 --threads 1 --quick --export-onnx-dir /tmp/w9-oar
    python bench/onnx_files_ab.py /tmp/w9-torch /tmp/w9-oar resnet18 --batches 1 8

Run it in the bench session's environment (``.nox/bench``), with the kernels the suite's workers
use (``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE``).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import onnxruntime as ort
import suite


def session(path: str) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first_dir")
    parser.add_argument("second_dir")
    parser.add_argument("model", choices=sorted(suite.W9_MODELS))
    parser.add_argument("--batches", type=int, nargs="+", default=[1])
    parser.add_argument("--calls", type=int, default=40, help="timed calls of each file per batch")
    args = parser.parse_args()
    for batch in args.batches:
        files = [suite.w9_prefix(d, args.model, batch) + ".onnx" for d in (args.first_dir, args.second_dir)]
        sessions = [session(f) for f in files]
        x = suite.inputs(args.model)[f"b{batch}"]
        feeds = [{s.get_inputs()[0].name: x} for s in sessions]
        outputs = [s.run(None, f)[0] for s, f in zip(sessions, feeds)]  # warm-up, and the outputs compared
        samples: list[list[float]] = [[], []]
        for call in range(args.calls):
            for i in ((0, 1) if call % 2 else (1, 0)):  # alternate which file goes first
                start = time.perf_counter()
                sessions[i].run(None, feeds[i])
                samples[i].append(time.perf_counter() - start)
        first, second = (statistics.median(s) * 1e3 for s in samples)
        print(f"{args.model} batch {batch}: {first:.2f} ms ({args.first_dir}), {second:.2f} ms ({args.second_dir}), "
              f"second/first {second / first:.3f}, max |output difference| {np.abs(outputs[0] - outputs[1]).max():.1e}")


if __name__ == "__main__":
    main()
