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

from oar.utils import lazy_exports

__getattr__, __dir__ = lazy_exports(globals(), {
    "oar.onnx._api": ["export", "check_exportable", "supported_ops", "lowering_of"],
    "oar.onnx._import": ["load", "importable_ops", "ModelImportError"],
    "oar.onnx._context": ["ExportError", "LoweringContext"],
    "oar.onnx._export": ["MissingOp"],
})

__all__ = sorted(["export", "check_exportable", "supported_ops", "lowering_of", "load", "importable_ops",
                  "ModelImportError", "ExportError", "LoweringContext", "MissingOp"])
