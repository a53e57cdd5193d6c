"""The PaddlePaddle worker of the benchmark suite: bench/paddle_api.py's workloads, run by Paddle.

    python bench/worker_paddle.py W2 W3 --threads 1

W6's graph path is Paddle Inference: the LeNet saved with ``paddle.jit.save`` and run by a
``paddle.inference`` predictor with oneDNN, on the suite's thread count. W9 runs its models through
Paddle Inference twice, with oneDNN (``config.enable_mkldnn()``) and without
(``config.disable_mkldnn()``): the columns "paddle-onednn" and "paddle-plain".
"""

from __future__ import annotations

import pin_threads

pin_threads.from_argv()  # before numpy and the framework load: they read the thread variables once

import logging  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import warnings  # noqa: E402

warnings.filterwarnings("ignore")  # paddle warns at import about ccache, which a benchmark does not use
os.environ.setdefault("GLOG_minloglevel", "2")  # and logs every inference pass it applies

import numpy as np  # noqa: E402
import paddle  # noqa: E402
import suite  # noqa: E402
from paddle_api import PaddleAPIWorkloads  # noqa: E402
from suite import Case, WorkerArgs, time_case, unavailable  # noqa: E402

FRAMEWORK = "paddle"
API = PaddleAPIWorkloads(paddle)


def inference_predictor(model, threads: int, directory: str):
    """LeNet through ``paddle.jit.save`` and a ``paddle.inference`` predictor (oneDNN on)."""
    spec = [paddle.static.InputSpec([None, 1, 28, 28], "float32", name="x")]
    prefix = os.path.join(directory, "lenet")
    paddle.jit.save(paddle.jit.to_static(model, input_spec=spec, full_graph=True), prefix)
    return saved_predictor(prefix, threads, onednn=True)


def saved_predictor(prefix: str, threads: int, onednn: bool):
    """A ``paddle.inference`` predictor of the model saved at ``prefix``, oneDNN on or off, as a
    function of a numpy array (through the input and output handles)."""
    model_file = next(prefix + ext for ext in (".json", ".pdmodel") if os.path.exists(prefix + ext))
    config = paddle.inference.Config(model_file, prefix + ".pdiparams")
    config.disable_gpu()
    if onednn:
        config.enable_mkldnn()
    else:
        config.disable_mkldnn()
    config.set_cpu_math_library_num_threads(threads)
    config.disable_glog_info()
    predictor = paddle.inference.create_predictor(config)
    input_handle = predictor.get_input_handle(predictor.get_input_names()[0])
    output_handle = predictor.get_output_handle(predictor.get_output_names()[0])

    def run(x: np.ndarray) -> np.ndarray:
        input_handle.reshape(x.shape)
        input_handle.copy_from_cpu(x)
        predictor.run()
        return output_handle.copy_to_cpu()

    return run


def w6(args: WorkerArgs) -> list[Case]:
    model, cases = API.w6_eager(args)
    data = suite.inputs("W6")
    with tempfile.TemporaryDirectory() as directory:
        try:
            predict = inference_predictor(model, args.threads, directory)
            predict(data["b1"])
        except Exception as error:  # report, as the other workers do, rather than lose the run
            reason = f"paddle.inference failed: {type(error).__name__}: {error}".splitlines()[0]
            return cases + [unavailable("W6", suite.w6_case(b, "graph"), "ms", reason) for b in ("b1", "b64")]
        for batch in ("b1", "b64"):
            x = data[batch]
            cases.append(time_case("W6", suite.w6_case(batch, "graph"), lambda x=x: predict(x),
                                   args.budget(f"W6 {batch}"), "ms", check=float(predict(x).sum()),
                                   note="paddle.inference predictor, oneDNN"))
    return cases


W9_COLUMNS = (("paddle-onednn", True, "paddle.inference, oneDNN"),
              ("paddle-plain", False, "paddle.inference, oneDNN disabled"))


def w9(args: WorkerArgs) -> list[Case]:
    """W9's models saved by ``paddle.jit.save`` and run by Paddle Inference with and without oneDNN."""
    runs = {column: {} for column, _, _ in W9_COLUMNS}
    failures = {column: {} for column, _, _ in W9_COLUMNS}
    saved: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as directory:
        for name, (_, _, batches) in suite.W9_MODELS.items():
            for batch in batches:
                x = suite.inputs(name)[f"b{batch}"]
                prefix = suite.w9_prefix(directory, name, batch)
                for column, onednn, _ in W9_COLUMNS:
                    try:
                        if prefix not in saved:
                            saved[prefix] = API.w9_save(name, batch, directory)
                        predict = saved_predictor(prefix, args.threads, onednn)
                    except Exception as error:  # report, as the other workers do, rather than lose the run
                        failures[column][(name, batch)] = f"paddle: {type(error).__name__}: {error}".splitlines()[0]
                        continue
                    runs[column][(name, batch)] = lambda predict=predict, x=x: predict(x)
        return [case for column, _, note in W9_COLUMNS
                for case in suite.w9_cases(column, runs[column], args, note, failures[column])]


def main(argv: list[str] | None = None) -> int:
    args = suite.parse_worker_args(__doc__.splitlines()[0], argv=argv)
    logging.getLogger("paddle").setLevel(logging.ERROR)
    paddle.set_device("cpu")
    paddle.base.core.set_num_threads(args.threads)  # the math library (MKL, OpenMP) threads of eager kernels
    details = f"numpy {np.__version__}; paddle.base.core.set_num_threads({args.threads})"
    workloads = API.workloads() | {"W6": w6, "W9": w9}
    return suite.run_worker(FRAMEWORK, paddle.__version__, details, args, workloads)


if __name__ == "__main__":
    sys.exit(main())
