"""``oar.nn``: layers, functional ops, initializers and losses (oar-nn), with Paddle's names.

>>> import oar
>>> net = oar.nn.Sequential(oar.nn.Linear(4, 8), oar.nn.ReLU(), oar.nn.Linear(8, 2))
>>> net(oar.rand([3, 4])).shape
[3, 2]
"""

from __future__ import annotations

from oar.nn import functional, initializer, utils
from oar.nn.clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue
from oar.nn.layer.activation import *  # noqa: F403
from oar.nn.layer.channel_dropout import *  # noqa: F403
from oar.nn.layer.common import *  # noqa: F403
from oar.nn.layer.container import *  # noqa: F403
from oar.nn.layer.conv import *  # noqa: F403
from oar.nn.layer.decode import *  # noqa: F403
from oar.nn.layer.layers import Layer
from oar.nn.layer.loss import *  # noqa: F403
from oar.nn.layer.norm import *  # noqa: F403
from oar.nn.layer.pooling import *  # noqa: F403
from oar.nn.layer.rnn import *  # noqa: F403
from oar.nn.layer.transformer import *  # noqa: F403
from oar.nn.layer.vision import *  # noqa: F403
from oar.nn.param_attr import ParamAttr
from oar.nn.parameter import Parameter
from oar.utils import public_dir

# dir(oar.nn) shows the layers and the public subpackages, not the modules the imports above bind
# (oar.nn.layer, .clip, .param_attr, ...): those still import, as Paddle's do.
__dir__ = public_dir(globals(), subpackages=["functional", "initializer", "quant", "utils"])
