"""The structured configs of ``oar-run`` and their registration in Hydra's ConfigStore.

oar-hydra's own groups (``model``, ``data``, ``optimizer``, ``lr_scheduler``, ``trainer``) are
dataclasses here; the groups that other packages contribute (``amp``, ``strategy``, ``slim``,
``export``, ``serve``, or more options of any group) come from oar's config-group registry, which
plugins fill through the ``oar_register_config_groups`` hook. ``register_configs`` stores both.

Hydra checks types while it composes (``trainer.batch_size=abc`` fails there); ``validate``
checks the values (a negative batch size, a learning rate of 0) before any work starts.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig

# The groups that other packages contribute, and the package that provides each (or, for a
# group with options from several packages, the package of each option).
CONTRIBUTED_GROUPS = ("amp", "strategy", "slim", "export", "serve")
PROVIDERS: dict[str, str | dict[str, str]] = {
    "amp": "oar-amp",
    "strategy": "oar-distributed",
    "slim": "oar-slim",
    "serve": "oar-serving",
    "export": {"jit": "oar-core", "onnx": "oar-onnx"},
}


class ConfigValueError(ValueError):
    """A config value that composes (its type is right) but that oar-run cannot run with."""


# -- models: plain ``_target_`` nodes, so that any Layer class and its own arguments fit ---------
MODELS: dict[str, dict[str, Any]] = {
    "lenet": {"_target_": "oar.vision.models.LeNet", "num_classes": 10},
    "mlp": {"_target_": "oar.vision.models.MLP", "input_size": 784, "hidden_sizes": [256, 128], "num_classes": 10},
    # A ResNet-18 for 3-channel images (data=cifar10); too slow on the CPU for the digits demo.
    "resnet": {"_target_": "oar.vision.models.resnet18", "num_classes": 10},
}


# -- data ------------------------------------------------------------------------------------------
@dataclass
class DataConfig:
    """A function that returns the training and evaluation data (``oar_hydra.data.DataSplits``)."""

    _target_: str = "oar_hydra.data.digits"
    augment: bool = True  # random rotations and shifts of the training images
    limit: int | None = None  # use only the first `limit` images of each split (quick runs)


@dataclass
class DownloadedDataConfig(DataConfig):
    download: bool = True  # fetch the files into $OAR_DATA_HOME (default ~/.cache/oar/dataset) when absent


DATA = {
    "digits": DataConfig(),
    "mnist": DownloadedDataConfig(_target_="oar_hydra.data.mnist"),
    "fashion_mnist": DownloadedDataConfig(_target_="oar_hydra.data.fashion_mnist"),
    "cifar10": DownloadedDataConfig(_target_="oar_hydra.data.cifar10"),
}


# -- optimizers: ``lr`` becomes ``learning_rate`` (or the scheduler) when the optimizer is built ----
@dataclass
class SGDConfig:
    _target_: str = "oar.optimizer.SGD"
    lr: float = 0.01
    weight_decay: float | None = None


@dataclass
class MomentumConfig(SGDConfig):
    _target_: str = "oar.optimizer.Momentum"
    momentum: float = 0.9
    use_nesterov: bool = False


@dataclass
class AdamConfig:
    _target_: str = "oar.optimizer.Adam"
    lr: float = 0.003
    beta1: float = 0.9
    beta2: float = 0.999
    epsilon: float = 1e-8
    weight_decay: float | None = None


@dataclass
class AdamWConfig(AdamConfig):
    _target_: str = "oar.optimizer.AdamW"
    weight_decay: float | None = 0.01


OPTIMIZERS = {"sgd": SGDConfig(), "momentum": MomentumConfig(), "adam": AdamConfig(), "adamw": AdamWConfig()}


# -- learning-rate schedules: stepped after every batch ------------------------------------------
@dataclass
class StepScheduleConfig:
    """The learning rate times ``gamma`` every ``step_epochs`` epochs."""

    _target_: str = "oar_hydra.schedules.step"
    step_epochs: int = 5
    gamma: float = 0.1


@dataclass
class CosineScheduleConfig:
    """Cosine annealing from ``optimizer.lr`` to ``eta_min`` over the whole run."""

    _target_: str = "oar_hydra.schedules.cosine"
    eta_min: float = 0.0


@dataclass
class ConstantScheduleConfig:
    """No schedule: ``optimizer.lr`` throughout."""

    _target_: str | None = None


LR_SCHEDULERS = {"constant": ConstantScheduleConfig(), "step": StepScheduleConfig(), "cosine": CosineScheduleConfig()}


# -- the trainer ---------------------------------------------------------------------------------
@dataclass
class TrainerConfig:
    epochs: int = 15
    batch_size: int = 32
    eval_batch_size: int = 128
    log_freq: int = 10  # batches between progress lines (when stdout is not a terminal)
    eval_freq: int = 1  # epochs between evaluations
    save_freq: int = 1  # epochs between checkpoints (the last epoch is always saved)
    seed: int = 0
    num_workers: int = 0
    device: str = "cpu"
    verbose: int = 1  # 0 silent, 1 a line per epoch (a live bar on a terminal), 2 a line every log_freq batches
    max_steps: int | None = None  # stop after this many batches in all (quick runs)
    resume: str | None = None  # a run directory to continue from its last checkpoint
    min_accuracy: float | None = None  # exit with status 1 when the final test accuracy is lower
    profile: bool = False  # profile a few training steps with oar.profiler; the trace and summary go to <run>/profile/
    # [start, end): the steps of the first epoch recorded (Paddle's scheduler pair); step 0 pays the first calls
    profile_steps: list[int] = field(default_factory=lambda: [2, 7])


@dataclass
class RunConfig:
    """The whole config of one run; ``conf/config.yaml`` chooses an option of every group."""

    model: Any = MISSING
    data: DataConfig = MISSING
    optimizer: Any = MISSING
    lr_scheduler: Any = MISSING
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    # Contributed by other packages; None when not chosen (or not installed).
    amp: Any = None
    strategy: Any = None
    slim: Any = None
    export: Any = None
    serve: Any = None


def register_configs() -> ConfigStore:
    """Store oar-run's schema, its own options and every option registered through
    ``oar_register_config_groups`` in Hydra's ConfigStore (idempotent: storing again replaces).

    >>> from oar_hydra.schema import register_configs
    >>> "lenet.yaml" in register_configs().list("model")
    True
    """
    import oar.plugins

    cs = ConfigStore.instance()
    cs.store(name="oar_run_schema", node=RunConfig, provider="oar-hydra")
    cs.store(group="trainer", name="default", node=TrainerConfig, provider="oar-hydra")
    for group, options in (("model", MODELS), ("data", DATA), ("optimizer", OPTIMIZERS),
                           ("lr_scheduler", LR_SCHEDULERS)):
        for name, node in options.items():
            cs.store(group=group, name=name, node=node, provider="oar-hydra")
    cs.store(group="export", name="none", node={}, provider="oar-hydra")  # export=none: no exported model
    registry = oar.plugins.registries().config_groups
    for key, node in registry.items():
        group, _, name = key.rpartition("/")
        if not group or not name:
            warnings.warn(f"oar-hydra: config group entry {key!r} (from plugin {registry.source_of(key)!r}) is not "
                          f"'<group>/<option>'; skipped", stacklevel=2)
            continue
        if dataclasses.is_dataclass(node) or isinstance(node, (dict, DictConfig)):
            cs.store(group=group, name=name, node=node, provider=registry.source_of(key))
        else:
            warnings.warn(f"oar-hydra: config group entry {key!r} (from plugin {registry.source_of(key)!r}) is a "
                          f"{type(node).__name__}, not a dataclass or a dict with a _target_; skipped", stacklevel=2)
    return cs


def group_options(group: str) -> list[str]:
    """The options of ``group`` in the ConfigStore (after ``register_configs``), sorted."""
    try:
        names = ConfigStore.instance().list(group)
    except OSError:  # Hydra's answer for a group nobody stored
        return []
    return sorted(n.removesuffix(".yaml") for n in names)


def provider_of(group: str, option: str) -> str | None:
    """The package that contributes ``group=option`` when it is installed, if oar knows it."""
    provider = PROVIDERS.get(group)
    return provider.get(option) if isinstance(provider, dict) else provider


def _check_positive(cfg: DictConfig, key: str, *, allow_none: bool = False, allow_zero: bool = False) -> None:
    section, _, name = key.partition(".")
    value = cfg[section][name]
    if value is None and allow_none:
        return
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0 or (value == 0 and not allow_zero):
        bound = "a non-negative" if allow_zero else "a positive"
        raise ConfigValueError(f"{key} must be {bound} number{' or null' if allow_none else ''}, got {value!r}")


def validate(cfg: DictConfig) -> None:
    """Check the values of a composed config; raises ``ConfigValueError`` naming the key.

    Hydra has already checked the types; this checks what a type cannot say.
    """
    for key in ("trainer.epochs", "trainer.batch_size", "trainer.eval_batch_size", "trainer.log_freq",
                "trainer.eval_freq", "trainer.save_freq"):
        _check_positive(cfg, key)
    _check_positive(cfg, "trainer.num_workers", allow_zero=True)
    _check_positive(cfg, "trainer.seed", allow_zero=True)
    _check_positive(cfg, "trainer.max_steps", allow_none=True)
    _check_positive(cfg, "data.limit", allow_none=True)
    if cfg.trainer.verbose not in (0, 1, 2, 3):
        raise ConfigValueError(f"trainer.verbose must be 0, 1, 2 or 3, got {cfg.trainer.verbose!r}")
    steps = cfg.trainer.get("profile_steps")
    if steps is not None and (len(steps) != 2 or steps[0] < 0 or steps[1] <= steps[0]):
        raise ConfigValueError(f"trainer.profile_steps must be [start, end] with 0 <= start < end (the steps "
                               f"recorded: start to end - 1), got {list(steps)!r}")
    accuracy = cfg.trainer.min_accuracy
    if accuracy is not None and not 0 <= accuracy <= 1:
        raise ConfigValueError(f"trainer.min_accuracy must be between 0 and 1 (or null), got {accuracy!r}")
    for section in ("model", "optimizer"):
        if not isinstance(cfg[section], DictConfig) or not cfg[section].get("_target_"):
            raise ConfigValueError(f"{section} must be a config node with a _target_ (the class to build), "
                                   f"got {cfg[section]!r}")
    _check_positive(cfg, "optimizer.lr")
    if cfg.optimizer.get("weight_decay") is not None:
        _check_positive(cfg, "optimizer.weight_decay", allow_zero=True)
    schedule = cfg.lr_scheduler
    if schedule is not None and schedule.get("step_epochs") is not None:
        _check_positive(cfg, "lr_scheduler.step_epochs")
