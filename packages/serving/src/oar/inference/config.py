"""``oar.inference.Config``: where a saved model is and how the Predictor runs it, as Paddle's.

The model is what ``oar.jit.save(layer, prefix)`` wrote: ``prefix.json`` and ``prefix.pdiparams``.
``Config(prefix)``, ``Config("m.json", "m.pdiparams")`` and ``Config(folder)`` (a folder holding
one saved model) all name it.
"""

from __future__ import annotations

import enum
import os

import oar
import oar.plugins
from oar.errors import ArgumentError, DeviceError, PluginError

PROGRAM_SUFFIX = ".json"
PARAMS_SUFFIX = ".pdiparams"
DEFAULT_BACKEND = "oar"
# Which package registers each serving backend oar knows of, for the error when one is absent.
BACKEND_PACKAGES = {"oar": "oar-serving", "onnxruntime": "oar-onnx"}


class PrecisionType(enum.Enum):
    """The precision ``enable_use_gpu`` asks for (Paddle's ``PrecisionType``)."""

    Float32 = 0
    Int8 = 1
    Half = 2
    Bfloat16 = 3


class PlaceType(enum.Enum):
    """Where a predictor runs (Paddle's ``PlaceType``)."""

    UNK = -1
    CPU = 0
    GPU = 1


def _is_saved_model(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            head = f.read(64)
    except OSError:
        return False
    return '"format":"oar.jit"' in head.replace(" ", "")


ONNX_SUFFIX = ".onnx"


def resolve_model(model: str | None, params: str | None) -> tuple[str, str]:
    """``(program_file, params_file)`` for what a Config was given, or a FileNotFoundError that
    says what was looked for. An ONNX file (``model.onnx``, or the one ``.onnx`` file of a folder
    without a saved oar model) has no parameters file: ``(path, "")``."""
    if model is None:
        raise ArgumentError("Config: no model given: Config(prefix), Config(model_file, params_file) or "
                            "config.set_model(model_file, params_file)")
    model = os.fspath(model)
    if os.path.isdir(model):
        found = sorted(f for f in os.listdir(model) if f.endswith(PROGRAM_SUFFIX)
                       and _is_saved_model(os.path.join(model, f)))
        onnx_files = sorted(f for f in os.listdir(model) if f.endswith(ONNX_SUFFIX))
        if not found and len(onnx_files) == 1:
            found = onnx_files
        if len(found) != 1:
            what = f"{len(found)} ({', '.join(found)})" if found else "none"
            raise FileNotFoundError(f"Config({model!r}): a model folder must hold exactly one model saved by "
                                    f"oar.jit.save (<name>{PROGRAM_SUFFIX} + <name>{PARAMS_SUFFIX}) or one "
                                    f"<name>{ONNX_SUFFIX} file; found {what}")
        model = os.path.join(model, found[0])
    if model.endswith(ONNX_SUFFIX):
        if not os.path.isfile(model):
            raise FileNotFoundError(f"Config: the ONNX model file {model!r} does not exist")
        return model, ""
    prefix = model[: -len(PROGRAM_SUFFIX)] if model.endswith(PROGRAM_SUFFIX) else model
    program_file = prefix + PROGRAM_SUFFIX
    params_file = os.fspath(params) if params is not None else prefix + PARAMS_SUFFIX
    for path, what in ((program_file, "program"), (params_file, "parameters")):
        if not os.path.isfile(path):
            raise FileNotFoundError(f"Config: the model's {what} file {path!r} does not exist (oar.jit.save(layer, "
                                    f"prefix) writes prefix{PROGRAM_SUFFIX} and prefix{PARAMS_SUFFIX})")
    return program_file, params_file


def serving_backend(name: str, where: str):
    """The registered serving backend ``name``, or a PluginError from ``where`` naming the package to
    install and the backends there are."""
    registry = oar.plugins.registries().serving_backends
    if name not in registry:
        package = BACKEND_PACKAGES.get(name)
        hint = f" (install {package})" if package else ""
        raise PluginError(f"{where}: no serving backend {name!r}{hint}; registered: {sorted(registry)}")
    return registry.get(name)


class Config:
    """How to load and run a saved model, with Paddle Inference's names.

    >>> import os, tempfile, numpy as np, oar
    >>> from oar.static import InputSpec
    >>> from oar.inference import Config, create_predictor
    >>> prefix = os.path.join(tempfile.mkdtemp(), "model")
    >>> oar.jit.save(oar.nn.Linear(3, 2), prefix, input_spec=[InputSpec([None, 3], "float32", "x")])
    >>> config = Config(prefix + ".json", prefix + ".pdiparams")
    >>> config.set_cpu_math_library_num_threads(1)
    >>> predictor = create_predictor(config)
    >>> predictor.get_input_names(), predictor.get_output_names()
    (['x'], ['output_0'])

    The serving backend (the engine that runs the model) is ``"oar"``, oar's executor, unless
    ``set_serving_backend(name)`` (or ``enable_onnxruntime()``) picks another registered one;
    ``oar.inference.serving_backends()`` lists them. An ``.onnx`` model runs on ``"onnxruntime"``
    (oar-onnx) unless another backend is set.
    """

    def __init__(self, model_file: str | None = None, params_file: str | None = None):
        self._model = os.fspath(model_file) if model_file is not None else None
        self._params = os.fspath(params_file) if params_file is not None else None
        self._ir_optim = True
        self._optimization_level: int | None = None
        self._memory_optim = True  # oar's executor reuses dead buffers unless told not to
        self._threads: int | None = None
        self._deleted_passes: list[str] = []
        self._mkldnn_int8 = False
        self._ir_debug = False
        self._ir_debug_passes: list[str] | None = None
        self._debug_dir = "oar_ir_debug"
        self._backend: str | None = None  # None: "oar", or "onnxruntime" for an .onnx model
        self._ort_optimization = False
        self._use_gpu = False
        self._gpu_device_id = 0
        self._mkldnn = False
        self._glog_disabled = False

    # -- the model ------------------------------------------------------------------------------
    def set_model(self, model_file: str, params_file: str | None = None) -> None:
        self._model, self._params = os.fspath(model_file), (os.fspath(params_file) if params_file else None)

    def set_prog_file(self, path: str) -> None:
        self._model = os.fspath(path)

    def set_params_file(self, path: str) -> None:
        self._params = os.fspath(path)

    def set_model_dir(self, path: str) -> None:
        self._model, self._params = os.fspath(path), None

    def model_files(self) -> tuple[str, str]:
        """The program and parameter files this config names (a FileNotFoundError if absent)."""
        return resolve_model(self._model, self._params)

    def prog_file(self) -> str:
        return self.model_files()[0]

    def params_file(self) -> str:
        return self.model_files()[1]

    def model_dir(self) -> str:
        return os.path.dirname(self.model_files()[0])

    def model_prefix(self) -> str:
        return self.model_files()[0][: -len(PROGRAM_SUFFIX)]

    # -- the device -----------------------------------------------------------------------------
    def disable_gpu(self) -> None:
        self._use_gpu = False

    def enable_use_gpu(self, memory_pool_init_size_mb: int = 100, device_id: int = 0,
                       precision_mode: PrecisionType = PrecisionType.Float32) -> None:
        """Run on the GPU: needs the ``gpu`` backend (the oar-triton plugin) and a GPU."""
        backends = oar.plugins.registries().backends
        if "gpu" not in backends:
            raise DeviceError("Config.enable_use_gpu: no 'gpu' backend is installed. Install the oar-triton "
                              "plugin (pip install oar-triton) for GPU support, or call config.disable_gpu()")
        if not backends.get("gpu").is_available():
            raise DeviceError("Config.enable_use_gpu: the 'gpu' backend is installed but no GPU is available here")
        self._use_gpu, self._gpu_device_id = True, int(device_id)

    def use_gpu(self) -> bool:
        return self._use_gpu

    def gpu_device_id(self) -> int:
        return self._gpu_device_id

    def place(self) -> str:
        return "gpu" if self._use_gpu else "cpu"

    # -- how it runs ----------------------------------------------------------------------------
    def switch_ir_optim(self, x: bool = True) -> None:
        """Run the graph passes (``pass_builder().all_passes()``) before inference (default on)."""
        self._ir_optim = bool(x)

    def ir_optim(self) -> bool:
        return self._ir_optim

    def set_optimization_level(self, level: int) -> None:
        """The pass pipeline's level: 0 none, 1 the passes that keep every value, 2 (default) also
        the inference fusions, 3 also the experimental ones."""
        if not isinstance(level, int) or isinstance(level, bool) or not 0 <= level <= 3:
            raise ArgumentError(f"Config.set_optimization_level: level must be an int from 0 to 3, got {level!r}")
        self._optimization_level = level

    def optimization_level(self) -> int:
        from oar.static.passes import DEFAULT_LEVEL  # deferred (import time): the static graph loads with it

        if not self._ir_optim:
            return 0
        return DEFAULT_LEVEL if self._optimization_level is None else self._optimization_level

    def enable_memory_optim(self, x: bool = True) -> None:
        """Write elementwise results into the buffers of values no longer needed (default on in
        oar, unlike Paddle: it saves memory and time; ``enable_memory_optim(False)`` turns it off)."""
        self._memory_optim = bool(x)

    def enable_memory_optim_status(self) -> bool:
        return self._memory_optim

    def set_cpu_math_library_num_threads(self, n: int) -> None:
        """The CPU threads the model runs on (``oar.set_num_threads``: process-wide, as Paddle's
        math library setting is)."""
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ArgumentError(f"Config.set_cpu_math_library_num_threads: n must be an int >= 1, got {n!r}")
        self._threads = n

    def cpu_math_library_num_threads(self) -> int:
        return self._threads if self._threads is not None else (oar.plugins.registries().thread_controls.num_threads or 1)

    def enable_mkldnn(self) -> None:
        """Accepted for Paddle code: oar's CPU kernels need no switch (numpy's BLAS, oar-numba)."""
        self._mkldnn = True

    def disable_mkldnn(self) -> None:
        self._mkldnn = False

    def mkldnn_enabled(self) -> bool:
        return self._mkldnn

    def enable_mkldnn_int8(self, quantize_enabled_op_types=frozenset()) -> None:
        """Accepted for Paddle code: a model converted by ``oar.quantization`` runs as int8 layers
        whenever oar-slim's ``quantized_ops`` pass and oar-numba's int8 kernels are installed,
        with no switch (``delete_pass("quantized_ops")`` keeps its float QDQ form)."""
        self._mkldnn_int8 = True

    def mkldnn_int8_enabled(self) -> bool:
        return self._mkldnn_int8

    def disable_glog_info(self) -> None:
        self._glog_disabled = True

    def glog_info_disabled(self) -> bool:
        return self._glog_disabled

    # -- passes ---------------------------------------------------------------------------------
    def delete_pass(self, name: str) -> None:
        """Leave the pass ``name`` out of the pipeline (an unknown name is a ValueError listing
        the registered passes)."""
        self.pass_builder().delete_pass(name)

    def pass_builder(self) -> PassBuilder:
        return PassBuilder(self)

    def switch_ir_debug(self, x: bool = True, passes: list[str] | None = None) -> None:
        """Write the program before the passes and after each pass (or each of ``passes``) as text
        files ``NN_<pass>.txt`` into ``set_optim_cache_dir``'s folder (default ``oar_ir_debug``)."""
        self._ir_debug = bool(x)
        self._ir_debug_passes = list(passes) if passes else None

    def ir_debug(self) -> bool:
        return self._ir_debug

    def set_optim_cache_dir(self, path: str) -> None:
        self._debug_dir = os.fspath(path)

    def optim_cache_dir(self) -> str:
        return self._debug_dir

    # -- the serving backend --------------------------------------------------------------------
    def set_serving_backend(self, name: str) -> None:
        """Run the model with the registered serving backend ``name`` (``"oar"``: oar's executor;
        ``"onnxruntime"`` from oar-onnx; or a third party's)."""
        serving_backend(name, "Config.set_serving_backend")
        self._backend = name

    def serving_backend(self) -> str:
        if self._backend is not None:
            return self._backend
        try:
            onnx_model = self.model_files()[0].endswith(ONNX_SUFFIX)
        except (FileNotFoundError, ArgumentError):  # create_predictor reports it
            onnx_model = False
        return "onnxruntime" if onnx_model else DEFAULT_BACKEND

    def enable_onnxruntime(self) -> None:
        """Paddle's switch to ONNX Runtime: ``set_serving_backend("onnxruntime")``."""
        self.set_serving_backend("onnxruntime")

    def disable_onnxruntime(self) -> None:
        self._backend = DEFAULT_BACKEND

    def use_onnxruntime(self) -> bool:
        return self.serving_backend() == "onnxruntime"

    def enable_ort_optimization(self) -> None:
        """Paddle's switch for ONNX Runtime's graph optimisations (all levels: node fusions, layout
        changes); without it the onnxruntime backend runs only the basic, exact ones."""
        self._ort_optimization = True

    def ort_optimization_enabled(self) -> bool:
        return self._ort_optimization

    # -- a copy and a summary -------------------------------------------------------------------
    def copy(self) -> Config:
        clone = Config.__new__(Config)
        clone.__dict__.update({k: (list(v) if isinstance(v, list) else v) for k, v in self.__dict__.items()})
        return clone

    def summary(self) -> str:
        """A table of the settings (what Paddle's ``summary()`` returns)."""
        try:
            program, params = self.model_files()
        except (FileNotFoundError, ArgumentError) as exc:
            program, params = f"<{exc}>", ""
        rows = [
            ("model file", program), ("params file", params), ("serving backend", self.serving_backend()),
            ("place", self.place()), ("cpu math threads", str(self.cpu_math_library_num_threads())),
            ("ir optim", str(self._ir_optim)), ("optimization level", str(self.optimization_level())),
            ("memory optim", str(self._memory_optim)), ("deleted passes", ", ".join(self._deleted_passes) or "-"),
            ("ir debug", f"{self._ir_debug} ({self._debug_dir})" if self._ir_debug else "False"),
        ]
        width = max(len(k) for k, _ in rows)
        value_width = max(len(v) for _, v in rows)
        line = "+" + "-" * (width + 2) + "+" + "-" * (value_width + 2) + "+"
        body = [f"| {k.ljust(width)} | {v.ljust(value_width)} |" for k, v in rows]
        return "\n".join([line, *body, line])

    def __repr__(self) -> str:
        return f"<oar.inference.Config model={self._model!r} backend={self.serving_backend()!r}>"

    def to_dict(self) -> dict:
        """The settings as plain values (what a serving backend reads)."""
        return {
            "place": self.place(), "threads": self._threads, "optimization_level": self.optimization_level(),
            "memory_optim": self._memory_optim, "deleted_passes": list(self._deleted_passes),
            "ir_debug": self._ir_debug, "ir_debug_passes": list(self._ir_debug_passes) if self._ir_debug_passes else None,
            "debug_dir": self._debug_dir, "ort_optimization": self._ort_optimization,
        }


class PassBuilder:
    """The passes a Config's predictor runs (Paddle's ``pass_builder()``), in pipeline order."""

    def __init__(self, config: Config):
        self._config = config

    def all_passes(self) -> list[str]:
        from oar.static.passes import select_passes  # deferred (import time): the static graph loads with it

        level = self._config.optimization_level()
        if level == 0:
            return []
        names = [getattr(p, "name", str(p)) for p in select_passes(level, inference=True)]
        return [n for n in names if n not in self._config._deleted_passes]

    def delete_pass(self, name: str) -> None:
        from oar.static.passes import select_passes  # deferred (import time), as above

        known = [getattr(p, "name", str(p)) for p in select_passes(3, inference=True)]
        if name not in known:
            raise ArgumentError(f"delete_pass: no pass {name!r}; the passes are {known}")
        if name not in self._config._deleted_passes:
            self._config._deleted_passes.append(name)

    def turn_on_debug(self) -> None:
        self._config.switch_ir_debug(True)

    def __repr__(self) -> str:
        return f"<PassBuilder {self.all_passes()}>"
