"""oar-amp's plugin: where an op's declared AMP category differs from Paddle's default lists, the
category Paddle's lists give it (``oar.amp.amp_lists.CATEGORY_OVERRIDES``), through core's hook;
and ``oar-run``'s ``amp`` config group.

The group's options are the levels and dtypes Paddle's users train with -- ``amp=bf16_o1``,
``bf16_o2``, ``fp16_o1``, ``fp16_o2`` (float16 with a GradScaler) -- each a typed config (Hydra
checks ``amp.level=O3`` as it composes) that instantiates to ``oar.Model.prepare``'s
``amp_configs`` dict, which oar-run passes to ``prepare``. Plain dataclasses: neither Hydra nor
the rest of oar.amp is imported here.

>>> from oar.amp._plugin import AmpConfig, Float16AmpConfig
>>> AmpConfig().level.value, AmpConfig().dtype.value, Float16AmpConfig(level=Level.O2).init_loss_scaling
('O1', 'bfloat16', 65536.0)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from oar.amp.amp_lists import CATEGORY_OVERRIDES
from oar.plugins import hookimpl


@hookimpl
def oar_register_amp_categories(amp):
    for op_name, category in CATEGORY_OVERRIDES.items():
        amp.register(op_name, category, override=True)


class Level(str, enum.Enum):
    """The levels ``Model.prepare`` takes: O1 casts the white list, O2 the parameters too, O0 none."""

    O0 = "O0"
    O1 = "O1"
    O2 = "O2"


class LowPrecision(str, enum.Enum):
    float16 = "float16"
    bfloat16 = "bfloat16"


@dataclass
class AmpConfig:
    """``amp=bf16_o1|bf16_o2``: ``Model.prepare``'s ``amp_configs`` (bfloat16 needs no loss scaling)."""

    _target_: str = "builtins.dict"
    _convert_: str = "all"  # plain lists, not OmegaConf's, reach auto_cast
    level: Level = Level.O1
    dtype: LowPrecision = LowPrecision.bfloat16
    custom_white_list: list[str] = field(default_factory=list)  # op names, oar's or Paddle's (conv2d)
    custom_black_list: list[str] = field(default_factory=list)


@dataclass
class Float16AmpConfig(AmpConfig):
    """``amp=fp16_o1|fp16_o2``: float16, whose loss a GradScaler scales (Paddle's defaults)."""

    dtype: LowPrecision = LowPrecision.float16
    init_loss_scaling: float = 65536.0
    incr_ratio: float = 2.0
    decr_ratio: float = 0.5
    incr_every_n_steps: int = 2000
    decr_every_n_nan_or_inf: int = 1
    use_dynamic_loss_scaling: bool = True


@hookimpl
def oar_register_config_groups(config_groups):
    # oar-run amp=...: oar-run instantiates the option and passes it to Model.prepare(amp_configs=...).
    config_groups.register("amp/bf16_o1", AmpConfig(level=Level.O1))
    config_groups.register("amp/bf16_o2", AmpConfig(level=Level.O2))
    config_groups.register("amp/fp16_o1", Float16AmpConfig(level=Level.O1))
    config_groups.register("amp/fp16_o2", Float16AmpConfig(level=Level.O2))
