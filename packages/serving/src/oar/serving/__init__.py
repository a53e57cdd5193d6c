"""``oar.serving``: an HTTP server for saved models, speaking the Open Inference Protocol
(KServe v2) REST API with the binary tensor data extension, so that existing clients
(``tritonclient[http]``, KServe's, plain curl) work unchanged.

``oar-serve --model-repository DIR`` (or ``serve(DIR)``) serves every model of a repository laid
out ``DIR/<model>/<version>/``; ``create_app(DIR)`` is the ASGI application for any ASGI server.
Concurrent requests are batched (``ModelConfig``), counted at ``/metrics`` and bounded (queue,
timeout, body size); docs/serving.md walks from a trained Layer to a served model.
"""

from __future__ import annotations

import json
import os
import shutil

from oar.serving.app import API_KEY_ENV, create_app
from oar.serving.process import ServerProcess, free_port
from oar.serving.repository import CONFIG_FILE, ModelConfig, load_repository
from oar.serving.server import serve
from oar.utils import atomic_file


def write_repository(model_prefix: str, directory: str, name: str, version: int = 1,
                     config: ModelConfig | dict | None = None) -> str:
    """Copy a saved model (``model_prefix.json`` + ``.pdiparams``, or an ONNX file
    ``model_prefix.onnx``) into a repository as ``directory/name/version/model.*``, with an optional
    ``config.json``; returns the version folder.

    >>> # write_repository("out/lenet", "models", "lenet")  ->  "models/lenet/1"
    """
    target = os.path.join(directory, name, str(version))
    os.makedirs(target, exist_ok=True)
    # An ONNX file when given one, or when the prefix has no saved oar model beside it.
    given_onnx = model_prefix.endswith(".onnx")
    if given_onnx:
        model_prefix = model_prefix[: -len(".onnx")]
    suffixes = (".onnx",) if given_onnx or (not os.path.exists(model_prefix + ".json")
                                            and os.path.exists(model_prefix + ".onnx")) else (".json", ".pdiparams")
    for suffix in suffixes:
        shutil.copyfile(model_prefix + suffix, os.path.join(target, "model" + suffix))
    if config is not None:
        data = config if isinstance(config, dict) else dict(vars(config))
        ModelConfig.from_dict(data)  # refused here, not when the server starts
        with atomic_file(os.path.join(directory, name, CONFIG_FILE), "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)
    return target


def serve_exported(model_prefix: str, *, start: bool = False, host: str = "127.0.0.1", port: int = 8000,
                   workers: int = 1, max_batch_size: int = 32, max_queue_delay_ms: float = 0.0) -> str:
    """What ``oar-run serve=oar`` does after training: write a serving folder beside the run's
    exported model (``<run>/serving/models/<name>/1/`` and a README with the command that serves
    it) and, with ``start=True``, serve it until SIGTERM or Ctrl-C. Returns the folder."""
    model_prefix = os.path.abspath(model_prefix)
    name = os.path.basename(model_prefix[: -len(".onnx")] if model_prefix.endswith(".onnx") else model_prefix)
    folder = os.path.join(os.path.dirname(os.path.dirname(model_prefix)), "serving")
    models = os.path.join(folder, "models")
    write_repository(model_prefix, models, name, 1,
                     config={"max_batch_size": max_batch_size, "max_queue_delay_ms": max_queue_delay_ms})
    command = f"oar-serve --model-repository {models} --host {host} --port {port}" + \
        (f" --workers {workers}" if workers > 1 else "")
    readme = (f"# Serving {name}\n\n    {command}\n\nthen\n\n    curl http://{host}:{port}/v2/models/{name}\n\n"
              f"Requests follow the Open Inference Protocol (KServe v2); see oar's docs/serving.md.\n")
    with atomic_file(os.path.join(folder, "README.md"), "w", encoding="utf-8") as f:
        f.write(readme)
    if start:
        serve(models, host=host, port=port, workers=workers)
    return folder


__all__ = ["serve", "serve_exported", "create_app", "ModelConfig", "load_repository", "write_repository", "ServerProcess", "free_port",
           "API_KEY_ENV"]
