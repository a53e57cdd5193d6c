"""Quantization sensitivity: which layers cost accuracy when quantized, and a mixed-precision
config that keeps just enough of them in float to meet an accuracy budget.

``quant_sensitivity`` is PaddleSlim's ``AnalysisPTQ.metric_error_analyse`` for an eager model:
for each quantizable layer (the layers ``PTQ(config).quantize`` would replace) it quantizes that
layer alone with PTQ, calibrates on the user's batches, converts, and evaluates with the user's
``eval_func(model) -> float`` (higher is better). A layer's *drop* is the float baseline minus that
metric. ``mixed_precision_config`` is ``AnalysisPTQ.get_target_quant_model``: it keeps the ``k``
most sensitive layers in float, for the smallest ``k`` whose model, evaluated, meets the budget.

::

    float model ──(one layer quantized, PTQ + calibration + convert)──> eval_func ──> drop
    table sorted by drop ──> k = 0, 1, 2, ... float layers ──> first k with drop <= budget

A table saves to JSON (``QuantSensitivity.save``, ``load_sensitivities``), never pickle (PaddleSlim
writes pickles). Layers are named by their path in the model (``"fc.0"``), which a converted model
keeps and ``QuantConfig.add_name_config`` takes, so a saved table applies to a fresh instance of
the same architecture.
"""

from __future__ import annotations

import copy
import json
import math
import os
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field

import numpy as np

import oar
from oar.errors import ArgumentError, SerializationError
from oar.nn import Layer
from oar.ops import Tensor
from oar.quantization import PTQ, ConvertibleQuantedLayer, QuantConfig, QuantConfigError
from oar.quantization.observers import AbsMaxChannelWiseWeightObserver, AbsmaxObserver

SENSITIVITY_FORMAT = "oar.slim.quant_sensitivity"
SENSITIVITY_VERSION = 1


def default_quant_config() -> QuantConfig:
    """The config docs/slim.md recommends: abs-max activations, per-channel abs-max weights (int8)."""
    return QuantConfig(activation=AbsmaxObserver(), weight=AbsMaxChannelWiseWeightObserver())


def run_batch(model: Layer, batch):
    """``model(batch)``: a Tensor or numpy array is the one input, a tuple or list the positional
    inputs, a dict the keyword inputs."""
    if isinstance(batch, np.ndarray):
        return model(oar.to_tensor(batch))
    if isinstance(batch, (tuple, list)):
        return model(*(oar.to_tensor(b) if isinstance(b, np.ndarray) else b for b in batch))
    if isinstance(batch, dict):
        return model(**{k: oar.to_tensor(v) if isinstance(v, np.ndarray) else v for k, v in batch.items()})
    return model(batch)


def _check_model(where: str, model) -> None:
    if not isinstance(model, Layer):
        raise ArgumentError(f"{where}: expected an oar.nn.Layer, got {type(model).__name__}")


def _calibration_batches(where: str, calib_data) -> list:
    if isinstance(calib_data, (Tensor, np.ndarray)):
        raise ArgumentError(f"{where}: calib_data is an iterable of input batches; wrap one batch in a list "
                            "([x]), not a bare tensor (it would be iterated row by row)")
    # Materialized once, so every layer calibrates on the same batches (a DataLoader that shuffles
    # or a generator would give each layer different or no data).
    batches = list(calib_data)
    if not batches:
        raise ArgumentError(f"{where}: calib_data gave no batches; PTQ needs calibration data")
    return batches


def _evaluate(where: str, eval_func: Callable, model: Layer) -> float:
    value = eval_func(model)
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ArgumentError(f"{where}: eval_func must return a number (higher is better), got "
                            f"{type(value).__name__}") from None
    if not math.isfinite(value):
        raise ArgumentError(f"{where}: eval_func returned {value}; it must return a finite number")
    return value


def quantizable_layers(model: Layer, config: QuantConfig | None = None) -> dict[str, str]:
    """The layers ``PTQ(config).quantize(model)`` replaces, ``{path: type name}`` in model order.

    >>> import oar
    >>> from oar.slim.sensitivity import quantizable_layers
    >>> quantizable_layers(oar.nn.Sequential(oar.nn.Linear(4, 8), oar.nn.ReLU(), oar.nn.Linear(8, 2)))
    {'0': 'Linear', '2': 'Linear'}
    """
    _check_model("quantizable_layers", model)
    observed = PTQ(config if config is not None else default_quant_config()).quantize(model)
    originals = dict(model.named_sublayers())
    return {path: type(originals[path]).__name__ for path, layer in observed.named_sublayers()
            if isinstance(layer, ConvertibleQuantedLayer)}


def _check_names(where: str, names: Iterable[str], model: Layer, quantizable: dict[str, str]) -> list[str]:
    names = [names] if isinstance(names, str) else list(names)
    paths = {path for path, _ in model.named_sublayers()}
    for name in names:
        if not isinstance(name, str):
            raise ArgumentError(f"{where}: layer names are paths in the model such as 'fc.0', got {name!r}")
        if name not in paths:
            raise ArgumentError(f"{where}: {type(model).__name__} has no layer {name!r}; its quantizable layers "
                                f"are {', '.join(quantizable) or '(none)'}")
        if name not in quantizable:
            raise ArgumentError(f"{where}: layer {name!r} is not quantized by this config (its type, "
                                f"quantizable_layer_type or skip_quant); its quantizable layers are "
                                f"{', '.join(quantizable) or '(none)'}")
    return names


def _float_config(config: QuantConfig, float_layers: Iterable[str]) -> QuantConfig:
    """A copy of ``config`` that leaves ``float_layers`` in float (a name config without quanters)."""
    out = copy.deepcopy(config)
    for name in float_layers:
        out.add_name_config(name, activation=None, weight=None)
    return out


def _ptq_model(model: Layer, config: QuantConfig, batches: list, float_layers: Iterable[str]) -> Layer:
    """Quantize ``model`` with ``config`` but ``float_layers``, calibrate, convert; checks that the
    float layers did stay float (an ``add_layer_config`` outranks a name config)."""
    float_layers = list(float_layers)
    ptq = PTQ(_float_config(config, float_layers))
    observed = ptq.quantize(model)
    with oar.no_grad():
        for batch in batches:
            run_batch(observed, batch)
    converted = ptq.convert(observed)
    layers = dict(converted.named_sublayers())
    for name in float_layers:
        if isinstance(layers.get(name), ConvertibleQuantedLayer):
            raise QuantConfigError(f"layer {name!r} was quantized although it should stay float: the config's "
                                   "add_layer_config for it outranks a name config; configure it by name instead")
    return converted


@dataclass(frozen=True)
class LayerSensitivity:
    """One row of a sensitivity table: the model with only ``layer`` quantized scored ``metric``,
    ``drop`` below the float baseline."""

    layer: str
    layer_type: str
    metric: float
    drop: float


@dataclass
class QuantSensitivity:
    """What ``quant_sensitivity`` measured: the float ``baseline``, the metric with every layer
    quantized (``quantized``) and one ``LayerSensitivity`` per layer, largest drop first.

    >>> from oar.slim.sensitivity import LayerSensitivity, QuantSensitivity
    >>> table = QuantSensitivity(0.96, 0.65, [LayerSensitivity("fc.0", "Linear", 0.95, 0.01),
    ...                                       LayerSensitivity("features.3", "Conv2D", 0.74, 0.22)])
    >>> table.ranking()
    ['features.3', 'fc.0']
    >>> print(table.table())
    quantization sensitivity: float 0.9600, all 2 layers quantized 0.6500
    layer       type    metric  drop
    features.3  Conv2D  0.7400  0.2200
    fc.0        Linear  0.9500  0.0100
    """

    baseline: float
    quantized: float
    layers: list[LayerSensitivity] = field(default_factory=list)

    def __post_init__(self) -> None:
        # Largest drop first; ties keep the model's order (sorted is stable).
        self.layers = sorted(self.layers, key=lambda row: -row.drop)

    def ranking(self) -> list[str]:
        """Layer paths, most sensitive first."""
        return [row.layer for row in self.layers]

    def drops(self) -> dict[str, float]:
        """``{layer: drop}``, most sensitive first."""
        return {row.layer: row.drop for row in self.layers}

    def table(self) -> str:
        """The table ``quant_sensitivity`` prints."""
        head = (f"quantization sensitivity: float {self.baseline:.4f}, all {len(self.layers)} layers quantized "
                f"{self.quantized:.4f}")
        rows = [("layer", "type", "metric", "drop")]
        rows += [(r.layer, r.layer_type, f"{r.metric:.4f}", f"{r.drop:.4f}") for r in self.layers]
        return head + "\n" + _format_rows(rows)

    def to_dict(self) -> dict:
        return {"format": SENSITIVITY_FORMAT, "version": SENSITIVITY_VERSION, "baseline": self.baseline,
                "quantized": self.quantized, "layers": [asdict(row) for row in self.layers]}

    def save(self, path: str | os.PathLike) -> None:
        """Write the table as JSON (read it back with ``load_sensitivities``)."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, indent=2)
            f.write("\n")

    @classmethod
    def load(cls, path: str | os.PathLike) -> QuantSensitivity:
        """Read a table ``save`` wrote; refuses another file with ``SerializationError``."""
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SerializationError(f"load_sensitivities: {os.fspath(path)!r} is not a JSON sensitivity table "
                                     f"({exc})") from None
        if not isinstance(data, dict) or data.get("format") != SENSITIVITY_FORMAT:
            raise SerializationError(f"load_sensitivities: {os.fspath(path)!r} is not a sensitivity table "
                                     f"written by QuantSensitivity.save (no format {SENSITIVITY_FORMAT!r})")
        if data.get("version", 0) > SENSITIVITY_VERSION:
            raise SerializationError(f"load_sensitivities: {os.fspath(path)!r} has version {data['version']}; "
                                     f"this oar-slim reads up to {SENSITIVITY_VERSION}")
        try:
            rows = [LayerSensitivity(str(r["layer"]), str(r["layer_type"]), float(r["metric"]), float(r["drop"]))
                    for r in data["layers"]]
            return cls(float(data["baseline"]), float(data["quantized"]), rows)
        except (KeyError, TypeError, ValueError) as exc:
            raise SerializationError(f"load_sensitivities: {os.fspath(path)!r} is a truncated or damaged "
                                     f"sensitivity table ({type(exc).__name__}: {exc})") from None


def load_sensitivities(path: str | os.PathLike) -> QuantSensitivity:
    """Read a sensitivity table from the JSON file ``QuantSensitivity.save`` wrote (PaddleSlim's
    name; its files are pickles, these are JSON)."""
    return QuantSensitivity.load(path)


def _format_rows(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def quant_sensitivity(model: Layer, eval_func: Callable[[Layer], float], calib_data: Iterable,
                      config: QuantConfig | None = None, layers: Iterable[str] | None = None,
                      print_table: bool = True) -> QuantSensitivity:
    """How much each quantizable layer, quantized alone with PTQ, costs ``eval_func``.

    For every layer of ``layers`` (default: every layer ``PTQ(config)`` would quantize, named by
    its path, ``"fc.0"``) the model is quantized with ``config`` on that layer only, calibrated
    on ``calib_data`` (an iterable of input batches: a Tensor or array each, or a tuple of
    positional inputs; a labelled DataLoader as ``[x for x, _ in loader]``), converted, and
    scored with ``eval_func(model) -> float`` (higher is better; it gets a model in eval mode).
    ``config`` defaults to int8 abs-max activations and per-channel weights. The float baseline
    and the fully quantized model are scored too. The model itself is left as it was.

    >>> import oar
    >>> from oar.slim.sensitivity import quant_sensitivity
    >>> _ = oar.seed(0)
    >>> model = oar.nn.Sequential(oar.nn.Linear(4, 8), oar.nn.ReLU(), oar.nn.Linear(8, 2))
    >>> x = oar.randn([32, 4])
    >>> reference = model(x).numpy()
    >>> def eval_func(m):  # higher is better: 1 - the squared error to the float outputs
    ...     return 1.0 - float(((m(x).numpy() - reference) ** 2).mean())
    >>> table = quant_sensitivity(model, eval_func, [x], print_table=False)
    >>> sorted(table.ranking()), table.baseline
    (['0', '2'], 1.0)
    >>> all(row.drop >= 0 for row in table.layers)
    True
    """
    where = "quant_sensitivity"
    _check_model(where, model)
    config = config if config is not None else default_quant_config()
    batches = _calibration_batches(where, calib_data)
    quantizable = quantizable_layers(model, config)
    names = list(quantizable) if layers is None else _check_names(where, layers, model, quantizable)
    if not names:
        raise ArgumentError(f"{where}: {type(model).__name__} has no layer this config quantizes")
    baseline = _evaluate(where, eval_func, copy.deepcopy(model).eval())
    quantized = _evaluate(where, eval_func, _ptq_model(model, config, batches, ()))
    rows = []
    for name in names:
        others = [other for other in quantizable if other != name]
        metric = _evaluate(where, eval_func, _ptq_model(model, config, batches, others))
        rows.append(LayerSensitivity(name, quantizable[name], metric, baseline - metric))
    result = QuantSensitivity(baseline, quantized, rows)
    if print_table:
        print(result.table())
    return result


@dataclass
class MixedPrecisionResult:
    """What ``mixed_precision_config`` found: the ``config`` (PTQ with ``float_layers`` kept
    float), the converted ``model`` it gave, its ``metric``, and every ``(k, metric)`` it tried."""

    config: QuantConfig
    float_layers: list[str]
    metric: float
    baseline: float
    budget: float
    model: Layer
    trials: list[tuple[int, float]]

    @property
    def drop(self) -> float:
        return self.baseline - self.metric

    def table(self) -> str:
        """One line per ``k`` tried: the metric and whether it met the budget."""
        rows = [("float layers", "metric", "drop", "meets budget")]
        rows += [(str(k), f"{m:.4f}", f"{self.baseline - m:.4f}", "yes" if self.baseline - m <= self.budget else "no")
                 for k, m in self.trials]
        head = (f"mixed precision: float {self.baseline:.4f}, budget {self.budget:.4f}; kept in float: "
                f"{', '.join(self.float_layers) or '(none)'}")
        return head + "\n" + _format_rows(rows)


def mixed_precision_config(model: Layer, eval_func: Callable[[Layer], float], calib_data: Iterable,
                           budget: float, sensitivities: QuantSensitivity | None = None,
                           config: QuantConfig | None = None, print_table: bool = True) -> MixedPrecisionResult:
    """The PTQ config that keeps the fewest most-sensitive layers in float and loses at most
    ``budget`` of ``eval_func`` (PaddleSlim's ``AnalysisPTQ.get_target_quant_model``).

    ``budget`` is the largest drop from the float baseline accepted, in ``eval_func``'s units
    (0.01: one point of accuracy). With the layers ranked by ``sensitivities`` (computed with
    ``quant_sensitivity`` when None), it tries ``k = 0, 1, 2, ...`` float layers, each model
    quantized, calibrated on ``calib_data``, converted and evaluated, and returns the first that
    meets the budget (``k`` = all layers is the float model, so one always does). The returned
    ``config`` is ``config`` plus ``add_name_config(layer, activation=None, weight=None)`` for each
    float layer; ``result.model`` is its converted model.

    >>> import oar
    >>> from oar.slim.sensitivity import mixed_precision_config
    >>> _ = oar.seed(0)
    >>> model = oar.nn.Sequential(oar.nn.Linear(4, 8), oar.nn.ReLU(), oar.nn.Linear(8, 2))
    >>> x = oar.randn([32, 4])
    >>> reference = model(x).numpy()
    >>> def eval_func(m):
    ...     return 1.0 - float(((m(x).numpy() - reference) ** 2).mean())
    >>> result = mixed_precision_config(model, eval_func, [x], budget=0.0, print_table=False)
    >>> result.float_layers, result.drop  # no loss at all: everything stays float
    (['0', '2'], 0.0)
    >>> type(result.model[0]).__name__
    'Linear'
    """
    where = "mixed_precision_config"
    _check_model(where, model)
    try:
        budget = float(budget)
    except (TypeError, ValueError):
        raise ArgumentError(f"{where}: budget is the largest metric drop accepted, a number >= 0, got "
                            f"{budget!r}") from None
    if not budget >= 0:
        raise ArgumentError(f"{where}: budget is the largest metric drop accepted and must be >= 0, got {budget}")
    config = config if config is not None else default_quant_config()
    batches = _calibration_batches(where, calib_data)
    if sensitivities is None:
        sensitivities = quant_sensitivity(model, eval_func, batches, config=config, print_table=print_table)
    elif not isinstance(sensitivities, QuantSensitivity):
        raise ArgumentError(f"{where}: sensitivities must be a QuantSensitivity (quant_sensitivity or "
                            f"load_sensitivities), got {type(sensitivities).__name__}")
    ranking = _check_names(where, sensitivities.ranking(), model, quantizable_layers(model, config))
    baseline = _evaluate(where, eval_func, copy.deepcopy(model).eval())
    trials = []
    for k in range(len(ranking) + 1):
        float_layers = ranking[:k]
        converted = _ptq_model(model, config, batches, float_layers)
        metric = _evaluate(where, eval_func, converted)
        trials.append((k, metric))
        # A tolerance for the subtraction: a metric equal to the baseline meets a budget of 0.
        if baseline - metric <= budget + 1e-12:
            break
    else:
        raise ArgumentError(f"{where}: even with all {len(ranking)} ranked layers in float the drop is "
                            f"{baseline - metric:.4f} > budget {budget}; the sensitivities rank only some of the "
                            "quantizable layers (compute them with layers=None)")
    result = MixedPrecisionResult(_float_config(config, float_layers), float_layers, metric, baseline, budget,
                                  converted, trials)
    if print_table:
        print(result.table())
    return result
