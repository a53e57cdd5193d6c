"""Observers: layers that watch tensors during calibration and give the scales ``convert`` uses.

Paddle's ``AbsmaxObserver``; PaddleSlim's ``AbsMaxChannelWiseWeightObserver``, ``HistObserver``
(percentile), ``KLObserver`` and ``MSEObserver``; ``MovingAverageAbsmaxObserver`` (oar's name for
the statistic of Paddle's ``moving_average_abs_max``).
"""

from .abs_max import (
    AbsMaxChannelWiseWeightObserver,
    AbsMaxChannelWiseWeightObserverLayer,
    AbsmaxObserver,
    AbsmaxObserverLayer,
    MovingAverageAbsmaxObserver,
    MovingAverageAbsmaxObserverLayer,
)
from .hist import HistObserver, HistObserverLayer, KLObserver, KLObserverLayer, MSEObserver, MSEObserverLayer

__all__ = ["AbsmaxObserver", "AbsMaxChannelWiseWeightObserver", "MovingAverageAbsmaxObserver", "HistObserver",
           "KLObserver", "MSEObserver", "AbsmaxObserverLayer", "AbsMaxChannelWiseWeightObserverLayer",
           "MovingAverageAbsmaxObserverLayer", "HistObserverLayer", "KLObserverLayer", "MSEObserverLayer"]
