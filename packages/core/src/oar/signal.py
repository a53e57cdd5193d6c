"""Paddle's ``paddle.signal``: the short-time Fourier transform and its inverse.

``stft`` pads (``center``, "reflect" or "constant") and frames the signal in one gather, windows
the frames and transforms them (``rfft`` for a real signal, ``fft`` otherwise); ``istft``
transforms back, windows, overlap-adds and divides by the summed squared window. Both are
compositions of oar ops (defined in ``oar._ops.complex``), so they are differentiable. The
functions are also the Tensor methods ``x.stft(...)`` and ``x.istft(...)``.

>>> import numpy as np, oar
>>> spectrum = oar.signal.stft(oar.to_tensor(np.arange(16.0)), n_fft=8, hop_length=4)
>>> spectrum.shape, spectrum.dtype
([5, 5], oar.complex128)

Where oar differs from Paddle: bad arguments raise ``oar.errors`` exceptions (ArgumentError,
ShapeError, DTypeError) where Paddle asserts; ``istft`` checks the Nonzero Overlap Add condition
also under ``to_static`` (reading the window's values, a graph break there).
"""

from __future__ import annotations

from oar._ops.complex import istft, stft

__all__ = ["stft", "istft"]
