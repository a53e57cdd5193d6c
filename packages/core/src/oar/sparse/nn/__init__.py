"""Paddle's ``paddle.sparse.nn``: the sparse activations of ``oar.sparse.nn.functional``."""

from __future__ import annotations

from oar.sparse.nn import functional

__all__ = ["functional"]
