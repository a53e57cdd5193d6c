"""Random ops."""

from __future__ import annotations

OPS: list = []
METHODS: dict = {}
__all__: list[str] = []
