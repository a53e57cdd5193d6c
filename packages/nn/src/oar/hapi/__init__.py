"""``oar.hapi``: Paddle's high-level API (oar-nn). ``oar.summary`` resolves here.

>>> import oar
>>> oar.summary is oar.hapi.summary
True
"""

from __future__ import annotations

from oar.hapi.summary import summary

__all__ = ["summary"]
