"""oar-slim's plugin entry point: its graph pass and the ``slim`` config group of ``oar-run``.

A converted model runs only nn's and core's ops (``quantize_linear``, ``dequantize_linear``,
``linear``, ``conv2d``), so a saved INT8 model needs no oar-slim. The config group is
``oar-run``'s ``slim=ptq|qat|prune``: typed configs (Hydra checks ``slim.activation=kl`` or
``slim.ratio=0.3`` as it composes) of the functions in ``oar.slim.run``. Neither Hydra nor
``oar.slim.run`` is imported here: these are plain dataclasses, and the functions load when
oar-run instantiates them.

>>> from oar.slim._plugin import Activation, PTQConfig
>>> PTQConfig(activation=Activation.kl).activation.value, PTQConfig()._target_
('kl', 'oar.slim.run.ptq')
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from oar.plugins import Lazy, hookimpl


class Activation(str, enum.Enum):
    """PTQ's activation observers: ``AbsmaxObserver``, ``MovingAverageAbsmaxObserver``,
    ``HistObserver``, ``KLObserver``, ``MSEObserver``."""

    abs_max = "abs_max"
    moving_average = "moving_average"
    hist = "hist"
    kl = "kl"
    mse = "mse"


class Weight(str, enum.Enum):
    """Weight quantization: per output channel or per tensor."""

    channel_wise_abs_max = "channel_wise_abs_max"
    abs_max = "abs_max"


class Criterion(str, enum.Enum):
    """Which filters pruning removes: ``L1NormFilterPruner``, ``L2NormFilterPruner``, ``FPGMFilterPruner``."""

    l1 = "l1"
    l2 = "l2"
    fpgm = "fpgm"


@dataclass
class PTQConfig:
    _target_: str = "oar.slim.run.ptq"
    _partial_: bool = True
    activation: Activation = Activation.abs_max
    weight: Weight = Weight.channel_wise_abs_max
    calibration_batches: int = 4
    batch_size: int = 64


@dataclass
class QATConfig:
    _target_: str = "oar.slim.run.qat"
    _partial_: bool = True
    weight: Weight = Weight.channel_wise_abs_max
    moving_rate: float = 0.9
    epochs: int = 1
    learning_rate: float = 1e-4
    batch_size: int = 64
    max_steps: int | None = None


@dataclass
class PruneConfig:
    _target_: str = "oar.slim.run.prune"
    _partial_: bool = True
    criterion: Criterion = Criterion.l1
    ratio: float = 0.5
    finetune_epochs: int = 1
    learning_rate: float = 1e-3
    batch_size: int = 64
    max_steps: int | None = None


@hookimpl
def oar_register_config_groups(config_groups):
    # oar-run slim=...: after training, oar-run calls the option as slim(model=, train_data=,
    # eval_data=), evaluates and exports the network it returns, and prints float vs compressed.
    config_groups.register("slim/ptq", PTQConfig())
    config_groups.register("slim/qat", QATConfig())
    config_groups.register("slim/prune", PruneConfig())


@hookimpl
def oar_register_passes(passes):
    # Lazy: the pass (and the static graph it needs) loads when a program is optimized.
    passes.register("quantized_ops", Lazy("oar.slim.passes:quantized_ops"))
