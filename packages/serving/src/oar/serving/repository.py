"""The model repository: ``DIR/<model>/<version>/`` folders of saved models, and their settings.

```
DIR/
  lenet/
    config.json        optional: batching and limits for every version (ModelConfig's fields)
    1/model.json       what oar.jit.save(layer, ".../1/model") wrote
    1/model.pdiparams
    2/...              the highest version is the default
```

Each version loads on its own: one that fails (a truncated file, an op from a plugin that is
not installed, ...) is reported with its reason, and every other model and version serves.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from dataclasses import dataclass, field

import numpy as np

from oar.inference import Config, create_predictor
from oar.inference.predictor import numpy_dtype

log = logging.getLogger("oar.serving")
CONFIG_FILE = "config.json"


@dataclass
class ModelConfig:
    """A model's serving settings (``DIR/<model>/config.json``; every field optional).

    ``max_batch_size``: the most rows one batched run takes (0: no dynamic batching);
    ``max_queue_delay_ms``: how long the first request of a batch waits for others (0: it runs as
    soon as a slot is free, with what queued meanwhile);
    ``max_queue_size``: requests waiting beyond this are answered 503 at once;
    ``timeout_ms``: a request not answered by then gets 504; ``max_concurrency``: batches of
    this model running at once (each on its own predictor over shared weights); ``threads``:
    ``Config.set_cpu_math_library_num_threads`` (process-wide); ``backend``: the serving
    backend (unset: ``"oar"``, or ``"onnxruntime"`` for a version holding an ``.onnx`` file);
    ``ort_optimization``: ONNX Runtime's full graph optimisations (onnxruntime backend); ``warmup``: run one batch of zeros at load (compiles kernels before the first request).
    """

    max_batch_size: int = 32
    max_queue_delay_ms: float = 0.0
    max_queue_size: int = 256
    timeout_ms: float = 30_000.0
    max_concurrency: int = 1
    threads: int | None = None
    backend: str | None = None
    ort_optimization: bool = True
    warmup: bool = True

    @classmethod
    def from_file(cls, path: str) -> ModelConfig:
        with open(path, encoding="utf-8") as f:
            try:
                data = json.load(f)
            except ValueError as exc:
                raise ValueError(f"{path}: not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path}: must hold a JSON object of settings")
        return cls.from_dict(data, where=path)

    @classmethod
    def from_dict(cls, data: dict, where: str = "model config") -> ModelConfig:
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise ValueError(f"{where}: unknown setting(s) {unknown}; the settings are {sorted(fields)}")
        config = cls(**data)
        for name in ("max_batch_size", "max_queue_size", "max_concurrency"):
            value = getattr(config, name)
            low = 0 if name == "max_batch_size" else 1
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"{where}: {name} must be an int >= {low}, got {value!r}")
        for name in ("max_queue_delay_ms", "timeout_ms"):
            value = getattr(config, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{where}: {name} must be a number >= 0, got {value!r}")
        threads = config.threads
        if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or threads < 1):
            raise ValueError(f"{where}: threads must be an int >= 1 or null, got {threads!r}")
        if not isinstance(config.backend, (str, type(None))) or not isinstance(config.warmup, bool) or \
                not isinstance(config.ort_optimization, bool):
            raise ValueError(f"{where}: backend must be a string or null, warmup true or false and ort_optimization "
                             f"true or false, got "
                             f"{config.backend!r}, {config.warmup!r} and {config.ort_optimization!r}")
        return config


@dataclass
class ModelVersion:
    """One version of a model: its predictor when it loaded, else the reason it did not."""

    model: str
    version: str
    path: str
    predictor: object | None = None
    error: str | None = None
    inputs: list[dict] = field(default_factory=list)
    outputs: list[dict] = field(default_factory=list)
    backend: str = ""  # the serving backend that runs it ("platform" in the model's metadata)

    @property
    def ready(self) -> bool:
        return self.predictor is not None

    def batchable(self) -> bool:
        """Whether requests can be joined along the first dim: every input and output has a
        dynamic first dim."""
        return all(s["shape"] and s["shape"][0] == -1 for s in (*self.inputs, *self.outputs))


@dataclass
class Model:
    name: str
    config: ModelConfig
    versions: dict[str, ModelVersion] = field(default_factory=dict)
    error: str | None = None

    def default_version(self) -> ModelVersion | None:
        """The highest version that loaded."""
        ready = [v for v in self.versions.values() if v.ready]
        return max(ready, key=lambda v: int(v.version)) if ready else None


def _warm_up(predictor, inputs: list[dict]) -> None:
    arrays = [np.zeros([1 if d == -1 else d for d in s["shape"]], dtype=numpy_dtype(s["dtype"])) for s in inputs]
    predictor.run(arrays)


def load_version(model: str, version: str, path: str, config: ModelConfig, default_backend: str | None = None) -> ModelVersion:
    entry = ModelVersion(model, version, path)
    try:
        inference = Config(path)
        if config.threads is not None:
            inference.set_cpu_math_library_num_threads(config.threads)
        backend = config.backend or default_backend
        if backend is not None:
            inference.set_serving_backend(backend)
        if config.ort_optimization:
            inference.enable_ort_optimization()
        entry.backend = inference.serving_backend()
        predictor = create_predictor(inference)
        entry.inputs, entry.outputs = predictor.get_input_specs(), predictor.get_output_specs()
    except Exception as exc:  # noqa: BLE001 - any failure of one model must leave the others serving
        entry.error = f"{type(exc).__name__}: {exc}"
        log.error("model %r version %s failed to load from %s: %s", model, version, path, entry.error)
        return entry
    if config.warmup:
        try:
            _warm_up(predictor, entry.inputs)
        except Exception as exc:  # noqa: BLE001 - a model may refuse size-1 dims; it still serves real inputs
            log.warning("model %r version %s: warm-up with zeros failed (%s); serving it anyway", model, version, exc)
    entry.predictor = predictor
    log.info("model %r version %s loaded from %s", model, version, path)
    return entry


def load_repository(directory: str, default_backend: str | None = None) -> dict[str, Model]:
    """Every model of the repository, each version loaded or with its reason for failing;
    ``default_backend`` runs the models whose config names no backend (``oar-serve --backend``)."""
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"--model-repository {directory!r} is not a folder")
    models: dict[str, Model] = {}
    for name in sorted(os.listdir(directory)):
        folder = os.path.join(directory, name)
        if not os.path.isdir(folder) or name.startswith("."):
            continue
        model = Model(name, ModelConfig())
        models[name] = model
        config_path = os.path.join(folder, CONFIG_FILE)
        if os.path.isfile(config_path):
            try:
                model.config = ModelConfig.from_file(config_path)
            except (OSError, ValueError, TypeError) as exc:
                model.error = str(exc)
                log.error("model %r: %s", name, exc)
                continue
        versions = sorted((v for v in os.listdir(folder) if v.isdigit() and os.path.isdir(os.path.join(folder, v))),
                          key=int)
        if not versions:
            model.error = f"{folder} has no version folder (<model>/1/, <model>/2/, ...)"
            log.error("model %r: %s", name, model.error)
        for version in versions:
            model.versions[version] = load_version(name, version, os.path.join(folder, version), model.config,
                                                   default_backend)
    return models
