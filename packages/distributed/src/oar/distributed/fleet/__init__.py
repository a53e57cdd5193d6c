"""``oar.distributed.fleet``: Paddle's fleet API for collective training -- declare a strategy,
and fleet handles the topology, gradient sync, gradient merge, sharding, recompute and amp.

::

    from oar.distributed import fleet
    strategy = fleet.DistributedStrategy()
    strategy.gradient_merge = True
    strategy.gradient_merge_configs = {"k_steps": 4, "avg": True}
    fleet.init(is_collective=True, strategy=strategy)
    model = fleet.distributed_model(model)
    optimizer = fleet.distributed_optimizer(optimizer)
    for x, y in loader:                      # the ordinary loop: fleet applies the strategy
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()

Launch it with ``python -m oar.distributed.launch --nproc_per_node N train.py``; a plain
``python train.py`` is a job of one rank.

>>> from oar.distributed import fleet
>>> fleet.init(is_collective=True)
>>> fleet.worker_num()
1
"""

from oar.distributed.fleet import utils as utils
from oar.distributed.fleet._fleet import Fleet as Fleet
from oar.distributed.fleet._optimizer import DistributedOptimizer as DistributedOptimizer
from oar.distributed.fleet._sharding import ShardingOptimizer as ShardingOptimizer
from oar.distributed.fleet._sharding import sharding_model as sharding_model
from oar.distributed.fleet._strategy import DistributedStrategy as DistributedStrategy

fleet = Fleet()  # the one Fleet of this process; the functions below are its methods, as in Paddle

init = fleet.init
worker_index = fleet.worker_index
worker_num = fleet.worker_num
is_first_worker = fleet.is_first_worker
is_worker = fleet.is_worker
is_server = fleet.is_server
worker_endpoints = fleet.worker_endpoints
barrier_worker = fleet.barrier_worker
distributed_model = fleet.distributed_model
distributed_optimizer = fleet.distributed_optimizer

__all__ = [
    "DistributedStrategy", "DistributedOptimizer", "Fleet", "fleet", "init", "worker_index", "worker_num",
    "is_first_worker", "is_worker", "is_server", "worker_endpoints", "barrier_worker", "distributed_model",
    "distributed_optimizer", "utils", "ShardingOptimizer", "sharding_model",
]
