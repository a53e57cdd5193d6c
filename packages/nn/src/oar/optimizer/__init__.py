"""``oar.optimizer``: optimizers and (in ``oar.optimizer.lr``) learning-rate schedulers, with
Paddle's names, defaults and update formulas.

>>> import oar
>>> net = oar.nn.Linear(3, 1)
>>> opt = oar.optimizer.Adam(learning_rate=0.01, parameters=net.parameters())
>>> loss = net(oar.ones([4, 3])).mean()
>>> loss.backward()
>>> opt.step()
>>> opt.clear_grad()
"""

from oar.optimizer import lr
from oar.optimizer.adadelta import Adadelta
from oar.optimizer.adagrad import Adagrad
from oar.optimizer.adam import Adam
from oar.optimizer.adamax import Adamax
from oar.optimizer.adamw import AdamW
from oar.optimizer.asgd import ASGD
from oar.optimizer.lamb import Lamb
from oar.optimizer.lbfgs import LBFGS
from oar.optimizer.momentum import Momentum
from oar.optimizer.nadam import NAdam
from oar.optimizer.optimizer import Optimizer, register_update_rule
from oar.optimizer.radam import RAdam
from oar.optimizer.rmsprop import RMSProp
from oar.optimizer.rprop import Rprop
from oar.optimizer.sgd import SGD

__all__ = [
    "Optimizer", "SGD", "Momentum", "Adam", "AdamW", "Adamax", "Adagrad", "Adadelta", "RMSProp", "Lamb", "lr",
    "register_update_rule", "ASGD", "NAdam", "RAdam", "Rprop", "LBFGS",
]
