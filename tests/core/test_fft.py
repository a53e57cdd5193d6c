"""``oar.fft`` and ``oar.signal`` against numpy.fft and numbers recorded from Paddle 3.3.1.

The three fft ops' forward, gradient and to_static checks are the op table's
(tests/core/op_cases/complex.py); here: every public function's arguments (n / s, axis / axes,
norm), dtypes and errors, and stft / istft as Paddle computes them.
"""

from __future__ import annotations

import numpy as np
import pytest

import oar
import oar as paddle
from oar.errors import ArgumentError, DTypeError, ShapeError
from oar.testing import TOLERANCES, numeric_gradient, sum_tolerance

F = oar.fft
F64 = dict(zip(("rtol", "atol"), TOLERANCES["float64"]))
_rng = np.random.default_rng(7)
REAL = _rng.standard_normal((3, 6))
CPLX = _rng.standard_normal((3, 5)) + 1j * _rng.standard_normal((3, 5))
CUBE = _rng.standard_normal((2, 3, 4)) + 1j * _rng.standard_normal((2, 3, 4))


def conj_swapped(transform, norm):
    swap = {"backward": "forward", "forward": "backward", "ortho": "ortho"}[norm]
    return lambda a, **kw: transform(np.conj(a), norm=swap, **kw)


# (oar function, numpy reference, input, keyword arguments); numpy has no hfft2 / hfftn / ihfft2 /
# ihfftn: they are irfftn of the conjugate and the conjugate of rfftn with the scaling swapped, as
# numpy's hfft / ihfft (Paddle 3.3.1 gives the same).
CASES = [
    (F.fft, np.fft.fft, REAL, {}),
    (F.fft, np.fft.fft, CPLX, {"n": 8, "axis": 0, "norm": "ortho"}),
    (F.ifft, np.fft.ifft, CPLX, {"n": 3, "norm": "forward"}),
    (F.rfft, np.fft.rfft, REAL, {"n": 9}),
    (F.irfft, np.fft.irfft, CPLX, {}),
    (F.irfft, np.fft.irfft, CPLX, {"n": 7, "axis": 0, "norm": "ortho"}),
    (F.hfft, np.fft.hfft, CPLX, {"n": 6}),
    (F.ihfft, np.fft.ihfft, REAL, {"norm": "ortho"}),
    (F.fft2, np.fft.fft2, CPLX, {"s": (2, 7)}),
    (F.ifft2, np.fft.ifft2, CUBE, {"axes": (0, 2), "norm": "ortho"}),
    (F.rfft2, np.fft.rfft2, REAL, {"norm": "forward"}),
    (F.irfft2, np.fft.irfft2, CPLX, {"s": (4, 4)}),
    (F.fftn, np.fft.fftn, CUBE, {}),
    (F.ifftn, np.fft.ifftn, CUBE, {"s": (3, 2), "axes": (0, 1)}),
    (F.rfftn, np.fft.rfftn, REAL, {"s": (5,), "axes": (0,)}),
    (F.irfftn, np.fft.irfftn, CUBE, {"axes": (1, 2)}),
    (F.hfft2, conj_swapped(lambda a, norm, **kw: np.fft.irfftn(a, axes=(0, 1), norm=norm, **kw), "backward"),
     CPLX, {}),
    (F.hfftn, conj_swapped(lambda a, norm, **kw: np.fft.irfftn(a, axes=(1, 2), norm=norm, **kw), "ortho"),
     CUBE, {"axes": (1, 2), "norm": "ortho"}),
    (F.ihfft2, lambda a: np.conj(np.fft.rfft2(a, norm="forward")), REAL, {}),
    (F.ihfftn, lambda a: np.conj(np.fft.rfftn(a, s=(2, 8), axes=(0, 1), norm="backward")), REAL,
     {"s": (2, 8), "norm": "forward"}),
]


def _reference_kwargs(kwargs, numpy_fn):
    if numpy_fn in (np.fft.fft2, np.fft.ifft2, np.fft.rfft2, np.fft.irfft2, np.fft.fftn, np.fft.ifftn,
                    np.fft.rfftn, np.fft.irfftn, np.fft.fft, np.fft.ifft, np.fft.rfft, np.fft.irfft,
                    np.fft.hfft, np.fft.ihfft):
        return kwargs
    return {}  # the lambdas above bake their arguments in


@pytest.mark.parametrize("fn, ref, x, kwargs", CASES, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_every_transform_matches_numpy(fn, ref, x, kwargs):
    got = fn(oar.to_tensor(x), **kwargs)
    expected = ref(x, **_reference_kwargs(kwargs, ref))
    assert got.shape == list(expected.shape)
    assert got.dtype == (oar.complex128 if np.iscomplexobj(expected) else oar.float64)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10, atol=1e-12)


def test_the_key_user_path_matches_numpy():
    x = paddle.to_tensor(np.random.default_rng(0).random(8))
    np.testing.assert_allclose(paddle.fft.rfft(x).numpy(), np.fft.rfft(x.numpy()), **F64)
    np.testing.assert_allclose(paddle.fft.irfft(paddle.fft.rfft(x)).numpy(), x.numpy(), **F64)


def test_dtypes_as_paddle():
    # Paddle 3.3.1: ints and float32 give complex64, float64 complex128; float16 computes in float32
    assert F.fft(oar.to_tensor([1, 2, 3])).dtype == oar.complex64
    assert F.rfft(oar.to_tensor([1.0, 2.0])).dtype == oar.complex64
    assert F.rfft(oar.to_tensor([1.0, 2.0], dtype="float16")).dtype == oar.complex64
    assert F.irfft(oar.to_tensor([1 + 0j, 2j])).dtype == oar.float32
    assert F.irfft(oar.to_tensor(REAL)).dtype == oar.float64  # a real spectrum is made complex first
    x32 = np.linspace(-1, 1, 16).astype(np.float32)
    rtol, atol = sum_tolerance("float32", terms=16, scale=16)
    np.testing.assert_allclose(F.fft(oar.to_tensor(x32)).numpy(), np.fft.fft(x32.astype(np.float64)),
                               rtol=rtol, atol=atol)


@pytest.mark.parametrize("call, error, message", [
    (lambda: F.rfft(oar.to_tensor([1j])), DTypeError, r"rfft: x must be a real .* got complex64"),
    (lambda: F.fft2(oar.to_tensor([1.0, 2.0])), ShapeError, r"fft2: x of shape \[2\] has too few dimensions"),
    (lambda: F.fft(oar.to_tensor(REAL), norm="bad"), ArgumentError, r"fft: norm must be one of .* got 'bad'"),
    (lambda: F.fft(oar.to_tensor(REAL), n=0), ArgumentError, r"fft: the transform sizes .* positive ints, got \[0\]"),
    (lambda: F.fftn(oar.to_tensor(REAL), s=[2], axes=[0, 1]), ArgumentError, r"fftn: s \[2\] and axes \[0, 1\]"),
    (lambda: F.fftn(oar.to_tensor(REAL), axes=[1, -1]), ArgumentError, r"fftn: axes \[1, 1\] name an axis twice"),
    (lambda: F.fft(oar.to_tensor([True])), DTypeError, r"fft: x must be a numeric tensor, got bool"),
    (lambda: F.fft(oar.to_tensor(REAL), axis=2), ArgumentError, r"fft: axes=2 is out of range"),
    (lambda: F.fftfreq(0), ArgumentError, r"fftfreq: n must be a positive int"),
])
def test_bad_arguments_say_what_is_wrong(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_out_arguments_receive_the_result():
    out = oar.zeros([1])
    result = F.rfft(oar.to_tensor(REAL), out=out)
    assert result is out and out.dtype == oar.complex128
    np.testing.assert_allclose(out.numpy(), np.fft.rfft(REAL), **F64)
    freq = oar.zeros([1])
    assert F.fftfreq(4, out=freq) is freq and freq.tolist() == [0.0, 0.25, -0.5, -0.25]
    assert not F.rfftfreq(4, requires_grad=True).stop_gradient
    z = oar.zeros([1])
    assert oar.polar(oar.to_tensor([2.0]), oar.to_tensor([0.0]), out=z) is z and z.tolist() == [2 + 0j]


def test_frequencies_and_shifts():
    np.testing.assert_allclose(F.fftfreq(5, d=0.5).numpy(), np.fft.fftfreq(5, 0.5), rtol=1e-6)
    assert F.fftfreq(5).dtype == oar.float32 and F.rfftfreq(6, dtype="float64").dtype == oar.float64
    np.testing.assert_allclose(F.rfftfreq(6, dtype="float64").numpy(), [0.0, 1 / 6, 1 / 3, 0.5], **F64)
    np.testing.assert_array_equal(F.fftshift(oar.to_tensor(CUBE)).numpy(), np.fft.fftshift(CUBE))
    np.testing.assert_array_equal(F.ifftshift(oar.to_tensor(CUBE), axes=(0, 2)).numpy(),
                                  np.fft.ifftshift(CUBE, axes=(0, 2)))
    np.testing.assert_array_equal(F.fftshift(oar.to_tensor(REAL), axes=1).numpy(), np.fft.fftshift(REAL, axes=1))


def test_rfft_gradient_matches_paddle():
    r = oar.to_tensor(np.arange(8.0), stop_gradient=False)
    oar.abs(F.rfft(r, norm="ortho")).sum().backward()
    expected = [-0.7119397663, 0.265765065, 0.0586582838, 0.4951670149, 0.2119397663, 0.6484484974,
                0.4413417162, 1.4190465474]  # Paddle 3.3.1
    np.testing.assert_allclose(r.grad.numpy(), expected, rtol=1e-9, atol=1e-10)


# -- oar.signal --------------------------------------------------------------------------------------------
SIGNAL = np.cos(0.7 * np.arange(12)) + 0.05 * np.arange(12)


def test_stft_matches_paddle_real_input():
    window = oar.to_tensor(np.array([0.2, 0.6, 1.0, 0.9, 0.5]))
    got = oar.signal.stft(oar.to_tensor(SIGNAL), n_fft=6, hop_length=3, win_length=5, window=window)
    expected = np.array([  # Paddle 3.3.1
        [2.2132743457, 0.2683997908, -1.1057378671, 3.3912450358, 3.599128289],
        [-1.5011107185 - 0.4931160595j, 0.814386164 - 0.9785945256j, 0.0866990674 + 1.2124756418j,
         -2.083229729 - 0.7538943164j, -1.1765212154 - 0.6328791511j],
        [0.1369089957 + 0.2125579748j, -0.3132421366 + 0.1317856845j, 0.1895629934 - 0.4411355591j,
         0.2046083948 + 0.1963343067j, 0.3281614898 - 0.6702142963j],
        [0.0893137743, -0.0706878457, 0.1273984201, 0.137684647, -0.162578474],
    ])
    assert got.dtype == oar.complex128 and got.shape == [4, 5]
    np.testing.assert_allclose(got.numpy(), expected, rtol=0, atol=1e-9)


def test_stft_matches_paddle_complex_batch_constant_padding():
    steps = np.arange(10)
    x = np.stack([np.sin(0.5 * steps), steps / 10.0]) + 1j * np.stack([steps % 3, np.cos(steps)])
    got = oar.signal.stft(oar.to_tensor(x), n_fft=4, hop_length=2, pad_mode="constant", normalized=True)
    assert got.shape == [2, 4, 6] and got.dtype == oar.complex128
    expected_first_frames = np.array([  # Paddle 3.3.1, [:, :, :3]
        [[0.2397127693 + 0.5j, 1.159195755 + 1.5j, 1.6733677712 + 2.5j],
         [-0.5 + 0.2397127693j, 0.0792645076 - 0.740965276j, -1.033913221 + 0.3004885787j],
         [-0.2397127693 - 0.5j, -0.3177247702 + 0.5j, 0.0774006405 + 0.5j],
         [0.5 - 0.2397127693j, -0.9207354924 - 1.259034724j, 0.966086779 + 0.6995114213j]],
        [[0.05 + 0.7701511529j, 0.3 + 0.0670814864j, 0.7 - 0.8880603843j],
         [-0.2701511529 - 0.45j, 0.6651474012 + 0.8080734183j, -0.736827341 + 0.2187483922j],
         [-0.05 + 0.2298488471j, -0.1 + 0.5167716771j, -0.1 - 0.1817300731j],
         [0.2701511529 - 0.55j, -0.8651474012 + 0.6080734183j, 0.536827341 + 0.0187483922j]],
    ])
    np.testing.assert_allclose(got.numpy()[:, :, :3], expected_first_frames, rtol=0, atol=1e-9)


def test_stft_float32_twosided_without_centering_matches_paddle():
    got = oar.signal.stft(oar.to_tensor(SIGNAL.astype(np.float32)), n_fft=4, center=False, onesided=False)
    assert got.shape == [4, 9] and got.dtype == oar.complex64
    expected = np.array([  # Paddle 3.3.1, [:, :3]
        [1.729963, -0.012259, -1.513558],
        [0.730033 - 1.169688j, 1.169688 - 1.01219j, 1.01219 - 0.331611j],
        [0.809971, 0.932251, 0.569048],
        [0.730033 + 1.169688j, 1.169688 + 1.01219j, 1.01219 + 0.331611j],
    ])
    np.testing.assert_allclose(got.numpy()[:, :3], expected, rtol=0, atol=2e-6)


SPECTRUM = (np.arange(20).reshape(5, 4) % 7 - 3.0) + 1j * (np.arange(20).reshape(5, 4) % 5 - 2.0)
HANN = np.hanning(8) + 0.1


def test_istft_matches_paddle():
    window = oar.to_tensor(HANN)
    got = oar.signal.istft(oar.to_tensor(SPECTRUM), n_fft=8, hop_length=2, window=window)
    expected = [-0.8057892792, 0.5804689671, -0.7258589484, -1.4993141787, -0.3378561641, -0.2651277806]
    np.testing.assert_allclose(got.numpy(), expected, rtol=0, atol=1e-9)  # Paddle 3.3.1
    got = oar.signal.istft(oar.to_tensor(SPECTRUM), n_fft=8, hop_length=2, window=window, center=False, length=9,
                           normalized=True)
    expected = [-7.0710678119, -10.1098421911, -1.5385836721, -0.9579600826, -2.2791162542, 1.6418141716,
                -2.0530391384, -4.2407008915, -0.9556015389]  # Paddle 3.3.1
    np.testing.assert_allclose(got.numpy(), expected, rtol=0, atol=1e-9)


def test_istft_inverts_stft():
    x = oar.to_tensor(np.random.default_rng(1).standard_normal((2, 40)))
    spectrum = x.stft(n_fft=16, hop_length=4)
    np.testing.assert_allclose(spectrum.istft(n_fft=16, hop_length=4, length=40).numpy(), x.numpy(), **F64)
    z = oar.complex(x, x * 2.0)
    twosided = oar.signal.stft(z, n_fft=8, window=oar.to_tensor(HANN))
    back = oar.signal.istft(twosided, n_fft=8, window=oar.to_tensor(HANN), onesided=False, return_complex=True)
    np.testing.assert_allclose(back.numpy(), z.numpy(), **F64)


def test_istft_gradient_against_finite_differences():
    weights = np.random.default_rng(2).standard_normal(6)

    def loss(re, im):
        out = oar.signal.istft(oar.complex(re, im), n_fft=8, hop_length=2, window=oar.to_tensor(HANN))
        return (out * oar.to_tensor(weights)).sum()

    re, im = SPECTRUM.real.copy(), SPECTRUM.imag.copy()
    re_t, im_t = oar.to_tensor(re, stop_gradient=False), oar.to_tensor(im, stop_gradient=False)
    loss(re_t, im_t).backward()
    numeric_re = numeric_gradient(lambda a: float(loss(oar.to_tensor(a), oar.to_tensor(im))), re)
    numeric_im = numeric_gradient(lambda b: float(loss(oar.to_tensor(re), oar.to_tensor(b))), im)
    np.testing.assert_allclose(re_t.grad.numpy(), numeric_re, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(im_t.grad.numpy(), numeric_im, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("call, error, message", [
    (lambda: oar.signal.stft(oar.ones([2, 2, 8]), 4), ShapeError, r"stft: x must be 1-D or 2-D"),
    (lambda: oar.signal.stft(oar.ones([8]), 16), ArgumentError, r"stft: n_fft=16 is larger than the signal's length 8"),
    (lambda: oar.signal.stft(oar.ones([8]), 4, win_length=6), ArgumentError, r"win_length=6 must be at most n_fft=4"),
    (lambda: oar.signal.stft(oar.ones([8]), 4, window=oar.ones([3])), ShapeError, r"window must be 1-D of size"),
    (lambda: oar.signal.stft(oar.ones([8]), 4, pad_mode="edge"), ArgumentError, r"pad_mode must be 'reflect' or"),
    (lambda: oar.signal.stft(oar.to_tensor([1j] * 8), 4, onesided=True), ArgumentError, r"onesided must be False"),
    (lambda: oar.signal.istft(oar.ones([3, 4]), 4), DTypeError, r"istft: x must be a complex tensor"),
    (lambda: oar.signal.istft(oar.to_tensor(SPECTRUM), 6), ShapeError, r"istft: x has 5 frequencies, expected 4"),
    (lambda: oar.signal.istft(oar.to_tensor(SPECTRUM), 8, hop_length=2, window=oar.zeros([8])), ArgumentError,
     r"Nonzero Overlap Add"),
    (lambda: oar.signal.istft(oar.to_tensor(SPECTRUM), 8, return_complex=True), ArgumentError,
     r"return_complex=True needs onesided=False"),
])
def test_signal_errors_say_what_is_wrong(call, error, message):
    with pytest.raises(error, match=message):
        call()
