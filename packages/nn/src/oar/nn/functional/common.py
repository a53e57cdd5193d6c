"""Common functions of oar.nn.functional: linear, bilinear, dropout, embedding, one_hot, pad,
interpolate/upsample, unfold/fold, cosine_similarity, pairwise_distance, label_smooth.

``embedding`` and ``interpolate`` are ops, each paired with the op of its gradient
(``embedding_grad``: a scatter-add of the rows; ``interpolate_grad``: the transposed resampling);
each op of a pair is the other's gradient, so both differentiate again. ``unfold`` (op ``im2col``)
and ``fold`` (op ``col2im``, summing overlaps) are each other's adjoint, hence each other's gradient.
Difference from Paddle: ``fold`` with four unequal paddings ``[top, left, bottom, right]`` pads
as ``unfold`` does, where Paddle 3.3.1's fold rejects them (its shape check reads top and left
twice). The rest compose core
ops; dropout masks come from ``oar.bernoulli``, which draws from oar's global generator, so
``oar.seed`` makes them reproducible.

>>> import oar
>>> import oar.nn.functional as F
>>> F.pad(oar.ones([1, 1, 2, 2]), [1, 1, 0, 0]).shape
[1, 1, 2, 4]
"""

from __future__ import annotations

import numpy as np

import oar
from oar import one_hot
from oar.errors import ArgumentError, DTypeError, IndexOutOfRangeError, ShapeError
from oar.nn.functional.activation import SELU_ALPHA, SELU_SCALE, check_float
from oar.nn.functional.antialias import antialias_resize
from oar.ops import (
    AMP_LOW_PRECISION,
    PRODUCT_DTYPES,
    PROMOTION_TABLE,
    Op,
    Tensor,
    TensorMeta,
    apply_inplace,
    as_tensor,
    blas_threads_for,
    dispatch,
    eager_no_grad,
    fmt_shape,
    matmul_op,
    matmul_shape,
    normalize_axis,
    one_blas_thread,
    pad_axes,
    reshape_to,
    small_product,
    sum_op,
)

FLOATS = (oar.float32, oar.float64)  # float16 and bfloat16 compute in float32


# ------------------------------------------------------------------------------------------
# linear, bilinear
# ------------------------------------------------------------------------------------------
def _linear_kernel(x, w, b):
    # x [..., in] as one [rows, in] matrix: numpy's matmul runs a stacked x as one GEMM per
    # matrix, slower than one GEMM over all rows
    rows = x.reshape(-1, x.shape[-1]) if x.ndim > 2 else x
    if small_product(rows, w):  # see oar.ops.small_product: a threaded small product leaves BLAS spinning
        with one_blas_thread():
            out = np.matmul(rows, w)
    else:
        out = np.matmul(rows, w)
    out += b  # into the GEMM's fresh result: no second output array, no extra pass over memory
    return out.reshape(*x.shape[:-1], w.shape[-1]) if x.ndim > 2 else out


def _linear_meta(x: TensorMeta, w: TensorMeta, b: TensorMeta) -> TensorMeta:
    shape = matmul_shape("linear", x.shape, w.shape)
    n = w.shape[-1]
    if len(x.shape) < 2 or len(w.shape) != 2 or len(b.shape) != 1 or None not in (n, b.shape[0]) and b.shape[0] != n:
        raise ShapeError(f"linear: expected x [..., in], weight [in, out] and bias [out], got x {fmt_shape(x.shape)}, "
                         f"weight {fmt_shape(w.shape)} and bias {fmt_shape(b.shape)}")
    return TensorMeta(shape, PROMOTION_TABLE[PROMOTION_TABLE[x.dtype, w.dtype], b.dtype])


# One op for ``x @ w + b``: one dispatch and one tape node per layer call instead of two, and
# the bias added in place into the product (what F.linear calls with a 1-d bias).
linear_op = Op("linear", reference=_linear_kernel, meta=_linear_meta, amp=AMP_LOW_PRECISION, promote=True,
               dtypes=PRODUCT_DTYPES, per_sample=True)


def _linear_grad_kernel(g, x, w, x_grad=True):
    """(gx, gw, gb) of ``x @ w + b``, or (gw, gb) without ``x_grad``; x may have leading dims."""
    rows, inputs = g.reshape(-1, g.shape[-1]), x.reshape(-1, x.shape[-1])
    with blas_threads_for(inputs.shape[1], inputs.shape[0], rows.shape[1]):  # as matmul's kernel does
        gw = np.matmul(inputs.T, rows)
    gb = np.add.reduce(rows, axis=0)
    if not x_grad:
        return gw, gb
    with blas_threads_for(rows.shape[0], rows.shape[1], w.shape[0]):
        gx = np.matmul(rows, w.T)  # one GEMM over all leading dims, as the forward
    return gx.reshape(*g.shape[:-1], w.shape[0]), gw, gb


def _linear_grad_meta(g: TensorMeta, x: TensorMeta, w: TensorMeta, x_grad=True):
    grads = (TensorMeta(w.shape, w.dtype), TensorMeta(w.shape[1:], g.dtype))
    return (TensorMeta(x.shape, x.dtype), *grads) if x_grad else grads


# The backward of a linear layer in one op: one dispatch instead of three (two matmuls and a sum)
# in eager backward, where a small layer's dispatches cost more than its products.
# Recording and tracing use the composite rule below, which differentiates again.
linear_grad_op = Op("linear_grad", reference=_linear_grad_kernel, meta=_linear_grad_meta, traits=("nondiff",),
                    dtypes=PRODUCT_DTYPES, num_outputs=None)


@linear_op.defgrad
def _linear_grad(ctx, g):
    # The ops themselves, not the public functions: the operands are tensors known to fit.
    needs = ctx.needs_input_grad
    if needs[1] and needs[2] and eager_no_grad():
        x, w = ctx.input(0), ctx.input(1)  # each read once: a read checks the input's version
        if g._data.dtype == x._data.dtype == w._data.dtype:
            grads = dispatch(linear_grad_op, (g, x, w), {"x_grad": bool(needs[0])})
            return grads if needs[0] else (None, *grads)
    xs, ws, _ = ctx.in_shapes
    gx = gw = gb = None
    if ctx.needs_input_grad[0]:
        gx = dispatch(matmul_op, (g, ctx.input(1)), {"transpose_x": False, "transpose_y": True})
    if ctx.needs_input_grad[1]:
        x = ctx.input(0)
        if len(xs) > 2:  # contract over every leading dim: [M, in]^T @ [M, out]
            rows = int(np.prod(xs[:-1], dtype=np.int64))
            x, g2 = reshape_to(x, [rows, xs[-1]]), reshape_to(g, [rows, ws[1]])
        else:
            g2 = g
        gw = dispatch(matmul_op, (x, g2), {"transpose_x": True, "transpose_y": False})
    if ctx.needs_input_grad[2]:
        gb = dispatch(sum_op, (g,), {"axis": tuple(range(len(xs) - 1)), "keepdim": False})
    return gx, gw, gb


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None, name=None) -> Tensor:
    """``x @ weight + bias`` with Paddle's weight layout ``[in_features, out_features]``.

    >>> import oar
    >>> oar.nn.functional.linear(oar.ones([2, 3]), oar.ones([3, 4])).shape
    [2, 4]
    """
    if bias is None:
        return oar.matmul(x, weight)
    x = x if isinstance(x, Tensor) else as_tensor(x, "x", "linear")
    weight = weight if isinstance(weight, Tensor) else as_tensor(weight, "weight", "linear")
    if isinstance(bias, Tensor) and bias._data.ndim == 1 and weight._data.ndim == 2 and x._data.ndim >= 2:
        return dispatch(linear_op, (x, weight, bias), {})
    return oar.matmul(x, weight) + bias  # other bias shapes broadcast as ``+`` does


def bilinear(x1, x2, weight, bias=None, name=None) -> Tensor:
    """``out[n, o] = x1[n] @ weight[o] @ x2[n] + bias[o]`` with ``weight`` of shape
    ``[out_features, in1_features, in2_features]`` and ``bias`` of shape ``[1, out_features]``.

    >>> import oar
    >>> oar.nn.functional.bilinear(oar.ones([5, 2]), oar.ones([5, 3]), oar.ones([4, 2, 3])).shape
    [5, 4]
    """
    fn = "bilinear"
    x1, x2, weight = as_tensor(x1, "x1", fn), as_tensor(x2, "x2", fn), as_tensor(weight, "weight", fn)
    if x1.ndim != 2 or x2.ndim != 2 or weight.ndim != 3:
        raise ShapeError(f"{fn}: expected x1 [N, in1], x2 [N, in2] and weight [out, in1, in2], got x1 {x1.shape}, "
                         f"x2 {x2.shape} and weight {weight.shape}")
    out_features, in1, in2 = weight.shape
    if x1.shape[0] != x2.shape[0] or x1.shape[1] != in1 or x2.shape[1] != in2:
        raise ShapeError(f"{fn}: x1 {x1.shape} and x2 {x2.shape} do not fit weight {weight.shape} "
                         f"(expected x1 [N, {in1}] and x2 [N, {in2}])")
    # [N, in1] @ [in1, out * in2] -> [N, out, in2], then contract in2 with x2.
    folded = reshape_to(oar.transpose(weight, [1, 0, 2]), [in1, out_features * in2])
    partial = reshape_to(oar.matmul(x1, folded), [x1.shape[0], out_features, in2])
    out = oar.sum(partial * oar.unsqueeze(x2, 1), axis=-1)
    if bias is not None:
        out = out + as_tensor(bias, "bias", fn)
    return out


# ------------------------------------------------------------------------------------------
# dropout
# ------------------------------------------------------------------------------------------
_DROPOUT_MODES = ("upscale_in_train", "downscale_in_infer")


def _probability(fn: str, p, name: str = "p") -> float:
    if isinstance(p, Tensor):
        p = p.item()
    if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)):
        raise ArgumentError(f"{fn}: {name} must be a number in [0, 1], got {p!r}")
    if not 0.0 <= float(p) <= 1.0:
        raise ArgumentError(f"{fn}: {name} must lie in [0, 1], got {p!r}")
    return float(p)


def _keep_mask(x: Tensor, shape, keep: float) -> Tensor:
    """1 where an element is kept (probability ``keep``), else 0, in ``x``'s dtype."""
    return oar.bernoulli(oar.full(shape, keep, dtype=x.dtype, device=x.place))


def dropout(x, p: float = 0.5, axis=None, training: bool = True, inplace: bool = False, mode: str = "upscale_in_train",
            name=None) -> Tensor:
    """Zero each element with probability ``p`` (or whole slices: with ``axis``, one draw per
    index of those axes, shared along the others).

    ``mode='upscale_in_train'`` (Paddle's default) scales the kept values by ``1 / (1 - p)`` in
    training and returns ``x`` unchanged in evaluation; ``'downscale_in_infer'`` keeps the
    values in training and multiplies by ``1 - p`` in evaluation. With ``inplace`` the result is
    written into ``x`` (and ``x`` returned).

    >>> import oar
    >>> x = oar.ones([2, 3])
    >>> oar.nn.functional.dropout(x, 0.5, training=False) is x
    True
    """
    fn = "dropout"
    p = _probability(fn, p)
    if mode not in _DROPOUT_MODES:
        raise ArgumentError(f"{fn}: mode must be 'upscale_in_train' or 'downscale_in_infer', got {mode!r}")
    x = as_tensor(x, "x", fn)
    check_float(fn, x)
    if inplace:
        out = dropout(x if x.stop_gradient else x.clone(), p=p, axis=axis, training=training, mode=mode)
        return x if out is x else apply_inplace(x, out, name="dropout_")
    if axis is None:
        shape = x.shape
    else:
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer, list, tuple)):
            raise ArgumentError(f"{fn}: axis must be None, an int or a list of ints, got {type(axis).__name__}")
        axes = {normalize_axis(a, x.ndim, fn) for a in ([axis] if isinstance(axis, (int, np.integer)) else axis)}
        shape = [d if i in axes else 1 for i, d in enumerate(x.shape)]
    if p == 0.0:
        return x
    if not training:
        return x if mode == "upscale_in_train" else x * (1.0 - p)
    mask = _keep_mask(x, shape, 1.0 - p)
    if mode == "upscale_in_train":
        mask = mask * (1.0 / (1.0 - p)) if p < 1.0 else mask
    return x * mask


def _feature_dropout(fn: str, x, p, training, data_format, formats, ndim) -> Tensor:
    x = as_tensor(x, "x", fn)
    if x.ndim != ndim:
        raise ShapeError(f"{fn}: x must be a {ndim}-D tensor ({formats[0]} or {formats[1]}), got shape {x.shape}")
    if data_format not in formats:
        raise ArgumentError(f"{fn}: data_format must be {formats[0]!r} or {formats[1]!r}, got {data_format!r}")
    channel = 1 if data_format == formats[0] else ndim - 1
    return dropout(x, p=p, axis=[0, channel], training=training, mode="upscale_in_train")


def dropout2d(x, p: float = 0.5, training: bool = True, data_format: str = "NCHW", name=None) -> Tensor:
    """Zero whole channels of a 4-D ``x`` with probability ``p`` (scaling the rest by ``1/(1-p)``).

    >>> import oar
    >>> oar.nn.functional.dropout2d(oar.ones([2, 3, 4, 4]), training=False).shape
    [2, 3, 4, 4]
    """
    return _feature_dropout("dropout2d", x, p, training, data_format, ("NCHW", "NHWC"), 4)


def dropout3d(x, p: float = 0.5, training: bool = True, data_format: str = "NCDHW", name=None) -> Tensor:
    """Zero whole channels of a 5-D ``x`` with probability ``p`` (scaling the rest by ``1/(1-p)``)."""
    return _feature_dropout("dropout3d", x, p, training, data_format, ("NCDHW", "NDHWC"), 5)


def alpha_dropout(x, p: float = 0.5, training: bool = True, name=None) -> Tensor:
    """Dropout for SELU networks: dropped elements take SELU's negative saturation value and an
    affine correction keeps the mean and variance of the input.

    >>> import oar
    >>> x = oar.ones([3])
    >>> oar.nn.functional.alpha_dropout(x, training=False) is x
    True
    """
    fn = "alpha_dropout"
    p = _probability(fn, p)
    x = as_tensor(x, "x", fn)
    check_float(fn, x)
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    alpha_p = -SELU_ALPHA * SELU_SCALE
    a = ((1.0 - p) * (1.0 + p * alpha_p * alpha_p)) ** -0.5
    b = -a * alpha_p * p
    keep = _keep_mask(x, x.shape, 1.0 - p)
    return (x * keep + (1.0 - keep) * alpha_p) * a + b


# ------------------------------------------------------------------------------------------
# embedding <-> embedding_grad
# ------------------------------------------------------------------------------------------
def _check_ids(fn: str, ids: np.ndarray, num: int) -> None:
    if ids.size and (ids.min() < 0 or ids.max() >= num):
        bad = ids.min() if ids.min() < 0 else ids.max()
        raise IndexOutOfRangeError(f"{fn}: x contains the id {int(bad)}, out of range for {num} embeddings "
                                   f"(expected 0..{num - 1})")


def _embedding_kernel(weight, ids, padding_idx):
    _check_ids("embedding", ids, weight.shape[0])
    out = np.take(weight, ids, axis=0)
    if padding_idx >= 0:
        out[ids == padding_idx] = 0
    return out


def _embedding_meta(weight: TensorMeta, ids: TensorMeta, padding_idx) -> TensorMeta:
    if not ids.dtype.is_integer:
        raise DTypeError(f"embedding: x must be an integer tensor (int32 or int64), got {ids.dtype.name}")
    if len(weight.shape) != 2:
        raise ShapeError(f"embedding: weight must be 2-D [num_embeddings, embedding_dim], got {fmt_shape(weight.shape)}")
    if not weight.dtype.is_floating:
        raise DTypeError(f"embedding: weight must be a floating tensor, got {weight.dtype.name}")
    return TensorMeta(tuple(ids.shape) + (weight.shape[1],), weight.dtype)


embedding_op = Op("embedding", reference=_embedding_kernel, meta=_embedding_meta, nondiff_inputs=(1,))


@embedding_op.defgrad
def _embedding_rule(ctx, g):
    ids = ctx.input(1)
    attrs = {"num_embeddings": ctx.in_shapes[0][0], "padding_idx": ctx.attrs["padding_idx"]}
    return dispatch(embedding_grad_op, (g, ids), attrs), None


def _embedding_grad_kernel(g, ids, num_embeddings, padding_idx):
    dim = g.shape[-1]
    out = np.zeros((num_embeddings, dim), dtype=g.dtype)
    flat = ids.reshape(-1)
    if flat.size:
        rows = g.reshape(-1, dim)
        order = np.argsort(flat, kind="stable")
        unique, starts = np.unique(flat[order], return_index=True)
        out[unique] = np.add.reduceat(rows[order], starts, axis=0)
    if padding_idx >= 0:
        out[padding_idx] = 0
    return out


def _embedding_grad_meta(g: TensorMeta, ids: TensorMeta, num_embeddings, padding_idx) -> TensorMeta:
    if tuple(g.shape[:-1]) != tuple(ids.shape):
        raise ShapeError(f"embedding_grad: the gradient has shape {fmt_shape(g.shape)}, expected the ids' shape "
                         f"{fmt_shape(ids.shape)} plus the embedding dimension")
    return TensorMeta((num_embeddings, g.shape[-1]), g.dtype)


embedding_grad_op = Op("embedding_grad", reference=_embedding_grad_kernel, meta=_embedding_grad_meta, nondiff_inputs=(1,))


@embedding_grad_op.defgrad
def _embedding_grad_rule(ctx, c):
    return dispatch(embedding_op, (c, ctx.input(1)), {"padding_idx": ctx.attrs["padding_idx"]}), None


def embedding(x, weight, padding_idx=None, max_norm=None, norm_type: float = 2.0, sparse: bool = False,
              scale_grad_by_freq: bool = False, name=None) -> Tensor:
    """The rows of ``weight`` (``[num_embeddings, embedding_dim]``) at the integer ids ``x``:
    the output has shape ``x.shape + [embedding_dim]``.

    Positions whose id equals ``padding_idx`` (negative values count from the end) output zeros
    and send no gradient to that row. ``sparse`` is accepted; the gradient is dense. With
    ``max_norm``, each row that ``x`` reads whose ``norm_type``-norm exceeds it is first scaled
    down to it, in ``weight`` itself (outside autograd), as Paddle 3.3. ``scale_grad_by_freq``
    divides each position's gradient by how often its id occurs in ``x``.

    >>> import oar
    >>> w = oar.to_tensor([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    >>> oar.nn.functional.embedding(oar.to_tensor([2, 0]), w, padding_idx=0).tolist()
    [[3.0, 3.0], [0.0, 0.0]]
    """
    fn = "embedding"
    x, weight = as_tensor(x, "x", fn), as_tensor(weight, "weight", fn)
    _embedding_meta(TensorMeta(tuple(weight.shape), weight.dtype), TensorMeta(tuple(x.shape), x.dtype), -1)
    num = weight.shape[0]
    if padding_idx is None:
        padding = -1
    else:
        if isinstance(padding_idx, bool) or not isinstance(padding_idx, (int, np.integer)):
            raise ArgumentError(f"{fn}: padding_idx must be None or an int, got {type(padding_idx).__name__}")
        if not -num <= padding_idx < num:
            raise ArgumentError(f"{fn}: padding_idx must lie in [{-num}, {num}) for {num} embeddings, got {padding_idx}")
        padding = int(padding_idx) % num
    if max_norm and weight.size:
        _renorm_rows(x, weight, float(max_norm), float(norm_type))
    out = dispatch(embedding_op, (weight, x), {"padding_idx": padding})
    if scale_grad_by_freq:
        if sparse:
            raise ArgumentError(f"{fn}: scale_grad_by_freq=True does not go with sparse=True")
        ids = x.numpy().astype(np.int64)
        _, index, counts = np.unique(ids, return_inverse=True, return_counts=True)
        inverse_count = oar.to_tensor((1.0 / counts[index.reshape(ids.shape)])[..., None].astype(weight.dtype.name),
                                      place=weight.place)
        # the same values (out - out.detach() is 0), each position's gradient scaled by 1 / count
        out = out.detach() + (out - out.detach()) * inverse_count
    return out


def _renorm_rows(x: Tensor, weight: Tensor, max_norm: float, norm_type: float) -> None:
    """Scale the rows of ``weight`` read by ``x`` whose norm exceeds ``max_norm`` down to it, in place."""
    with oar.no_grad():
        ids = oar.unique(oar.reshape(x, [-1]))
        rows = oar.index_select(weight, ids)
        norm = oar.sum(oar.abs(rows) ** norm_type, axis=1, keepdim=True) ** (1.0 / norm_type)
        scale = oar.where(norm > max_norm, max_norm / (norm + 1e-7), oar.ones_like(norm))
        weight[ids] = rows * scale


# ------------------------------------------------------------------------------------------
# pad
# ------------------------------------------------------------------------------------------
_PAD_MODES = ("constant", "reflect", "replicate", "circular")
_SPATIAL_FORMATS = {3: ("NCL", "NLC", "NCW", "NWC"), 4: ("NCHW", "NHWC"), 5: ("NCDHW", "NDHWC")}


def _spatial_axes(fn: str, ndim: int, data_format) -> list[int]:
    """The spatial axes of a 3-, 4- or 5-D ``x`` in ``data_format`` (channels second or last)."""
    if ndim not in _SPATIAL_FORMATS:
        raise ShapeError(f"{fn}: x must be 3-D, 4-D or 5-D here, got a {ndim}-D tensor")
    if data_format is None:
        data_format = _SPATIAL_FORMATS[ndim][0]
    if not isinstance(data_format, str) or data_format not in sum(_SPATIAL_FORMATS.values(), ()):
        raise ArgumentError(f"{fn}: data_format must be one of {list(_SPATIAL_FORMATS[ndim])} for a {ndim}-D x, "
                            f"got {data_format!r}")
    channel_last = data_format[1] != "C"
    return list(range(1, ndim - 1)) if channel_last else list(range(2, ndim))


def _int_values(fn: str, arg: str, values) -> list[int]:
    if isinstance(values, Tensor):
        values = values.tolist()
    if isinstance(values, (int, np.integer)) and not isinstance(values, bool):
        return [int(values)]
    try:
        out = [int(v) if not isinstance(v, Tensor) else int(v.item()) for v in values]
    except (TypeError, ValueError):
        raise ArgumentError(f"{fn}: {arg} must be an int or a list of ints, got {values!r}") from None
    return out


def pad(x, pad, mode: str = "constant", value: float = 0.0, data_format=None, pad_from_left_axis: bool = True,
        name=None) -> Tensor:
    """Pad ``x`` as Paddle does.

    With ``mode='constant'`` and a ``pad`` list whose length is not ``2 * (ndim - 2)``: a list of
    ``2 * ndim`` values pads every axis in order (``[before_0, after_0, before_1, ...]``; from the
    last axis instead when ``pad_from_left_axis=False``), a shorter one pads from the last axis
    backwards. Otherwise (every other mode, a tensor ``pad``, or ``2 * (ndim - 2)`` values) ``x`` is
    3-, 4- or 5-D and ``pad`` gives the spatial axes of ``data_format`` from the last:
    ``[left, right]``, ``[left, right, top, bottom]`` or ``[left, right, top, bottom, front, back]``.

    >>> import oar
    >>> oar.nn.functional.pad(oar.ones([1, 1, 2, 2]), [1, 0, 0, 2], value=5.0).shape
    [1, 1, 4, 3]
    """
    fn = "pad"
    x = as_tensor(x, "x", fn)
    if mode not in _PAD_MODES:
        raise ArgumentError(f"{fn}: mode must be one of {list(_PAD_MODES)}, got {mode!r}")
    tensor_pad = isinstance(pad, Tensor)
    values = _int_values(fn, "pad", pad)
    n = x.ndim
    pads = [0] * (2 * n)
    if mode == "constant" and not tensor_pad and (n < 3 or len(values) != 2 * (n - 2)):
        if len(values) % 2:
            values = values + [0]
        if len(values) > 2 * n:
            raise ArgumentError(f"{fn}: pad has {len(values)} values, more than 2 * {n} for x of shape {x.shape}")
        left_aligned = len(values) == 2 * n and pad_from_left_axis
        for k in range(len(values) // 2):
            axis = k if left_aligned else n - 1 - k
            pads[2 * axis], pads[2 * axis + 1] = values[2 * k], values[2 * k + 1]
    else:
        axes = _spatial_axes(fn, n, data_format)
        if len(values) != 2 * len(axes):
            raise ArgumentError(f"{fn}: mode {mode!r} on a {n}-D x needs {2 * len(axes)} pad values (two per spatial "
                                f"axis, from the last), got {len(values)}")
        for k, axis in enumerate(reversed(axes)):
            pads[2 * axis], pads[2 * axis + 1] = values[2 * k], values[2 * k + 1]
    return pad_axes(x, pads, mode=mode, value=value)


def zeropad2d(x, padding, data_format: str = "NCHW", name=None) -> Tensor:
    """Zero-pad the height and width of a 4-D ``x``: ``padding = [left, right, top, bottom]``."""
    values = _int_values("zeropad2d", "padding", padding)
    if len(values) == 1:
        values = values * 4
    return pad(x, values, mode="constant", value=0.0, data_format=data_format)


# ------------------------------------------------------------------------------------------
# interpolate <-> interpolate_grad: separable resampling along each spatial axis
# ------------------------------------------------------------------------------------------
_CUBIC_A = -0.75


def _cubic_weights(t: np.ndarray) -> list[np.ndarray]:
    a = _CUBIC_A
    w0 = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a
    w1 = ((a + 2) * t - (a + 3)) * t * t + 1
    s = 1 - t
    w2 = ((a + 2) * s - (a + 3)) * s * s + 1
    return [w0, w1, w2, 1 - w0 - w1 - w2]


def resample_taps(mode: str, n_in: int, n_out: int, scale, align_corners: bool, align_mode: int):
    """How output position ``k`` along one axis reads the input: a list of ``(index, weight)``
    arrays of length ``n_out``, ``out[k] = sum(weight[k] * x[index[k]])``, with Paddle's rules
    for the source coordinate. Indices never decrease along ``k``."""
    k = np.arange(n_out, dtype=np.float64)
    if align_corners:
        ratio = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        ratio = 1.0 / scale if scale else n_in / n_out
    last = n_in - 1
    if mode == "nearest":
        return [(np.minimum(np.floor(ratio * k).astype(np.int64), last), np.ones(n_out))]
    if mode in ("linear", "bilinear", "trilinear"):
        if align_mode == 0 and not align_corners:
            src = np.maximum(ratio * (k + 0.5) - 0.5, 0.0)
        else:
            src = ratio * k
        i0 = np.minimum(np.floor(src).astype(np.int64), last)
        lam = src - i0
        return [(i0, 1.0 - lam), (np.minimum(i0 + 1, last), lam)]
    if mode == "bicubic":
        src = ratio * k if align_corners else ratio * (k + 0.5) - 0.5
        i = np.floor(src).astype(np.int64)
        weights = _cubic_weights(src - i)
        return [(np.clip(i - 1 + j, 0, last), weights[j]) for j in range(4)]
    if mode == "area":  # adaptive average pooling: the mean of x[floor(k n/m) : ceil((k+1) n/m)]
        ki = np.arange(n_out)
        start = (ki * n_in) // n_out
        end = -((-(ki + 1) * n_in) // n_out)
        count = end - start
        return [(np.minimum(start + j, end - 1), np.where(start + j < end, 1.0 / count, 0.0))
                for j in range(int(count.max()))]
    raise ArgumentError(f"interpolate: unknown mode {mode!r}")


def _axis_weights(w: np.ndarray, ndim: int, axis: int, dtype) -> np.ndarray:
    shape = [1] * ndim
    shape[axis] = w.size
    return w.astype(dtype).reshape(shape)


def _scatter_axis(values: np.ndarray, index: np.ndarray, n: int, axis: int) -> np.ndarray:
    """The transpose of ``take(x, index, axis)``: rows of ``values`` summed into ``n`` slots."""
    shape = list(values.shape)
    shape[axis] = n
    out = np.zeros(shape, values.dtype)
    if index.size == 0:
        return out
    moved_out, moved_values = np.moveaxis(out, axis, 0), np.moveaxis(values, axis, 0)
    if np.all(index[1:] >= index[:-1]):  # sorted: equal indices are contiguous runs
        unique, starts = np.unique(index, return_index=True)
        moved_out[unique] = np.add.reduceat(moved_values, starts, axis=0)
    else:
        np.add.at(moved_out, index, moved_values)
    return out


def _interp_taps(attrs: dict, i: int):
    return resample_taps(attrs["mode"], attrs["in_sizes"][i], attrs["out_sizes"][i], attrs["scales"][i],
                         attrs["align_corners"], attrs["align_mode"])


def _interpolate_kernel(x, **attrs):
    out = x
    for i, axis in enumerate(attrs["axes"]):
        total = None
        for index, weight in _interp_taps(attrs, i):
            term = np.take(out, index, axis=axis)
            if not np.all(weight == 1.0):
                term = term * _axis_weights(weight, x.ndim, axis, x.dtype)
            total = term if total is None else total + term
        out = total
    return out.astype(x.dtype, copy=False)


def _interpolate_grad_kernel(g, **attrs):
    out = g
    for i, axis in reversed(list(enumerate(attrs["axes"]))):
        total = None
        for index, weight in _interp_taps(attrs, i):
            term = out * _axis_weights(weight, g.ndim, axis, g.dtype)
            term = _scatter_axis(term, index, attrs["in_sizes"][i], axis)
            total = term if total is None else total + term
        out = total
    return out.astype(g.dtype, copy=False)


def _resize_meta(fn: str, source: str):
    def meta(x: TensorMeta, *, axes, in_sizes, out_sizes, mode, scales, align_corners, align_mode) -> TensorMeta:
        if not x.dtype.is_floating:
            raise DTypeError(f"{fn}: x must be a floating tensor, got {x.dtype.name}")
        expected = in_sizes if source == "in" else out_sizes
        for axis, size in zip(axes, expected):
            if axis >= len(x.shape) or (x.shape[axis] is not None and x.shape[axis] != size):
                raise ShapeError(f"{fn}: axis {axis} of x {fmt_shape(x.shape)} should have size {size}")
        target = out_sizes if source == "in" else in_sizes
        shape = list(x.shape)
        for axis, size in zip(axes, target):
            shape[axis] = size
        return TensorMeta(tuple(shape), x.dtype)

    return meta


interpolate_op = Op("interpolate", reference=_interpolate_kernel, meta=_resize_meta("interpolate", "in"), dtypes=FLOATS)


@interpolate_op.defgrad
def _interpolate_rule(ctx, g):
    return dispatch(interpolate_grad_op, (g,), dict(ctx.attrs))


interpolate_grad_op = Op("interpolate_grad", reference=_interpolate_grad_kernel,
                         meta=_resize_meta("interpolate_grad", "out"), dtypes=FLOATS)


@interpolate_grad_op.defgrad
def _interpolate_grad_rule(ctx, c):
    return dispatch(interpolate_op, (c,), dict(ctx.attrs))


_MODES_BY_NDIM = {3: ("nearest", "linear", "area"), 4: ("nearest", "bilinear", "bicubic", "area"),
                  5: ("nearest", "trilinear", "area")}


def _size_list(fn: str, arg: str, value, count: int, kind) -> list:
    if isinstance(value, Tensor):
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        value = [value] * count
    value = [v.item() if isinstance(v, Tensor) else v for v in value]
    if len(value) != count:
        raise ArgumentError(f"{fn}: {arg} must have {count} values (one per spatial axis), got {list(value)}")
    try:
        out = [kind(v) for v in value]
    except (TypeError, ValueError):
        raise ArgumentError(f"{fn}: {arg} must hold numbers, got {list(value)}") from None
    if any(v <= 0 for v in out):
        raise ArgumentError(f"{fn}: {arg} must be positive, got {list(value)}")
    return out


def interpolate(x, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool = False,
                align_mode: int = 0, data_format=None, recompute_scale_factor=None, antialias: bool = False,
                name=None) -> Tensor:
    """Resize the spatial axes of a 3-, 4- or 5-D ``x`` to ``size`` or by ``scale_factor``.

    Modes: ``'nearest'``, ``'linear'`` (3-D), ``'bilinear'`` and ``'bicubic'`` (4-D),
    ``'trilinear'`` (5-D) and ``'area'`` (adaptive average). ``align_corners=True`` maps the corner
    pixels onto each other; otherwise ``align_mode=0`` samples at half-pixel centres and
    ``align_mode=1`` at ``k * in / out``. Given ``scale_factor``, the output size is
    ``floor(in * scale)`` and the sampling ratio ``1 / scale`` unless
    ``recompute_scale_factor=True``. ``antialias=True`` (bilinear and bicubic) filters as it
    downsamples, as Paddle 3.3 (``oar.nn.functional.antialias``).

    >>> import oar
    >>> x = oar.to_tensor([[[1.0, 2.0]]])
    >>> y = oar.nn.functional.interpolate(x, scale_factor=2, mode="linear", align_corners=True)
    >>> [round(v, 4) for v in y.flatten().tolist()]
    [1.0, 1.3333, 1.6667, 2.0]
    """
    fn = "interpolate"
    x = as_tensor(x, "x", fn)
    check_float(fn, x)
    if x.ndim not in _MODES_BY_NDIM:
        raise ShapeError(f"{fn}: x must be 3-D, 4-D or 5-D ([N, C, *spatial]), got shape {x.shape}")
    mode = str(mode).lower()
    if mode not in _MODES_BY_NDIM[x.ndim]:
        raise ArgumentError(f"{fn}: mode {mode!r} does not apply to a {x.ndim}-D x; use one of "
                            f"{list(_MODES_BY_NDIM[x.ndim])}")
    if align_corners and mode in ("nearest", "area"):
        raise ArgumentError(f"{fn}: align_corners=True only applies to the modes linear, bilinear, bicubic and "
                            f"trilinear, not {mode!r}")
    if align_mode not in (0, 1):
        raise ArgumentError(f"{fn}: align_mode must be 0 or 1, got {align_mode!r}")
    axes = _spatial_axes(fn, x.ndim, data_format)
    in_sizes = [x.shape[a] for a in axes]
    if (size is None) == (scale_factor is None):
        raise ArgumentError(f"{fn}: give exactly one of size and scale_factor")
    if size is not None:
        out_sizes = _size_list(fn, "size", size, len(axes), int)
        scales = [None] * len(axes)
    else:
        factors = _size_list(fn, "scale_factor", scale_factor, len(axes), float)
        out_sizes = [int(n * s) for n, s in zip(in_sizes, factors)]
        if any(s <= 0 for s in out_sizes):
            raise ArgumentError(f"{fn}: scale_factor {factors} shrinks axes of sizes {in_sizes} to nothing")
        scales = [None] * len(axes) if recompute_scale_factor or mode == "area" else factors
    if antialias:
        if mode not in ("bilinear", "bicubic"):
            raise ArgumentError(f"{fn}: antialias=True applies to the modes bilinear and bicubic, not {mode!r}")
        return antialias_resize(x, axes, out_sizes, scales, mode, bool(align_corners))
    attrs = {"axes": axes, "in_sizes": in_sizes, "out_sizes": out_sizes, "mode": mode, "scales": scales,
             "align_corners": bool(align_corners), "align_mode": int(align_mode)}
    return dispatch(interpolate_op, (x,), attrs)


def upsample(x, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool = False,
             align_mode: int = 0, data_format=None, name=None) -> Tensor:
    """``interpolate`` under Paddle's other name."""
    return interpolate(x, size, scale_factor, mode, align_corners, align_mode, data_format)


# ------------------------------------------------------------------------------------------
# unfold <-> fold: sliding blocks to columns and back
# ------------------------------------------------------------------------------------------
def _block_counts(fn: str, sizes, kernel_sizes, strides, paddings, dilations) -> list[int]:
    """Blocks per spatial dim; ``paddings`` is Paddle's ``[top, left, bottom, right]``."""
    counts = []
    for i, (size, k, s, d) in enumerate(zip(sizes, kernel_sizes, strides, dilations)):
        span = d * (k - 1) + 1
        padded = size + paddings[i] + paddings[i + 2]
        if padded < span:
            raise ShapeError(f"{fn}: spatial dim {i} of size {size} (padded: {padded}) is smaller than the dilated "
                             f"kernel {span}")
        counts.append((padded - span) // s + 1)
    return counts


def _block_view(offset, kernel_attrs, counts) -> tuple:
    """The strided view of padded input read by kernel element ``offset`` of every block."""
    strides, dilations = kernel_attrs["strides"], kernel_attrs["dilations"]
    return (Ellipsis, *(slice(k * d, k * d + (n - 1) * s + 1, s)
                        for k, s, d, n in zip(offset, strides, dilations, counts)))


def _padded_canvas(shape, paddings, dtype) -> np.ndarray:
    return np.zeros((*shape[:2], shape[2] + paddings[0] + paddings[2], shape[3] + paddings[1] + paddings[3]), dtype)


def _unfold_kernel(x, kernel_sizes, strides, paddings, dilations):
    attrs = {"strides": strides, "dilations": dilations}
    counts = _block_counts("unfold", x.shape[2:], kernel_sizes, strides, paddings, dilations)
    xp = _padded_canvas(x.shape, paddings, x.dtype)
    xp[:, :, paddings[0]:paddings[0] + x.shape[2], paddings[1]:paddings[1] + x.shape[3]] = x
    columns = [xp[_block_view(offset, attrs, counts)] for offset in np.ndindex(*kernel_sizes)]
    out = np.stack(columns, axis=2)  # [N, C, kh * kw, blocks_h, blocks_w]: row c * kh * kw + i * kw + j
    return out.reshape(x.shape[0], x.shape[1] * len(columns), counts[0] * counts[1])


def _fold_kernel(x, output_sizes, kernel_sizes, strides, paddings, dilations):
    attrs = {"strides": strides, "dilations": dilations}
    counts = _block_counts("fold", output_sizes, kernel_sizes, strides, paddings, dilations)
    blocks = int(np.prod(kernel_sizes))
    columns = x.reshape(x.shape[0], x.shape[1] // blocks, blocks, *counts)
    canvas = _padded_canvas((*columns.shape[:2], *output_sizes), paddings, x.dtype)
    for j, offset in enumerate(np.ndindex(*kernel_sizes)):
        canvas[_block_view(offset, attrs, counts)] += columns[:, :, j]
    return np.ascontiguousarray(canvas[:, :, paddings[0]:paddings[0] + output_sizes[0],
                                       paddings[1]:paddings[1] + output_sizes[1]])


def _unfold_meta(x: TensorMeta, kernel_sizes, strides, paddings, dilations) -> TensorMeta:
    if len(x.shape) != 4:
        raise ShapeError(f"unfold: x must be 4-D [N, C, H, W], got {fmt_shape(x.shape)}")
    if not x.dtype.is_floating:
        raise DTypeError(f"unfold: x must be a floating tensor, got {x.dtype.name}")
    counts = _block_counts("unfold", x.shape[2:], kernel_sizes, strides, paddings, dilations)
    channels = None if x.shape[1] is None else x.shape[1] * int(np.prod(kernel_sizes))
    return TensorMeta((x.shape[0], channels, counts[0] * counts[1]), x.dtype)


def _fold_meta(x: TensorMeta, output_sizes, kernel_sizes, strides, paddings, dilations) -> TensorMeta:
    blocks = int(np.prod(kernel_sizes))
    if len(x.shape) != 3:
        raise ShapeError(f"fold: x must be 3-D [N, C * kh * kw, L], got {fmt_shape(x.shape)}")
    if not x.dtype.is_floating:
        raise DTypeError(f"fold: x must be a floating tensor, got {x.dtype.name}")
    counts = _block_counts("fold", output_sizes, kernel_sizes, strides, paddings, dilations)
    if x.shape[1] is not None and x.shape[1] % blocks or x.shape[2] is not None and x.shape[2] != counts[0] * counts[1]:
        raise ShapeError(f"fold: x {fmt_shape(x.shape)} must have a multiple of {blocks} (kernel {kernel_sizes}) rows "
                         f"and {counts[0] * counts[1]} blocks ({counts[0]} x {counts[1]} for output {output_sizes})")
    channels = None if x.shape[1] is None else x.shape[1] // blocks
    return TensorMeta((x.shape[0], channels, *output_sizes), x.dtype)


# named for what they compute: "fold" is also a pass phase, and Tensor.unfold is another operation
unfold_op = Op("im2col", paddle=("nn.functional.unfold",), reference=_unfold_kernel, meta=_unfold_meta, dtypes=FLOATS,
               per_sample=True)
fold_op = Op("col2im", paddle=("nn.functional.fold",), reference=_fold_kernel, meta=_fold_meta, dtypes=FLOATS,
             per_sample=True)


@unfold_op.defgrad
def _unfold_rule(ctx, g):
    return dispatch(fold_op, (g,), {"output_sizes": list(ctx.in_shapes[0][2:]), **ctx.attrs})


@fold_op.defgrad
def _fold_rule(ctx, g):
    return dispatch(unfold_op, (g,), {k: v for k, v in ctx.attrs.items() if k != "output_sizes"})


def _block_args(fn: str, kernel_sizes, strides, paddings, dilations) -> dict:
    def pair(arg, value, minimum):
        values = _int_values(fn, arg, value)
        values = values * 2 if len(values) == 1 else values
        if len(values) != 2 or any(v < minimum for v in values):
            raise ArgumentError(f"{fn}: {arg} must be an int or 2 ints >= {minimum}, got {value!r}")
        return values

    pads = _int_values(fn, "paddings", paddings)
    pads = pads * 4 if len(pads) == 1 else pads * 2 if len(pads) == 2 else pads
    if len(pads) != 4 or any(p < 0 for p in pads):
        raise ArgumentError(f"{fn}: paddings must be an int, 2 ints or 4 ints [top, left, bottom, right] >= 0, "
                            f"got {paddings!r}")
    return {"kernel_sizes": pair("kernel_sizes", kernel_sizes, 1), "strides": pair("strides", strides, 1),
            "paddings": pads, "dilations": pair("dilations", dilations, 1)}


def unfold(x, kernel_sizes, strides=1, paddings=0, dilations=1, name=None) -> Tensor:
    """im2col: the sliding ``kernel_sizes`` blocks of ``x`` [N, C, H, W] as columns of the
    [N, C * kh * kw, L] output (row ``c * kh * kw + i * kw + j``, L blocks in row-major order).
    ``paddings`` is an int, ``[h, w]`` or ``[top, left, bottom, right]``.

    >>> import oar
    >>> x = oar.arange(9, dtype="float32").reshape([1, 1, 3, 3])
    >>> oar.nn.functional.unfold(x, 2)[0].tolist()
    [[0.0, 1.0, 3.0, 4.0], [1.0, 2.0, 4.0, 5.0], [3.0, 4.0, 6.0, 7.0], [4.0, 5.0, 7.0, 8.0]]
    """
    fn = "unfold"
    x = as_tensor(x, "x", fn)
    check_float(fn, x, "x")
    if x.ndim != 4:
        raise ShapeError(f"{fn}: x must be 4-D [N, C, H, W], got shape {x.shape}")
    return dispatch(unfold_op, (x,), _block_args(fn, kernel_sizes, strides, paddings, dilations))


def fold(x, output_sizes, kernel_sizes, strides=1, paddings=0, dilations=1, name=None) -> Tensor:
    """col2im, the adjoint of ``unfold``: the columns of ``x`` [N, C * kh * kw, L] summed into
    [N, C, *output_sizes] at the positions of their blocks (overlaps add).

    >>> import oar
    >>> cols = oar.ones([1, 4, 4])
    >>> oar.nn.functional.fold(cols, [3, 3], 2)[0, 0].tolist()
    [[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]
    """
    fn = "fold"
    x = as_tensor(x, "x", fn)
    check_float(fn, x, "x")
    if x.ndim != 3:
        raise ShapeError(f"{fn}: x must be 3-D [N, C * kh * kw, L], got shape {x.shape}")
    sizes = _int_values(fn, "output_sizes", output_sizes)
    sizes = sizes * 2 if len(sizes) == 1 else sizes
    if len(sizes) != 2 or any(v < 1 for v in sizes):
        raise ArgumentError(f"{fn}: output_sizes must be an int or 2 ints >= 1, got {output_sizes!r}")
    return dispatch(fold_op, (x,), {"output_sizes": sizes, **_block_args(fn, kernel_sizes, strides, paddings,
                                                                         dilations)})


# ------------------------------------------------------------------------------------------
# small compositions
# ------------------------------------------------------------------------------------------
def pairwise_distance(x, y, p: float = 2.0, epsilon: float = 1e-6, keepdim: bool = False, name=None) -> Tensor:
    """The p-norm of ``x - y + epsilon`` along the last axis (``p=inf``: the largest magnitude,
    ``p=0``: the count of non-zeros), broadcasting ``x`` and ``y``.

    >>> import oar
    >>> oar.nn.functional.pairwise_distance(oar.to_tensor([[3., 0]]), oar.to_tensor([[0., 4]]), epsilon=0).tolist()
    [5.0]
    """
    fn = "pairwise_distance"
    x, y = as_tensor(x, "x", fn), as_tensor(y, "y", fn)
    check_float(fn, x, "x")
    check_float(fn, y, "y")
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise ArgumentError(f"{fn}: p must be a number, got {p!r}")
    diff = x - y + float(epsilon)
    magnitude = oar.abs(diff)
    if p == float("inf"):
        return oar.max(magnitude, axis=-1, keepdim=keepdim)
    if p == float("-inf"):
        return oar.min(magnitude, axis=-1, keepdim=keepdim)
    if p == 0:
        return oar.sum((diff != 0).astype(diff.dtype), axis=-1, keepdim=keepdim)
    return oar.sum(magnitude ** float(p), axis=-1, keepdim=keepdim) ** (1.0 / float(p))
def cosine_similarity(x1, x2, axis: int = 1, eps: float = 1e-8) -> Tensor:
    """``sum(x1 * x2) / sqrt(max(sum(x1^2) * sum(x2^2), eps^2))`` along ``axis``.

    >>> import oar
    >>> oar.nn.functional.cosine_similarity(oar.to_tensor([[1.0, 0.0]]), oar.to_tensor([[1.0, 0.0]])).tolist()
    [1.0]
    """
    fn = "cosine_similarity"
    x1, x2 = as_tensor(x1, "x1", fn), as_tensor(x2, "x2", fn)
    check_float(fn, x1, "x1")
    check_float(fn, x2, "x2")
    dot = oar.sum(x1 * x2, axis=axis)
    norms = oar.sum(x1 * x1, axis=axis) * oar.sum(x2 * x2, axis=axis)
    return dot / oar.sqrt(oar.clip(norms, min=eps * eps))


def label_smooth(label, prior_dist=None, epsilon: float = 0.1, name=None) -> Tensor:
    """``(1 - epsilon) * label + epsilon * prior_dist`` (uniform over the last axis by default).

    >>> import oar
    >>> y = oar.nn.functional.label_smooth(oar.to_tensor([[0.0, 1.0]]), epsilon=0.2)
    >>> [round(v, 4) for v in y.flatten().tolist()]
    [0.1, 0.9]
    """
    fn = "label_smooth"
    label = as_tensor(label, "label", fn)
    check_float(fn, label, "label")
    epsilon = float(epsilon)
    if not 0.0 <= epsilon <= 1.0:
        raise ArgumentError(f"{fn}: epsilon must lie in [0, 1], got {epsilon}")
    if prior_dist is None:
        return label * (1.0 - epsilon) + epsilon / label.shape[-1]
    return label * (1.0 - epsilon) + as_tensor(prior_dist, "prior_dist", fn) * epsilon


OPS = [linear_op, linear_grad_op, embedding_op, embedding_grad_op, interpolate_op, interpolate_grad_op, unfold_op,
       fold_op]
__all__ = [
    "linear", "bilinear", "dropout", "dropout2d", "dropout3d", "alpha_dropout", "embedding", "one_hot", "pad",
    "zeropad2d", "interpolate", "upsample", "unfold", "fold", "cosine_similarity", "pairwise_distance",
    "label_smooth",
]

