"""``oar.hapi``: Paddle's high-level API (oar-nn): ``oar.Model``, ``oar.summary``, ``oar.flops`` and
the callbacks that ``oar.callbacks`` re-exports.

>>> import oar
>>> oar.Model is oar.hapi.Model and oar.summary is oar.hapi.summary and oar.flops is oar.hapi.flops
True
"""

from __future__ import annotations

from oar.hapi import callbacks
from oar.hapi.flops import flops
from oar.hapi.model import FeatureUnavailableError, Model
from oar.hapi.progressbar import ProgressBar
from oar.hapi.summary import summary

__all__ = ["Model", "summary", "flops", "callbacks", "ProgressBar", "FeatureUnavailableError"]
