"""Complex tensors: complex64 and complex128, their parts (real, imag, angle, conj) and views as
real pairs; the fft family's ops.

Gradients follow Paddle's and PyTorch's convention: the gradient of a real loss ``L`` with respect
to a complex tensor ``z = a + ib`` is ``dL/da + i dL/db`` (twice the conjugate Wirtinger
derivative), so a holomorphic op's rule multiplies by its conjugated derivative and a linear map's
rule is its adjoint. ``conj`` lives with the arithmetic ops (``oar._ops.elementwise``), whose
gradients need it.

The discrete Fourier transforms are three ops, as in Paddle (``fft_c2c``, ``fft_r2c``,
``fft_c2r``), each over a list of axes with a ``norm`` of ``"backward"`` (scale the inverse by
``1/n``), ``"ortho"`` (both by ``1/sqrt(n)``) or ``"forward"`` (the forward by ``1/n``):

======== ================================ =============================================
op       computes                         gradient
======== ================================ =============================================
c2c      ``fftn`` / ``ifftn``             c2c the other way, with the dual norm
r2c      ``rfftn`` (onesided)             the gradient zero-filled to full length, c2c
                                          inverse with the dual norm, its real part
c2r      ``irfftn`` (output length ``n``) r2c with the dual norm, bins ``1 .. n-m`` doubled
                                          (each stands for itself and its mirror image)
======== ================================ =============================================

The dual of a norm has the scaling on the other side (backward <-> forward, ortho stays): the
adjoint of ``fft(norm="backward")``, the unscaled DFT, is the unscaled inverse,
``ifft(norm="forward")``. Cropping or zero-padding to ``n`` / ``s`` happens before an op, with
``slice`` and ``concat``, so their gradients cover it.

Differences from Paddle: ``view_as_real`` / ``view_as_complex`` (and ``as_real`` / ``as_complex``)
return new tensors, not views sharing memory; ``complex`` promotes float32 with float64 (Paddle's
kernel fails on that mix).
"""

from __future__ import annotations

import numpy as np

from oar._engine import dtypes as _dt
from oar._engine.op import Op
from oar._engine.tensor import to_tensor
from oar._ops._common import Tensor, TensorMeta, as_tensor, broadcast_shapes, dispatch, normalize_axis
from oar._ops.assign import assign
from oar._ops.creation import ones, ones_like, zeros, zeros_like
from oar._ops.elementwise import ELEMENTWISE, cast, cos, equal, sin
from oar._ops.indexing import index_add, index_select
from oar._ops.reduction import unbroadcast
from oar._ops.shape import concat, reshape, slice, squeeze, tile, unsqueeze
from oar.errors import ArgumentError, DTypeError, ShapeError

REAL_FLOATS = (_dt.float32, _dt.float64)  # the parts of complex64 and complex128

complex64 = _dt.complex64
complex128 = _dt.complex128
cfloat = _dt.complex64
cdouble = _dt.complex128


def _require_complex(op: str, arg: str, dtype: _dt.DType) -> None:
    if not dtype.is_complex:
        raise DTypeError(f"{op}: {arg} must be a complex tensor (complex64 or complex128), got {dtype.name}")


def _require_real_float(op: str, arg: str, dtype: _dt.DType) -> None:
    if dtype not in REAL_FLOATS:
        raise DTypeError(f"{op}: {arg} must be a float32 or float64 tensor, got {dtype.name}")


def _part_meta(op: str):
    """Meta of an op taking a complex tensor to a real one of its parts' dtype (real, imag)."""

    def meta(x: TensorMeta) -> TensorMeta:
        _require_complex(op, "x", x.dtype)
        return TensorMeta(x.shape, _dt.real_of(x.dtype))

    return meta


def _unary(op: Op, x, fn: str) -> Tensor:
    x = as_tensor(x, "x", fn)
    op.meta(TensorMeta(tuple(x._data.shape), x.dtype))  # a clear error before any kernel runs
    return dispatch(op, (x,), {})


# -- complex(real, imag) and polar ------------------------------------------------------------------
def _complex_kernel(real, imag):
    dtype = _dt.complex_of(_dt.NP_TO_DTYPE[real.dtype]).np
    out = np.empty(np.broadcast_shapes(real.shape, imag.shape), dtype)
    out.real, out.imag = real, imag
    return out


def _complex_meta(real: TensorMeta, imag: TensorMeta) -> TensorMeta:
    for arg, m in (("real", real), ("imag", imag)):
        _require_real_float("complex", arg, m.dtype)
    shape = broadcast_shapes("complex", real.shape, imag.shape, names=["real", "imag"])
    return TensorMeta(shape, _dt.complex_of(_dt.PROMOTION_TABLE[real.dtype, imag.dtype]))


complex_op = Op("complex", reference=_complex_kernel, meta=_complex_meta, traits=("elementwise", "binary"),
                promote=_dt.PROMOTE_FLOATS, dtypes=REAL_FLOATS)


@complex_op.defgrad
def _complex_grad(ctx, g):
    rs, is_ = ctx.in_shapes
    return unbroadcast(real(g), rs), unbroadcast(imag(g), is_)


def complex(real, imag, name=None, *, out=None) -> Tensor:  # noqa: A001 - Paddle's name
    """The complex tensor ``real + 1j * imag`` (broadcasting; float32 parts give complex64,
    float64 parts complex128).

    >>> import oar
    >>> oar.complex(oar.to_tensor([1.0, 2.0]), oar.to_tensor([3.0, -1.0])).tolist()
    [(1+3j), (2-1j)]
    """
    re, im = as_tensor(real, "real", "complex"), as_tensor(imag, "imag", "complex")
    _complex_meta(TensorMeta(tuple(re._data.shape), re.dtype), TensorMeta(tuple(im._data.shape), im.dtype))
    result = dispatch(complex_op, (re, im), {})
    return result if out is None else assign(result, output=out)


def polar(abs, angle, name=None, *, out=None) -> Tensor:  # noqa: A002 - Paddle's argument names
    """The complex tensor with magnitude ``abs`` and phase ``angle``: ``abs * (cos(angle) + 1j sin(angle))``.

    >>> import oar
    >>> oar.polar(oar.to_tensor([2.0, 1.0]), oar.to_tensor([0.0, 0.0])).tolist()
    [(2+0j), (1+0j)]
    """
    magnitude, phase = as_tensor(abs, "abs", "polar"), as_tensor(angle, "angle", "polar")
    return complex(magnitude * cos(phase), magnitude * sin(phase), out=out)


# -- real, imag, angle ------------------------------------------------------------------------------
real_op = Op("real", reference=lambda x: np.real(x).copy(), meta=_part_meta("real"), traits=ELEMENTWISE,
             dtypes=_dt.ALL_DTYPES)


@real_op.defgrad
def _real_grad(ctx, g):
    return cast(g, _dt.complex_of(g.dtype))  # dL/da + i 0


def real(x, name=None) -> Tensor:
    """The real part of a complex tensor (float32 for complex64, float64 for complex128); a real
    tensor raises, as in Paddle.

    >>> import oar
    >>> oar.real(oar.to_tensor([1 + 2j])).tolist()
    [1.0]
    """
    return _unary(real_op, x, "real")


imag_op = Op("imag", reference=lambda x: np.imag(x).copy(), meta=_part_meta("imag"), traits=ELEMENTWISE,
             dtypes=_dt.ALL_DTYPES)


@imag_op.defgrad
def _imag_grad(ctx, g):
    return complex(zeros_like(g), g)  # 0 + i dL/db


def imag(x, name=None) -> Tensor:
    """The imaginary part of a complex tensor; a real tensor raises, as in Paddle.

    >>> import oar
    >>> oar.imag(oar.to_tensor([1 + 2j])).tolist()
    [2.0]
    """
    return _unary(imag_op, x, "imag")


def _angle_kernel(x):
    out = np.angle(x)
    return out.astype(_dt.real_of(_dt.NP_TO_DTYPE[x.dtype]).np if x.dtype.kind == "c" else x.dtype, copy=False)


def _angle_meta(x: TensorMeta) -> TensorMeta:
    if not (x.dtype.is_floating or x.dtype.is_complex):
        raise DTypeError(f"angle: x must be a float or complex tensor, got {x.dtype.name}")
    return TensorMeta(x.shape, _dt.real_of(x.dtype))


angle_op = Op("angle", reference=_angle_kernel, meta=_angle_meta, traits=ELEMENTWISE,
              dtypes=(_dt.float16, _dt.float32, _dt.float64) + _dt.COMPLEX_DTYPES)


@angle_op.defgrad
def _angle_grad(ctx, g):
    (z,) = ctx.inputs
    if not z.dtype.is_complex:
        return zeros_like(g)  # 0 or pi: piecewise constant
    # angle = atan2(b, a): d/da = -b / |z|^2, d/db = a / |z|^2; 0 at z == 0 (denominator 1 there)
    re, im = real(z), imag(z)
    squared = re * re + im * im
    scaled = g / (squared + cast(equal(squared, 0), squared.dtype))
    return complex(-im * scaled, re * scaled)


def angle(x, name=None) -> Tensor:
    """The phase of each element, in radians in ``(-pi, pi]``; of a real tensor 0 or pi.

    >>> import oar
    >>> round(oar.angle(oar.to_tensor([1j])).item(), 6)
    1.570796
    """
    return _unary(angle_op, x, "angle")


# -- as_complex / as_real ---------------------------------------------------------------------------
def _as_complex_kernel(x):
    out = np.empty(x.shape[:-1], _dt.complex_of(_dt.NP_TO_DTYPE[x.dtype]).np)
    out.real, out.imag = x[..., 0], x[..., 1]
    return out


def _as_complex_meta(x: TensorMeta) -> TensorMeta:
    _require_real_float("as_complex", "x", x.dtype)
    if not x.shape or x.shape[-1] not in (2, None):
        raise ShapeError(f"as_complex: the last dimension of x must have size 2 (real, imag), got shape {list(x.shape)}")
    return TensorMeta(tuple(x.shape[:-1]), _dt.complex_of(x.dtype))


as_complex_op = Op("as_complex", reference=_as_complex_kernel, meta=_as_complex_meta, traits=("shape",),
                   dtypes=REAL_FLOATS)


@as_complex_op.defgrad
def _as_complex_grad(ctx, g):
    return as_real(g)


def as_complex(x, name=None) -> Tensor:
    """A float tensor of shape ``[..., 2]`` as the complex tensor ``x[..., 0] + 1j * x[..., 1]``.

    >>> import oar
    >>> oar.as_complex(oar.to_tensor([[1.0, 2.0], [3.0, -4.0]])).tolist()
    [(1+2j), (3-4j)]
    """
    return _unary(as_complex_op, x, "as_complex")


def _as_real_meta(x: TensorMeta) -> TensorMeta:
    _require_complex("as_real", "x", x.dtype)
    return TensorMeta(tuple(x.shape) + (2,), _dt.real_of(x.dtype))


as_real_op = Op("as_real", reference=lambda x: np.stack([x.real, x.imag], axis=-1), meta=_as_real_meta,
                traits=("shape",), dtypes=_dt.COMPLEX_DTYPES)


@as_real_op.defgrad
def _as_real_grad(ctx, g):
    return as_complex(g)


def as_real(x, name=None) -> Tensor:
    """A complex tensor as a float tensor with a last dimension of 2 (real, imag).

    >>> import oar
    >>> oar.as_real(oar.to_tensor([1 + 2j])).tolist()
    [[1.0, 2.0]]
    """
    return _unary(as_real_op, x, "as_real")


def view_as_complex(input) -> Tensor:  # noqa: A002 - Paddle's argument name
    """``as_complex`` (a new tensor in oar, not a view sharing memory)."""
    return as_complex(input)


def view_as_real(input) -> Tensor:  # noqa: A002 - Paddle's argument name
    """``as_real`` (a new tensor in oar, not a view sharing memory)."""
    return as_real(input)


def is_complex(x) -> bool:
    """Whether ``x`` is a complex tensor (complex64 or complex128).

    >>> import oar
    >>> oar.is_complex(oar.to_tensor([1j])), oar.is_complex(oar.to_tensor([1.0]))
    (True, False)
    """
    if not isinstance(x, Tensor):
        raise ArgumentError(f"is_complex: x must be a Tensor, got {type(x).__name__}")
    return x.dtype.is_complex


def isreal(x, name=None) -> Tensor:
    """A bool tensor: True where ``x`` has no imaginary part (everywhere for a real tensor).

    >>> import oar
    >>> oar.isreal(oar.to_tensor([1 + 0j, 1j])).tolist()
    [True, False]
    """
    x = as_tensor(x, "x", "isreal")
    if x.dtype.is_complex:
        return equal(imag(x), 0)
    return ones_like(x, dtype="bool")


def _dtype_method(dtype: _dt.DType):
    def method(self) -> Tensor:
        return cast(self, dtype)

    method.__name__ = dtype.name
    method.__doc__ = f"``x.astype('{dtype.name}')``."
    return method


# -- the Fourier transforms -------------------------------------------------------------------------
NORMS = ("backward", "ortho", "forward")
_DUAL_NORM = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _fft_c2c_kernel(x, axes, norm, forward):
    transform = np.fft.fftn if forward else np.fft.ifftn
    return transform(x, axes=axes, norm=norm).astype(x.dtype, copy=False)


def _fft_c2c_meta(x: TensorMeta, axes, norm, forward) -> TensorMeta:
    _require_complex("fft_c2c", "x", x.dtype)
    return x


fft_c2c_op = Op("fft_c2c", paddle=("fft.fft", "fft.ifft", "fft.fft2", "fft.ifft2", "fft.fftn", "fft.ifftn"),
                reference=_fft_c2c_kernel, meta=_fft_c2c_meta, dtypes=_dt.COMPLEX_DTYPES)


@fft_c2c_op.defgrad
def _fft_c2c_grad(ctx, g):
    a = ctx.attrs
    return dispatch(fft_c2c_op, (g,), {"axes": a["axes"], "norm": _DUAL_NORM[a["norm"]], "forward": not a["forward"]})


def _onesided(shape, axes) -> tuple:
    last = axes[-1]
    return tuple(d if i != last or d is None else d // 2 + 1 for i, d in enumerate(shape))


def _fft_r2c_kernel(x, axes, norm):
    return np.fft.rfftn(x, axes=axes, norm=norm).astype(_dt.complex_of(_dt.NP_TO_DTYPE[x.dtype]).np, copy=False)


def _fft_r2c_meta(x: TensorMeta, axes, norm) -> TensorMeta:
    if not (x.dtype.is_floating or x.dtype.is_integer):
        raise DTypeError(f"fft_r2c: x must be a real tensor, got {x.dtype.name}")
    return TensorMeta(_onesided(x.shape, axes), _dt.complex_of(x.dtype if x.dtype.is_floating else _dt.float32))


fft_r2c_op = Op("fft_r2c", paddle=("fft.rfft", "fft.rfft2", "fft.rfftn", "fft.ihfft", "fft.ihfft2", "fft.ihfftn"),
                reference=_fft_r2c_kernel, meta=_fft_r2c_meta, float_only=True, dtypes=REAL_FLOATS)


@fft_r2c_op.defgrad
def _fft_r2c_grad(ctx, g):
    # rfftn = R F: the adjoint F^H R^T zero-fills the dropped bins; the input was real, so its real part.
    axes, norm = ctx.attrs["axes"], ctx.attrs["norm"]
    n = ctx.in_shapes[0][axes[-1]]
    full = resize(g, axes[-1], n)
    x_grad = real(dispatch(fft_c2c_op, (full,), {"axes": axes, "norm": _DUAL_NORM[norm], "forward": False}))
    source = ctx.inputs[0].dtype
    return cast(x_grad, source) if source is not x_grad.dtype else x_grad


def _fft_c2r_kernel(x, axes, norm, last_dim_size):
    sizes = [x.shape[a] for a in axes[:-1]] + [last_dim_size]
    out = np.fft.irfftn(x, s=sizes, axes=axes, norm=norm)
    return out.astype(_dt.real_of(_dt.NP_TO_DTYPE[x.dtype]).np, copy=False)


def _fft_c2r_meta(x: TensorMeta, axes, norm, last_dim_size) -> TensorMeta:
    _require_complex("fft_c2r", "x", x.dtype)
    shape = tuple(last_dim_size if i == axes[-1] else d for i, d in enumerate(x.shape))
    return TensorMeta(shape, _dt.real_of(x.dtype))


fft_c2r_op = Op("fft_c2r", paddle=("fft.irfft", "fft.irfft2", "fft.irfftn", "fft.hfft", "fft.hfft2", "fft.hfftn"),
                reference=_fft_c2r_kernel, meta=_fft_c2r_meta, dtypes=_dt.COMPLEX_DTYPES)


@fft_c2r_op.defgrad
def _fft_c2r_grad(ctx, g):
    # irfftn reads bins 0 .. n//2 of the last axis; each of bins 1 .. n - (n//2 + 1) also stands
    # for its mirror image in the full spectrum, so its gradient counts twice (PyTorch's rule).
    axes, norm, n = ctx.attrs["axes"], ctx.attrs["norm"], ctx.attrs["last_dim_size"]
    half = dispatch(fft_r2c_op, (g,), {"axes": axes, "norm": _DUAL_NORM[norm]})
    weight = np.ones(n // 2 + 1, _dt.real_of(half.dtype).np)
    weight[1:n - (n // 2 + 1) + 1] = 2
    shape = [1] * half.ndim
    shape[axes[-1]] = n // 2 + 1
    half = half * to_tensor(weight.reshape(shape))
    return resize(half, axes[-1], ctx.in_shapes[0][axes[-1]])


def resize(x: Tensor, axis: int, size: int) -> Tensor:
    """``x`` cropped or zero-padded at the end of ``axis`` to ``size`` (what ``n`` and ``s`` do)."""
    have = x._data.shape[axis]
    if size == have:
        return x
    if size < have:
        return slice(x, [axis], [0], [size])
    pad_shape = list(x._data.shape)
    pad_shape[axis] = size - have
    return concat([x, zeros_of(pad_shape, x.dtype)], axis=axis)


def zeros_of(shape, dtype: _dt.DType) -> Tensor:
    """Zeros of any dtype, complex included (``oar.zeros`` makes real dtypes only)."""
    filler = zeros(shape, dtype=_dt.real_of(dtype))
    return cast(filler, dtype) if dtype.is_complex else filler


def check_norm(op: str, norm) -> str:
    if norm not in NORMS:
        raise ArgumentError(f"{op}: norm must be one of {list(NORMS)}, got {norm!r}")
    return norm


def fft_axes(op: str, x: Tensor, s, axes, default_axes=None) -> tuple[list[int], list[int] | None]:
    """The transform's axes (non-negative) and sizes (None: the input's) from Paddle's ``s`` and
    ``axes``: axes default to ``default_axes``, else the last ``len(s)`` axes, else all of them."""
    if s is not None:
        s = [s] if isinstance(s, (int, np.integer)) else list(s)
        for size in s:
            if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size <= 0:
                raise ArgumentError(f"{op}: the transform sizes (n / s) must be positive ints, got {s}")
        s = [int(v) for v in s]
    if axes is None:
        if default_axes is not None:
            axes = list(default_axes)
        else:
            axes = list(range(-len(s), 0)) if s is not None else list(range(x.ndim))
    else:
        axes = [axes] if isinstance(axes, (int, np.integer)) else list(axes)
    if x.ndim == 0 or len(axes) > x.ndim:
        raise ShapeError(f"{op}: x of shape {x.shape} has too few dimensions for axes {axes}")
    axes = [normalize_axis(a, x.ndim, op, "axes") for a in axes]
    if len(set(axes)) != len(axes):
        raise ArgumentError(f"{op}: axes {axes} name an axis twice")
    if s is not None and len(s) != len(axes):
        raise ArgumentError(f"{op}: s {s} and axes {axes} must have the same length")
    return axes, s


def _as_complex_input(op: str, x: Tensor) -> Tensor:
    """``x`` made complex of its precision when it is real or integer (a bool one is refused)."""
    if x.dtype.is_complex:
        return x
    if x.dtype.is_bool:
        raise DTypeError(f"{op}: x must be a numeric tensor, got bool")
    return cast(x, _dt.complex_of(x.dtype))


def fft_c2c(op: str, x, s, axes, norm, forward: bool, default_axes=None) -> Tensor:
    """The complex transform of ``x`` (a real or integer one is made complex first) over ``axes``,
    each resized to ``s`` first: fft, ifft, fft2, ifft2, fftn, ifftn."""
    x = as_tensor(x, "x", op)
    norm = check_norm(op, norm)
    axes, s = fft_axes(op, x, s, axes, default_axes)
    x = _as_complex_input(op, x)
    for axis, size in zip(axes, s or ()):
        x = resize(x, axis, size)
    return dispatch(fft_c2c_op, (x,), {"axes": tuple(axes), "norm": norm, "forward": forward})


def fft_r2c(op: str, x, s, axes, norm, default_axes=None) -> Tensor:
    """The onesided transform of a real ``x`` over ``axes`` (the last one halved): rfft, rfft2, rfftn."""
    x = as_tensor(x, "x", op)
    norm = check_norm(op, norm)
    if not (x.dtype.is_floating or x.dtype.is_integer):
        raise DTypeError(f"{op}: x must be a real (float or integer) tensor, got {x.dtype.name}")
    axes, s = fft_axes(op, x, s, axes, default_axes)
    for axis, size in zip(axes, s or ()):
        x = resize(x, axis, size)
    return dispatch(fft_r2c_op, (x,), {"axes": tuple(axes), "norm": norm})


def fft_c2r(op: str, x, s, axes, norm, default_axes=None) -> Tensor:
    """The real inverse of a onesided spectrum over ``axes``, the last one of output length
    ``s[-1]`` (default ``2 * (m - 1)`` for ``m`` bins): irfft, irfft2, irfftn."""
    x = as_tensor(x, "x", op)
    norm = check_norm(op, norm)
    axes, s = fft_axes(op, x, s, axes, default_axes)
    x = _as_complex_input(op, x)
    last = s[-1] if s is not None else 2 * (x._data.shape[axes[-1]] - 1)
    if last <= 0:
        raise ArgumentError(f"{op}: the output length along axis {axes[-1]} would be {last}; give n (or s)")
    for axis, size in zip(axes[:-1], s[:-1] if s is not None else ()):
        x = resize(x, axis, size)
    x = resize(x, axes[-1], last // 2 + 1)
    return dispatch(fft_c2r_op, (x,), {"axes": tuple(axes), "norm": norm, "last_dim_size": last})


def swap_norm(norm: str) -> str:
    """numpy's and Paddle's hfft/ihfft: an irfft/rfft of the conjugate with the scaling swapped."""
    return _DUAL_NORM[check_norm("hfft", norm)]


# -- the short-time Fourier transform (oar.signal) -------------------------------------------------------
def _positive_int(op: str, name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ArgumentError(f"{op}: {name} must be a positive int, got {value!r}")
    return int(value)


def _stft_window(op: str, window, win_length: int, n_fft: int, dtype: _dt.DType) -> Tensor:
    """The window, checked, as a tensor of ``n_fft`` values (zero-padded on both sides, as Paddle)."""
    if window is None:
        window = ones([win_length], dtype=dtype)
    else:
        window = as_tensor(window, "window", op)
        if window.ndim != 1 or window._data.shape[0] != win_length:
            raise ShapeError(f"{op}: window must be 1-D of size win_length={win_length}, got shape {window.shape}")
    left = (n_fft - win_length) // 2
    if left or n_fft - win_length - left:
        window = concat([zeros_of([left], window.dtype), window, zeros_of([n_fft - win_length - left], window.dtype)])
    return window


def _frame_starts(n_fft: int, hop: int, frames: int) -> np.ndarray:
    """``index[f, t] = t * hop + f``: where sample ``f`` of frame ``t`` comes from (or goes to)."""
    return np.arange(n_fft)[:, None] + hop * np.arange(frames)[None, :]


def stft(x, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, name=None) -> Tensor:
    """The short-time Fourier transform of ``x`` (``[seq_length]`` or ``[batch, seq_length]``, real
    or complex): ``[..., n_fft // 2 + 1, num_frames]`` for a real input (``onesided``), else
    ``[..., n_fft, num_frames]``. Frames start every ``hop_length`` samples (default
    ``n_fft // 4``); the window (default ones of ``win_length``, default ``n_fft``) is centred in
    ``n_fft``; ``center`` pads ``n_fft // 2`` samples on both sides (``pad_mode`` "reflect" or
    "constant"); ``normalized`` scales by ``1 / sqrt(n_fft)``.

    >>> import oar
    >>> oar.signal.stft(oar.ones([16]), n_fft=8).shape
    [5, 9]
    """
    op = "stft"
    x = as_tensor(x, "x", op)
    if x.ndim not in (1, 2):
        raise ShapeError(f"{op}: x must be 1-D or 2-D ([batch,] seq_length), got shape {x.shape}")
    if not (x.dtype.is_floating or x.dtype.is_complex):
        raise DTypeError(f"{op}: x must be a float or complex tensor, got {x.dtype.name}")
    n_fft = _positive_int(op, "n_fft", n_fft)
    hop = _positive_int(op, "hop_length", n_fft // 4 if hop_length is None else hop_length)
    win_length = _positive_int(op, "win_length", n_fft if win_length is None else win_length)
    length = x._data.shape[-1]
    if n_fft > length:
        raise ArgumentError(f"{op}: n_fft={n_fft} is larger than the signal's length {length}")
    if win_length > n_fft:
        raise ArgumentError(f"{op}: win_length={win_length} must be at most n_fft={n_fft}")
    window = _stft_window(op, window, win_length, n_fft, _dt.real_of(x.dtype))
    single = x.ndim == 1
    if single:
        x = unsqueeze(x, 0)
    # Padding and framing are one gather: padded position p reads source sample source[p].
    source = np.arange(length)
    if center:
        if pad_mode not in ("reflect", "constant"):
            raise ArgumentError(f"{op}: pad_mode must be 'reflect' or 'constant', got {pad_mode!r}")
        pad = n_fft // 2
        if pad_mode == "reflect" and pad >= length:
            raise ArgumentError(f"{op}: reflect padding of {pad} needs a signal longer than that, got {length}")
        positions = np.arange(-pad, length + pad)
        if pad_mode == "reflect":
            source = np.abs(positions)
            source = np.where(source >= length, 2 * (length - 1) - source, source)
        else:  # out-of-range positions read an appended zero
            source = np.where((positions < 0) | (positions >= length), length, positions)
            x = concat([x, zeros_like(slice(x, [1], [0], [1]))], axis=1)
    frames = 1 + (len(source) - n_fft) // hop
    index = source[_frame_starts(n_fft, hop, frames)].reshape(-1)
    framed = reshape(index_select(x, to_tensor(index), axis=1), [x._data.shape[0], n_fft, frames])
    framed = framed * reshape(window, [n_fft, 1])
    norm = "ortho" if normalized else "backward"
    if onesided is None:
        onesided = not framed.dtype.is_complex
    if onesided and framed.dtype.is_complex:
        raise ArgumentError(f"{op}: onesided must be False for a complex input or window")
    if onesided:
        out = fft_r2c(op, framed, None, [1], norm)
    else:
        out = fft_c2c(op, framed, None, [1], norm, forward=True)
    return squeeze(out, 0) if single else out


def istft(x, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False, onesided=True,
          length=None, return_complex=False, name=None) -> Tensor:
    """The inverse of ``stft``: the signal, from a complex ``[..., fft_size, num_frames]``
    spectrogram, by windowed overlap-add divided by the summed squared window (which must not
    vanish anywhere: the NOLA condition). ``length`` crops the output; ``return_complex`` (with
    ``onesided=False``) keeps a complex signal.

    >>> import oar
    >>> x = oar.to_tensor([float(v % 5) for v in range(32)])
    >>> y = oar.signal.istft(oar.signal.stft(x, n_fft=8), n_fft=8)
    >>> bool(abs(y - x).max() < 1e-5)
    True
    """
    op = "istft"
    x = as_tensor(x, "x", op)
    if not x.dtype.is_complex:
        raise DTypeError(f"{op}: x must be a complex tensor (a stft output), got {x.dtype.name}")
    if x.ndim not in (2, 3):
        raise ShapeError(f"{op}: x must be 2-D or 3-D ([batch,] fft_size, num_frames), got shape {x.shape}")
    n_fft = _positive_int(op, "n_fft", n_fft)
    hop = _positive_int(op, "hop_length", n_fft // 4 if hop_length is None else hop_length)
    win_length = _positive_int(op, "win_length", n_fft if win_length is None else win_length)
    if win_length > n_fft or hop > win_length:
        raise ArgumentError(f"{op}: expected 0 < hop_length <= win_length <= n_fft, got hop_length={hop}, "
                            f"win_length={win_length}, n_fft={n_fft}")
    fft_size, frames = x._data.shape[-2:]
    expected = n_fft // 2 + 1 if onesided else n_fft
    if fft_size != expected or x.size == 0:
        raise ShapeError(f"{op}: x has {fft_size} frequencies, expected {expected} (n_fft={n_fft}, "
                         f"onesided={onesided}), and must not be empty")
    window = _stft_window(op, window, win_length, n_fft, _dt.real_of(x.dtype))
    single = x.ndim == 2
    if single:
        x = unsqueeze(x, 0)
    norm = "ortho" if normalized else "backward"
    if return_complex:
        if onesided:
            raise ArgumentError(f"{op}: return_complex=True needs onesided=False")
        signal = fft_c2c(op, x, None, [1], norm, forward=False)
    else:
        if window.dtype.is_complex:
            raise DTypeError(f"{op}: a complex window needs return_complex=True")
        if not onesided:
            x = slice(x, [1], [0], [n_fft // 2 + 1])
        signal = fft_c2r(op, x, [n_fft], [1], norm)
    signal = signal * reshape(window, [n_fft, 1])
    total = n_fft + hop * (frames - 1)
    index = to_tensor(_frame_starts(n_fft, hop, frames).reshape(-1))
    batch = x._data.shape[0]
    out = index_add(zeros_of([batch, total], signal.dtype), index, 1, reshape(signal, [batch, n_fft * frames]))
    squared = tile(reshape(window * window, [n_fft, 1]), [1, frames])
    envelope = index_add(zeros_of([total], squared.dtype), index, 0, reshape(squared, [n_fft * frames]))
    start = n_fft // 2 if center else 0
    stop = (total - start if center else total) if length is None else start + length
    out = slice(out, [1], [start], [stop])
    envelope = slice(envelope, [0], [start], [stop])
    if float(np.abs(envelope.numpy()).min(initial=np.inf)) < 1e-11:  # Paddle's threshold
        raise ArgumentError(f"{op}: the summed squared window vanishes somewhere (the Nonzero Overlap Add "
                            f"condition fails): choose a window and hop_length whose overlaps cover every sample")
    out = out / envelope
    return squeeze(out, 0) if single else out


OPS = [complex_op, real_op, imag_op, angle_op, as_complex_op, as_real_op, fft_c2c_op, fft_r2c_op, fft_c2r_op]

__all__ = [
    "complex64", "complex128", "cfloat", "cdouble", "complex", "polar", "real", "imag", "angle",
    "as_complex", "as_real", "view_as_complex", "view_as_real", "is_complex", "isreal",
]

# Paddle 3.3.1's Tensor methods of this family (conj is bound with the arithmetic ops; stft and
# istft are oar.signal's functions).
METHODS: dict = {
    "real": real, "imag": imag, "angle": angle, "polar": polar, "as_complex": as_complex, "as_real": as_real,
    "view_as_complex": view_as_complex, "view_as_real": view_as_real, "is_complex": is_complex,
    "isreal": isreal, "complex64": _dtype_method(_dt.complex64), "complex128": _dtype_method(_dt.complex128),
    "cfloat": _dtype_method(_dt.complex64), "cdouble": _dtype_method(_dt.complex128),
    "stft": stft, "istft": istft,
}
