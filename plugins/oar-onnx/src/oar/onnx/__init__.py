"""``oar.onnx``: ONNX export with a coverage check first, ONNX import, and ONNX Runtime serving.

>>> import os, tempfile
>>> import numpy as np
>>> import oar, oar.nn as nn, oar.onnx
>>> from oar.static import InputSpec
>>> model = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
>>> _ = model.eval()
>>> path = os.path.join(tempfile.mkdtemp(), "mlp")
>>> oar.onnx.export(model, path, input_spec=[InputSpec([None, 4], "float32", "x")])
>>> os.path.exists(path + ".onnx")
True
>>> import onnxruntime as ort
>>> session = ort.InferenceSession(path + ".onnx")
>>> x = np.ones([2, 4], np.float32)
>>> np.allclose(session.run(None, {"x": x})[0], model(oar.to_tensor(x)).numpy(), atol=1e-6)
True

The module loads its parts on first use: importing oar.onnx (which the plugin's registration
does) imports neither onnx nor onnxruntime.
"""

from __future__ import annotations

import importlib

_PUBLIC = {
    "export": "oar.onnx._api",
    "check_exportable": "oar.onnx._api",
    "load": "oar.onnx._import",
    "importable_ops": "oar.onnx._import",
    "ModelImportError": "oar.onnx._import",
    "supported_ops": "oar.onnx._api",
    "lowering_of": "oar.onnx._api",
    "ExportError": "oar.onnx._context",
    "LoweringContext": "oar.onnx._context",
    "MissingOp": "oar.onnx._export",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'oar.onnx' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))
