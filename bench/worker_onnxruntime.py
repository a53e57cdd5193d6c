"""The ONNX Runtime worker of the benchmark suite: W6's LeNet and W9's models, exported to ONNX by the torch and oar workers.

    python bench/worker_torch.py W6 --threads 1 --quick --export-onnx /tmp/lenet.onnx
    python bench/worker_onnxruntime.py W6 --threads 1 --model /tmp/lenet.onnx
    python bench/worker_torch.py W9 --threads 1 --export-onnx-dir /tmp/w9
    python bench/worker_oar.py W9 --threads 1 --export-onnx-dir /tmp/w9-oar
    python bench/worker_onnxruntime.py W9 --threads 1 --model-dir /tmp/w9 --oar-model-dir /tmp/w9-oar

A CPU session with every graph optimisation, ``intra_op_num_threads`` set to the suite's thread
count and one inter-op thread. Only W6 and W9 have ONNX Runtime rows; other workloads are ignored.
"""

from __future__ import annotations

import pin_threads

pin_threads.from_argv()  # before numpy and the framework load: they read the thread variables once

import os  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
import suite  # noqa: E402
from suite import Case, WorkerArgs, time_case, unavailable  # noqa: E402

FRAMEWORK = "onnxruntime"


def make_session(path: str, threads: int) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def w6(args: WorkerArgs) -> list[Case]:
    if not args.extra.model:
        return [unavailable("W6", suite.w6_case(b, "graph"), "ms", "no ONNX model: it is exported by the torch worker")
                for b in ("b1", "b64")]
    session = make_session(args.extra.model, args.threads)
    name = session.get_inputs()[0].name
    data = suite.inputs("W6")
    cases = []
    for batch in ("b1", "b64"):
        feed = {name: data[batch]}

        def run(feed=feed):
            return session.run(None, feed)[0]

        cases.append(time_case("W6", suite.w6_case(batch, "graph"), run, args.budget(f"W6 {batch}"), "ms",
                               check=float(run().sum()), note="onnxruntime, LeNet exported by torch.onnx.export"))
    return cases


def w9_runs(directory: str | None, threads: int, exporter: str) -> tuple[dict, dict]:
    """Sessions over the W9 files in ``directory`` (written by ``exporter``'s worker): the timed
    callables and, per model without a file, the reason."""
    runs, failures, sessions = {}, {}, {}
    for name, (_, _, batches) in suite.W9_MODELS.items():
        for batch in batches:
            path = suite.w9_prefix(directory or "", name, batch) + ".onnx"
            if not directory or not os.path.exists(path):
                failed = path + ".failed"
                failures[(name, batch)] = (open(failed, encoding="utf-8").read() if os.path.exists(failed) else
                                           f"no ONNX model: W9's are exported by the {exporter} worker")
                continue
            try:
                if path not in sessions:
                    sessions[path] = make_session(path, threads)
            except Exception as error:  # report, as the other workers do, rather than lose the run
                failures[(name, batch)] = f"onnxruntime: {type(error).__name__}: {error}".splitlines()[0][:300]
                continue
            session = sessions[path]
            feed = {session.get_inputs()[0].name: suite.inputs(name)[f"b{batch}"]}
            runs[(name, batch)] = lambda session=session, feed=feed: session.run(None, feed)[0]
    return runs, failures


def w9(args: WorkerArgs) -> list[Case]:
    """W9's models from the ONNX files of ``worker_torch.py W9 --export-onnx-dir`` (column
    ``onnxruntime``) and of ``worker_oar.py W9 --export-onnx-dir`` (column ``onnxruntime-oar``):
    the same weights, the same engine, two exporters."""
    cases = []
    if args.extra.model_dir:
        runs, failures = w9_runs(args.extra.model_dir, args.threads, "torch")
        cases += suite.w9_cases("onnxruntime", runs, args, "onnxruntime, exported by torch.onnx.export", failures)
    if args.extra.oar_model_dir:
        runs, failures = w9_runs(args.extra.oar_model_dir, args.threads, "oar")
        cases += suite.w9_cases("onnxruntime-oar", runs, args, "onnxruntime, exported by oar.onnx.export", failures)
    return cases


def main(argv: list[str] | None = None) -> int:
    def extend(parser):
        parser.add_argument("--model", metavar="PATH", help="the LeNet ONNX file written by worker_torch.py")
        parser.add_argument("--model-dir", metavar="DIR", help="W9's ONNX files written by worker_torch.py")
        parser.add_argument("--oar-model-dir", metavar="DIR", help="W9's ONNX files written by worker_oar.py")

    args = suite.parse_worker_args(__doc__.splitlines()[0], extend, argv)
    details = f"numpy {np.__version__}; intra_op_num_threads={args.threads}, inter_op_num_threads=1"
    return suite.run_worker(FRAMEWORK, ort.__version__, details, args, {"W6": w6, "W9": w9})


if __name__ == "__main__":
    sys.exit(main())
