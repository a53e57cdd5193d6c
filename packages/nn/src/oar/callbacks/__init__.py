"""``oar.callbacks``: the callbacks of ``oar.Model`` (oar-nn), as ``paddle.callbacks``.

>>> import oar
>>> early = oar.callbacks.EarlyStopping(monitor="acc", patience=2)
>>> early.mode
'max'
"""

from oar.hapi.callbacks import Callback as Callback
from oar.hapi.callbacks import CallbackList as CallbackList
from oar.hapi.callbacks import EarlyStopping as EarlyStopping
from oar.hapi.callbacks import LRScheduler as LRScheduler
from oar.hapi.callbacks import ModelCheckpoint as ModelCheckpoint
from oar.hapi.callbacks import ProgBarLogger as ProgBarLogger
from oar.hapi.callbacks import ReduceLROnPlateau as ReduceLROnPlateau
from oar.hapi.callbacks import TrainingCurves as TrainingCurves
from oar.hapi.callbacks import VisualDL as VisualDL
from oar.hapi.callbacks import WandbCallback as WandbCallback

__all__ = [
    "Callback", "CallbackList", "ProgBarLogger", "ModelCheckpoint", "EarlyStopping", "LRScheduler",
    "ReduceLROnPlateau", "VisualDL", "TrainingCurves", "WandbCallback",
]
