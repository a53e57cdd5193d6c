"""``Fleet``: the object behind ``oar.distributed.fleet``'s functions, as Paddle's ``fleet``.

``init`` starts the collective environment and checks the strategy against the job (a degree
that does not fit the world size is an error there, not a hang later); ``distributed_model``
applies the model-side strategies in this order: recompute (the checkpointed sublayers'
forwards), amp (the model's forward under ``oar.amp.auto_cast``), then the data-parallel wrapper
(``DataParallel``, or sharding's model wrapper); ``distributed_optimizer`` applies the
optimizer-side ones (sharding's optimizer, gradient merge).
"""

from __future__ import annotations

import weakref

import oar.distributed as dist
import oar.nn as nn
from oar.distributed._parallel import DataParallel
from oar.distributed.fleet._optimizer import DistributedOptimizer
from oar.distributed.fleet._sharding import sharding_model
from oar.distributed.fleet._strategy import DistributedStrategy
from oar.distributed.fleet.utils import recompute
from oar.errors import ArgumentError


class Fleet:
    """Paddle's ``fleet`` for collective (data-parallel) training; use the module's functions.

    >>> from oar.distributed import fleet
    >>> fleet.init(is_collective=True)
    >>> fleet.worker_index(), fleet.worker_num(), fleet.is_first_worker()
    (0, 1, True)
    """

    def __init__(self):
        self._strategy: DistributedStrategy | None = None
        self._initialized = False
        self._model = None
        self._optimizers: list[weakref.ref] = []

    # -- set-up ---------------------------------------------------------------------------------------
    def init(self, role_maker=None, is_collective: bool = False, strategy: DistributedStrategy | None = None,
             log_level: str = "INFO") -> None:
        """Start collective training with ``strategy`` (Paddle's ``fleet.init``).

        Initialises ``oar.distributed.init_parallel_env()``. oar implements collective training
        only: pass ``is_collective=True`` (a parameter-server job is refused).
        """
        if role_maker is not None:
            raise ArgumentError("fleet.init: oar has no role makers (they configure parameter-server jobs); "
                                "call fleet.init(is_collective=True)")
        if not is_collective:
            raise ArgumentError("fleet.init: oar implements collective training only; call "
                                "fleet.init(is_collective=True) (is_collective=False means a parameter-server job)")
        strategy = DistributedStrategy() if strategy is None else strategy
        if not isinstance(strategy, DistributedStrategy):
            raise ArgumentError(f"fleet.init: strategy must be a fleet.DistributedStrategy, got "
                                f"{type(strategy).__name__}")
        dist.init_parallel_env()
        _check_degrees(strategy, dist.get_world_size())
        self._strategy = strategy
        self._initialized = True

    def _require_init(self, what: str) -> DistributedStrategy:
        if not self._initialized:
            raise ArgumentError(f"fleet.{what}: call fleet.init(is_collective=True) first")
        return self._strategy

    def _strategy_for(self, what: str, strategy) -> DistributedStrategy:
        current = self._require_init(what)
        if strategy is None:
            return current
        if not isinstance(strategy, DistributedStrategy):
            raise ArgumentError(f"fleet.{what}: strategy must be a fleet.DistributedStrategy, got "
                                f"{type(strategy).__name__}")
        _check_degrees(strategy, dist.get_world_size())
        self._strategy = strategy  # Paddle: a strategy given here replaces the one from init
        return strategy

    # -- where this process is ------------------------------------------------------------------------
    def worker_index(self) -> int:
        """This process's rank."""
        return dist.get_rank()

    def worker_num(self) -> int:
        """The number of ranks in the job."""
        return dist.get_world_size()

    def is_first_worker(self) -> bool:
        """Whether this is rank 0 (the one that saves and logs, by convention)."""
        return dist.get_rank() == 0

    def is_worker(self) -> bool:
        """Always True: in collective training every process is a worker."""
        return True

    def is_server(self) -> bool:
        """Always False: oar has no parameter servers."""
        return False

    def worker_endpoints(self, to_string: bool = False):
        """The workers' endpoints from the launcher's environment (empty without one)."""
        endpoints = dist.ParallelEnv().trainer_endpoints
        return ",".join(endpoints) if to_string else endpoints

    def barrier_worker(self) -> None:
        """Wait until every worker arrives here."""
        dist.barrier()

    @property
    def user_defined_strategy(self) -> DistributedStrategy | None:
        return self._strategy

    # -- the model and the optimizer ------------------------------------------------------------------
    def distributed_model(self, model: nn.Layer) -> nn.Layer:
        """``model`` wrapped for the strategy: recompute and amp applied, then ``DataParallel``
        (or, with ``strategy.sharding``, sharding's model wrapper).

        >>> import oar
        >>> from oar.distributed import fleet
        >>> fleet.init(is_collective=True)
        >>> model = fleet.distributed_model(oar.nn.Linear(4, 2))
        >>> type(model).__name__
        'DataParallel'
        """
        strategy = self._require_init("distributed_model")
        if not isinstance(model, nn.Layer):
            raise ArgumentError(f"fleet.distributed_model: model must be an oar.nn.Layer, got {type(model).__name__}")
        if strategy.recompute:
            _apply_recompute(model, strategy.recompute_configs["checkpoints"])
        if strategy.amp:
            model = _apply_amp(model, strategy.amp_configs)
        if strategy.sharding:
            wrapped = sharding_model(model, strategy.sharding_configs["stage"])
        else:
            wrapped = DataParallel(model, comm_buffer_size=strategy.fuse_grad_size_in_MB,
                                   last_comm_buffer_size=strategy.last_comm_group_size_MB,
                                   find_unused_parameters=strategy.find_unused_parameters)
        self._model = wrapped
        for ref in self._optimizers:  # distributed_optimizer may have come first (Paddle's examples do so)
            optimizer = ref()
            if optimizer is not None and optimizer._model is None:
                optimizer._attach_model(wrapped)
        return wrapped

    def distributed_optimizer(self, optimizer, strategy: DistributedStrategy | None = None) -> DistributedOptimizer:
        """``optimizer`` applying the strategy: gradient merge, and sharding's optimizer.

        >>> import oar
        >>> from oar.distributed import fleet
        >>> fleet.init(is_collective=True)
        >>> layer = oar.nn.Linear(4, 2)
        >>> opt = fleet.distributed_optimizer(oar.optimizer.SGD(0.1, parameters=layer.parameters()))
        >>> opt.get_lr()
        0.1
        """
        strategy = self._strategy_for("distributed_optimizer", strategy)
        wrapped = DistributedOptimizer(optimizer, strategy, model=self._model)
        self._optimizers = [ref for ref in self._optimizers if ref() is not None] + [weakref.ref(wrapped)]
        return wrapped


def _check_degrees(strategy: DistributedStrategy, world_size: int) -> None:
    """The strategy's degrees against the job: oar runs data parallel (and shards) over all ranks."""
    dp = strategy.hybrid_configs["dp_degree"]
    if dp not in (-1, world_size):
        raise ArgumentError(f"fleet: hybrid_configs['dp_degree']={dp} but the job has {world_size} rank(s); oar does "
                            f"data parallel only, over every rank: use -1 or {world_size}")
    degree = strategy.sharding_configs["sharding_degree"]
    if strategy.sharding and degree is not None and degree != world_size:
        raise ArgumentError(f"fleet: sharding_configs['sharding_degree']={degree} but the job has {world_size} "
                            f"rank(s); oar shards over every rank: leave it unset or use {world_size}")


def _apply_recompute(model: nn.Layer, checkpoints: list[str]) -> None:
    """Make each named sublayer's forward a ``recompute`` of itself."""
    if not checkpoints:
        raise ArgumentError("fleet.distributed_model: strategy.recompute is on but recompute_configs['checkpoints'] "
                            "is empty; name the sublayers to recompute, e.g. {'checkpoints': ['blocks.0']}")
    layers = dict(model.named_sublayers())
    for name in checkpoints:
        if name not in layers:
            raise ArgumentError(f"fleet.distributed_model: recompute checkpoint {name!r} is not a sublayer of the "
                                f"model; its sublayers are {sorted(layers)}")
        layer = layers[name]
        original = layer.forward

        def forward(*args, _original=original, **kwargs):
            return recompute(_original, *args, **kwargs)

        # An instance attribute shadows the class's forward; Layer.__call__ calls self.forward.
        object.__setattr__(layer, "forward", forward)


def _apply_amp(model: nn.Layer, configs: dict) -> nn.Layer:
    """Run ``model``'s forward under ``oar.amp.auto_cast`` (O2 casts it with ``decorate`` first)."""
    try:
        import oar.amp as amp  # an optional plugin: imported only when strategy.amp asks for it
    except ModuleNotFoundError:
        raise ArgumentError("fleet: strategy.amp needs the oar-amp plugin, which is not installed; from a clone of "
                            "oar's repository: pip install ./plugins/oar-amp") from None
    pure = configs["use_pure_fp16"] or configs["use_pure_bf16"]
    level = "O2" if pure else "O1"
    dtype = "bfloat16" if configs["use_pure_bf16"] else "float16"
    if pure:
        model = amp.decorate(models=model, level=level, dtype=dtype)
    original = model.forward
    white, black = configs["custom_white_list"] or None, configs["custom_black_list"] or None

    def forward(*args, **kwargs):
        with amp.auto_cast(enable=True, custom_white_list=white, custom_black_list=black, level=level, dtype=dtype):
            return original(*args, **kwargs)

    object.__setattr__(model, "forward", forward)
    return model
