"""``oar.nn.functional``: the functional form of every layer, and nn's ops.

Each module lists its ops in ``OPS`` (registered by oar-nn's plugin) and its public functions
in ``__all__``.
"""

from __future__ import annotations

from oar.nn.functional import (
    activation,
    attention,
    channel_dropout,
    common,
    conv,
    decode,
    fused,
    loss,
    norm,
    pooling,
    quant,
    vision,
)
from oar.nn.functional.activation import *  # noqa: F403
from oar.nn.functional.attention import *  # noqa: F403
from oar.nn.functional.channel_dropout import *  # noqa: F403
from oar.nn.functional.common import *  # noqa: F403
from oar.nn.functional.conv import *  # noqa: F403
from oar.nn.functional.decode import *  # noqa: F403
from oar.nn.functional.loss import *  # noqa: F403
from oar.nn.functional.norm import *  # noqa: F403
from oar.nn.functional.pooling import *  # noqa: F403
from oar.nn.functional.vision import *  # noqa: F403
from oar.utils import public_dir

FAMILIES = (activation, attention, common, conv, loss, norm, pooling, vision, fused, quant, channel_dropout, decode)
ALL_OPS = [op for family in FAMILIES for op in family.OPS]

# dir(oar.nn.functional) shows the functions only: not the family modules, nor FAMILIES and ALL_OPS,
# which oar-nn's plugin reads to register the ops.
__dir__ = public_dir(globals(), hide=["FAMILIES", "ALL_OPS"])
