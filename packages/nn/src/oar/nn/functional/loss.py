"""Loss functions of oar.nn.functional, with Paddle's names, arguments and defaults.

The losses that dominate training time, or that need care to be exact, are fused ops with a numpy
reference kernel that plugins (oar-numba, oar-triton) replace: ``softmax_with_cross_entropy``
(stable log-softmax and the negative log-likelihood in one pass; gradient ``softmax - label``),
``nll_loss``, ``bce_loss`` (logs clamped at -100 as in Paddle), ``sigmoid_cross_entropy_with_logits``
(stable for any logit) and ``warpctc`` (CTC by the forward-backward recursion). The others compose
core ops. Every reduction is ``'mean'``, ``'sum'`` or ``'none'`` (``kl_div`` adds ``'batchmean'``).

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
    classes = oar.reshape(oar.arange(num_classes, dtype=label.dtype), shape)
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


def smooth_l1_loss(input, label, reduction="mean", delta=1.0, name=None) -> Tensor:
    """Paddle's smooth L1 (the Huber loss): ``0.5 * d ** 2`` where ``|d| < delta``, else
    ``delta * |d| - 0.5 * delta ** 2``, with ``d = input - label``.

    This is not PyTorch's ``smooth_l1_loss(beta)``, which divides the whole loss by ``beta``.

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


def _warpctc_meta(logits, labels, input_lengths, label_lengths, blank=0, norm_by_times=False):
    fn = "ctc_loss"
    if len(logits.shape) != 3 or not logits.dtype.is_floating:
        raise ShapeError(f"{fn}: log_probs must be a floating [max_time, batch, classes] tensor, got "
                         f"{logits.dtype.name}{fmt_shape(logits.shape)}")
    batch = logits.shape[1]
    for name, m, rank in (("labels", labels, 2), ("input_lengths", input_lengths, 1),
                          ("label_lengths", label_lengths, 1)):
        if not m.dtype.is_integer:
            raise DTypeError(f"{fn}: {name} must be an integer tensor, got {m.dtype.name}")
        if len(m.shape) != rank or not _shapes_match(m.shape[:1], (batch,)):
            expected = "[batch, max_label_length]" if rank == 2 else "[batch]"
            raise ShapeError(f"{fn}: {name} must have shape {expected} with batch={batch}, got "
                             f"{fmt_shape(m.shape)}")
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


def ctc_loss(log_probs, labels, input_lengths, label_lengths, blank=0, reduction="mean", norm_by_times=False) -> Tensor:
    """Connectionist Temporal Classification loss of ``log_probs`` ([max_time, batch, classes],
    padded) against ``labels`` ([batch, max_label_length], padded).

    As Paddle's warp-ctc, a softmax over the classes is applied first, so raw logits and
    log-probabilities give the same loss. ``'mean'`` divides each loss by its label length
    (at least 1) and averages; ``norm_by_times`` scales each sequence's gradient by 1 / its
    input length. A sequence too short for its labels has an infinite loss and a zero gradient.

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
    if reduction == "mean":
        lengths = oar.clip(oar.cast(inputs[3], loss.dtype), min=1.0)
        return oar.mean(loss / lengths)
    return _reduce(loss, reduction)


OPS: list = [
    softmax_with_cross_entropy_op, softmax_with_cross_entropy_grad_op, nll_loss_op, bce_loss_op,
    sigmoid_cross_entropy_with_logits_op, warpctc_op,
]
__all__: list[str] = [
    "cross_entropy", "softmax_with_cross_entropy", "nll_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "mse_loss", "l1_loss", "smooth_l1_loss", "kl_div",
    "margin_ranking_loss", "ctc_loss",
]
