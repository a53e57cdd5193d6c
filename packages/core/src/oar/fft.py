"""Paddle's ``paddle.fft``: discrete Fourier transforms over complex and real tensors.

Every transform takes Paddle's arguments: ``n`` (1-D) or ``s`` (2-D, n-D) crops or zero-pads the
input along each transformed axis first; ``axis`` / ``axes`` say which axes (``fftn`` and friends
default to the last ``len(s)`` axes, else all); ``norm`` scales the pair of transforms:
``"backward"`` (the default: the inverse by ``1/n``), ``"ortho"`` (both by ``1/sqrt(n)``) or
``"forward"`` (the forward by ``1/n``). Real and integer inputs of the complex transforms become
complex64 (float64: complex128), as in Paddle.

They are compositions of three ops, ``fft_c2c``, ``fft_r2c`` and ``fft_c2r`` (defined with their
gradients in ``oar._ops.complex``): ``rfft`` is r2c, ``irfft`` c2r, ``hfft`` c2r of the conjugate
and ``ihfft`` the conjugate of r2c, with the scaling swapped (numpy's definitions). All are
differentiable, with Paddle's gradient convention for complex tensors (``dL/dRe + i dL/dIm``).

>>> import numpy as np, oar
>>> x = np.arange(4.0)
>>> np.allclose(oar.fft.rfft(oar.to_tensor(x)).numpy(), np.fft.rfft(x))
True

Where oar differs from Paddle:

- there is no complex32 (nor float16 complex output): float16 and bfloat16 inputs compute in float32
  and give complex64;
- errors are ``oar.errors`` exceptions (ArgumentError for a bad ``norm``, ``n`` or ``axes``,
  DTypeError for a complex input of ``rfft``), not Paddle's ValueError / RuntimeError.
"""

from __future__ import annotations

import numpy as np

from oar._engine.tensor import Tensor, to_tensor
from oar._ops._common import as_tensor, normalize_axis
from oar._ops.assign import assign
from oar._ops.complex import fft_c2c, fft_c2r, fft_r2c, swap_norm
from oar._ops.creation import dtype_arg
from oar._ops.elementwise import conj
from oar._ops.shape import roll
from oar.errors import ArgumentError

__all__ = [
    "fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2",
    "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]

_LAST_TWO = (-2, -1)


def _one(n):
    return None if n is None else [n]


def _into(out, result: Tensor) -> Tensor:
    """``result`` written into ``out`` (Paddle's ``out=`` argument), which is returned."""
    return result if out is None else assign(result, output=out)


# -- complex to complex ---------------------------------------------------------------------------------
def fft(x, n=None, axis=-1, norm="backward", name=None, *, out=None) -> Tensor:
    """The 1-D discrete Fourier transform along ``axis`` (``n``: crop or zero-pad to that length first).

    >>> import oar
    >>> oar.fft.fft(oar.to_tensor([1.0, 2.0, 3.0, 4.0])).tolist()
    [(10+0j), (-2+2j), (-2+0j), (-2-2j)]
    """
    return _into(out, fft_c2c("fft", x, _one(n), [axis], norm, forward=True))


def ifft(x, n=None, axis=-1, norm="backward", name=None, *, out=None) -> Tensor:
    """The 1-D inverse discrete Fourier transform along ``axis``.

    >>> import oar
    >>> oar.fft.ifft(oar.to_tensor([4.0, 0.0, 0.0, 0.0])).tolist()
    [(1+0j), (1+0j), (1+0j), (1+0j)]
    """
    return _into(out, fft_c2c("ifft", x, _one(n), [axis], norm, forward=False))


def fft2(x, s=None, axes=_LAST_TWO, norm="backward", name=None, *, out=None) -> Tensor:
    """The 2-D discrete Fourier transform over ``axes`` (the last two by default)."""
    return _into(out, fft_c2c("fft2", x, s, axes, norm, forward=True))


def ifft2(x, s=None, axes=_LAST_TWO, norm="backward", name=None, *, out=None) -> Tensor:
    """The 2-D inverse discrete Fourier transform over ``axes``."""
    return _into(out, fft_c2c("ifft2", x, s, axes, norm, forward=False))


def fftn(x, s=None, axes=None, norm="backward", name=None, *, out=None) -> Tensor:
    """The n-D discrete Fourier transform over ``axes`` (default: the last ``len(s)``, else all)."""
    return _into(out, fft_c2c("fftn", x, s, axes, norm, forward=True))


def ifftn(x, s=None, axes=None, norm="backward", name=None, *, out=None) -> Tensor:
    """The n-D inverse discrete Fourier transform over ``axes``."""
    return _into(out, fft_c2c("ifftn", x, s, axes, norm, forward=False))


# -- real to onesided complex, and back -------------------------------------------------------------------
def rfft(x, n=None, axis=-1, norm="backward", name=None, *, out=None) -> Tensor:
    """The transform of a real tensor along ``axis``: its ``n // 2 + 1`` non-negative frequencies.

    >>> import oar
    >>> oar.fft.rfft(oar.to_tensor([1.0, 2.0, 3.0, 4.0])).tolist()
    [(10+0j), (-2+2j), (-2+0j)]
    """
    return _into(out, fft_r2c("rfft", x, _one(n), [axis], norm))


def irfft(x, n=None, axis=-1, norm="backward", name=None, *, out=None) -> Tensor:
    """The real inverse of ``rfft``: output length ``n`` along ``axis`` (default ``2 * (m - 1)``).

    >>> import oar
    >>> oar.fft.irfft(oar.to_tensor([10 + 0j, -2 + 2j, -2 + 0j])).tolist()
    [1.0, 2.0, 3.0, 4.0]
    """
    return _into(out, fft_c2r("irfft", x, _one(n), [axis], norm))


def rfft2(x, s=None, axes=_LAST_TWO, norm="backward", name=None, *, out=None) -> Tensor:
    """The 2-D transform of a real tensor, onesided along the last of ``axes``."""
    return _into(out, fft_r2c("rfft2", x, s, axes, norm))


def irfft2(x, s=None, axes=_LAST_TWO, norm="backward", name=None, *, out=None) -> Tensor:
    """The real inverse of ``rfft2``."""
    return _into(out, fft_c2r("irfft2", x, s, axes, norm))


def rfftn(x, s=None, axes=None, norm="backward", name=None, *, out=None) -> Tensor:
    """The n-D transform of a real tensor, onesided along the last of ``axes``."""
    return _into(out, fft_r2c("rfftn", x, s, axes, norm))


def irfftn(x, s=None, axes=None, norm="backward", name=None, *, out=None) -> Tensor:
    """The real inverse of ``rfftn``."""
    return _into(out, fft_c2r("irfftn", x, s, axes, norm))


# -- Hermitian: hfft = irfft of the conjugate, ihfft = conjugate of rfft, scaling swapped ------------------
def hfft(x, n=None, axis=-1, norm="backward", name=None, *, out=None) -> Tensor:
    """The transform of a signal with Hermitian symmetry, given by its first half: a real output
    of length ``n`` (default ``2 * (m - 1)``).

    >>> import oar
    >>> oar.fft.hfft(oar.to_tensor([1.0, 2.0, 3.0])).tolist()
    [8.0, -2.0, 0.0, -2.0]
    """
    return _into(out, fft_c2r("hfft", conj(as_tensor(x, "x", "hfft")), _one(n), [axis], swap_norm(norm)))


def ihfft(x, n=None, axis=-1, norm="backward", name=None, *, out=None) -> Tensor:
    """The inverse of ``hfft``: the onesided inverse transform of a real tensor."""
    return _into(out, conj(fft_r2c("ihfft", x, _one(n), [axis], swap_norm(norm))))


def hfft2(x, s=None, axes=_LAST_TWO, norm="backward", name=None, *, out=None) -> Tensor:
    """The 2-D ``hfft``."""
    return _into(out, fft_c2r("hfft2", conj(as_tensor(x, "x", "hfft2")), s, axes, swap_norm(norm)))


def ihfft2(x, s=None, axes=_LAST_TWO, norm="backward", name=None, *, out=None) -> Tensor:
    """The 2-D ``ihfft``."""
    return _into(out, conj(fft_r2c("ihfft2", x, s, axes, swap_norm(norm))))


def hfftn(x, s=None, axes=None, norm="backward", name=None, *, out=None) -> Tensor:
    """The n-D ``hfft``."""
    return _into(out, fft_c2r("hfftn", conj(as_tensor(x, "x", "hfftn")), s, axes, swap_norm(norm)))


def ihfftn(x, s=None, axes=None, norm="backward", name=None, *, out=None) -> Tensor:
    """The n-D ``ihfft``."""
    return _into(out, conj(fft_r2c("ihfftn", x, s, axes, swap_norm(norm))))


# -- frequencies and shifts -------------------------------------------------------------------------------
def _frequencies(op: str, values, n, d, dtype, out, device, requires_grad) -> Tensor:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n <= 0:
        raise ArgumentError(f"{op}: n must be a positive int, got {n!r}")
    target = dtype_arg(dtype, op, kinds=("float",))
    result = to_tensor(values(int(n), d=float(d)), dtype=target, place=device, stop_gradient=not requires_grad)
    return _into(out, result)


def fftfreq(n, d=1.0, dtype=None, name=None, *, out=None, device=None, requires_grad=False) -> Tensor:
    """The sample frequencies of an ``n``-point transform with sample spacing ``d`` (default dtype).

    >>> import oar
    >>> oar.fft.fftfreq(4).tolist()
    [0.0, 0.25, -0.5, -0.25]
    """
    return _frequencies("fftfreq", np.fft.fftfreq, n, d, dtype, out, device, requires_grad)


def rfftfreq(n, d=1.0, dtype=None, name=None, *, out=None, device=None, requires_grad=False) -> Tensor:
    """The non-negative sample frequencies of ``rfft`` of ``n`` points.

    >>> import oar
    >>> oar.fft.rfftfreq(4).tolist()
    [0.0, 0.25, 0.5]
    """
    return _frequencies("rfftfreq", np.fft.rfftfreq, n, d, dtype, out, device, requires_grad)


def _shift(op: str, x, axes, sign: int) -> Tensor:
    x = as_tensor(x, "x", op)
    if axes is None:
        axes = list(range(x.ndim))
    elif isinstance(axes, (int, np.integer)):
        axes = [axes]
    axes = [normalize_axis(a, x.ndim, op, "axes") for a in axes]
    if not axes:
        return x
    shifts = [sign * (x._data.shape[a] // 2) for a in axes]
    return roll(x, shifts, axes)


def fftshift(x, axes=None, name=None) -> Tensor:
    """``x`` rolled so that the zero frequency is in the middle of each of ``axes`` (default all).

    >>> import oar
    >>> oar.fft.fftshift(oar.fft.fftfreq(5)).tolist()
    [-0.4000000059604645, -0.20000000298023224, 0.0, 0.20000000298023224, 0.4000000059604645]
    """
    return _shift("fftshift", x, axes, 1)


def ifftshift(x, axes=None, name=None) -> Tensor:
    """The inverse of ``fftshift``."""
    return _shift("ifftshift", x, axes, -1)
