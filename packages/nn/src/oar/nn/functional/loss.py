"""Loss functions of oar.nn.functional, with Paddle's names, arguments and defaults.

The losses that dominate training time, or that need care to be exact, are fused ops with a numpy
reference kernel that plugins (oar-numba, oar-triton) replace: ``softmax_with_cross_entropy``
(stable log-softmax and the negative log-likelihood in one pass; gradient ``softmax - label``),
``nll_loss``, ``bce_loss`` (logs clamped at -100 as in Paddle), ``sigmoid_cross_entropy_with_logits``
(stable for any logit), ``warpctc`` (CTC by the forward-backward recursion) and ``warprnnt`` (the
RNN-T loss over its lattice, the same way). The others compose core ops. Every reduction is
``'mean'``, ``'sum'`` or ``'none'`` (``kl_div`` adds ``'batchmean'``).

Where oar differs from Paddle on purpose: ``gaussian_nll_loss`` is differentiable in ``variance``
(Paddle's clip under ``no_grad`` cuts it off); ``hsigmoid_loss`` adds nothing for the steps a
short path lacks (Paddle's kernel adds ``log 2`` per missing step to the loss, not the gradient).

>>> import oar
>>> import oar.nn.functional as F
>>> logits = oar.to_tensor([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0]])
>>> round(float(F.cross_entropy(logits, oar.to_tensor([0, 2]))), 4)
0.1755
"""

from __future__ import annotations

import numpy as np

import oar
from oar.errors import ArgumentError, DTypeError, GradientError, ShapeError
from oar.ops import (
    AMP_FP32,
    Op,
    Tensor,
    TensorMeta,
    as_tensor,
    broadcast_shapes,
    dispatch,
    fmt_shape,
    normalize_axis,
    sigmoid,
)

_KERNEL_DTYPES = (oar.float32, oar.float64)  # float16/bfloat16 compute in float32
_REDUCTIONS = ("mean", "sum", "none")
_LOG_CLAMP = -100.0  # Paddle's bce_loss clamps each log term here, so a 0 or 1 input stays finite


class LossOp(Op):
    """An op with a second output that rarely gets a gradient (the softmax of
    ``softmax_with_cross_entropy``, the gradient buffer of ``warpctc``): its gradient rule
    receives None for that output instead of a tensor of zeros, and skips the work."""

    __slots__ = ()
    materialize_grads = False


# ------------------------------------------------------------------------------------------
# argument checks shared by the losses
# ------------------------------------------------------------------------------------------
def _tensor(value, fn: str, name: str) -> Tensor:
    if value is None:
        raise ArgumentError(f"{fn}: argument {name!r} is required, got None")
    return as_tensor(value, name, fn)


def _check_reduction(fn: str, reduction, allowed=_REDUCTIONS) -> str:
    if reduction not in allowed:
        shown = ", ".join(repr(r) for r in allowed)
        raise ArgumentError(f"{fn}: reduction must be one of {shown}, got {reduction!r}")
    return reduction


def _check_float(fn: str, name: str, t: Tensor) -> None:
    if not t.dtype.is_floating:
        raise DTypeError(f"{fn}: {name} must be a floating tensor (float16, bfloat16, float32 or float64), "
                         f"got {t.dtype.name}")


def _check_broadcasts_to(fn: str, name: str, t: Tensor, shape, input_name: str = "input") -> None:
    """``t`` must broadcast to ``shape`` without changing it: a label of shape [N] against an
    input of shape [N, 1] would silently give an [N, N] loss otherwise."""
    shape = tuple(shape)
    try:
        out = broadcast_shapes(fn, shape, tuple(t.shape), names=[input_name, name])
    except ShapeError:
        out = None
    if out != shape:
        raise ShapeError(f"{fn}: {name} shape {fmt_shape(t.shape)} does not match {input_name} shape "
                         f"{fmt_shape(shape)} (it must equal it, or broadcast to it)")


def _as_float_like(fn: str, name: str, t: Tensor, like: Tensor) -> Tensor:
    _check_float(fn, name, t)
    return t if t.dtype is like.dtype else oar.cast(t, like.dtype)


def _check_class_weight(fn: str, weight, num_classes: int, like: Tensor) -> Tensor:
    weight = _tensor(weight, fn, "weight")
    if weight.ndim != 1 or weight.shape[0] != num_classes:
        raise ShapeError(f"{fn}: weight must be a 1-D tensor with one value per class ({num_classes} classes), "
                         f"got shape {fmt_shape(weight.shape)}")
    return _as_float_like(fn, "weight", weight, like)


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return oar.mean(loss)
    if reduction == "sum":
        return oar.sum(loss)
    return loss


def _divide_nonzero(total: Tensor, count: Tensor) -> Tensor:
    """``total / count``, or 0 when ``count`` is 0 (every label ignored): no NaN loss."""
    return total / (count + oar.cast(oar.equal(count, 0.0), count.dtype))


def _with_dim(shape, axis: int, size) -> tuple:
    return tuple(size if i == axis else d for i, d in enumerate(shape))


def _shapes_match(a, b) -> bool:
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


# ------------------------------------------------------------------------------------------
# numpy helpers of the reference kernels
# ------------------------------------------------------------------------------------------
def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def _hard_labels(fn: str, label: np.ndarray, num_classes: int, ignore_index: int):
    """Class indices safe to gather with (ignored entries point at class 0) and the valid mask;
    an index outside [0, num_classes) that is not ``ignore_index`` is an error naming it."""
    label = label.astype(np.int64, copy=False)
    valid = label != ignore_index
    bad = valid & ((label < 0) | (label >= num_classes))
    if bad.any():
        raise ArgumentError(f"{fn}: label value {int(label[bad].flat[0])} is out of range [0, {num_classes}): "
                            f"the input has {num_classes} classes (labels equal to ignore_index={ignore_index} "
                            f"are skipped)")
    return np.where(valid, label, 0), valid


# ------------------------------------------------------------------------------------------
# gradient-rule helpers, written with oar ops
# ------------------------------------------------------------------------------------------
def _one_hot_along(label: Tensor, num_classes: int, axis: int, ignore_index: int, dtype) -> Tensor:
    """The one-hot of ``label`` (size 1 at ``axis``) along ``axis``; all zeros where ignored."""
    shape = [1] * label.ndim
    shape[axis] = num_classes
    classes = oar.reshape(oar.arange(num_classes, dtype=label.dtype, device=label.place), shape)
    hit = oar.equal(label, classes)
    if 0 <= ignore_index < num_classes:  # otherwise an ignored label matches no class anyway
        hit = oar.logical_and(hit, oar.not_equal(label, ignore_index))
    return oar.cast(hit, dtype)


def _valid_mask(label: Tensor, ignore_index: int, dtype) -> Tensor:
    return oar.cast(oar.not_equal(label, ignore_index), dtype)


def _softplus_neg(x: Tensor) -> Tensor:
    """``log(1 + exp(-x))`` without overflow."""
    return oar.log1p(oar.exp(-oar.abs(x))) + oar.maximum(-x, oar.zeros_like(x))


# ------------------------------------------------------------------------------------------
# softmax_with_cross_entropy: the fused op behind cross_entropy
# ------------------------------------------------------------------------------------------
def _softmax_with_cross_entropy_kernel(logits, label, soft_label=False, use_softmax=True, ignore_index=-100, axis=-1):
    if use_softmax:
        log_prob = _log_softmax(logits, axis)
        prob = np.exp(log_prob)
    else:  # the input already holds probabilities
        with np.errstate(divide="ignore"):
            log_prob = np.log(logits)
        prob = logits.copy()
    if soft_label:
        # 0 * log(0) is 0 here, not NaN: a class with zero target mass contributes nothing.
        loss = -np.sum(np.where(label != 0, label * log_prob, 0), axis=axis, keepdims=True)
    else:
        index, valid = _hard_labels("cross_entropy", label, logits.shape[axis], ignore_index)
        loss = np.where(valid, -np.take_along_axis(log_prob, index, axis=axis), 0)
    return loss.astype(logits.dtype), prob.astype(logits.dtype)


def _softmax_with_cross_entropy_meta(logits, label, soft_label=False, use_softmax=True, ignore_index=-100, axis=-1):
    fn = "cross_entropy"
    if not logits.dtype.is_floating:
        raise DTypeError(f"{fn}: input must be a floating tensor, got {logits.dtype.name}")
    loss_shape = _with_dim(logits.shape, axis, 1)
    if soft_label:
        if not label.dtype.is_floating:
            raise DTypeError(f"{fn}: soft labels must be a floating tensor, got {label.dtype.name}")
        if not _shapes_match(label.shape, logits.shape):
            raise ShapeError(f"{fn}: soft label shape {fmt_shape(label.shape)} must equal the input shape "
                             f"{fmt_shape(logits.shape)}")
    else:
        if not label.dtype.is_integer:
            raise DTypeError(f"{fn}: hard labels must be an integer tensor, got {label.dtype.name}")
        if not _shapes_match(label.shape, loss_shape):
            raise ShapeError(f"{fn}: label shape {fmt_shape(label.shape)} must be {fmt_shape(loss_shape)} "
                             f"for input shape {fmt_shape(logits.shape)} and axis {axis}")
    return TensorMeta(loss_shape, logits.dtype), TensorMeta(logits.shape, logits.dtype)


softmax_with_cross_entropy_op = LossOp(
    "softmax_with_cross_entropy", reference=_softmax_with_cross_entropy_kernel,
    meta=_softmax_with_cross_entropy_meta, amp=AMP_FP32, dtypes=_KERNEL_DTYPES, num_outputs=2,
)


@softmax_with_cross_entropy_op.defgrad
def _softmax_with_cross_entropy_grad(ctx, g_loss, g_prob):
    a = ctx.attrs
    axis, soft = a["axis"], a["soft_label"]
    logits, label = ctx.input(0), ctx.input(1)
    prob = ctx.output(1)  # the softmax (or the input itself when use_softmax=False)
    d_logits = d_label = None
    if g_loss is not None:
        if soft:
            target = label
        elif not a["use_softmax"]:
            target = _one_hot_along(label, logits.shape[axis], axis, a["ignore_index"], logits.dtype)
        if a["use_softmax"] and not soft:
            # the common case (classification): one op, which plugins fuse into one pass per row
            d_logits = dispatch(softmax_with_cross_entropy_grad_op, (prob, label, g_loss),
                                {"ignore_index": a["ignore_index"], "axis": axis})
        elif a["use_softmax"]:
            # d(-sum(y * log_softmax)) = softmax * sum(y) - y
            d_logits = (prob * oar.sum(target, axis=axis, keepdim=True) - target) * g_loss
        else:
            # d(-sum(y * log p)) = -y / p, taken as 0 where y is 0 (also where p is 0).
            nonzero = oar.not_equal(target, 0.0)
            d_logits = -(target / oar.where(nonzero, prob, oar.ones_like(prob))) * g_loss
        if soft and ctx.needs_input_grad[1]:
            log_prob = logits - oar.logsumexp(logits, axis=axis, keepdim=True) if a["use_softmax"] else oar.log(logits)
            d_label = -log_prob * g_loss
    if g_prob is not None:
        if a["use_softmax"]:
            extra = prob * (g_prob - oar.sum(g_prob * prob, axis=axis, keepdim=True))
        else:
            extra = g_prob
        d_logits = extra if d_logits is None else d_logits + extra
    return d_logits, d_label


def _softmax_with_cross_entropy_grad_kernel(prob, label, g_loss, ignore_index, axis):
    """d loss / d logits of hard labels: ``(prob - onehot(label)) * g_loss``, 0 where ignored."""
    axis = axis % prob.ndim
    label = label.astype(np.int64, copy=False)
    valid = label != ignore_index
    shape = [1] * prob.ndim
    shape[axis] = prob.shape[axis]
    onehot = (np.arange(prob.shape[axis]).reshape(shape) == label) & valid
    return ((prob * valid - onehot) * g_loss).astype(prob.dtype)


def _softmax_with_cross_entropy_grad_meta(prob, label, g_loss, ignore_index, axis):
    return prob


softmax_with_cross_entropy_grad_op = Op(
    "softmax_with_cross_entropy_grad", reference=_softmax_with_cross_entropy_grad_kernel,
    meta=_softmax_with_cross_entropy_grad_meta, amp=AMP_FP32, dtypes=_KERNEL_DTYPES, nondiff_inputs=(1,),
)


@softmax_with_cross_entropy_grad_op.defgrad
def _softmax_with_cross_entropy_grad_grad(ctx, c):
    # d = (prob * valid - onehot) * g: linear in prob and in g
    prob, label, g_loss = ctx.inputs
    a = ctx.attrs
    axis = a["axis"] % prob.ndim
    valid = _valid_mask(label, a["ignore_index"], prob.dtype)
    d_prob = c * valid * g_loss if ctx.needs_input_grad[0] else None
    d_g = None
    if ctx.needs_input_grad[2]:
        onehot = _one_hot_along(label, prob.shape[axis], axis, a["ignore_index"], prob.dtype)
        d_g = oar.sum(c * (prob * valid - onehot), axis=axis, keepdim=True)
    return d_prob, None, d_g


def _hard_label_keepdim(fn: str, input: Tensor, label: Tensor, axis: int) -> tuple[Tensor, bool]:
    """A hard label with the class axis kept as size 1, and whether it came without that axis.

    Paddle accepts labels of the input's shape without ``axis`` ([N] for an [N, C] input) or
    with it as 1 ([N, 1]).
    """
    expected = _with_dim(input.shape, axis, 1)
    squeezed = tuple(d for i, d in enumerate(input.shape) if i != axis)
    if tuple(label.shape) == squeezed:
        return oar.unsqueeze(label, axis), True
    if tuple(label.shape) == expected:
        return label, False
    raise ShapeError(
        f"{fn}: label shape {fmt_shape(label.shape)} does not fit input shape {fmt_shape(input.shape)} with "
        f"axis={axis}: hard labels have shape {fmt_shape(squeezed)} or {fmt_shape(expected)}"
        + (" (for per-class probabilities pass soft_label=True)" if tuple(label.shape) == tuple(input.shape) else "")
    )


def _hard_label_dtype(fn: str, label: Tensor) -> Tensor:
    if label.dtype.is_integer:
        return label
    if label.dtype.is_floating:  # Paddle accepts float class indices
        return oar.cast(label, "int64")
    raise DTypeError(f"{fn}: hard labels must be an integer tensor of class indices, got {label.dtype.name}")


def cross_entropy(input, label, weight=None, ignore_index=-100, reduction="mean", soft_label=False, axis=-1,
                  use_softmax=True, label_smoothing=0.0, name=None) -> Tensor:
    """Softmax cross-entropy of ``input`` logits along ``axis`` against ``label``.

    Hard labels (class indices) have the input's shape without ``axis`` ([N] for [N, C]) or with
    it as 1 ([N, 1]); soft labels (``soft_label=True``) have the input's shape. ``weight`` (one
    value per class) weighs each sample's loss, and ``'mean'`` is then ``sum(w_i * l_i) /
    sum(w_i)``. Labels equal to ``ignore_index`` add nothing and are left out of the mean.
    ``label_smoothing`` mixes the one-hot target with the uniform distribution. With
    ``use_softmax=False`` the input holds probabilities already.

    With ``reduction='none'`` the loss has the label's shape for hard labels, and the input's
    shape with ``axis`` as 1 for soft labels (Paddle's rule).

    Unlike Paddle, a mean with ``ignore_index < 0`` also leaves the ignored labels out of the
    count, and a mean over a batch whose labels are all ignored is 0 (Paddle's rule for
    ``ignore_index >= 0``). A mean over an empty batch is NaN, as Paddle's (also with a
    ``weight``, where Paddle gives 0); its sum is 0 and ``'none'`` gives an empty loss.

    >>> import oar
    >>> import oar.nn.functional as F
    >>> x = oar.to_tensor([[1.0, 2.0, 3.0]])
    >>> round(float(F.cross_entropy(x, oar.to_tensor([2]))), 4)
    0.4076
    >>> F.cross_entropy(x, oar.to_tensor([[2]]), reduction="none").shape
    [1, 1]
    """
    fn = "cross_entropy"
    _check_reduction(fn, reduction)
    input = _tensor(input, fn, "input")
    label = _tensor(label, fn, "label")
    _check_float(fn, "input", input)
    if input.ndim == 0:
        raise ShapeError(f"{fn}: input must have a class axis, got a 0-d tensor")
    axis = normalize_axis(axis, input.ndim, fn)
    num_classes = input.shape[axis]
    label_smoothing = float(label_smoothing)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ArgumentError(f"{fn}: label_smoothing must be in [0, 1], got {label_smoothing}")
    if soft_label and ignore_index > 0:
        raise ArgumentError(f"{fn}: ignore_index applies to hard labels only; with soft_label=True leave it "
                            f"at -100 (got {ignore_index})")
    ignore_index = int(ignore_index)
    if weight is not None:
        weight = _check_class_weight(fn, weight, num_classes, input)
    attrs = {"use_softmax": bool(use_softmax), "ignore_index": ignore_index, "axis": axis}

    if soft_label:
        if tuple(label.shape) != tuple(input.shape):
            raise ShapeError(f"{fn}: soft labels must have the input's shape {fmt_shape(input.shape)}, "
                             f"got {fmt_shape(label.shape)}")
        target = _as_float_like(fn, "label (soft)", label, input)
        if label_smoothing > 0:
            target = target * (1.0 - label_smoothing) + label_smoothing / num_classes
        loss, _ = dispatch(softmax_with_cross_entropy_op, (input, target), {"soft_label": True, **attrs})
        if reduction == "mean" and loss.size == 0:
            return _mean_of_no_sample(loss)
        if weight is None:
            return _reduce(loss, reduction)
        sample_weight = oar.sum(target * _along(weight, axis, input.ndim), axis=axis, keepdim=True)
        return _weighted_reduce(loss * sample_weight, sample_weight, reduction)

    label = _hard_label_dtype(fn, label)
    label, squeezed = _hard_label_keepdim(fn, input, label, axis)
    loss, _ = dispatch(softmax_with_cross_entropy_op, (input, label), {"soft_label": False, **attrs})
    valid = _valid_mask(label, ignore_index, input.dtype)
    if weight is not None:
        sample_weight = _gather_class_weight(weight, label, ignore_index)
    if label_smoothing > 0:
        # The smoothed target (1 - e) * onehot + e / C splits the loss into (1 - e) * the hard loss
        # plus e * the mean over classes of -log p; no one-hot is built.
        if use_softmax:
            mean_log_p = oar.mean(input, axis=axis, keepdim=True) - oar.logsumexp(input, axis=axis, keepdim=True)
        else:
            mean_log_p = oar.mean(oar.log(input), axis=axis, keepdim=True)
        loss = (loss * (1.0 - label_smoothing) - mean_log_p * label_smoothing) * valid
        if weight is not None:
            sample_weight = sample_weight * (1.0 - label_smoothing) + oar.mean(weight) * label_smoothing
    if weight is not None:
        sample_weight = sample_weight * valid
    if squeezed:
        loss, valid = oar.squeeze(loss, axis), oar.squeeze(valid, axis)
        if weight is not None:
            sample_weight = oar.squeeze(sample_weight, axis)
    if reduction == "mean" and loss.size == 0:
        return _mean_of_no_sample(loss)
    if weight is None:
        if reduction == "mean":
            return _divide_nonzero(oar.sum(loss), oar.sum(valid))
        return _reduce(loss, reduction)
    return _weighted_reduce(loss * sample_weight, sample_weight, reduction)


def _mean_of_no_sample(loss: Tensor) -> Tensor:
    """NaN, the mean over an empty batch, computed from ``loss`` so that backward still reaches
    the (empty) input; a 0 here would train on nothing without a sign."""
    return oar.sum(loss) * float("nan")


def _along(weight: Tensor, axis: int, ndim: int) -> Tensor:
    """A per-class vector shaped to broadcast along ``axis`` of an ``ndim``-d tensor."""
    shape = [1] * ndim
    shape[axis] = weight.shape[0]
    return oar.reshape(weight, shape)


def _gather_class_weight(weight: Tensor, label: Tensor, ignore_index: int) -> Tensor:
    """``weight[label]`` with the label's shape; ignored labels read class 0 (masked by the caller)."""
    safe = oar.where(oar.not_equal(label, ignore_index), label, oar.zeros_like(label))
    return oar.reshape(oar.gather(weight, oar.reshape(safe, [-1])), label.shape)


def _weighted_reduce(weighted_loss: Tensor, sample_weight: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return _divide_nonzero(oar.sum(weighted_loss), oar.sum(sample_weight))
    return _reduce(weighted_loss, reduction)


def softmax_with_cross_entropy(logits, label, soft_label=False, ignore_index=-100, numeric_stable_mode=True,
                               return_softmax=False, axis=-1):
    """Paddle's legacy fused softmax + cross-entropy, without reduction.

    The loss has the shape of ``logits`` with ``axis`` as 1; hard labels have that shape too (or
    lack ``axis``). With ``return_softmax=True`` returns ``(loss, softmax)``. The computation is
    always the numerically stable one (``numeric_stable_mode`` is accepted for compatibility).

    >>> import oar
    >>> import oar.nn.functional as F
    >>> loss = F.softmax_with_cross_entropy(oar.to_tensor([[0.0, 0.0]]), oar.to_tensor([[1]]))
    >>> loss.shape, round(float(loss), 4)
    ([1, 1], 0.6931)
    """
    fn = "softmax_with_cross_entropy"
    logits = _tensor(logits, fn, "logits")
    label = _tensor(label, fn, "label")
    _check_float(fn, "logits", logits)
    if logits.ndim == 0:
        raise ShapeError(f"{fn}: logits must have a class axis, got a 0-d tensor")
    axis = normalize_axis(axis, logits.ndim, fn)
    attrs = {"soft_label": bool(soft_label), "use_softmax": True, "ignore_index": int(ignore_index), "axis": axis}
    if soft_label:
        if tuple(label.shape) != tuple(logits.shape):
            raise ShapeError(f"{fn}: soft labels must have the logits' shape {fmt_shape(logits.shape)}, "
                             f"got {fmt_shape(label.shape)}")
        label = _as_float_like(fn, "label (soft)", label, logits)
    else:
        label, _ = _hard_label_keepdim(fn, logits, _hard_label_dtype(fn, label), axis)
    loss, prob = dispatch(softmax_with_cross_entropy_op, (logits, label), attrs)
    return (loss, prob) if return_softmax else loss


# ------------------------------------------------------------------------------------------
# nll_loss
# ------------------------------------------------------------------------------------------
def _nll_loss_kernel(input, label, ignore_index=-100):
    index, valid = _hard_labels("nll_loss", label, input.shape[1], ignore_index)
    picked = np.take_along_axis(input, np.expand_dims(index, 1), axis=1).squeeze(1)
    return np.where(valid, -picked, 0).astype(input.dtype)


def _nll_loss_meta(input, label, ignore_index=-100):
    if not input.dtype.is_floating:
        raise DTypeError(f"nll_loss: input must be a floating tensor, got {input.dtype.name}")
    if not label.dtype.is_integer:
        raise DTypeError(f"nll_loss: label must be an integer tensor, got {label.dtype.name}")
    expected = input.shape[:1] + input.shape[2:]
    if len(input.shape) < 2 or not _shapes_match(label.shape, expected):
        raise ShapeError(f"nll_loss: label shape {fmt_shape(label.shape)} must be {fmt_shape(expected)} for "
                         f"input shape {fmt_shape(input.shape)} ([N, C, d1, ...] -> [N, d1, ...])")
    return TensorMeta(label.shape, input.dtype)


nll_loss_op = Op("nll_loss", reference=_nll_loss_kernel, meta=_nll_loss_meta, amp=AMP_FP32, dtypes=_KERNEL_DTYPES)


@nll_loss_op.defgrad
def _nll_loss_grad(ctx, g):
    input, label = ctx.input(0), ctx.input(1)
    onehot = _one_hot_along(oar.unsqueeze(label, 1), input.shape[1], 1, ctx.attrs["ignore_index"], input.dtype)
    return -onehot * oar.unsqueeze(g, 1), None


def nll_loss(input, label, weight=None, ignore_index=-100, reduction="mean", name=None) -> Tensor:
    """Negative log-likelihood of log-probabilities ``input`` ([N, C] or [N, C, d1, ...]) at the
    class indices ``label`` ([N] or [N, d1, ...]).

    ``weight`` weighs each class; ``'mean'`` is ``sum(w[y_i] * l_i) / sum(w[y_i])`` over the
    labels not equal to ``ignore_index`` (0 when there are none).

    >>> import oar
    >>> import oar.nn.functional as F
    >>> logp = oar.log(oar.to_tensor([[0.5, 0.25, 0.25], [0.1, 0.8, 0.1]]))
    >>> round(float(F.nll_loss(logp, oar.to_tensor([0, 1]))), 4)
    0.4581
    """
    fn = "nll_loss"
    _check_reduction(fn, reduction)
    input = _tensor(input, fn, "input")
    label = _tensor(label, fn, "label")
    _check_float(fn, "input", input)
    if input.ndim < 2:
        raise ShapeError(f"nll_loss: input must be [N, C] or [N, C, d1, ...], got shape {fmt_shape(input.shape)}")
    if not label.dtype.is_integer:
        raise DTypeError(f"nll_loss: label must be an integer tensor of class indices, got {label.dtype.name}")
    expected = [input.shape[0]] + input.shape[2:]
    if label.shape != expected:
        raise ShapeError(f"nll_loss: label shape {fmt_shape(label.shape)} does not match input shape "
                         f"{fmt_shape(input.shape)}: expected {fmt_shape(expected)} (the input's shape without "
                         f"the class axis 1)")
    ignore_index = int(ignore_index)
    loss = dispatch(nll_loss_op, (input, label), {"ignore_index": ignore_index})
    valid = _valid_mask(label, ignore_index, input.dtype)
    if weight is None:
        if reduction == "mean":
            return _divide_nonzero(oar.sum(loss), oar.sum(valid))
        return _reduce(loss, reduction)
    weight = _check_class_weight(fn, weight, input.shape[1], input)
    sample_weight = _gather_class_weight(weight, label, ignore_index) * valid
    return _weighted_reduce(loss * sample_weight, sample_weight, reduction)


# ------------------------------------------------------------------------------------------
# binary_cross_entropy: bce_loss
# ------------------------------------------------------------------------------------------
def _bce_loss_kernel(input, label):
    if input.size and (np.min(input) < 0 or np.max(input) > 1):
        raise ArgumentError(f"binary_cross_entropy: input must hold probabilities in [0, 1] (e.g. the output of "
                            f"sigmoid), got values from {np.min(input)} to {np.max(input)}; for logits use "
                            f"binary_cross_entropy_with_logits")
    with np.errstate(divide="ignore"):
        log_p = np.maximum(np.log(input), _LOG_CLAMP)
        log_q = np.maximum(np.log1p(-input), _LOG_CLAMP)
    return (-(label * log_p + (1 - label) * log_q)).astype(input.dtype)


def _same_shape_meta(fn: str, names: tuple):
    def meta(*inputs, **attrs):
        first = inputs[0]
        for n, m in zip(names, inputs):
            if not m.dtype.is_floating:
                raise DTypeError(f"{fn}: {n} must be a floating tensor, got {m.dtype.name}")
            if not _shapes_match(m.shape, first.shape):
                raise ShapeError(f"{fn}: {n} shape {fmt_shape(m.shape)} must equal {names[0]} shape "
                                 f"{fmt_shape(first.shape)}")
        return TensorMeta(first.shape, first.dtype)

    return meta


bce_loss_op = Op("bce_loss", paddle=("nn.functional.binary_cross_entropy",), reference=_bce_loss_kernel, meta=_same_shape_meta("binary_cross_entropy", ("input", "label")),
                 traits=("elementwise",), amp=AMP_FP32, dtypes=_KERNEL_DTYPES)


@bce_loss_op.defgrad
def _bce_loss_grad(ctx, g):
    x, y = ctx.input(0), ctx.input(1)
    d_x = d_y = None
    if ctx.needs_input_grad[0]:
        # Paddle's rule: (x - y) / max(x * (1 - x), 1e-12), finite at x = 0 and x = 1.
        d_x = g * (x - y) / oar.maximum(x * (1.0 - x), oar.full_like(x, 1e-12))
    if ctx.needs_input_grad[1]:
        floor = oar.full_like(x, _LOG_CLAMP)
        d_y = g * (oar.maximum(oar.log(1.0 - x), floor) - oar.maximum(oar.log(x), floor))
    return d_x, d_y


def binary_cross_entropy(input, label, weight=None, reduction="mean", name=None) -> Tensor:
    """Binary cross-entropy of probabilities ``input`` against targets ``label`` in [0, 1]:
    ``-w * (y * log(x) + (1 - y) * log(1 - x))``, each log clamped at -100 as in Paddle.

    >>> import oar
    >>> import oar.nn.functional as F
    >>> p, y = oar.to_tensor([0.5, 0.6, 0.7]), oar.to_tensor([1.0, 0.0, 1.0])
    >>> round(float(F.binary_cross_entropy(p, y)), 4)
    0.6554
    """
    fn = "binary_cross_entropy"
    _check_reduction(fn, reduction)
    input = _tensor(input, fn, "input")
    label = _tensor(label, fn, "label")
    _check_float(fn, "input", input)
    _check_broadcasts_to(fn, "label", label, input.shape)
    label = _as_float_like(fn, "label", label, input)
    if tuple(label.shape) != tuple(input.shape):
        label = oar.broadcast_to(label, input.shape)
    loss = dispatch(bce_loss_op, (input, label), {})
    if weight is not None:
        loss = loss * _elementwise_weight(fn, "weight", weight, input)
    return _reduce(loss, reduction)


def _elementwise_weight(fn: str, name: str, weight, input: Tensor) -> Tensor:
    weight = _tensor(weight, fn, name)
    _check_broadcasts_to(fn, name, weight, input.shape)
    return _as_float_like(fn, name, weight, input)


# ------------------------------------------------------------------------------------------
# binary_cross_entropy_with_logits: sigmoid_cross_entropy_with_logits
# ------------------------------------------------------------------------------------------
def _sigmoid_cross_entropy_with_logits_kernel(x, label, pos_weight=None):
    softplus_neg = np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0)  # -log(sigmoid(x)), stable
    log_weight = 1 if pos_weight is None else 1 + (pos_weight - 1) * label
    return ((1 - label) * x + log_weight * softplus_neg).astype(x.dtype)


sigmoid_cross_entropy_with_logits_op = Op(
    "sigmoid_cross_entropy_with_logits", paddle=("nn.functional.binary_cross_entropy_with_logits",), reference=_sigmoid_cross_entropy_with_logits_kernel,
    meta=_same_shape_meta("binary_cross_entropy_with_logits", ("logit", "label", "pos_weight")),
    traits=("elementwise",), amp=AMP_FP32, dtypes=_KERNEL_DTYPES,
)


@sigmoid_cross_entropy_with_logits_op.defgrad
def _sigmoid_cross_entropy_with_logits_grad(ctx, g):
    # loss = (1 - y) * x + w * softplus(-x) with w = 1 + (p - 1) * y (w = 1 without pos_weight).
    x, y = ctx.input(0), ctx.input(1)
    p = ctx.input(2) if len(ctx.in_shapes) == 3 else None
    w = 1.0 if p is None else 1.0 + (p - 1.0) * y
    grads = [None] * len(ctx.in_shapes)
    if ctx.needs_input_grad[0]:
        grads[0] = g * ((1.0 - y) + w * (sigmoid(x) - 1.0))
    if ctx.needs_input_grad[1] or (p is not None and ctx.needs_input_grad[2]):
        sp = _softplus_neg(x)
        if ctx.needs_input_grad[1]:
            grads[1] = g * (-x if p is None else -x + (p - 1.0) * sp)
        if p is not None and ctx.needs_input_grad[2]:
            grads[2] = g * y * sp
    return tuple(grads)


def binary_cross_entropy_with_logits(logit, label, weight=None, reduction="mean", pos_weight=None,
                                     name=None) -> Tensor:
    """Binary cross-entropy of ``sigmoid(logit)`` against ``label``, computed from the logits
    without overflow: ``(1 - y) * x + (1 + (pos_weight - 1) * y) * log(1 + exp(-x))``.

    ``pos_weight`` (one value per class, broadcast along the last axis) weighs the positive
    term; ``weight`` multiplies each element's loss.

    >>> import oar
    >>> import oar.nn.functional as F
    >>> x, y = oar.to_tensor([5.0, 1.0, 3.0]), oar.to_tensor([1.0, 0.0, 1.0])
    >>> round(float(F.binary_cross_entropy_with_logits(x, y)), 4)
    0.4562
    """
    fn = "binary_cross_entropy_with_logits"
    _check_reduction(fn, reduction)
    logit = _tensor(logit, fn, "logit")
    label = _tensor(label, fn, "label")
    _check_float(fn, "logit", logit)
    _check_broadcasts_to(fn, "label", label, logit.shape, "logit")
    label = _as_float_like(fn, "label", label, logit)
    if tuple(label.shape) != tuple(logit.shape):
        label = oar.broadcast_to(label, logit.shape)
    inputs = (logit, label)
    if pos_weight is not None:
        pos_weight = _tensor(pos_weight, fn, "pos_weight")
        _check_broadcasts_to(fn, "pos_weight", pos_weight, logit.shape, "logit")
        pos_weight = _as_float_like(fn, "pos_weight", pos_weight, logit)
        if tuple(pos_weight.shape) != tuple(logit.shape):
            pos_weight = oar.broadcast_to(pos_weight, logit.shape)
        inputs = (logit, label, pos_weight)
    loss = dispatch(sigmoid_cross_entropy_with_logits_op, inputs, {})
    if weight is not None:
        loss = loss * _elementwise_weight(fn, "weight", weight, logit)
    return _reduce(loss, reduction)


# ------------------------------------------------------------------------------------------
# regression and ranking losses, composed of core ops
# ------------------------------------------------------------------------------------------
def _pair(fn: str, input, label, label_name: str = "label") -> tuple[Tensor, Tensor]:
    input = _tensor(input, fn, "input")
    label = _tensor(label, fn, label_name)
    _check_float(fn, "input", input)
    _check_broadcasts_to(fn, label_name, label, input.shape)
    return input, _as_float_like(fn, label_name, label, input)


def mse_loss(input, label, reduction="mean", name=None) -> Tensor:
    """Squared error ``(input - label) ** 2``, reduced.

    >>> import oar
    >>> import oar.nn.functional as F
    >>> round(float(F.mse_loss(oar.to_tensor([1.5]), oar.to_tensor([1.7]))), 4)
    0.04
    """
    _check_reduction("mse_loss", reduction)
    input, label = _pair("mse_loss", input, label)
    return _reduce(oar.square(input - label), reduction)


def l1_loss(input, label, reduction="mean", name=None) -> Tensor:
    """Absolute error ``|input - label|``, reduced.

    >>> import oar
    >>> import oar.nn.functional as F
    >>> float(F.l1_loss(oar.to_tensor([1.0, 4.0]), oar.to_tensor([2.0, 2.0]), reduction="sum"))
    3.0
    """
    _check_reduction("l1_loss", reduction)
    input, label = _pair("l1_loss", input, label)
    return _reduce(oar.abs(input - label), reduction)


def smooth_l1_loss(input, label, reduction="mean", delta=1.0, is_huber=True, name=None) -> Tensor:
    """Paddle's smooth L1 (the Huber loss): ``0.5 * d ** 2`` where ``|d| < delta``, else
    ``delta * |d| - 0.5 * delta ** 2``, with ``d = input - label``.

    With ``is_huber=False`` (Paddle 3.3) the loss is divided by ``delta``: PyTorch's
    ``smooth_l1_loss(beta=delta)``.

    >>> import oar
    >>> import oar.nn.functional as F
    >>> F.smooth_l1_loss(oar.to_tensor([0.5, 3.0]), oar.zeros([2]), reduction="none", delta=2.0).tolist()
    [0.125, 4.0]
    """
    fn = "smooth_l1_loss"
    _check_reduction(fn, reduction)
    delta = float(delta)
    if not delta > 0:
        raise ArgumentError(f"{fn}: delta must be positive, got {delta}")
    input, label = _pair(fn, input, label)
    diff = input - label
    size = oar.abs(diff)
    loss = oar.where(oar.less_than(size, delta), 0.5 * diff * diff, delta * size - 0.5 * delta * delta)
    if not is_huber:
        loss = loss / delta
    return _reduce(loss, reduction)


def kl_div(input, label, reduction="mean", log_target=False, name=None) -> Tensor:
    """Kullback-Leibler divergence of log-probabilities ``input`` from ``label``:
    ``label * (log(label) - input)`` (0 where ``label <= 0``), or with ``log_target=True``
    ``exp(label) * (label - input)``. ``'batchmean'`` divides the sum by ``input.shape[0]``, the
    true KL divergence per sample.

    >>> import oar
    >>> import oar.nn.functional as F
    >>> logq = oar.log(oar.to_tensor([[0.5, 0.5]]))
    >>> round(float(F.kl_div(logq, oar.to_tensor([[0.9, 0.1]]), reduction="batchmean")), 4)
    0.3681
    """
    fn = "kl_div"
    _check_reduction(fn, reduction, _REDUCTIONS + ("batchmean",))
    input, label = _pair(fn, input, label)
    if log_target:
        loss = oar.exp(label) * (label - input)
    else:
        positive = oar.greater_than(label, 0.0)
        safe = oar.where(positive, label, oar.ones_like(label))
        loss = oar.where(positive, label * (oar.log(safe) - input), oar.zeros_like(input))
    if reduction == "batchmean":
        total = oar.sum(loss)
        return total / float(input.shape[0]) if input.ndim > 0 else total
    return _reduce(loss, reduction)


def margin_ranking_loss(input, other, label, margin=0.0, reduction="mean", name=None) -> Tensor:
    """``max(0, -label * (input - other) + margin)``: ``label`` is 1 where ``input`` should rank
    higher than ``other``, -1 where lower.

    >>> import oar
    >>> import oar.nn.functional as F
    >>> x, y = oar.to_tensor([1.0, 2.0]), oar.to_tensor([2.0, 1.0])
    >>> F.margin_ranking_loss(x, y, oar.to_tensor([1.0, 1.0]), margin=0.5, reduction="none").tolist()
    [1.5, 0.0]
    """
    fn = "margin_ranking_loss"
    _check_reduction(fn, reduction)
    input, other = _pair(fn, input, other, "other")
    label = _tensor(label, fn, "label")
    _check_broadcasts_to(fn, "label", label, input.shape)
    label = _as_float_like(fn, "label", label, input)
    loss = oar.clip(-label * (input - other) + float(margin), min=0.0)
    return _reduce(loss, reduction)


# ------------------------------------------------------------------------------------------
# ctc_loss: warpctc
# ------------------------------------------------------------------------------------------
def _logsumexp3(a, b, c):
    peak = np.maximum(np.maximum(a, b), c)
    safe = np.where(np.isfinite(peak), peak, 0)
    with np.errstate(divide="ignore"):
        return np.log(np.exp(a - safe) + np.exp(b - safe) + np.exp(c - safe)) + safe


def _shift(x, by: int):
    """``x`` moved ``by`` states to the right along the last axis (right: ``by`` > 0), -inf filled."""
    out = np.full_like(x, -np.inf)
    if by > 0:
        out[..., by:] = x[..., :-by]
    else:
        out[..., :by] = x[..., -by:]
    return out


def _check_ctc_data(logits, labels, input_lengths, label_lengths, blank):
    fn = "ctc_loss"
    max_time, _, num_classes = logits.shape
    if not 0 <= blank < num_classes:
        raise ArgumentError(f"{fn}: blank={blank} is out of range [0, {num_classes}) for {num_classes} classes")
    if input_lengths.size and (input_lengths.min() < 1 or input_lengths.max() > max_time):
        raise ArgumentError(f"{fn}: input_lengths must be in [1, {max_time}] (the time steps of log_probs), "
                            f"got {input_lengths.tolist()}")
    if label_lengths.size and (label_lengths.min() < 0 or label_lengths.max() > labels.shape[1]):
        raise ArgumentError(f"{fn}: label_lengths must be in [0, {labels.shape[1]}] (the width of labels), "
                            f"got {label_lengths.tolist()}")
    used = np.arange(labels.shape[1])[None, :] < label_lengths[:, None]
    bad = used & ((labels < 0) | (labels >= num_classes) | (labels == blank))
    if bad.any():
        b, i = (int(v[0]) for v in np.nonzero(bad))
        raise ArgumentError(f"{fn}: labels[{b}, {i}] = {int(labels[b, i])} is not a class in [0, {num_classes}) "
                            f"other than blank={blank}")


def _warpctc_kernel(logits, labels, input_lengths, label_lengths, blank=0, norm_by_times=False):
    """CTC loss of each sequence and its gradient with respect to the logits (softmax inside,
    as warp-ctc), by the forward-backward recursion in log space over the extended labels
    ``blank, l1, blank, l2, ..., blank``."""
    labels = labels.astype(np.int64)
    in_len, lab_len = input_lengths.astype(np.int64), label_lengths.astype(np.int64)
    _check_ctc_data(logits, labels, in_len, lab_len, blank)
    max_time, batch, _ = logits.shape
    log_prob = _log_softmax(logits.astype(np.float64), axis=2)
    states = 2 * labels.shape[1] + 1
    ext = np.full((batch, states), blank, np.int64)
    ext[:, 1::2] = labels
    n_states = 2 * lab_len + 1
    in_range = np.arange(states)[None, :] < n_states[:, None]
    ext = np.where(in_range, ext, blank)
    # A jump over a blank (s - 2 -> s) is allowed onto a label that differs from the one before.
    skip = np.zeros((batch, states), bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    emit = log_prob[:, np.arange(batch)[:, None], ext]  # [T, B, S]
    neg = -np.inf
    rows = np.arange(batch)

    alpha = np.full((max_time, batch, states), neg)
    alpha[0, :, 0] = emit[0, :, 0]
    alpha[0, :, 1] = np.where(n_states > 1, emit[0, :, 1], neg)
    for t in range(1, max_time):
        prev = alpha[t - 1]
        step = _logsumexp3(prev, _shift(prev, 1), np.where(skip, _shift(prev, 2), neg)) + emit[t]
        alpha[t] = np.where(in_range, step, neg)

    last = alpha[in_len - 1, rows]  # [B, S]: alpha at each sequence's last step
    end = last[rows, n_states - 1]
    before_end = np.where(n_states > 1, last[rows, np.maximum(n_states - 2, 0)], neg)
    log_likelihood = np.logaddexp(end, before_end)

    # beta[t, s]: log-probability of the rest of the sequence after step t, from state s at t.
    final = in_range & (np.arange(states)[None, :] >= n_states[:, None] - 2)
    beta = np.full((max_time, batch, states), neg)
    for t in range(max_time - 1, -1, -1):
        if t < max_time - 1:
            nxt = beta[t + 1] + emit[t + 1]
            step = _logsumexp3(nxt, _shift(nxt, -1), _shift(np.where(skip, nxt, neg), -2))
        else:
            step = np.full((batch, states), neg)
        here = (t == in_len - 1)[:, None]
        beta[t] = np.where(here, np.where(final, 0.0, neg), np.where((t < in_len - 1)[:, None], step, neg))

    feasible = np.isfinite(log_likelihood)
    with np.errstate(invalid="ignore"):
        occupancy = np.exp(alpha + beta - np.where(feasible, log_likelihood, 0)[None, :, None])
    occupancy = np.where(feasible[None, :, None] & np.isfinite(occupancy), occupancy, 0)
    expected = np.zeros_like(log_prob)
    np.add.at(expected, (slice(None), rows[:, None], ext), occupancy)
    active = (np.arange(max_time)[:, None] < in_len[None, :])[:, :, None] & feasible[None, :, None]
    grad = np.where(active, np.exp(log_prob) - expected, 0)
    if norm_by_times:
        grad = grad / in_len[None, :, None]
    return (-log_likelihood).astype(logits.dtype), grad.astype(logits.dtype)


def _check_label_args(fn: str, batch, labels: tuple, input_lengths, label_lengths) -> None:
    """The labels ([batch, max_label_length]) and the two length vectors ([batch]) of a sequence
    loss: integer tensors of those shapes, or a DTypeError/ShapeError naming the argument."""
    for name, m, rank in (labels + (2,), ("input_lengths", input_lengths, 1), ("label_lengths", label_lengths, 1)):
        if not m.dtype.is_integer:
            raise DTypeError(f"{fn}: {name} must be an integer tensor, got {m.dtype.name}")
        if len(m.shape) != rank or not _shapes_match(m.shape[:1], (batch,)):
            expected = "[batch, max_label_length]" if rank == 2 else "[batch]"
            raise ShapeError(f"{fn}: {name} must have shape {expected} with batch={batch}, got {fmt_shape(m.shape)}")


def _warpctc_meta(logits, labels, input_lengths, label_lengths, blank=0, norm_by_times=False):
    fn = "ctc_loss"
    if len(logits.shape) != 3 or not logits.dtype.is_floating:
        raise ShapeError(f"{fn}: log_probs must be a floating [max_time, batch, classes] tensor, got "
                         f"{logits.dtype.name}{fmt_shape(logits.shape)}")
    batch = logits.shape[1]
    _check_label_args(fn, batch, ("labels", labels), input_lengths, label_lengths)
    return TensorMeta((batch,), logits.dtype), TensorMeta(logits.shape, logits.dtype)


warpctc_op = LossOp("warpctc", paddle=("nn.functional.ctc_loss",), reference=_warpctc_kernel, meta=_warpctc_meta, amp=AMP_FP32, dtypes=_KERNEL_DTYPES,
                    num_outputs=2, nondiff_inputs=(1, 2, 3))


@warpctc_op.defgrad
def _warpctc_grad(ctx, g_loss, g_grad):
    if oar.is_grad_enabled():  # create_graph=True: the saved gradient is not a function of oar ops
        raise GradientError("ctc_loss: second-order gradients are not supported (its gradient comes from the "
                            "forward-backward recursion, like Paddle's warpctc); differentiate it once only")
    if g_loss is None:
        return None, None, None, None
    return ctx.output(1) * oar.reshape(g_loss, [1, -1, 1]), None, None, None


def ctc_loss(log_probs, labels, input_lengths, label_lengths, blank=0, reduction="mean", norm_by_times=False,
             zero_infinity=False) -> Tensor:
    """Connectionist Temporal Classification loss of ``log_probs`` ([max_time, batch, classes],
    padded) against ``labels`` ([batch, max_label_length], padded).

    As Paddle's warp-ctc, a softmax over the classes is applied first, so raw logits and
    log-probabilities give the same loss. ``'mean'`` divides each loss by its label length
    (at least 1) and averages; ``norm_by_times`` scales each sequence's gradient by 1 / its
    input length. A sequence too short for its labels has an infinite loss and a zero gradient
    (a zero loss too with ``zero_infinity``).

    >>> import oar
    >>> import oar.nn.functional as F
    >>> logits = oar.zeros([2, 1, 2])  # two steps, uniform over {blank, 'a'}
    >>> loss = F.ctc_loss(logits, oar.to_tensor([[1]]), oar.to_tensor([2]), oar.to_tensor([1]), reduction="none")
    >>> round(float(loss[0]), 4)  # paths 'a-', '-a', 'aa': 3 of 4
    0.2877
    """
    fn = "ctc_loss"
    _check_reduction(fn, reduction)
    log_probs = _tensor(log_probs, fn, "log_probs")
    _check_float(fn, "log_probs", log_probs)
    inputs = [log_probs] + [_tensor(t, fn, n) for t, n in ((labels, "labels"), (input_lengths, "input_lengths"),
                                                           (label_lengths, "label_lengths"))]
    metas = [TensorMeta(tuple(t.shape), t.dtype) for t in inputs]
    _warpctc_meta(*metas)
    loss, _ = dispatch(warpctc_op, tuple(inputs), {"blank": int(blank), "norm_by_times": bool(norm_by_times)})
    if zero_infinity:
        loss = oar.where(oar.isinf(loss), oar.zeros_like(loss), loss)
    if reduction == "mean":
        lengths = oar.clip(oar.cast(inputs[3], loss.dtype), min=1.0)
        return oar.mean(loss / lengths)
    return _reduce(loss, reduction)


# ------------------------------------------------------------------------------------------
# embedding, margin and likelihood losses, composed of core ops
# ------------------------------------------------------------------------------------------
def _same_shape(fn: str, name: str, t: Tensor, like: Tensor, like_name: str = "input") -> None:
    if tuple(t.shape) != tuple(like.shape):
        raise ShapeError(f"{fn}: {name} shape {fmt_shape(t.shape)} must equal {like_name} shape "
                         f"{fmt_shape(like.shape)}")


def _float_input(fn: str, value, name: str = "input") -> Tensor:
    t = _tensor(value, fn, name)
    _check_float(fn, name, t)
    return t


def _class_labels(fn: str, label, name: str = "label") -> Tensor:
    label = _tensor(label, fn, name)
    if not label.dtype.is_integer:
        raise DTypeError(f"{fn}: {name} must be an integer tensor of class indices, got {label.dtype.name}")
    return label


def _check_class_range(fn: str, label: Tensor, num_classes: int, low: int = 0) -> None:
    if not oar.in_dynamic_mode():  # reading the values would stop a program from being captured
        return
    values = label.numpy()
    if values.size and (values.min() < low or values.max() >= num_classes):
        bad = values.min() if values.min() < low else values.max()
        raise ArgumentError(f"{fn}: label value {int(bad)} is out of range [{low}, {num_classes}) for an input "
                            f"with {num_classes} classes")


def _relu(x: Tensor) -> Tensor:
    return oar.maximum(x, oar.zeros_like(x))


def _vector_distance(x: Tensor, y: Tensor, p: float, epsilon: float) -> Tensor:
    """``||x - y + epsilon||_p`` over the last axis: Paddle's ``PairwiseDistance``, which the
    triplet losses use."""
    diff = x - y + epsilon
    if p == float("inf"):
        return oar.max(oar.abs(diff), axis=-1)
    if p == 0:
        return oar.sum(oar.cast(oar.not_equal(diff, 0.0), diff.dtype), axis=-1)
    return oar.pow(oar.sum(oar.pow(oar.abs(diff), p), axis=-1), 1.0 / p)


def square_error_cost(input, label) -> Tensor:
    """The elementwise squared error ``(input - label) ** 2``, unreduced.

    >>> import oar
    >>> import oar.nn.functional as F
    >>> F.square_error_cost(oar.to_tensor([1.0, 2.0]), oar.to_tensor([0.0, 0.0])).tolist()
    [1.0, 4.0]
    """
    input, label = _pair("square_error_cost", input, label)
    return oar.square(input - label)


def log_loss(input, label, epsilon=0.0001, name=None) -> Tensor:
    """The negative log-likelihood of probabilities ``input`` for 0/1 ``label``:
    ``-label * log(input + epsilon) - (1 - label) * log(1 - input + epsilon)``, unreduced.

    >>> import oar
    >>> import oar.nn.functional as F
    >>> [round(v, 4) for v in F.log_loss(oar.to_tensor([[0.3], [0.9]]), oar.to_tensor([[1.0], [0.0]])).flatten().tolist()]
    [1.2036, 2.3016]
    """
    input, label = _pair("log_loss", input, label)
    epsilon = float(epsilon)
    return -label * oar.log(input + epsilon) - (1.0 - label) * oar.log(1.0 - input + epsilon)


def dice_loss(input, label, epsilon=1e-05, name=None) -> Tensor:
    """One minus the Dice coefficient of class probabilities ``input`` ([N, ..., C]) and the
    one-hot of ``label`` ([N, ..., 1] class indices), averaged over the batch.

    >>> import oar
    >>> import oar.nn.functional as F
    >>> probs = oar.to_tensor([[0.9, 0.1], [0.2, 0.8]])
    >>> round(float(F.dice_loss(probs, oar.to_tensor([[0], [1]]))), 4)
    0.15
    """
    fn = "dice_loss"
    input = _float_input(fn, input)
    label = _class_labels(fn, label)
    if input.ndim < 2 or label.ndim != input.ndim or label.shape[-1] != 1 or label.shape[:-1] != input.shape[:-1]:
        raise ShapeError(f"{fn}: label shape {fmt_shape(label.shape)} must be the input shape {fmt_shape(input.shape)} "
                         f"with the last (class) axis as 1, and input must have at least 2 dimensions")
    num_classes = input.shape[-1]
    _check_class_range(fn, label, num_classes)
    target = oar.cast(oar.nn.functional.one_hot(oar.squeeze(label, -1), num_classes), input.dtype)
    axes = list(range(1, input.ndim))
    overlap = oar.sum(input * target, axis=axes)
    total = oar.sum(input, axis=axes) + oar.sum(target, axis=axes)
    return oar.mean(1.0 - overlap * 2.0 / (total + float(epsilon)))


def npair_loss(anchor, positive, labels, l2_reg=0.002) -> Tensor:
    """The N-pair loss (Sohn, 2016): softmax cross-entropy of the similarities ``anchor @
    positive.T`` against the targets spread evenly over the samples of the same label, plus
    ``l2_reg / 4`` times the mean squared norms of the embeddings.

    >>> import oar
    >>> import oar.nn.functional as F
    >>> a = oar.to_tensor([[1.0, 0.0], [0.0, 1.0]])
    >>> round(float(F.npair_loss(a, a, oar.to_tensor([0, 1]), l2_reg=0.0)), 4)
    0.3133
    """
    fn = "npair_loss"
    anchor = _float_input(fn, anchor, "anchor")
    positive = _float_input(fn, positive, "positive")
    labels = _tensor(labels, fn, "labels")
    if anchor.ndim != 2 or tuple(positive.shape) != tuple(anchor.shape) or anchor.size == 0:
        raise ShapeError(f"{fn}: anchor and positive must be non-empty [batch, dim] tensors of one shape, got "
                         f"{fmt_shape(anchor.shape)} and {fmt_shape(positive.shape)}")
    batch = anchor.shape[0]
    if labels.size != batch:
        raise ShapeError(f"{fn}: labels must have one value per sample ({batch}), got shape {fmt_shape(labels.shape)}")
    labels = oar.reshape(labels, [batch, 1])
    same = oar.cast(oar.equal(labels, oar.transpose(labels, [1, 0])), anchor.dtype)
    target = same / oar.sum(same, axis=1, keepdim=True)
    l2 = oar.mean(oar.sum(oar.square(anchor), axis=1)) + oar.mean(oar.sum(oar.square(positive), axis=1))
    similarity = oar.matmul(anchor, positive, transpose_y=True)
    log_prob = similarity - oar.logsumexp(similarity, axis=1, keepdim=True)
    row_loss = -oar.sum(target * log_prob, axis=1, keepdim=True)
    # Paddle weighs each row's loss by the target column it belongs to, then averages the columns.
    return l2 * (0.25 * float(l2_reg)) + oar.mean(oar.sum(target * row_loss, axis=0))


def sigmoid_focal_loss(logit, label, normalizer=None, alpha=0.25, gamma=2.0, reduction="sum", name=None) -> Tensor:
    """The focal loss (Lin et al., 2017) of logits against 0/1 labels:
    ``alpha_t * (1 - p_t) ** gamma * bce_with_logits``, divided by ``normalizer`` (a number of
    positives, say) when given.

    >>> import oar
    >>> import oar.nn.functional as F
    >>> round(float(F.sigmoid_focal_loss(oar.to_tensor([2.0, -1.0]), oar.to_tensor([1.0, 0.0]))), 4)
    0.0174
    """
    fn = "sigmoid_focal_loss"
    _check_reduction(fn, reduction)
    logit = _float_input(fn, logit, "logit")
    label = _tensor(label, fn, "label")
    _same_shape(fn, "label", label, logit, "logit")
    label = _as_float_like(fn, "label", label, logit)
    loss = dispatch(sigmoid_cross_entropy_with_logits_op, (logit, label), {})
    prob = sigmoid(logit)
    p_t = prob * label + (1.0 - prob) * (1.0 - label)
    alpha = float(alpha)
    alpha_t = alpha * label + (1.0 - alpha) * (1.0 - label)
    loss = alpha_t * oar.pow(1.0 - p_t, float(gamma)) * loss
    if normalizer is not None:
        normalizer = _float_input(fn, normalizer, "normalizer")
        if normalizer.ndim > 1:
            raise ShapeError(f"{fn}: normalizer must have zero or one dimension, got shape "
                             f"{fmt_shape(normalizer.shape)}")
        loss = loss / _as_float_like(fn, "normalizer", normalizer, logit)
    return _reduce(loss, reduction)


def soft_margin_loss(input, label, reduction="mean", name=None) -> Tensor:
    """The two-class logistic loss ``log(1 + exp(-label * input))`` for labels 1 and -1.

    >>> import oar
    >>> import oar.nn.functional as F
    >>> round(float(F.soft_margin_loss(oar.to_tensor([0.0, 2.0]), oar.to_tensor([1, -1]))), 4)
    1.41
    """
    fn = "soft_margin_loss"
    _check_reduction(fn, reduction)
    input = _float_input(fn, input)
    label = _tensor(label, fn, "label")
    _same_shape(fn, "label", label, input)
    label = label if label.dtype is input.dtype else oar.cast(label, input.dtype)
    return _reduce(_softplus_neg(label * input), reduction)


def hinge_embedding_loss(input, label, margin=1.0, reduction="mean", name=None) -> Tensor:
    """``input`` where ``label`` is 1 and ``max(0, margin - input)`` where it is -1 (0 for other
    labels): ``input`` is a distance that similar pairs (1) should shrink.

    >>> import oar
    >>> import oar.nn.functional as F
    >>> x, y = oar.to_tensor([0.3, 0.4]), oar.to_tensor([1.0, -1.0])
    >>> F.hinge_embedding_loss(x, y, reduction="none").tolist()
    [0.30000001192092896, 0.6000000238418579]
    """
    fn = "hinge_embedding_loss"
    _check_reduction(fn, reduction)
    input, label = _pair(fn, input, label)
    zero = oar.zeros_like(input)
    loss = (oar.where(oar.equal(label, 1.0), input, zero)
            + oar.where(oar.equal(label, -1.0), _relu(float(margin) - input), zero))
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1, input2, label, margin=0, reduction="mean", name=None) -> Tensor:
    """``1 - cos(input1, input2)`` where ``label`` is 1 and ``max(0, cos - margin)`` where it is
    -1, the cosine taken along the last axis of [N, D] (or [D]) inputs.

    >>> import oar
    >>> import oar.nn.functional as F
    >>> a, b = oar.to_tensor([[1.0, 0.0], [1.0, 1.0]]), oar.to_tensor([[0.0, 1.0], [1.0, 1.0]])
    >>> [round(v, 4) for v in F.cosine_embedding_loss(a, b, oar.to_tensor([1, -1]), reduction="none").tolist()]
    [1.0, 1.0]
    """
    fn = "cosine_embedding_loss"
    _check_reduction(fn, reduction)
    input1 = _float_input(fn, input1, "input1")
    input2 = _float_input(fn, input2, "input2")
    label = _tensor(label, fn, "label")
    _same_shape(fn, "input2", input2, input1, "input1")
    if input1.ndim > 2 or label.ndim != 1 or (input1.ndim == 2 and label.shape[0] != input1.shape[0]):
        raise ShapeError(f"{fn}: expected [N, D] (or [D]) inputs and an [N] label, got inputs "
                         f"{fmt_shape(input1.shape)} and label {fmt_shape(label.shape)}")
    input2 = input2 if input2.dtype is input1.dtype else oar.cast(input2, input1.dtype)
    # 1e-11 keeps a zero vector's cosine finite (0), as Paddle's
    norms = (oar.sum(oar.square(input1), axis=-1) + 1e-11) * (oar.sum(oar.square(input2), axis=-1) + 1e-11)
    cos = oar.sum(input1 * input2, axis=-1) / oar.sqrt(norms)
    zero = oar.zeros_like(cos)
    loss = (oar.where(oar.equal(label, 1), 1.0 - cos, zero)
            + oar.where(oar.equal(label, -1), _relu(cos - float(margin)), zero))
    return _reduce(loss, reduction)


def _triplet_inputs(fn: str, input, positive, negative, margin) -> tuple[Tensor, Tensor, Tensor]:
    input = _float_input(fn, input)
    positive = _float_input(fn, positive, "positive")
    negative = _float_input(fn, negative, "negative")
    _same_shape(fn, "positive", positive, input)
    _same_shape(fn, "negative", negative, input)
    if float(margin) < 0:
        raise ArgumentError(f"{fn}: margin must be no less than 0, got {margin}")
    return input, _as_float_like(fn, "positive", positive, input), _as_float_like(fn, "negative", negative, input)


def triplet_margin_loss(input, positive, negative, margin=1.0, p=2, epsilon=1e-06, swap=False, reduction="mean",
                        name=None) -> Tensor:
    """``max(0, d(input, positive) - d(input, negative) + margin)`` with ``d`` the p-norm
    distance over the last axis (``||a - b + epsilon||_p``); with ``swap`` the negative distance
    is the smaller of ``d(input, negative)`` and ``d(positive, negative)``.

    >>> import oar
    >>> import oar.nn.functional as F
    >>> a, p, n = oar.to_tensor([[0.0, 0.0]]), oar.to_tensor([[3.0, 4.0]]), oar.to_tensor([[0.0, 1.0]])
    >>> round(float(F.triplet_margin_loss(a, p, n, epsilon=0.0)), 4)
    5.0
    """
    fn = "triplet_margin_loss"
    _check_reduction(fn, reduction)
    input, positive, negative = _triplet_inputs(fn, input, positive, negative, margin)
    p, epsilon = float(p), float(epsilon)
    positive_dist = _vector_distance(input, positive, p, epsilon)
    negative_dist = _vector_distance(input, negative, p, epsilon)
    if swap:
        negative_dist = oar.minimum(negative_dist, _vector_distance(positive, negative, p, epsilon))
    return _reduce(_relu(positive_dist - negative_dist + float(margin)), reduction)


def triplet_margin_with_distance_loss(input, positive, negative, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean", name=None) -> Tensor:
    """``triplet_margin_loss`` with any ``distance_function(a, b) -> [N]`` (default: the
    Euclidean distance, as ``PairwiseDistance(2)``); distances must not be negative.

    >>> import oar
    >>> import oar.nn.functional as F
    >>> a, p, n = oar.to_tensor([[0.0, 0.0]]), oar.to_tensor([[3.0, 4.0]]), oar.to_tensor([[0.0, 1.0]])
    >>> l1 = lambda x, y: oar.sum(oar.abs(x - y), axis=-1)
    >>> float(F.triplet_margin_with_distance_loss(a, p, n, distance_function=l1))
    7.0
    """
    fn = "triplet_margin_with_distance_loss"
    _check_reduction(fn, reduction)
    input, positive, negative = _triplet_inputs(fn, input, positive, negative, margin)
    if distance_function is None:
        def distance_function(a, b):
            return _vector_distance(a, b, 2.0, 1e-6)
    positive_dist = distance_function(input, positive)
    negative_dist = distance_function(input, negative)
    if swap:
        negative_dist = oar.minimum(negative_dist, distance_function(positive, negative))
    if oar.in_dynamic_mode() and ((positive_dist.numpy() < 0).any() or (negative_dist.numpy() < 0).any()):
        raise ArgumentError(f"{fn}: distance_function returned a negative distance; distances must be >= 0")
    return _reduce(_relu(positive_dist - negative_dist + float(margin)), reduction)


def multi_margin_loss(input, label, p=1, margin=1.0, weight=None, reduction="mean", name=None) -> Tensor:
    """The multi-class hinge loss of [N, C] scores: for each sample,
    ``sum_{i != y} w_y * max(0, margin - x_y + x_i) ** p / C`` (``p`` is 1 or 2). As Paddle, it
    is computed as the mean over all classes less the target's own term ``w_y * margin ** p / C``,
    which differs from the sum above for a negative ``margin`` only.

    >>> import oar
    >>> import oar.nn.functional as F
    >>> x = oar.to_tensor([[0.1, 0.2, 0.4, 0.8]])
    >>> round(float(F.multi_margin_loss(x, oar.to_tensor([3]))), 4)
    0.325
    """
    fn = "multi_margin_loss"
    _check_reduction(fn, reduction)
    input = _float_input(fn, input)
    label = _class_labels(fn, label)
    if input.ndim != 2 or label.size != input.shape[0]:
        raise ShapeError(f"{fn}: expected an [N, C] input and N labels, got input {fmt_shape(input.shape)} and "
                         f"label {fmt_shape(label.shape)}")
    num_classes = input.shape[1]
    _check_class_range(fn, label, num_classes)
    label = oar.reshape(label, [-1, 1])
    margin = float(margin)
    target_score = oar.take_along_axis(input, label, axis=1)
    # Paddle's formula: the mean over all classes, less the target class's own term margin ** p / C.
    terms = oar.pow(_relu(margin - target_score + input), p)
    if weight is None:
        return _reduce(oar.mean(terms, axis=1) - margin ** p / num_classes, reduction)
    weight = _check_class_weight(fn, weight, num_classes, input)
    sample_weight = oar.gather(weight, oar.reshape(label, [-1]))
    loss = oar.mean(oar.reshape(sample_weight, [-1, 1]) * terms, axis=1) - sample_weight * (margin ** p / num_classes)
    return _reduce(loss, reduction)


def multi_label_margin_loss(input, label, reduction="mean", name=None) -> Tensor:
    """The multi-label hinge loss of [N, C] scores: ``label`` row ``n`` lists the target classes
    of sample ``n``, ending at the first -1; the loss is
    ``sum_{j target} sum_{i not target} max(0, 1 - (x_j - x_i)) / C``.

    >>> import oar
    >>> import oar.nn.functional as F
    >>> x = oar.to_tensor([[0.1, 0.2, 0.4, 0.8]])
    >>> round(float(F.multi_label_margin_loss(x, oar.to_tensor([[3, 0, -1, 1]]))), 4)
    0.85
    """
    fn = "multi_label_margin_loss"
    _check_reduction(fn, reduction)
    input = _float_input(fn, input)
    label = _class_labels(fn, label)
    if input.ndim != 2 or tuple(label.shape) != tuple(input.shape):
        raise ShapeError(f"{fn}: expected an [N, C] input and an [N, C] label, got input {fmt_shape(input.shape)} "
                         f"and label {fmt_shape(label.shape)}")
    num_classes = input.shape[1]
    _check_class_range(fn, label, num_classes, low=-1)
    # Which label entries count (those before the first -1), and which classes are targets: data, no gradient.
    ids = label.numpy().astype(np.int64)
    listed = np.cumprod(ids != -1, axis=1).astype(bool)
    safe_ids = np.where(listed, ids, 0)
    is_target = np.zeros(ids.shape, bool)
    rows = np.broadcast_to(np.arange(ids.shape[0])[:, None], ids.shape)
    is_target[rows[listed], ids[listed]] = True
    pair_mask = listed[:, :, None] & ~is_target[:, None, :]  # [N, listed entry, class]
    target_score = oar.take_along_axis(input, oar.to_tensor(safe_ids), axis=1)
    margins = 1.0 - oar.unsqueeze(target_score, 2) + oar.unsqueeze(input, 1)
    kept = _relu(margins) * oar.to_tensor(pair_mask.astype(input.dtype.name))
    return _reduce(oar.sum(kept, axis=[1, 2]) / num_classes, reduction)


def multi_label_soft_margin_loss(input, label, weight=None, reduction="mean", name=None) -> Tensor:
    """The multi-label logistic loss of [N, C] logits against 0/1 labels, averaged over the
    classes: ``-mean_c(w * (y log sigmoid(x) + (1 - y) log sigmoid(-x)))``.

    >>> import oar
    >>> import oar.nn.functional as F
    >>> round(float(F.multi_label_soft_margin_loss(oar.to_tensor([[0.0, 2.0]]), oar.to_tensor([[1.0, 0.0]]))), 4)
    1.41
    """
    fn = "multi_label_soft_margin_loss"
    _check_reduction(fn, reduction)
    input = _float_input(fn, input)
    label = _tensor(label, fn, "label")
    _same_shape(fn, "label", label, input)
    label = label if label.dtype is input.dtype else oar.cast(label, input.dtype)
    loss = label * _softplus_neg(input) + (1.0 - label) * _softplus_neg(-input)
    if weight is not None:
        loss = loss * _elementwise_weight(fn, "weight", weight, input)
    return _reduce(oar.mean(loss, axis=-1), reduction)


def poisson_nll_loss(input, label, log_input=True, full=False, epsilon=1e-08, reduction="mean", name=None) -> Tensor:
    """The negative log-likelihood of counts ``label`` under a Poisson of rate ``exp(input)``
    (``log_input``) or ``input``: ``exp(input) - label * input``, or ``input - label *
    log(input + epsilon)``; ``full`` adds Stirling's term for labels above 1.

    >>> import oar
    >>> import oar.nn.functional as F
    >>> round(float(F.poisson_nll_loss(oar.to_tensor([0.0, 1.0]), oar.to_tensor([1.0, 2.0]))), 4)
    0.8591
    """
    fn = "poisson_nll_loss"
    _check_reduction(fn, reduction)
    epsilon = float(epsilon)
    if not epsilon > 0:
        raise ArgumentError(f"{fn}: epsilon must be positive, got {epsilon}")
    input = _float_input(fn, input)
    label = _float_input(fn, label, "label")
    _same_shape(fn, "label", label, input)
    label = _as_float_like(fn, "label", label, input)
    loss = oar.exp(input) - label * input if log_input else input - label * oar.log(input + epsilon)
    if full:
        above_one = oar.greater_than(label, 1.0)
        safe = oar.where(above_one, label, oar.ones_like(label))
        stirling = safe * oar.log(safe) - safe + 0.5 * oar.log(2.0 * np.pi * safe)
        loss = loss + oar.where(above_one, stirling, oar.zeros_like(stirling))
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, label, variance, full=False, epsilon=1e-06, reduction="mean", name=None) -> Tensor:
    """The negative log-likelihood of ``label`` under a Gaussian of mean ``input`` and
    ``variance`` (clipped below at ``epsilon``): ``0.5 * (log(var) + (input - label) ** 2 / var)``,
    plus ``0.5 * log(2 pi)`` when ``full``. ``variance`` has the input's shape, or it without (or
    with 1 as) the last axis: one variance shared along it.

    Unlike Paddle, whose clip runs under ``no_grad`` and so cuts ``variance`` off the graph, the
    loss is differentiable in ``variance`` (where it is above ``epsilon``), as a learned variance
    needs.

    >>> import oar
    >>> import oar.nn.functional as F
    >>> x, y, var = oar.to_tensor([1.0, 2.0]), oar.to_tensor([0.5, 1.0]), oar.to_tensor([0.5, 2.0])
    >>> round(float(F.gaussian_nll_loss(x, y, var)), 4)
    0.25
    """
    fn = "gaussian_nll_loss"
    _check_reduction(fn, reduction)
    input = _float_input(fn, input)
    label = _float_input(fn, label, "label")
    variance = _float_input(fn, variance, "variance")
    _check_broadcasts_to(fn, "label", label, input.shape)
    label = _as_float_like(fn, "label", label, input)
    variance = _as_float_like(fn, "variance", variance, input)
    if tuple(variance.shape) != tuple(input.shape):
        if tuple(variance.shape) == tuple(input.shape[:-1]):
            variance = oar.unsqueeze(variance, -1)
        elif not (variance.ndim == input.ndim and variance.shape[:-1] == input.shape[:-1] and variance.shape[-1] == 1):
            raise ShapeError(f"{fn}: variance shape {fmt_shape(variance.shape)} must be the input shape "
                             f"{fmt_shape(input.shape)}, or it without (or with 1 as) the last axis")
    if oar.in_dynamic_mode() and (variance.numpy() < 0).any():
        raise ArgumentError(f"{fn}: variance has negative entries")
    variance = oar.clip(variance, min=float(epsilon))
    loss = 0.5 * (oar.log(variance) + oar.square(input - label) / variance)
    if full:
        loss = loss + 0.5 * float(np.log(2.0 * np.pi))
    return _reduce(loss, reduction)


# ------------------------------------------------------------------------------------------
# hierarchical and adaptive softmax losses
# ------------------------------------------------------------------------------------------
def _default_tree_paths(label: np.ndarray, num_classes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The node indices, branch bits and validity of every class's path in Paddle's default tree:
    a complete binary tree over ``num_classes`` leaves, where class ``c`` has code ``c +
    num_classes`` and its ``j``-th step goes through node ``(code >> (j + 1)) - 1`` to the side
    of bit ``j``."""
    code = label.astype(np.int64).reshape(-1) + num_classes
    depth = int(np.floor(np.log2(2 * num_classes - 1)))  # the longest path
    steps = np.arange(depth)
    length = np.floor(np.log2(code)).astype(np.int64)  # the bits below the leading one
    valid = steps[None, :] < length[:, None]
    nodes = np.where(valid, (code[:, None] >> (steps[None, :] + 1)) - 1, 0)
    bits = (code[:, None] >> steps[None, :]) & 1
    return nodes, np.where(valid, bits, 0), valid


def hsigmoid_loss(input, label, num_classes, weight, bias=None, path_table=None, path_code=None, is_sparse=False,
                  name=None) -> Tensor:
    """The hierarchical sigmoid loss: each class is a leaf of a binary tree and its loss is the
    sum over the nodes on its path of a logistic loss, ``softplus(z) - bit * z`` with ``z =
    clip(x . weight[node] + bias[node], -40, 40)``. Without ``path_table`` the tree is Paddle's
    default complete binary tree; with it, ``path_table[n]`` lists sample ``n``'s nodes (ending
    at the first negative entry) and ``path_code[n]`` their bits. Returns [N, 1].

    ``is_sparse`` (sparse gradients) has no effect: the gradient of ``weight`` is dense.

    Unlike Paddle, a path shorter than the longest adds nothing for its missing steps: Paddle's
    kernel adds ``softplus(0) = log 2`` per missing step, so its loss is larger by ``log 2``
    times the number of missing steps (the gradients agree).

    >>> import oar
    >>> import oar.nn.functional as F
    >>> x, w = oar.ones([2, 3]), oar.zeros([3, 3])  # 4 classes, 3 inner nodes
    >>> [round(v, 4) for v in F.hsigmoid_loss(x, oar.to_tensor([0, 3]), 4, w).flatten().tolist()]
    [1.3863, 1.3863]
    """
    fn = "hsigmoid_loss"
    input = _float_input(fn, input)
    label = _class_labels(fn, label)
    weight = _float_input(fn, weight, "weight")
    if input.ndim != 2 or label.size != input.shape[0]:
        raise ShapeError(f"{fn}: expected an [N, D] input and N labels, got input {fmt_shape(input.shape)} and "
                         f"label {fmt_shape(label.shape)}")
    if (path_table is None) != (path_code is None):
        raise ArgumentError(f"{fn}: path_table and path_code go together: pass both (a custom tree) or neither")
    num_classes = int(num_classes)
    if path_table is None:
        if num_classes < 2:
            raise ArgumentError(f"{fn}: num_classes must be at least 2, got {num_classes}")
        _check_class_range(fn, label, num_classes)
        nodes, bits, valid = _default_tree_paths(label.numpy(), num_classes)
        expected_nodes = num_classes - 1
    else:
        table = _class_labels(fn, path_table, "path_table").numpy().astype(np.int64)
        codes = _class_labels(fn, path_code, "path_code").numpy().astype(np.int64)
        if table.shape != codes.shape or table.ndim != 2 or table.shape[0] != input.shape[0]:
            raise ShapeError(f"{fn}: path_table and path_code must both be [N, max_path_length] with N = "
                             f"{input.shape[0]}, got {fmt_shape(table.shape)} and {fmt_shape(codes.shape)}")
        valid = np.cumprod(table >= 0, axis=1).astype(bool)
        nodes, bits = np.where(valid, table, 0), np.where(valid, codes, 0)
        expected_nodes = weight.shape[0]
    if weight.ndim != 2 or weight.shape[1] != input.shape[1] or weight.shape[0] < expected_nodes:
        raise ShapeError(f"{fn}: weight must be [num_nodes, {input.shape[1]}] with num_nodes >= {expected_nodes}, "
                         f"got {fmt_shape(weight.shape)}")
    weight = _as_float_like(fn, "weight", weight, input)
    node_ids = oar.to_tensor(nodes)
    node_weight = oar.reshape(oar.gather(weight, oar.reshape(node_ids, [-1])), list(nodes.shape) + [input.shape[1]])
    z = oar.sum(node_weight * oar.unsqueeze(input, 1), axis=2)
    if bias is not None:
        bias = _as_float_like(fn, "bias", _float_input(fn, bias, "bias"), input)
        z = z + oar.reshape(oar.gather(oar.reshape(bias, [-1]), oar.reshape(node_ids, [-1])), list(nodes.shape))
    z = oar.clip(z, -40.0, 40.0)
    step_loss = _softplus_neg(-z) - oar.to_tensor(bits.astype(input.dtype.name)) * z
    return oar.sum(step_loss * oar.to_tensor(valid.astype(input.dtype.name)), axis=1, keepdim=True)


def adaptive_log_softmax_with_loss(input, label, head_weight, tail_weights, cutoffs, head_bias=None,
                                   name=None) -> tuple[Tensor, Tensor]:
    """The adaptive softmax (Grave et al., 2017): frequent classes (below ``cutoffs[0]``) are
    scored by the head, and each rarer cluster ``i`` by a head entry times a softmax over the
    cluster from ``tail_weights[i] = [projection, output]`` (weights stored [in, out], as
    ``linear``'s). Returns the log-probability of each label and the mean negative of them.

    >>> import oar
    >>> import oar.nn.functional as F
    >>> x = oar.ones([2, 4])
    >>> head = oar.zeros([4, 3])  # 2 frequent classes + 1 cluster
    >>> tails = [[oar.zeros([4, 2]), oar.zeros([2, 2])]]  # the cluster holds classes 2 and 3
    >>> out, loss = F.adaptive_log_softmax_with_loss(x, oar.to_tensor([0, 3]), head, tails, [2, 4])
    >>> [round(v, 4) for v in out.tolist()], round(float(loss), 4)
    ([-1.0986, -1.7918], 1.4452)
    """
    fn = "adaptive_log_softmax_with_loss"
    input = _float_input(fn, input)
    label = _class_labels(fn, label)
    batched = label.ndim == 1
    if label.ndim > 1 or input.ndim != label.ndim + 1 or (batched and input.shape[0] != label.shape[0]):
        raise ShapeError(f"{fn}: expected an [N, D] input with [N] labels (or [D] with a 0-d label), got input "
                         f"{fmt_shape(input.shape)} and label {fmt_shape(label.shape)}")
    if not batched:
        input, label = oar.unsqueeze(input, 0), oar.unsqueeze(label, 0)
    cutoffs = [int(c) for c in cutoffs]
    if len(tail_weights) != len(cutoffs) - 1:
        raise ArgumentError(f"{fn}: {len(cutoffs)} cutoffs need {len(cutoffs) - 1} tail weight pairs, got "
                            f"{len(tail_weights)}")
    _check_class_range(fn, label, cutoffs[-1])
    ids = label.numpy().astype(np.int64)
    head_logprob = oar.nn.functional.log_softmax(oar.nn.functional.linear(input, head_weight, head_bias), axis=1)
    # Each row reads the head at its own class if frequent, else at its cluster's entry.
    cluster = np.searchsorted(np.asarray(cutoffs), ids, side="right")  # 0 for the head
    head_column = np.where(cluster == 0, ids, cutoffs[0] + cluster - 1)
    output = oar.squeeze(oar.take_along_axis(head_logprob, oar.to_tensor(head_column[:, None]), axis=1), 1)
    for i, (projection, out_weight) in enumerate(tail_weights, start=1):
        rows = np.nonzero(cluster == i)[0]
        if rows.size == 0:
            continue
        subset = oar.index_select(input, oar.to_tensor(rows), axis=0)
        cluster_logprob = oar.nn.functional.log_softmax(
            oar.nn.functional.linear(oar.nn.functional.linear(subset, projection), out_weight), axis=1)
        local = oar.take_along_axis(cluster_logprob, oar.to_tensor((ids[rows] - cutoffs[i - 1])[:, None]), axis=1)
        output = output + oar.scatter(oar.zeros_like(output), oar.to_tensor(rows), oar.squeeze(local, 1))
    loss = oar.mean(-output)
    return (output if batched else oar.squeeze(output, 0)), loss


# ------------------------------------------------------------------------------------------
# rnnt_loss: warprnnt
# ------------------------------------------------------------------------------------------
def _check_rnnt_data(input, labels, input_lengths, label_lengths, blank):
    fn = "rnnt_loss"
    _, max_time, max_states, num_classes = input.shape
    if not 0 <= blank < num_classes:
        raise ArgumentError(f"{fn}: blank={blank} is out of range [0, {num_classes}) for {num_classes} classes")
    if input_lengths.size and (input_lengths.min() < 1 or input_lengths.max() > max_time):
        raise ArgumentError(f"{fn}: input_lengths must be in [1, {max_time}] (axis 1 of input), got "
                            f"{input_lengths.tolist()}")
    if label_lengths.size and (label_lengths.min() < 0 or label_lengths.max() > min(labels.shape[1], max_states - 1)):
        raise ArgumentError(f"{fn}: label_lengths must be in [0, {min(labels.shape[1], max_states - 1)}] (the width "
                            f"of label, and axis 2 of input less 1), got {label_lengths.tolist()}")
    used = np.arange(labels.shape[1])[None, :] < label_lengths[:, None]
    bad = used & ((labels < 0) | (labels >= num_classes) | (labels == blank))
    if bad.any():
        b, i = (int(v[0]) for v in np.nonzero(bad))
        raise ArgumentError(f"{fn}: label[{b}, {i}] = {int(labels[b, i])} is not a class in [0, {num_classes}) "
                            f"other than blank={blank}")


def _warprnnt_kernel(input, label, input_lengths, label_lengths, blank=0, fastemit_lambda=0.001):
    """The RNN-T loss of each sequence and its gradient with respect to ``input`` (log-probabilities
    [B, T, U + 1, V], used as given, as Paddle's CPU kernel), by the forward-backward recursion over
    the (time, emitted labels) lattice. FastEmit scales the gradient of label emissions by
    ``1 + fastemit_lambda`` and leaves the loss as it is (warp-transducer's rule)."""
    labels = label.astype(np.int64)
    in_len, lab_len = input_lengths.astype(np.int64), label_lengths.astype(np.int64)
    _check_rnnt_data(input, labels, in_len, lab_len, blank)
    batch, max_time, max_states, _ = input.shape
    log_prob = input.astype(np.float64)
    rows = np.arange(batch)
    blank_lp = log_prob[..., blank]  # [B, T, U + 1]: stay at u, move to t + 1
    next_label = np.zeros((batch, max_states), np.int64)
    width = min(labels.shape[1], max_states - 1)
    next_label[:, :width] = np.maximum(labels[:, :width], 0)
    emit_lp = np.take_along_axis(log_prob, next_label[:, None, :, None], axis=3)[..., 0]  # move to u + 1
    neg = -np.inf
    alpha = np.full((batch, max_time, max_states), neg)
    for t in range(max_time):
        for u in range(max_states):
            if t == 0 and u == 0:
                alpha[:, 0, 0] = 0.0
                continue
            from_time = alpha[:, t - 1, u] + blank_lp[:, t - 1, u] if t > 0 else np.full(batch, neg)
            from_label = alpha[:, t, u - 1] + emit_lp[:, t, u - 1] if u > 0 else np.full(batch, neg)
            alpha[:, t, u] = np.logaddexp(from_time, from_label)
    last_t, last_u = in_len - 1, lab_len
    log_likelihood = alpha[rows, last_t, last_u] + blank_lp[rows, last_t, last_u]
    beta = np.full((batch, max_time + 1, max_states + 1), neg)  # padded by one step each way
    inside = (np.arange(max_time)[None, :, None] < in_len[:, None, None]) & \
             (np.arange(max_states)[None, None, :] <= lab_len[:, None, None])
    for t in range(max_time - 1, -1, -1):
        for u in range(max_states - 1, -1, -1):
            # the final node (T - 1, U) ends by its blank: nothing follows it
            after_blank = np.where((t == last_t) & (u == last_u), 0.0, beta[:, t + 1, u])
            by_label = np.where(u < lab_len, beta[:, t, u + 1] + emit_lp[:, t, u], neg)
            step = np.logaddexp(after_blank + blank_lp[:, t, u], by_label)
            beta[:, t, u] = np.where(inside[:, t, u], step, neg)
    ll = log_likelihood[:, None, None]
    after_blank = beta[:, 1:, :-1].copy()
    after_blank[rows, last_t, last_u] = 0.0
    with np.errstate(invalid="ignore", over="ignore"):
        blank_grad = -np.exp(alpha + after_blank + blank_lp - ll)
        emit_grad = -np.exp(alpha + beta[:, :-1, 1:] + emit_lp - ll) * (1.0 + fastemit_lambda)
    blank_grad = np.where(inside & np.isfinite(blank_grad), blank_grad, 0.0)
    emit_ok = inside & (np.arange(max_states)[None, None, :] < lab_len[:, None, None])
    emit_grad = np.where(emit_ok & np.isfinite(emit_grad), emit_grad, 0.0)
    grad = np.zeros_like(log_prob)
    grad[..., blank] += blank_grad
    b_idx, t_idx, u_idx = np.meshgrid(rows, np.arange(max_time), np.arange(max_states), indexing="ij")
    np.add.at(grad, (b_idx, t_idx, u_idx, np.broadcast_to(next_label[:, None, :], emit_grad.shape)), emit_grad)
    feasible = np.isfinite(log_likelihood)
    grad = np.where(feasible[:, None, None, None], grad, 0.0)
    return (-log_likelihood).astype(input.dtype), grad.astype(input.dtype)


def _warprnnt_meta(input, label, input_lengths, label_lengths, blank=0, fastemit_lambda=0.001):
    fn = "rnnt_loss"
    if len(input.shape) != 4 or not input.dtype.is_floating:
        raise ShapeError(f"{fn}: input must be a floating [batch, max_time, max_label_length + 1, classes] tensor, "
                         f"got {input.dtype.name}{fmt_shape(input.shape)}")
    batch = input.shape[0]
    _check_label_args(fn, batch, ("label", label), input_lengths, label_lengths)
    return TensorMeta((batch,), input.dtype), TensorMeta(input.shape, input.dtype)


warprnnt_op = LossOp("warprnnt", paddle=("nn.functional.rnnt_loss",), reference=_warprnnt_kernel, meta=_warprnnt_meta,
                     amp=AMP_FP32, dtypes=_KERNEL_DTYPES, num_outputs=2, nondiff_inputs=(1, 2, 3))


@warprnnt_op.defgrad
def _warprnnt_grad(ctx, g_loss, g_grad):
    if oar.is_grad_enabled():  # create_graph=True: the saved gradient is not a function of oar ops
        raise GradientError("rnnt_loss: second-order gradients are not supported (its gradient comes from the "
                            "forward-backward recursion, like Paddle's warprnnt); differentiate it once only")
    if g_loss is None:
        return None, None, None, None
    return ctx.output(1) * oar.reshape(g_loss, [-1, 1, 1, 1]), None, None, None


def rnnt_loss(input, label, input_lengths, label_lengths, blank=0, fastemit_lambda=0.001, reduction="mean",
              name=None) -> Tensor:
    """The RNN transducer loss (Graves, 2012) of ``input`` ([batch, max_time, max_label_length + 1,
    classes] log-probabilities of the joint network) against ``label`` ([batch, max_label_length]):
    the negative log of the summed probability of every alignment, by the forward-backward
    recursion. ``fastemit_lambda`` (FastEmit, Yu et al., 2021) scales the gradient of label
    emissions by ``1 + fastemit_lambda``; the loss value is unchanged. ``'mean'`` divides the
    sum by the batch size.

    As Paddle's CPU kernel, ``input`` is used as given (apply ``log_softmax`` first); a
    sequence whose lattice has no path has an infinite loss and a zero gradient.

    >>> import oar
    >>> import oar.nn.functional as F
    >>> log_probs = F.log_softmax(oar.zeros([1, 2, 2, 2]), axis=-1)  # uniform over {blank, 'a'}
    >>> loss = F.rnnt_loss(log_probs, oar.to_tensor([[1]], dtype="int32"), oar.to_tensor([2], dtype="int32"),
    ...                    oar.to_tensor([1], dtype="int32"), reduction="none")
    >>> round(float(loss[0]), 4)  # 2 alignments of probability 1/8
    1.3863
    """
    fn = "rnnt_loss"
    _check_reduction(fn, reduction)
    input = _float_input(fn, input)
    inputs = [input] + [_tensor(t, fn, n) for t, n in ((label, "label"), (input_lengths, "input_lengths"),
                                                       (label_lengths, "label_lengths"))]
    _warprnnt_meta(*[TensorMeta(tuple(t.shape), t.dtype) for t in inputs])
    loss, _ = dispatch(warprnnt_op, tuple(inputs), {"blank": int(blank), "fastemit_lambda": float(fastemit_lambda)})
    return _reduce(loss, reduction) if reduction != "mean" else oar.sum(loss) / float(max(input.shape[0], 1))


OPS: list = [
    softmax_with_cross_entropy_op, softmax_with_cross_entropy_grad_op, nll_loss_op, bce_loss_op,
    sigmoid_cross_entropy_with_logits_op, warpctc_op, warprnnt_op,
]
__all__: list[str] = [
    "cross_entropy", "softmax_with_cross_entropy", "nll_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "mse_loss", "l1_loss", "smooth_l1_loss", "kl_div",
    "margin_ranking_loss", "ctc_loss", "square_error_cost", "log_loss", "dice_loss", "npair_loss",
    "sigmoid_focal_loss", "soft_margin_loss", "hinge_embedding_loss", "cosine_embedding_loss", "triplet_margin_loss",
    "triplet_margin_with_distance_loss", "multi_margin_loss", "multi_label_margin_loss",
    "multi_label_soft_margin_loss", "poisson_nll_loss", "gaussian_nll_loss", "hsigmoid_loss",
    "adaptive_log_softmax_with_loss", "rnnt_loss",
]
