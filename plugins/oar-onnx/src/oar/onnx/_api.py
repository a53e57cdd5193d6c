"""``oar.onnx.export``, ``check_exportable`` and ``supported_ops``: Paddle's ``paddle.onnx.export``
with the coverage check run before anything is written."""

from __future__ import annotations

import os

from oar.onnx._context import ExportError
from oar.onnx._export import (
    DEFAULT_OPSET,
    TARGET,
    MissingOp,
    check_model,
    missing_lowerings,
    program_of,
    save_model,
    to_model,
)
from oar.ops import lowering
from oar.plugins import registries

_CONFIGS = {"enable_onnx_checker"}


def export(layer, path, input_spec=None, opset_version: int = DEFAULT_OPSET, **configs) -> None:
    """Write ``layer`` as an ONNX model to ``path + '.onnx'`` (``path`` as given where it already
    ends in ``.onnx``), as ``paddle.onnx.export`` does.

    ``layer`` is a Layer, a to_static function, a ``TranslatedLayer`` or the path prefix of a model
    saved with ``oar.jit.save``; ``input_spec`` (a list of ``oar.static.InputSpec``) as for
    ``oar.jit.save``: a ``None`` dim stays symbolic in the file (the batch is ``batch``). Inputs keep
    their InputSpec names, outputs are ``output_0``, ``output_1``, ... (the Predictor's names) and
    parameters keep their names (``conv1.weight``). Every op is checked for an ONNX lowering first:
    a model with ops that have none raises ``ExportError`` listing each (count, source line) and
    writes nothing. The model passes ``onnx.checker.check_model(full_check=True)`` before it is
    written (``enable_onnx_checker=False`` skips that); the file is written atomically.

    >>> import os, tempfile, oar, oar.nn as nn, oar.onnx
    >>> from oar.static import InputSpec
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny")
    >>> oar.onnx.export(nn.Linear(2, 2), path, input_spec=[InputSpec([None, 2], name="x")], opset_version=13)
    >>> sorted(os.listdir(os.path.dirname(path)))
    ['tiny.onnx']
    """
    unknown = set(configs) - _CONFIGS
    if unknown:
        raise ExportError(f"onnx export: unsupported arguments {sorted(unknown)}; known: {sorted(_CONFIGS)}")
    if not isinstance(path, (str, os.PathLike)) or not os.path.basename(os.fspath(path)):
        raise ExportError(f"onnx export: path must be a file path such as 'out/model', got {path!r}")
    path = os.fspath(path)
    if not path.endswith(".onnx"):
        path += ".onnx"
    program = program_of(layer, input_spec)
    model = to_model(program, opset_version)
    if configs.get("enable_onnx_checker", True):
        check_model(model)
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    save_model(model, path)


def check_exportable(layer_or_program, input_spec=None) -> list[MissingOp]:
    """The ops of a model that have no ONNX lowering, each with its count and the user's source
    lines that called it; an empty list when every op can be exported. Nothing is written.

    >>> import oar, oar.onnx
    >>> from oar.static import InputSpec
    >>> f = oar.jit.to_static(lambda x: oar.tanh(x) * 2.0, input_spec=[InputSpec([None, 3], name="x")])
    >>> oar.onnx.check_exportable(f)
    []
    """
    return missing_lowerings(program_of(layer_or_program, input_spec))


def supported_ops() -> list[str]:
    """Every op (of all installed packages) that has an ONNX lowering."""
    return registries().lowerings.ops_for(TARGET)


def lowering_of(op_name: str):
    """The ONNX lowering of ``op_name`` or None."""
    return lowering(TARGET, op_name)


__all__ = ["export", "check_exportable", "supported_ops", "lowering_of", "ExportError"]
