"""The ``slim`` options of ``oar-run``: compress a trained model after training.

``oar-run slim=ptq|qat|prune`` calls one of these as ``fn(model=, train_data=, eval_data=)`` with
the option's fields as keywords (``oar.slim._plugin`` registers them); each works without oar-run
too. ``model`` is the trained ``oar.Model`` (or its network); the model is left as it is, and
what comes back is a compressed copy of its network, in eval mode, which oar-run evaluates on
``eval_data``, exports and compares with the float model. The data are ``oar.io.Dataset`` s of
``(image, label)`` samples; calibration and fine-tuning read ``train_data`` only.

- ``ptq``: post-training quantization (``oar.quantization.PTQ``): observers, a few calibration
  batches, convert to int8 weights and QDQ activations.
- ``qat``: quantization-aware fine-tuning of the trained model (``oar.quantization.QAT``) with
  ``oar.Model.fit``, then convert.
- ``prune``: filter pruning of every conv (``oar.slim.prune``), then fine-tuning with ``oar.Model.fit``.

>>> import oar
>>> from oar.slim.run import ptq
>>> data = oar.io.TensorDataset([oar.randn([32, 8]), oar.randint(0, 2, [32, 1])])
>>> int8 = ptq(oar.nn.Sequential(oar.nn.Linear(8, 2)), data, calibration_batches=2, batch_size=16)
>>> int8[0].weight.dtype.name, int8.training
('int8', False)
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

import numpy as np

import oar
from oar.errors import ArgumentError
from oar.io import DataLoader
from oar.nn import Layer
from oar.quantization import PTQ, QAT, QuantConfig
from oar.quantization.observers import (
    AbsMaxChannelWiseWeightObserver,
    AbsmaxObserver,
    HistObserver,
    KLObserver,
    MovingAverageAbsmaxObserver,
    MSEObserver,
)
from oar.quantization.quanters import FakeQuanterChannelWiseAbsMaxObserver, FakeQuanterWithAbsMaxObserver
from oar.slim.prune import FPGMFilterPruner, L1NormFilterPruner, L2NormFilterPruner, PruningError

# PTQ's activation observers and weight observers, by the names the configs use.
ACTIVATIONS = {"abs_max": AbsmaxObserver, "moving_average": MovingAverageAbsmaxObserver, "hist": HistObserver,
               "kl": KLObserver, "mse": MSEObserver}
WEIGHTS = {"channel_wise_abs_max": AbsMaxChannelWiseWeightObserver, "abs_max": AbsmaxObserver}
# QAT's weight quanters: per output channel, or one moving-average abs-max per tensor (Paddle's QAT example).
QAT_WEIGHTS = {"channel_wise_abs_max": lambda moving_rate: FakeQuanterChannelWiseAbsMaxObserver(),
               "abs_max": lambda moving_rate: FakeQuanterWithAbsMaxObserver(moving_rate=moving_rate)}
PRUNERS = {"l1": L1NormFilterPruner, "l2": L2NormFilterPruner, "fpgm": FPGMFilterPruner}


def _pick(where: str, key: str, value, options: Mapping):
    value = getattr(value, "value", value)  # an Enum member from the typed config, or its string
    if value not in options:
        raise ArgumentError(f"{where}: {key}={value!r} is not one of {', '.join(map(repr, options))}")
    return options[value]


def _network(where: str, model) -> Layer:
    network = getattr(model, "network", model)  # an oar.Model or its network
    if not isinstance(network, Layer):
        raise ArgumentError(f"{where}: model must be an oar.Model or an oar.nn.Layer, got {type(model).__name__}")
    return network


def _fine_tune(network: Layer, train_data, *, epochs: int, learning_rate: float, batch_size: int,
               max_steps: int | None) -> None:
    # The loss oar-run trains with: a classifier's cross-entropy.
    network.train()
    trainer = oar.Model(network)
    trainer.prepare(oar.optimizer.Adam(parameters=network.parameters(), learning_rate=learning_rate),
                    oar.nn.CrossEntropyLoss())
    trainer.fit(train_data, batch_size=batch_size, epochs=epochs, verbose=0, num_iters=max_steps)
    network.eval()


def ptq(model, train_data, eval_data=None, *, activation: str = "abs_max", weight: str = "channel_wise_abs_max",
        calibration_batches: int = 4, batch_size: int = 64) -> Layer:
    """Post-training quantization of the trained model: ``activation`` observers
    (``"abs_max" | "moving_average" | "hist" | "kl" | "mse"``) and ``weight`` observers
    (``"channel_wise_abs_max" | "abs_max"``) watch ``calibration_batches`` shuffled batches of
    ``batch_size`` training samples; the result has int8 weights (see module example)."""
    where = "oar.slim.run.ptq"
    config = QuantConfig(activation=_pick(where, "activation", activation, ACTIVATIONS)(),
                         weight=_pick(where, "weight", weight, WEIGHTS)())
    if calibration_batches < 1:
        raise ArgumentError(f"{where}: calibration_batches must be at least 1, got {calibration_batches!r}")
    quantizer = PTQ(config)
    observed = quantizer.quantize(_network(where, model))  # a copy in eval mode
    with oar.no_grad():
        for step, (x, *_) in enumerate(DataLoader(train_data, batch_size=batch_size, shuffle=True)):
            if step == calibration_batches:
                break
            observed(x)
    return quantizer.convert(observed, inplace=True)


def qat(model, train_data, eval_data=None, *, weight: str = "channel_wise_abs_max", moving_rate: float = 0.9,
        epochs: int = 1, learning_rate: float = 1e-4, batch_size: int = 64, max_steps: int | None = None) -> Layer:
    """Quantization-aware fine-tuning of the trained model, then convert to int8: activations get
    ``FakeQuanterWithAbsMaxObserver(moving_rate)``, weights per-channel fake quanters
    (``"channel_wise_abs_max"``) or per-tensor ones (``"abs_max"``); Adam at ``learning_rate``
    for ``epochs`` over ``train_data`` (at most ``max_steps`` batches), through ``oar.Model.fit``.

    >>> import oar
    >>> from oar.slim.run import qat
    >>> data = oar.io.TensorDataset([oar.randn([32, 8]), oar.randint(0, 2, [32, 1])])
    >>> qat(oar.nn.Sequential(oar.nn.Linear(8, 2)), data, batch_size=16)[0].weight.dtype.name
    'int8'
    """
    where = "oar.slim.run.qat"
    config = QuantConfig(activation=FakeQuanterWithAbsMaxObserver(moving_rate=moving_rate),
                         weight=_pick(where, "weight", weight, QAT_WEIGHTS)(moving_rate))
    network = copy.deepcopy(_network(where, model))
    network.train()
    quantizer = QAT(config)
    quantizer.quantize(network, inplace=True)
    _fine_tune(network, train_data, epochs=epochs, learning_rate=learning_rate, batch_size=batch_size,
               max_steps=max_steps)
    return quantizer.convert(network, inplace=True)


def prune(model, train_data, eval_data=None, *, criterion: str = "l1", ratio: float = 0.5, finetune_epochs: int = 1,
          learning_rate: float = 1e-3, batch_size: int = 64, max_steps: int | None = None) -> Layer:
    """Filter pruning: every conv loses ``ratio`` of its filters by ``criterion``
    (``"l1" | "l2" | "fpgm"``: ``L1NormFilterPruner``, ``L2NormFilterPruner``,
    ``FPGMFilterPruner``), with what depends on them; then Adam at ``learning_rate`` for
    ``finetune_epochs`` over ``train_data`` (at most ``max_steps`` batches). A conv whose channels
    reach the model's output is left whole (with a warning); a model with no prunable conv is refused.

    >>> import oar
    >>> from oar.slim.run import prune
    >>> net = oar.nn.Sequential(oar.nn.Conv2D(1, 8, 3), oar.nn.ReLU(), oar.nn.Flatten(), oar.nn.Linear(8 * 4 * 4, 2))
    >>> data = oar.io.TensorDataset([oar.randn([32, 1, 6, 6]), oar.randint(0, 2, [32, 1])])
    >>> pruned = prune(net, data, ratio=0.25, batch_size=16)
    >>> pruned[0].weight.shape, pruned[3].weight.shape, net[0].weight.shape
    ([6, 1, 3, 3], [96, 2], [8, 1, 3, 3])
    """
    where = "oar.slim.run.prune"
    pruner_class = _pick(where, "criterion", criterion, PRUNERS)
    if not 0 < ratio < 1:
        raise ArgumentError(f"{where}: ratio must be between 0 and 1 (the fraction of filters removed), got {ratio!r}")
    network = copy.deepcopy(_network(where, model))
    input_shape = [1, *np.shape(train_data[0][0])]
    pruner = pruner_class(network, input_shape)
    pruner.prune_vars(float(ratio), axis=0)
    if not pruner.status():
        reasons = "; ".join(pruner.skipped.values()) or "it has no conv"
        raise PruningError(f"{where}: nothing to prune in {type(network).__name__} (input {input_shape}): filter "
                           f"pruning removes conv output channels, and {reasons}")
    _fine_tune(network, train_data, epochs=finetune_epochs, learning_rate=learning_rate, batch_size=batch_size,
               max_steps=max_steps)
    return network
