"""The configs of oar-run, composed with Hydra's compose API as oar-run composes them."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import re
import types

import pytest
from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import ConfigCompositionException
from hydra.utils import instantiate
from oar_hydra import ConfigValueError, MissingPackageError, check_overrides, register_configs, validate
from oar_hydra.data import DataSplits
from oar_hydra.schema import group_options
from omegaconf import OmegaConf

import oar
import oar.plugins

OWN_GROUPS = {
    "model": ["lenet", "mlp", "resnet"],
    "data": ["cifar10", "digits", "fashion_mnist", "mnist"],
    "optimizer": ["adam", "adamw", "momentum", "sgd"],
    "lr_scheduler": ["constant", "cosine", "step"],
    "trainer": ["default"],
}


@pytest.fixture
def composed():
    """``composed(*overrides)``: oar-run's config, composed by Hydra with the current registrations."""
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_module(config_module="oar_hydra.conf", version_base="1.3"):
        yield lambda *overrides: compose(config_name="config", overrides=list(overrides))
    GlobalHydra.instance().clear()


def test_groups_have_their_options():
    register_configs()
    for group, options in OWN_GROUPS.items():
        assert group_options(group) == options
    assert "jit" in group_options("export")  # contributed by oar-core through the config-group hook
    assert oar.plugins.registries().config_groups.source_of("export/jit") == "oar.core"


def test_defaults_are_the_main_job(composed):
    cfg = composed()
    validate(cfg)
    assert cfg.model._target_ == "oar.vision.models.LeNet"
    assert cfg.data._target_ == "oar_hydra.data.digits" and cfg.data.augment
    assert (cfg.optimizer._target_, cfg.optimizer.lr) == ("oar.optimizer.Adam", 0.003)
    assert cfg.lr_scheduler._target_ == "oar_hydra.schedules.cosine"
    assert (cfg.trainer.epochs, cfg.trainer.batch_size, cfg.trainer.seed) == (15, 32, 0)
    assert cfg.trainer.profile is False and list(cfg.trainer.profile_steps) == [2, 7]  # off unless asked for
    assert cfg.export._target_ == "oar.jit.save"
    assert cfg.amp is None and cfg.strategy is None and cfg.slim is None and cfg.serve is None


@pytest.mark.parametrize(("group", "option"), [(g, o) for g, options in OWN_GROUPS.items() for o in options])
def test_every_option_composes_and_builds(composed, group, option):
    cfg = composed(f"{group}={option}")
    validate(cfg)
    node = cfg[group]
    if group == "model":
        network = instantiate(node)
        assert isinstance(network, oar.nn.Layer)
    elif group == "optimizer":
        options = OmegaConf.to_container(node)
        lr = options.pop("lr")
        optimizer = instantiate(options, learning_rate=lr, parameters=oar.nn.Linear(2, 2).parameters())
        assert isinstance(optimizer, oar.optimizer.Optimizer) and optimizer.get_lr() == pytest.approx(lr)
    elif group == "lr_scheduler":
        if node._target_ is None:
            assert option == "constant"
        else:
            schedule = instantiate(node, learning_rate=0.1, epochs=4, steps_per_epoch=10)
            assert isinstance(schedule, oar.optimizer.lr.LRScheduler) and schedule() == pytest.approx(0.1)
    elif group == "data":
        if option == "digits":  # the others download; composing them is enough here
            data = instantiate(node, limit=8)
            assert isinstance(data, DataSplits) and (len(data.train), data.input_shape) == (8, (1, 28, 28))
        else:
            assert node.download is True and node._target_ == f"oar_hydra.data.{option}"
    else:
        assert cfg.trainer.batch_size == 32


def test_export_options_compose(composed):
    exporter = instantiate(composed("export=jit").export)
    assert exporter.func is oar.jit.save  # functools.partial(oar.jit.save): export(layer, prefix, input_spec=...)
    none = composed("export=none").export
    assert not none.get("_target_")  # oar-run exports nothing


@pytest.mark.parametrize(("override", "message"), [
    ("trainer.batch_size=-1", "trainer.batch_size must be a positive number, got -1"),
    ("trainer.epochs=0", "trainer.epochs must be a positive number, got 0"),
    ("trainer.num_workers=-2", "trainer.num_workers must be a non-negative number"),
    ("optimizer.lr=-0.1", "optimizer.lr must be a positive number"),
    ("data.limit=0", "data.limit must be a positive number or null"),
    ("trainer.min_accuracy=97", "trainer.min_accuracy must be between 0 and 1"),
    ("lr_scheduler=step lr_scheduler.step_epochs=0", "lr_scheduler.step_epochs must be a positive number"),
    ("trainer.profile_steps=[5,2]", "trainer.profile_steps must be [start, end] with 0 <= start < end"),
    ("trainer.profile_steps=[2]", "trainer.profile_steps must be [start, end]"),
])
def test_bad_values_are_named(composed, override, message):
    cfg = composed(*override.split())
    with pytest.raises(ConfigValueError, match=re.escape(message)):
        validate(cfg)


@pytest.mark.parametrize(("override", "message"), [
    ("trainer.batch_size=abc", "Value 'abc' of type 'str' could not be converted to Integer"),
    ("model=nope", "Could not find 'model/nope'"),
    ("trainer.epoch=3", "Key 'epoch' not in 'TrainerConfig'"),
    ("trainer.profile=maybe", "Value 'maybe' is not a valid bool"),
])
def test_wrong_types_and_unknown_options_fail_while_composing(composed, override, message):
    with pytest.raises(ConfigCompositionException) as info:
        composed(override)
    assert message in str(info.value) + str(info.value.__cause__)


def test_missing_packages_are_named():
    register_configs()
    if not group_options("amp"):  # this session has no oar-amp
        with pytest.raises(MissingPackageError, match="comes with oar-amp, which is not installed.*pip install oar-amp"):
            check_overrides(["amp=fp16"])
    else:  # oar-amp registers amp=bf16_o1|bf16_o2|fp16_o1|fp16_o2
        check_overrides(["amp=bf16_o1", "amp=fp16_o1,fp16_o2"])
    if not group_options("strategy"):  # this session has no oar-distributed
        with pytest.raises(MissingPackageError, match="pip install oar-distributed"):
            check_overrides(["trainer.epochs=2", "strategy=ddp"])
    else:  # oar-distributed registers strategy=dp
        check_overrides(["trainer.epochs=2", "strategy=dp"])
    if not group_options("slim"):  # this session has no oar-slim
        with pytest.raises(MissingPackageError, match="pip install oar-slim"):
            check_overrides(["+slim=ptq"])
    else:  # oar-slim registers slim=ptq|qat|prune
        check_overrides(["slim=ptq", "slim=qat,prune"])
    if not group_options("serve"):  # this session has no oar-serving
        with pytest.raises(MissingPackageError, match="pip install oar-serving"):
            check_overrides(["serve=http,grpc"])
    else:  # oar-serving is installed: Hydra itself names an unknown option, listing the installed ones
        check_overrides(["serve=http"])
    if "onnx" not in group_options("export"):  # this session has no oar-onnx
        with pytest.raises(MissingPackageError, match=r"'onnx' comes with oar-onnx.*installed export options: jit, none"):
            check_overrides(["export=onnx"])
    else:
        check_overrides(["export=onnx", "export.opset_version=13"])
    check_overrides(["export=jit", "export=none", "model=mlp", "trainer.batch_size=8"])  # all installed


def _distribution_installed(name: str) -> bool:
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@dataclasses.dataclass
class Halve:
    """A structured config node, as a third-party plugin might register one."""

    _target_: str = "builtins.dict"
    factor: float = 0.5


def test_a_plugin_contributes_a_group(composed):
    plugin = types.SimpleNamespace()

    @oar.plugins.hookimpl
    def oar_register_config_groups(config_groups):
        config_groups.register("slim/halve", Halve())
        config_groups.register("amp/bf16", {"_target_": "builtins.dict", "level": "O1", "dtype": "bfloat16"})

    plugin.oar_register_config_groups = oar_register_config_groups
    oar.plugins.register(plugin, name="config_group_test_plugin")
    try:
        register_configs()
        assert "halve" in group_options("slim") and "bf16" in group_options("amp")  # oar-slim's, oar-amp's too
        check_overrides(["slim=halve", "amp=bf16"])  # now installed: no error
        if not _distribution_installed("oar-amp"):  # installed, Hydra itself names the unknown option
            with pytest.raises(MissingPackageError, match="installed amp options: bf16"):
                check_overrides(["amp=fp16"])
        cfg = composed("slim=halve", "amp=bf16", "slim.factor=0.25")
        assert instantiate(cfg.slim) == {"factor": 0.25}
        assert instantiate(cfg.amp) == {"level": "O1", "dtype": "bfloat16"}
        with pytest.raises(ConfigCompositionException):
            composed("slim=halve", "slim.factor=half")  # the dataclass types the option
    finally:
        oar.plugins.unregister("config_group_test_plugin")
        from hydra.core.config_store import ConfigStore

        ConfigStore.instance().repo.pop("slim", None)
        ConfigStore.instance().repo.pop("amp", None)
