"""Deterministic inputs for op cases."""

from __future__ import annotations

import numpy as np

_rng = np.random.default_rng(2026)


def rand(*shape, low=-1.0, high=1.0) -> np.ndarray:
    """Uniform float64 values in [low, high)."""
    return _rng.uniform(low, high, size=shape)


def positive(*shape, low=0.5, high=2.0) -> np.ndarray:
    return _rng.uniform(low, high, size=shape)


def ints(*shape, low=0, high=10, dtype=np.int64) -> np.ndarray:
    return _rng.integers(low, high, size=shape).astype(dtype)


def away_from(values: np.ndarray, points=(0.0,), margin=0.1) -> np.ndarray:
    """Move values away from non-differentiable points (|x| at 0, floor at integers, ...)."""
    out = values.copy()
    for p in points:
        close = np.abs(out - p) < margin
        out[close] = p + margin * np.sign(out[close] - p + 1e-12) * 2
    return out
