"""The ``"oar"`` serving backend: a model saved by ``oar.jit.save``, run by oar's executor.

``load(program_file, settings)`` reads the two files with ``oar.jit.load``, runs the inference
passes the settings choose (writing the program after each one when ``ir_debug`` is on) and
returns an ``OarRunner``, the ``oar.hookspecs.Runner`` the Predictor and the server call.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping

import numpy as np

import oar
import oar.utils
from oar.errors import PluginError
from oar.static.passes import Executor, dead_code_elimination, optimize, select_passes

PROGRAM_SUFFIX = ".json"


def spec_dict(spec, default_name: str) -> dict:
    """An ``InputSpec`` as the plain ``{"name", "shape" (-1: any size), "dtype"}`` a Runner lists."""
    return {"name": spec.name or default_name, "shape": [int(d) for d in spec.shape], "dtype": spec.dtype.name}


def write_debug_programs(program, level: int, deleted: list[str], directory: str, only: list[str] | None) -> None:
    """The program before the passes and after each one, as text: ``NN_<pass>.txt`` in ``directory``."""
    os.makedirs(directory, exist_ok=True)
    current = program.clone()
    steps = [("input", str(current))]  # as text at once: a pass may rewrite its input's nodes in place
    for p in select_passes(level, inference=True, disable=deleted):
        current = p(current)
        steps.append((getattr(p, "name", str(p)), str(current)))
    steps.append(("dead_code_elimination", str(dead_code_elimination(current))))
    for i, (name, text) in enumerate(steps):
        if only is None or name in only or name == "input":
            with oar.utils.atomic_file(os.path.join(directory, f"{i:02d}_{name}.txt"), "w", encoding="utf-8") as f:
                f.write(text + "\n")


class OarRunner:
    """A loaded model: named arrays in, named arrays out (``oar.hookspecs.Runner``).

    Calls from several threads are safe (each run has its own buffers); ``clone()`` makes a
    runner with its own executor over the same weights.
    """

    def __init__(self, layer, program, place: str, reuse_buffers: bool = True):
        self.layer = layer
        self.program = program
        self.place = place
        self.reuse_buffers = reuse_buffers
        self.input_specs = [spec_dict(s, f"input_{i}") for i, s in enumerate(layer.input_spec)]
        self.output_specs = [spec_dict(s, f"output_{i}") for i, s in enumerate(layer.output_spec)]
        self.input_names = [s["name"] for s in self.input_specs]
        self.output_names = [s["name"] for s in self.output_specs]
        self.executor = Executor(program, place, reuse_buffers=reuse_buffers)

    def run_list(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """The outputs for inputs given in ``input_names`` order (arrays in, arrays out: no tensor
        is made, so no gradient is ever recorded)."""
        return self.executor.run_arrays(arrays)

    def __call__(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(zip(self.output_names, self.run_list([inputs[n] for n in self.input_names])))

    def clone(self) -> OarRunner:
        return OarRunner(self.layer, self.program, self.place, self.reuse_buffers)


def _load_layer(program_file: str, params: str | None):
    if program_file.endswith(".onnx"):
        # An ONNX model runs on oar's executor once imported (config.set_serving_backend("oar")).
        try:
            onnx_import = importlib.import_module("oar.onnx")
        except ImportError:
            raise PluginError(f"{program_file!r} is an ONNX model: oar's executor runs it after import by oar-onnx "
                              f"(pip install oar-onnx), or run it with config.enable_onnxruntime()") from None
        return onnx_import.load(program_file)
    prefix = program_file[: -len(PROGRAM_SUFFIX)] if program_file.endswith(PROGRAM_SUFFIX) else program_file
    return oar.jit.load(prefix, **({"params_filename": os.path.abspath(params)} if params else {}))


def load(program_file: str, settings: Mapping) -> OarRunner:
    """The ``"oar"`` serving backend (``oar.hookspecs.ServingBackend``); ``settings`` is
    ``Config.to_dict()``, and ``settings["params_file"]`` the parameters file."""
    layer = _load_layer(program_file, settings.get("params_file"))
    layer.eval()
    program = layer.program()
    level = int(settings.get("optimization_level", 2))
    deleted = list(settings.get("deleted_passes") or [])
    if settings.get("ir_debug"):
        write_debug_programs(program, level, deleted, settings.get("debug_dir") or "oar_ir_debug",
                             settings.get("ir_debug_passes"))
    optimized = optimize(program, level, inference=True, disable=deleted)
    return OarRunner(layer, optimized, settings.get("place") or "cpu", bool(settings.get("memory_optim", True)))
