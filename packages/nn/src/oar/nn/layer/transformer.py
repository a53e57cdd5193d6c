"""Transformer layers of oar.nn."""

from __future__ import annotations

__all__: list[str] = []
