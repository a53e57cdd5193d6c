"""oar-distributed's plugin: the strategies it registers through core's hook, and ``oar-run``'s
``strategy`` config group.

``oar-run strategy=dp`` trains data-parallel: the option instantiates to a ``DataParallelStrategy``,
which oar-run asks, before it trains, whether this process must first start the ranks
(``launch_command``); started plainly, oar-run re-runs itself through
``python -m oar.distributed.launch --nproc_per_node N`` with the same overrides and waits, and in
the launched ranks the strategy wraps the network in ``oar.DataParallel`` (``__call__``), which
``oar.Model`` trains. Plain dataclasses here: neither Hydra nor MPI is imported.

>>> from oar.distributed._plugin import DataParallelConfig
>>> DataParallelConfig().nproc_per_node, DataParallelConfig().find_unused_parameters
(2, False)
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from oar.plugins import Lazy, hookimpl


@hookimpl
def oar_register_distributed_strategies(strategies):
    strategies.register("dp", Lazy("oar.distributed:DataParallel"))


@dataclass
class DataParallelConfig:
    """``strategy=dp``: ``nproc_per_node`` ranks on this machine, each training the whole model on
    its share of every epoch; ``trainer.batch_size`` is each rank's batch, as in Paddle."""

    _target_: str = "oar.distributed._plugin.DataParallelStrategy"
    nproc_per_node: int = 2
    find_unused_parameters: bool = False
    comm_buffer_size: float = 25.0  # MB of gradients per all-reduce


class DataParallelStrategy:
    """What ``strategy=dp`` instantiates to: in a launched rank, a callable that wraps a network in
    ``oar.DataParallel``; in a plain process, the command that launches the ranks.

    >>> strategy = DataParallelStrategy(nproc_per_node=2)
    >>> strategy.launch_command("run.py", ["trainer.epochs=1"], log_dir="log")[2:]
    ['oar.distributed.launch', '--nproc_per_node', '2', '--log_dir', 'log', 'run.py', 'trainer.epochs=1']
    """

    def __init__(self, nproc_per_node: int = 2, find_unused_parameters: bool = False, comm_buffer_size: float = 25.0):
        if isinstance(nproc_per_node, bool) or not isinstance(nproc_per_node, int) or nproc_per_node < 1:
            raise ValueError(f"strategy.nproc_per_node must be a positive int, got {nproc_per_node!r}")
        self.nproc_per_node = nproc_per_node
        self.find_unused_parameters = bool(find_unused_parameters)
        self.comm_buffer_size = comm_buffer_size

    def needs_launch(self) -> bool:
        """Whether this process is a plain one that must start ``nproc_per_node`` ranks first."""
        return self.nproc_per_node > 1 and not os.environ.get("PADDLE_TRAINERS_NUM")

    def launch_command(self, script: str, arguments: list[str], log_dir: str) -> list[str]:
        """The command that runs ``python script arguments`` as ``nproc_per_node`` ranks on this
        machine, their logs in ``log_dir`` (``workerlog.<rank>``)."""
        return [sys.executable, "-m", "oar.distributed.launch", "--nproc_per_node", str(self.nproc_per_node),
                "--log_dir", str(log_dir), str(script), *arguments]

    def __call__(self, network):
        # Imported here, not at the top: this module loads with every program's first op (plugins are
        # found then), and oar.distributed's collectives and DataParallel only when a run asks for them.
        from oar.distributed import DataParallel

        return DataParallel(network, comm_buffer_size=self.comm_buffer_size,
                            find_unused_parameters=self.find_unused_parameters)


@hookimpl
def oar_register_config_groups(config_groups):
    # oar-run strategy=dp: oar-run launches the ranks (launch_command), then wraps the network (__call__).
    config_groups.register("strategy/dp", DataParallelConfig())
