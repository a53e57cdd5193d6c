"""``oar.distributed.fleet.utils``: Paddle's fleet utilities -- activation recomputation.

>>> from oar.distributed.fleet.utils import recompute, recompute_sequential
"""

from oar.distributed.fleet.utils._recompute import recompute as recompute
from oar.distributed.fleet.utils._recompute import recompute_sequential as recompute_sequential

__all__ = ["recompute", "recompute_sequential"]
