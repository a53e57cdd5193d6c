"""Norm functions of oar.nn.functional."""

from __future__ import annotations

OPS: list = []
__all__: list[str] = []
