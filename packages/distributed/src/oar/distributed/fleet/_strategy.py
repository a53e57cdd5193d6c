"""``DistributedStrategy``: Paddle's fleet strategy, validated as it is set.

Each attribute has a declared type and default; each ``*_configs`` dict has a declared key set
(Paddle's ``distributed_strategy.proto`` names). Assigning a configs dict updates only the keys
given, as Paddle does, and every key and value is checked at the assignment: a misspelt key or a
wrong type is an ``ArgumentError`` naming it (and the closest known name), never a silently
ignored setting. Paddle strategies that oar does not implement (pipeline, tensor parallel, LARS,
DGC, ...) may be read and set to False; setting one to True says that oar does not implement it.
"""

from __future__ import annotations

import copy
import difflib
from typing import Any

from oar.errors import ArgumentError

_INT, _FLOAT, _BOOL, _STR = "int", "float", "bool", "str"
_STR_LIST, _INT_LIST, _DICT = "list of str", "list of int", "dict"

# The strategies oar implements: flag -> (its configs attribute or None).
_FLAGS = {"amp": "amp_configs", "recompute": "recompute_configs", "sharding": "sharding_configs",
          "gradient_merge": "gradient_merge_configs"}

# Plain settings: name -> (type, default).
_SETTINGS: dict[str, tuple[str, Any]] = {
    "find_unused_parameters": (_BOOL, False),  # handed to DataParallel
    "fuse_grad_size_in_MB": (_INT, 32),  # DataParallel's comm_buffer_size
    "last_comm_group_size_MB": (_FLOAT, 1.0),  # DataParallel's last_comm_buffer_size
    # Accepted for Paddle scripts; no effect in oar's collective mode (gradients are always bucketed).
    "a_sync": (_BOOL, True),
    "fuse_all_reduce_ops": (_BOOL, True),
    "without_graph_optimization": (_BOOL, True),
}

# Paddle strategies oar does not implement: False is accepted, True is refused.
_NOT_IMPLEMENTED = (
    "pipeline", "tensor_parallel", "lamb", "lars", "localsgd", "adaptive_localsgd", "dgc", "sync_batch_norm",
    "qat", "asp", "auto", "semi_auto", "heter_ccl_mode", "elastic",
)

_CONFIGS: dict[str, dict[str, tuple[str, Any]]] = {
    "amp_configs": {
        "init_loss_scaling": (_FLOAT, 32768.0), "incr_every_n_steps": (_INT, 1000),
        "decr_every_n_nan_or_inf": (_INT, 2), "incr_ratio": (_FLOAT, 2.0), "decr_ratio": (_FLOAT, 0.8),
        "use_dynamic_loss_scaling": (_BOOL, True), "custom_white_list": (_STR_LIST, []),
        "custom_black_list": (_STR_LIST, []), "custom_black_varnames": (_STR_LIST, []),
        "use_pure_fp16": (_BOOL, False), "use_fp16_guard": (_BOOL, True), "use_optimizer_fp16": (_BOOL, False),
        "use_pure_bf16": (_BOOL, False),
    },
    "recompute_configs": {
        "checkpoints": (_STR_LIST, []), "enable_offload": (_BOOL, False), "checkpoint_shape": (_INT_LIST, []),
        "enable_tuning": (_BOOL, False),
    },
    "sharding_configs": {
        # None: over every rank of the job (Paddle's default of 8 assumes a GPU node).
        "sharding_degree": (_INT, None), "stage": (_INT, 1),
        "sharding_segment_strategy": (_STR, "segment_broadcast_MB"), "segment_broadcast_MB": (_FLOAT, 32.0),
        "segment_anchors": (_STR_LIST, []), "mp_degree": (_INT, 1), "dp_degree": (_INT, 1),
        "hybrid_dp": (_BOOL, False), "gradient_merge_acc_step": (_INT, 1), "optimize_offload": (_BOOL, False),
        "pp_allreduce_in_optimize": (_BOOL, False), "pp_degree": (_INT, 1), "optimize_cast": (_BOOL, False),
        "enable_tuning": (_BOOL, False), "use_calc_stream": (_BOOL, False),
    },
    "gradient_merge_configs": {"k_steps": (_INT, 1), "avg": (_BOOL, True)},
    "hybrid_configs": {
        "dp_degree": (_INT, -1), "mp_degree": (_INT, 1), "pp_degree": (_INT, 1), "sharding_degree": (_INT, 1),
        "sep_degree": (_INT, 1), "mp_configs": (_DICT, {}), "pp_configs": (_DICT, {}),
        "sharding_configs": (_DICT, {}), "enable_optimizer_timer": (_BOOL, False),
    },
}

# Names other Paddle APIs use for a key, so that the error can point to fleet's name.
_ALIASES = {"degree": "sharding_degree", "enable": "the strategy's own flag (strategy.<name> = True)"}


def _check_value(where: str, kind: str, value: Any) -> Any:
    """``value`` converted to ``kind``, or an ``ArgumentError`` naming ``where``."""
    ok = {
        _BOOL: lambda v: isinstance(v, bool),
        _INT: lambda v: isinstance(v, int) and not isinstance(v, bool),
        _FLOAT: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        _STR: lambda v: isinstance(v, str),
        _STR_LIST: lambda v: isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v),
        _INT_LIST: lambda v: isinstance(v, (list, tuple)) and all(isinstance(x, int) and not isinstance(x, bool)
                                                                   for x in v),
        _DICT: lambda v: isinstance(v, dict),
    }[kind]
    if not ok(value):
        raise ArgumentError(f"DistributedStrategy: {where} must be a {kind}, got {value!r} ({type(value).__name__})")
    if kind == _FLOAT:
        return float(value)
    if kind in (_STR_LIST, _INT_LIST):
        return list(value)
    return copy.deepcopy(value) if kind == _DICT else value


class UnknownStrategyName(ArgumentError, AttributeError):
    """A name the strategy does not have; an ``AttributeError`` too, so ``hasattr`` works."""


def _unknown(kind: str, name: str, known) -> ArgumentError:
    hint = ""
    if name in _ALIASES:
        hint = f"; fleet calls it {_ALIASES[name]}"
    else:
        close = difflib.get_close_matches(name, list(known), n=1)
        if close:
            hint = f"; did you mean {close[0]!r}?"
    return UnknownStrategyName(f"DistributedStrategy: unknown {kind} {name!r}{hint} (known: {', '.join(sorted(known))})")


class DistributedStrategy:
    """How ``fleet`` trains: Paddle's ``paddle.distributed.fleet.DistributedStrategy``.

    oar implements, on top of data parallelism over every rank:

    - ``gradient_merge`` + ``gradient_merge_configs={'k_steps': int, 'avg': bool}``: the
      optimizer updates every ``k_steps`` steps with the accumulated gradients (in dygraph, where
      Paddle 3.3.1 ignores it);
    - ``sharding`` + ``sharding_configs={'stage': 1 | 2, 'sharding_degree': world size}``:
      optimizer states (stage 1) and gradients (stage 2) split over the ranks;
    - ``recompute`` + ``recompute_configs={'checkpoints': [sublayer names]}``: those sublayers
      keep no activations and recompute them in backward;
    - ``amp`` + ``amp_configs``: the model runs under ``oar.amp.auto_cast`` (the oar-amp plugin);
    - ``hybrid_configs``: ``dp_degree`` only (-1 or the world size); any other degree > 1 is refused.

    A wrong name, key or type raises ``ArgumentError`` when it is set.

    >>> from oar.distributed import fleet
    >>> strategy = fleet.DistributedStrategy()
    >>> strategy.gradient_merge = True
    >>> strategy.gradient_merge_configs = {"k_steps": 4}
    >>> strategy.gradient_merge_configs
    {'k_steps': 4, 'avg': True}
    >>> strategy.gradinet_merge = True
    Traceback (most recent call last):
    ...
    oar.distributed.fleet._strategy.UnknownStrategyName: DistributedStrategy: unknown attribute 'gradinet_merge'; did you mean 'gradient_merge'? ...
    """

    def __init__(self):
        values: dict[str, Any] = {flag: False for flag in _FLAGS}
        values.update({name: default for name, (_, default) in _SETTINGS.items()})
        values.update({name: False for name in _NOT_IMPLEMENTED})
        values.update({name: {key: copy.deepcopy(default) for key, (_, default) in schema.items()}
                       for name, schema in _CONFIGS.items()})
        object.__setattr__(self, "_values", values)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)  # copy, pickle and friends probe for dunders
        values = self.__dict__.get("_values", {})
        if name in values:
            value = values[name]
            return copy.deepcopy(value) if isinstance(value, dict) else value
        raise _unknown("attribute", name, values)

    def __setattr__(self, name: str, value: Any) -> None:
        values = self._values
        if name in _CONFIGS:
            if not isinstance(value, dict):
                raise ArgumentError(f"DistributedStrategy: {name} must be a dict, got {type(value).__name__}")
            schema = _CONFIGS[name]
            updated = dict(values[name])
            for key, item in value.items():
                if key not in schema:
                    raise _unknown(f"key of {name}", key, schema)
                kind, default = schema[key]
                updated[key] = None if item is None and default is None else _check_value(f"{name}[{key!r}]", kind,
                                                                                           item)
            _validate_configs(name, updated)
            values[name] = updated
        elif name in _FLAGS or name in _NOT_IMPLEMENTED:
            value = _check_value(name, _BOOL, value)
            if value and name in _NOT_IMPLEMENTED:
                raise ArgumentError(f"DistributedStrategy: oar does not implement {name!r}; it trains data parallel "
                                    f"(with gradient_merge, sharding, recompute and amp on top)")
            values[name] = value
        elif name in _SETTINGS:
            values[name] = _check_value(name, _SETTINGS[name][0], value)
        else:
            raise _unknown("attribute", name, values)

    def __repr__(self) -> str:
        on = [flag for flag in _FLAGS if self._values[flag]]
        return f"DistributedStrategy({', '.join(on) if on else 'data parallel'})"


def _validate_configs(name: str, configs: dict) -> None:
    """The value checks a type cannot express, made when the configs are set."""
    if name == "gradient_merge_configs" and configs["k_steps"] < 1:
        raise ArgumentError(f"DistributedStrategy: gradient_merge_configs['k_steps'] must be >= 1, "
                            f"got {configs['k_steps']}")
    if name == "sharding_configs":
        if configs["stage"] not in (1, 2):
            raise ArgumentError(f"DistributedStrategy: sharding_configs['stage'] must be 1 (optimizer states) or 2 "
                                f"(and gradients), got {configs['stage']}; oar does not implement stage 3")
        degree = configs["sharding_degree"]
        if degree is not None and degree < 1:
            raise ArgumentError(f"DistributedStrategy: sharding_configs['sharding_degree'] must be >= 1, got {degree}")
        for key in ("mp_degree", "pp_degree", "dp_degree"):
            if configs[key] > 1:
                raise ArgumentError(f"DistributedStrategy: sharding_configs[{key!r}]={configs[key]}: oar shards over "
                                    f"all ranks and does data parallel only; leave {key} at 1")
        for key in ("optimize_offload", "hybrid_dp"):
            if configs[key]:
                raise ArgumentError(f"DistributedStrategy: oar does not implement sharding_configs[{key!r}]")
    if name == "recompute_configs" and configs["enable_offload"]:
        raise ArgumentError("DistributedStrategy: oar does not implement recompute_configs['enable_offload']")
    if name == "hybrid_configs":
        dp = configs["dp_degree"]
        if dp == 0 or dp < -1:
            raise ArgumentError(f"DistributedStrategy: hybrid_configs['dp_degree'] must be -1 (all ranks) or >= 1, "
                                f"got {dp}")
        for key in ("mp_degree", "pp_degree", "sharding_degree", "sep_degree"):
            if configs[key] > 1:
                extra = " (for sharding set strategy.sharding = True)" if key == "sharding_degree" else ""
                raise ArgumentError(f"DistributedStrategy: hybrid_configs[{key!r}]={configs[key]}: oar does data "
                                    f"parallel only, so only dp_degree may be above 1{extra}")
