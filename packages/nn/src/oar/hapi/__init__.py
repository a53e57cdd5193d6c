"""``oar.hapi``: Paddle's high-level API (oar-nn): ``oar.Model``, ``oar.summary`` and the callbacks
that ``oar.callbacks`` re-exports.

>>> import oar
>>> oar.Model is oar.hapi.Model and oar.summary is oar.hapi.summary
True
"""

from __future__ import annotations

from oar.hapi import callbacks
from oar.hapi.model import FeatureUnavailableError, Model
from oar.hapi.progressbar import ProgressBar
from oar.hapi.summary import summary

__all__ = ["Model", "summary", "callbacks", "ProgressBar", "FeatureUnavailableError"]
