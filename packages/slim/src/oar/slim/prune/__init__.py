"""``oar.slim.prune``: structured filter pruning that removes channels for real, as PaddleSlim's
``paddleslim.dygraph`` pruners (``L1NormFilterPruner``, ``L2NormFilterPruner``, ``FPGMFilterPruner``).

The dependencies come from the model's captured program (``oar.slim.prune.dependency``): a conv's
bias, the next batch norm, every consumer conv or linear (through ``flatten``), both sides of a
residual ``add``, concat offsets and depthwise convs move with its filters.

>>> import oar
>>> from oar.slim.prune import FPGMFilterPruner
>>> net = oar.nn.Sequential(oar.nn.Conv2D(3, 8, 3), oar.nn.BatchNorm2D(8), oar.nn.ReLU(),
...                         oar.nn.Flatten(), oar.nn.Linear(8 * 6 * 6, 10))
>>> plan = FPGMFilterPruner(net, [1, 3, 8, 8]).prune_vars({"0.weight": 0.25})
>>> net[0].weight.shape, net[1]._mean.shape, net[4].weight.shape
([6, 3, 3, 3], [6], [216, 10])
"""

from oar.slim.prune.criteria import fpgm as fpgm
from oar.slim.prune.criteria import l1_norm as l1_norm
from oar.slim.prune.criteria import l2_norm as l2_norm
from oar.slim.prune.criteria import pruned_mask as pruned_mask
from oar.slim.prune.dependency import ChannelGroup as ChannelGroup
from oar.slim.prune.dependency import PruningError as PruningError
from oar.slim.prune.dependency import find_group as find_group
from oar.slim.prune.filter_pruner import FilterPruner as FilterPruner
from oar.slim.prune.filter_pruner import FPGMFilterPruner as FPGMFilterPruner
from oar.slim.prune.filter_pruner import L1NormFilterPruner as L1NormFilterPruner
from oar.slim.prune.filter_pruner import L2NormFilterPruner as L2NormFilterPruner
from oar.slim.prune.filter_pruner import Status as Status
from oar.slim.prune.filter_pruner import capture as capture
from oar.slim.prune.plan import PruningMask as PruningMask
from oar.slim.prune.plan import PruningPlan as PruningPlan
from oar.slim.prune.unstructured import GMPUnstructuredPruner as GMPUnstructuredPruner
from oar.slim.prune.unstructured import UnstructuredPruner as UnstructuredPruner
from oar.slim.prune.unstructured import gmp_ratios as gmp_ratios

__all__ = ["FilterPruner", "L1NormFilterPruner", "L2NormFilterPruner", "FPGMFilterPruner", "PruningPlan",
           "PruningMask", "PruningError", "ChannelGroup", "Status", "find_group", "capture", "l1_norm", "l2_norm",
           "fpgm", "pruned_mask", "UnstructuredPruner", "GMPUnstructuredPruner", "gmp_ratios"]
