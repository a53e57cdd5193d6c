"""Per-layer diff of a float model and its quantized model: where the accuracy went.

``compare_quantized`` runs both models on the same inputs with forward post-hooks on
corresponding layers, matched by their path in the model (``"fc.0"``: ``PTQ``/``QAT`` replace a
layer under the same name, so ``fc.0`` is the ``Linear`` in one model and the ``QuantedLinear`` in
the other), and reports for each layer's output ``a`` (float) and ``b`` (quantized):

- ``cosine``: ``a.b / (|a| |b|)`` (1 is identical in direction);
- ``max_abs_error``: ``max |a - b|``;
- ``relative_error``: ``|a - b| / |a|`` (Euclidean norms over the whole output);
- ``local_relative_error``: the same for the quantized layer run on the *float* layer's inputs,
  the error the layer adds by itself.

The first three measure the error accumulated up to that layer, which every layer after a bad one
inherits; the last isolates each layer, so the report sorts by it (worst first): the layer on top
is the one to keep in float (``QuantConfig.add_name_config(name, activation=None, weight=None)``)
or to calibrate better. ``oar.slim.quant_sensitivity`` answers the same question in terms of the
user's metric, at the cost of one calibration and evaluation per layer.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass

import numpy as np

import oar
from oar.errors import ArgumentError
from oar.nn import Layer
from oar.ops import Tensor

from .sensitivity import run_batch

DIFF_FORMAT = "oar.slim.compare_quantized"
DIFF_VERSION = 1
SORT_KEYS = ("local_relative_error", "relative_error", "max_abs_error", "cosine")


@dataclass(frozen=True)
class LayerDiff:
    """How one layer's output differs between the float and the quantized model (see the module)."""

    layer: str
    float_type: str
    quantized_type: str
    shape: tuple[int, ...]
    cosine: float
    max_abs_error: float
    relative_error: float
    local_relative_error: float


def output_diff(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """``(cosine, max_abs_error, relative_error)`` of ``b`` against the reference ``a``, in float64.

    An all-zero pair has cosine 1 and relative error 0; a zero ``a`` with a nonzero ``b`` has
    relative error ``inf``.

    >>> import numpy as np
    >>> from oar.slim.diff import output_diff
    >>> [round(v, 4) for v in output_diff(np.array([3.0, 4.0]), np.array([3.0, 4.5]))]
    [0.9985, 0.5, 0.1]
    """
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    b = np.asarray(b, dtype=np.float64).reshape(-1)
    na, nb, nd = np.linalg.norm(a), np.linalg.norm(b), np.linalg.norm(a - b)
    if na == 0 and nb == 0:
        cosine = 1.0
    elif na == 0 or nb == 0:
        cosine = 0.0
    else:
        cosine = float(np.clip(a @ b / (na * nb), -1.0, 1.0))
    max_abs = float(np.abs(a - b).max()) if a.size else 0.0
    relative = float(nd / na) if na > 0 else (0.0 if nd == 0 else math.inf)
    return cosine, max_abs, relative


def _flatten(outputs) -> np.ndarray | None:
    """A layer's outputs (a Tensor, or a tuple/list/dict of them) as one float64 vector; None when
    there is no float tensor in them."""
    if isinstance(outputs, Tensor):
        outputs = [outputs]
    elif isinstance(outputs, dict):
        outputs = list(outputs.values())
    elif not isinstance(outputs, (tuple, list)):
        return None
    arrays = [t.numpy(copy=False) for t in outputs if isinstance(t, Tensor)]
    parts = [a.astype(np.float64).reshape(-1) for a in arrays if np.issubdtype(a.dtype, np.floating)]
    return np.concatenate(parts) if parts else None


def _shape(outputs) -> tuple[int, ...]:
    first = outputs if isinstance(outputs, Tensor) else next(
        (t for t in (outputs.values() if isinstance(outputs, dict) else outputs) if isinstance(t, Tensor)), None)
    return tuple(first.shape) if first is not None else ()


def _select(float_model: Layer, quantized_model: Layer, layers) -> list[str]:
    float_layers = dict(float_model.named_sublayers())
    quantized_layers = dict(quantized_model.named_sublayers())
    if layers is None:
        # Leaves of the float model: a container's error is its sublayers' (and would top the list).
        names = [p for p, layer in float_layers.items() if not any(layer.children()) and p in quantized_layers]
        if not names:
            raise ArgumentError(f"compare_quantized: {type(float_model).__name__} and {type(quantized_model).__name__} "
                                "share no layer names; compare a model with the model PTQ or QAT made from it")
        return names
    names = [layers] if isinstance(layers, str) else list(layers)
    for name in names:
        where = [m for m, table in (("float", float_layers), ("quantized", quantized_layers)) if name not in table]
        if where:
            common = [p for p in float_layers if p in quantized_layers]
            raise ArgumentError(f"compare_quantized: the {' and '.join(where)} model has no layer {name!r}; layers "
                                f"of both are {', '.join(common[:16])}{', ...' if len(common) > 16 else ''}")
    return names


def compare_quantized(float_model: Layer, quantized_model: Layer, inputs, save_json: str | os.PathLike | None = None,
                      layers: Iterable[str] | None = None, sort_by: str = "local_relative_error",
                      print_table: bool = True) -> list[LayerDiff]:
    """Compare every layer's output of ``float_model`` and ``quantized_model`` on ``inputs``.

    ``inputs`` is one batch (a Tensor or numpy array; a tuple for several positional inputs) or a
    list of batches; both models run on it in eval mode, without gradients, and are left as they
    were (mode, hooks; an observed, not yet converted, model's observers do see the inputs). Layers are matched by path; by default every leaf layer of the float
    model that the quantized model has, else ``layers`` (paths, containers too). Returns one
    ``LayerDiff`` per layer, worst first by ``sort_by`` (``local_relative_error``, the error the
    layer adds by itself; or ``relative_error``, ``max_abs_error``: largest first; ``cosine``:
    smallest first), prints them as a table, and writes them to ``save_json`` when given.

    >>> import oar
    >>> from oar.quantization import PTQ, QuantConfig
    >>> from oar.quantization.observers import AbsmaxObserver
    >>> from oar.slim.diff import compare_quantized
    >>> _ = oar.seed(0)
    >>> model = oar.nn.Sequential(oar.nn.Linear(4, 8), oar.nn.ReLU(), oar.nn.Linear(8, 2)).eval()
    >>> config = QuantConfig(activation=AbsmaxObserver(), weight=AbsmaxObserver())
    >>> config.add_name_config("2", activation=AbsmaxObserver(quant_bits=2), weight=AbsmaxObserver(quant_bits=2))
    >>> ptq = PTQ(config)
    >>> observed = ptq.quantize(model)
    >>> x = oar.randn([64, 4])
    >>> _ = observed(x)
    >>> rows = compare_quantized(model, ptq.convert(observed), x, print_table=False)
    >>> [(row.layer, row.quantized_type) for row in rows]  # the 2-bit layer first
    [('2', 'QuantedLinear'), ('0', 'QuantedLinear'), ('1', 'ReLU')]
    >>> rows[0].relative_error > 10 * rows[1].relative_error
    True
    """
    for role, model in (("float_model", float_model), ("quantized_model", quantized_model)):
        if not isinstance(model, Layer):
            raise ArgumentError(f"compare_quantized: {role} must be an oar.nn.Layer, got {type(model).__name__}")
    if sort_by not in SORT_KEYS:
        raise ArgumentError(f"compare_quantized: sort_by must be one of {', '.join(SORT_KEYS)}, got {sort_by!r}")
    names = _select(float_model, quantized_model, layers)
    batches = inputs if isinstance(inputs, list) else [inputs]
    if not batches:
        raise ArgumentError("compare_quantized: inputs is an empty list; give a batch or a list of batches")
    float_layers = dict(float_model.named_sublayers())
    quantized_layers = dict(quantized_model.named_sublayers())
    float_calls: dict[str, list] = {name: [] for name in names}
    quantized_calls: dict[str, list] = {name: [] for name in names}

    def recorder(store: list, keep_inputs: bool):
        def hook(layer, layer_inputs, outputs):
            store.append((layer_inputs if keep_inputs else None, outputs))
        return hook

    modes = [(layer, layer.training) for m in (float_model, quantized_model) for layer in m.sublayers(include_self=True)]
    handles = []
    try:
        for name in names:
            handles.append(float_layers[name].register_forward_post_hook(recorder(float_calls[name], True)))
            handles.append(quantized_layers[name].register_forward_post_hook(recorder(quantized_calls[name], False)))
        float_model.eval()
        quantized_model.eval()
        with oar.no_grad():
            for batch in batches:
                run_batch(float_model, batch)
                run_batch(quantized_model, batch)
            for handle in handles:
                handle.remove()
            handles = []
            rows = [_row(name, float_layers[name], quantized_layers[name], float_calls[name], quantized_calls[name])
                    for name in names]
    finally:
        for handle in handles:
            handle.remove()
        for layer, training in modes:
            object.__setattr__(layer, "training", training)
    rows = [row for row in rows if row is not None]
    sign = 1.0 if sort_by == "cosine" else -1.0
    rows.sort(key=lambda row: sign * getattr(row, sort_by))
    if print_table:
        print(format_diff_table(rows))
    if save_json is not None:
        save_diff_report(rows, save_json)
    return rows


def _row(name: str, float_layer: Layer, quantized_layer: Layer, float_calls: list, quantized_calls: list):
    if not float_calls:
        return None  # not run by this input (a branch not taken)
    if len(float_calls) != len(quantized_calls):
        raise ArgumentError(f"compare_quantized: layer {name!r} ran {len(float_calls)} time(s) in the float model "
                            f"and {len(quantized_calls)} in the quantized one; the two models do not correspond")
    a = [_flatten(out) for _, out in float_calls]
    if any(v is None for v in a):
        return None  # no float tensor output to compare
    b = [_flatten(out) for _, out in quantized_calls]
    local = [_flatten(quantized_layer(*layer_inputs)) for layer_inputs, _ in float_calls]
    for got in (b, local):
        if any(v is None or v.shape != ref.shape for v, ref in zip(got, a)):
            raise ArgumentError(f"compare_quantized: layer {name!r} ({type(float_layer).__name__} / "
                                f"{type(quantized_layer).__name__}) gives outputs of different sizes in the two "
                                "models; they do not correspond")
    a, b, local = np.concatenate(a), np.concatenate(b), np.concatenate(local)
    cosine, max_abs, relative = output_diff(a, b)
    return LayerDiff(name, type(float_layer).__name__, type(quantized_layer).__name__, _shape(float_calls[0][1]),
                     cosine, max_abs, relative, output_diff(a, local)[2])


def format_diff_table(rows: list[LayerDiff]) -> str:
    """The table ``compare_quantized`` prints, in the rows' order."""
    table = [("layer", "float", "quantized", "shape", "cosine", "max abs err", "rel err", "local rel err")]
    table += [(r.layer, r.float_type, r.quantized_type, "x".join(map(str, r.shape)), f"{r.cosine:.6f}",
               f"{r.max_abs_error:.4g}", f"{r.relative_error:.4g}", f"{r.local_relative_error:.4g}") for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in table)


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def save_diff_report(rows: list[LayerDiff], path: str | os.PathLike) -> None:
    """Write ``compare_quantized``'s rows as JSON, in their order (a non-finite number as null)."""
    data = {"format": DIFF_FORMAT, "version": DIFF_VERSION, "layers": []}
    for row in rows:
        entry = asdict(row)
        entry["shape"] = list(row.shape)
        for key in ("cosine", "max_abs_error", "relative_error", "local_relative_error"):
            entry[key] = _finite_or_none(entry[key])
        data["layers"].append(entry)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, allow_nan=False)
        f.write("\n")
