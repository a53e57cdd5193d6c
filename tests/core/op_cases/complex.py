"""Op cases of the complex family: complex tensors' parts, arithmetic on them, and the Fourier
transforms (``oar._ops.complex``, ``oar.fft``, ``oar.signal``).

The harness casts, compares and differentiates real arrays, so every case takes real inputs (a
complex input is built inside the case with ``oar.complex(re, im)``) and returns real outputs
(``as_real`` of a complex result, or its abs / angle / real / imag): the gradient checks then
cover the chains real -> complex -> real of Paddle's convention, against finite differences in
float64. float32 inputs compute in complex64, compared with a float64 reference within the
rounding of an ``n``-term sum (``sum_tolerance``).
"""

from __future__ import annotations

import numpy as np

import oar
from oar.testing import OpCase, sum_tolerance

from ._data import away_from, positive, rand

F = oar.fft
C = oar.complex


def pairs(z) -> np.ndarray:
    """numpy's ``view_as_real``: a complex array as [..., 2] (real, imag)."""
    z = np.asarray(z)
    return np.stack([z.real, z.imag], axis=-1)


def fft_tol(terms: int, scale: float = 1.0) -> dict:
    rtol, atol = sum_tolerance("float32", terms=terms, scale=scale * terms)
    return {"rtol": rtol, "atol": atol}


def np_stft(x, n_fft, hop, window, center=True, pad_mode="reflect", onesided=True, norm="backward"):
    """Paddle's stft in numpy: pad, frame, window, transform ([..., freq, frames])."""
    if center:
        pad = [(0, 0)] * (x.ndim - 1) + [(n_fft // 2, n_fft // 2)]
        x = np.pad(x, pad, mode=pad_mode)
    frames = 1 + (x.shape[-1] - n_fft) // hop
    index = np.arange(n_fft)[:, None] + hop * np.arange(frames)[None, :]
    framed = x[..., index] * window[:, None]
    transform = np.fft.rfft if onesided else np.fft.fft
    return transform(framed, axis=-2, norm=norm)


WINDOW = np.hanning(8) + 0.1
RE, IM = rand(3, 4), rand(3, 4)
NONZERO_RE, NONZERO_IM = away_from(rand(2, 3), margin=0.2), away_from(rand(2, 3), margin=0.2)

CASES = [
    # -- parts and views ---------------------------------------------------------------------------
    OpCase("complex", lambda a, b: oar.as_real(C(a, b)), lambda a, b: pairs(a + 1j * b), [rand(2, 3), rand(3)],
           id="complex_broadcast"),
    OpCase("real", lambda a, b: oar.real(C(a, b) * C(b, a)), lambda a, b: np.real((a + 1j * b) * (b + 1j * a)),
           [RE, IM], id="real_of_product"),
    OpCase("imag", lambda a, b: oar.imag(C(a, b) * C(b, a)), lambda a, b: np.imag((a + 1j * b) * (b + 1j * a)),
           [RE, IM], id="imag_of_product"),
    OpCase("angle", lambda a, b: oar.angle(C(a, b)), lambda a, b: np.angle(a + 1j * b), [NONZERO_RE, NONZERO_IM],
           id="angle_complex"),
    OpCase("angle", oar.angle, np.angle, [away_from(rand(2, 3))], id="angle_real"),
    OpCase("as_complex", lambda x: oar.as_real(oar.as_complex(x) * oar.as_complex(x)),
           lambda x: pairs((x[..., 0] + 1j * x[..., 1]) ** 2), [rand(3, 2)]),
    OpCase("as_real", lambda a, b: oar.as_real(C(a, b)), lambda a, b: pairs(a + 1j * b), [RE, IM]),
    OpCase("conj", lambda a, b: oar.as_real(oar.conj(C(a, b)) * C(a, a)),
           lambda a, b: pairs(np.conj(a + 1j * b) * (a + 1j * a)), [RE, IM], id="conj_complex"),
    OpCase("conj", oar.conj, np.conj, [rand(2, 3)], id="conj_real"),
    # -- arithmetic on complex tensors (gradients: the conjugated derivative) -------------------------
    OpCase("abs", lambda a, b: oar.abs(C(a, b)), lambda a, b: np.abs(a + 1j * b), [NONZERO_RE, NONZERO_IM],
           id="abs_complex"),
    OpCase("multiply", lambda a, b: oar.as_real(C(a, b) * a), lambda a, b: pairs((a + 1j * b) * a), [RE, IM],
           id="multiply_complex_by_real"),
    OpCase("divide", lambda a, b, c: oar.as_real(C(a, b) / C(c, a)),
           lambda a, b, c: pairs((a + 1j * b) / (c + 1j * a)), [RE, IM, positive(3, 4)], id="divide_complex"),
    OpCase("exp", lambda a, b: oar.as_real(oar.exp(C(a, b))), lambda a, b: pairs(np.exp(a + 1j * b)), [RE, IM],
           id="exp_complex"),
    OpCase("sqrt", lambda a, b: oar.as_real(oar.sqrt(C(a, b))), lambda a, b: pairs(np.sqrt(a + 1j * b)),
           [positive(2, 3), rand(2, 3)], id="sqrt_complex"),
    OpCase("pow", lambda a, b: oar.as_real(C(a, b) ** 3), lambda a, b: pairs((a + 1j * b) ** 3), [RE, IM],
           id="pow_complex"),
    OpCase("add", lambda a, b: oar.as_real(C(a, b) + b - C(b, a)),
           lambda a, b: pairs((a + 1j * b) + b - (b + 1j * a)), [RE, IM], id="add_subtract_complex"),
    # -- fft_c2c ------------------------------------------------------------------------------------
    OpCase("fft_c2c", lambda x: oar.as_real(F.fft(x)), lambda x: pairs(np.fft.fft(x)), [rand(2, 8)],
           id="fft_of_real", **fft_tol(8)),
    OpCase("fft_c2c", lambda a, b: oar.as_real(F.ifft(C(a, b), n=2, axis=0, norm="ortho")),
           lambda a, b: pairs(np.fft.ifft(a + 1j * b, n=2, axis=0, norm="ortho")), [RE, IM], id="ifft_cropped_ortho",
           **fft_tol(4)),
    OpCase("fft_c2c", lambda a, b: oar.as_real(F.fft2(C(a, b), s=(4, 6), norm="forward")),
           lambda a, b: pairs(np.fft.fft2(a + 1j * b, s=(4, 6), norm="forward")), [RE, IM], id="fft2_padded_forward",
           **fft_tol(24)),
    OpCase("fft_c2c", lambda a, b: oar.as_real(F.ifftn(C(a, b))), lambda a, b: pairs(np.fft.ifftn(a + 1j * b)),
           [rand(2, 3, 4), rand(2, 3, 4)], id="ifftn_all_axes", **fft_tol(24)),
    # -- fft_r2c ------------------------------------------------------------------------------------
    OpCase("fft_r2c", lambda x: oar.as_real(F.rfft(x)), lambda x: pairs(np.fft.rfft(x)), [rand(3, 8)], id="rfft",
           **fft_tol(8)),
    OpCase("fft_r2c", lambda x: oar.abs(F.rfft(x, n=11, axis=0, norm="ortho")),
           lambda x: np.abs(np.fft.rfft(x, n=11, axis=0, norm="ortho")), [rand(7, 2) + 2.0], id="rfft_padded_abs",
           **fft_tol(11)),
    OpCase("fft_r2c", lambda x: oar.as_real(F.rfft2(x, s=(2, 5))), lambda x: pairs(np.fft.rfft2(x, s=(2, 5))),
           [rand(3, 4)], id="rfft2_cropped_padded", **fft_tol(10)),
    OpCase("fft_r2c", lambda x: oar.as_real(F.ihfft(x, norm="forward")),
           lambda x: pairs(np.fft.ihfft(x, norm="forward")), [rand(2, 7)], id="ihfft", **fft_tol(7)),
    OpCase("fft_r2c", lambda x: oar.as_real(F.rfftn(x, axes=(0, 2))), lambda x: pairs(np.fft.rfftn(x, axes=(0, 2))),
           [rand(3, 2, 4)], id="rfftn_two_axes", **fft_tol(12)),
    # -- fft_c2r ------------------------------------------------------------------------------------
    OpCase("fft_c2r", lambda a, b: F.irfft(C(a, b)), lambda a, b: np.fft.irfft(a + 1j * b), [RE, IM], id="irfft",
           **fft_tol(6)),
    OpCase("fft_c2r", lambda a, b: F.irfft(C(a, b), n=7, axis=0, norm="ortho"),
           lambda a, b: np.fft.irfft(a + 1j * b, n=7, axis=0, norm="ortho"), [RE, IM], id="irfft_odd_ortho",
           **fft_tol(7)),
    OpCase("fft_c2r", lambda a, b: F.irfftn(C(a, b), s=(2, 9)), lambda a, b: np.fft.irfftn(a + 1j * b, s=(2, 9), axes=(0, 1)),
           [RE, IM], id="irfftn_resized", **fft_tol(18)),
    OpCase("fft_c2r", lambda a, b: F.hfft(C(a, b), n=6, norm="forward"),
           lambda a, b: np.fft.hfft(a + 1j * b, n=6, norm="forward"), [RE, IM], id="hfft", **fft_tol(6)),
    OpCase("fft_c2r", lambda a, b: F.hfft2(C(a, b)),
           lambda a, b: np.fft.irfftn(np.conj(a + 1j * b), axes=(0, 1), norm="forward"), [RE, IM], id="hfft2",
           **fft_tol(18)),
    # -- the short-time transform: gather (pad + frame), window, r2c / c2c ---------------------------------
    OpCase("fft_r2c", lambda x: oar.as_real(oar.signal.stft(x, n_fft=8, hop_length=3, window=oar.to_tensor(WINDOW))),
           lambda x: pairs(np_stft(x, 8, 3, WINDOW)), [rand(2, 20)], id="stft_reflect", **fft_tol(8, 2.0)),
    OpCase("fft_c2c", lambda a, b: oar.as_real(oar.signal.stft(C(a, b), n_fft=4, hop_length=2, pad_mode="constant",
                                                                normalized=True)),
           lambda a, b: pairs(np_stft(a + 1j * b, 4, 2, np.ones(4), pad_mode="constant", onesided=False,
                                      norm="ortho")),
           [rand(10), rand(10)], id="stft_complex_constant", **fft_tol(4)),
]
