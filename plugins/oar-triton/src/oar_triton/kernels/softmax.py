"""The softmax family: softmax, log_softmax and their gradients, the fused softmax + cross-entropy
and its gradient, and nll_loss.

Each op works along one axis: its inputs are made contiguous (so that every input and the output
share one layout) and seen as M rows along that axis, as the reductions see theirs
(``oar_triton.kernels.reduction.Layout``: the dims before and after the axis are two merged groups
of rows). A program owns BLOCK_M rows and walks them in BLOCK_N steps, in float32 (float64 for
float64): softmax and log_softmax make one online pass for the row's maximum and the sum of
exponentials shifted by it (each lane rescales its running sum when its maximum grows), then one
pass that writes (a row that fits one tile is read once and kept in registers); the gradients make one pass for the row's sum and one that writes. The tile is
long along the axis when the axis is the last dim, and long across rows otherwise, so loads are
coalesced either way.

``softmax_with_cross_entropy`` computes the log-softmax (or takes the input as probabilities,
``use_softmax=False``) and the loss in the same two passes: for hard labels it gathers the
labelled logit of each row, for soft labels it accumulates ``label * log_prob`` (0 where the label
is 0) in the writing pass. ``nll_loss`` gathers ``-input[n, label, ...]``.

Refused or different from the reference: a hard label outside ``[0, classes)`` that is not
``ignore_index`` gives a NaN loss (the reference raises; checking on the host would cost a
synchronisation per call), and its gradient is ``prob * g`` (no class is hit); integer inputs of
the float ops are refused (DTypeError); labels must have the loss's shape (ShapeError).
"""

from __future__ import annotations

import numpy as np
import triton
import triton.language as tl
from oar_triton.array import DeviceArray
from oar_triton.backend import contiguous, empty
from oar_triton.kernels.reduction import Layout, aot_config, is_float, offsets, reduce_axes
from oar_triton.launch import compute_dtype, launch

from oar.errors import DTypeError, ShapeError

BLOCK = 1024  # nll_loss: labels per program


# -- kernels --------------------------------------------------------------------------------------
@triton.jit
def _row_stats(x, roff, rmask, N, sn, ACC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Each row's maximum and sum of exp(x - maximum), in one online pass."""
    peak = tl.full([BLOCK_M, BLOCK_N], float("-inf"), ACC)
    total = tl.zeros([BLOCK_M, BLOCK_N], ACC)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N).to(tl.int64)
        mask = rmask[:, None] & (cols < N)[None, :]
        v = tl.load(x + roff + cols[None, :] * sn, mask=mask, other=float("-inf")).to(ACC)
        grown = tl.maximum(peak, v)
        # a lane whose maximum is still -inf has nothing to rescale (and -inf - -inf is NaN)
        empty_lane = grown == float("-inf")
        total = tl.where(empty_lane, 0.0, total * tl.exp(peak - grown) + tl.exp(v - grown))
        peak = grown
    top = tl.max(peak, axis=1)
    scaled = tl.where(peak == float("-inf"), 0.0, total * tl.exp(peak - top[:, None]))
    return top, tl.sum(scaled, axis=1)


@triton.jit
def _softmax_kernel(x, out, M, N, rin, rso, rsi, sn, LOG: tl.constexpr, ONE_BLOCK: tl.constexpr,
                    ACC: tl.constexpr, ROW2: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < M
    roff = offsets(rows, rin, rso, rsi, ROW2)[:, None]
    if ONE_BLOCK:  # the row fits one tile: read it once and keep it in registers
        cols = tl.arange(0, BLOCK_N).to(tl.int64)
        mask = rmask[:, None] & (cols < N)[None, :]
        offs = roff + cols[None, :] * sn
        v = tl.load(x + offs, mask=mask, other=float("-inf")).to(ACC)
        v = v - tl.max(v, axis=1)[:, None]
        e = tl.exp(v)
        total = tl.sum(e, axis=1)[:, None]
        if LOG:
            r = v - tl.log(total)
        else:
            r = e / total
        tl.store(out + offs, r.to(out.dtype.element_ty), mask=mask)
        return
    top, total = _row_stats(x, roff, rmask, N, sn, ACC, BLOCK_M, BLOCK_N)
    log_total = tl.log(total)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N).to(tl.int64)
        mask = rmask[:, None] & (cols < N)[None, :]
        offs = roff + cols[None, :] * sn
        v = tl.load(x + offs, mask=mask, other=0).to(ACC) - top[:, None]
        if LOG:
            r = v - log_total[:, None]
        else:
            r = tl.exp(v) / total[:, None]
        tl.store(out + offs, r.to(out.dtype.element_ty), mask=mask)


@triton.jit
def _softmax_grad_kernel(y, g, dx, M, N, rin, rso, rsi, sn, LOG: tl.constexpr, ACC: tl.constexpr,
                         ROW2: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """softmax: dx = y (g - sum(g y)); log_softmax: dx = g - exp(y) sum(g)."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < M
    roff = offsets(rows, rin, rso, rsi, ROW2)[:, None]
    acc = tl.zeros([BLOCK_M, BLOCK_N], ACC)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N).to(tl.int64)
        mask = rmask[:, None] & (cols < N)[None, :]
        offs = roff + cols[None, :] * sn
        gv = tl.load(g + offs, mask=mask, other=0).to(ACC)
        if LOG:
            acc += gv
        else:
            acc += gv * tl.load(y + offs, mask=mask, other=0).to(ACC)
    dot = tl.sum(acc, axis=1)[:, None]
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N).to(tl.int64)
        mask = rmask[:, None] & (cols < N)[None, :]
        offs = roff + cols[None, :] * sn
        gv = tl.load(g + offs, mask=mask, other=0).to(ACC)
        yv = tl.load(y + offs, mask=mask, other=0).to(ACC)
        if LOG:
            r = gv - tl.exp(yv) * dot
        else:
            r = yv * (gv - dot)
        tl.store(dx + offs, r.to(dx.dtype.element_ty), mask=mask)


@triton.jit
def _cross_entropy_kernel(x, label, loss, prob, M, N, rin, rso, rsi, sn, ignore_index,
                          SOFT: tl.constexpr, USE_SOFTMAX: tl.constexpr, ACC: tl.constexpr, ROW2: tl.constexpr,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """prob = softmax(x) (or x), loss = -log prob[label] (hard) or -sum(label * log prob) (soft)."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < M
    row_start = offsets(rows, rin, rso, rsi, ROW2)
    roff = row_start[:, None]
    if USE_SOFTMAX:
        top, total = _row_stats(x, roff, rmask, N, sn, ACC, BLOCK_M, BLOCK_N)
        shift = top + tl.log(total)  # log prob = x - shift
    acc = tl.zeros([BLOCK_M, BLOCK_N], ACC)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N).to(tl.int64)
        mask = rmask[:, None] & (cols < N)[None, :]
        offs = roff + cols[None, :] * sn
        v = tl.load(x + offs, mask=mask, other=1).to(ACC)
        if USE_SOFTMAX:
            log_p = v - shift[:, None]
            p = tl.exp(log_p)
        else:
            log_p = tl.log(v)
            p = v
        tl.store(prob + offs, p.to(prob.dtype.element_ty), mask=mask)
        if SOFT:
            target = tl.load(label + offs, mask=mask, other=0).to(ACC)
            acc += tl.where(target != 0, target * log_p, 0)
    if SOFT:
        result = -tl.sum(acc, axis=1)
    else:
        target = tl.load(label + rows, mask=rmask, other=0).to(tl.int64)
        valid = target != ignore_index
        in_range = (target >= 0) & (target < N)
        picked = tl.load(x + row_start + tl.where(in_range, target, 0) * sn, mask=rmask & valid & in_range,
                         other=1).to(ACC)
        if USE_SOFTMAX:
            picked_log = picked - shift
        else:
            picked_log = tl.log(picked)
        result = tl.where(valid, tl.where(in_range, -picked_log, float("nan")), 0.0)
    tl.store(loss + rows, result.to(loss.dtype.element_ty), mask=rmask)


@triton.jit
def _cross_entropy_grad_kernel(prob, label, g, dx, M, N, rin, rso, rsi, sn, ignore_index,
                               ACC: tl.constexpr, ROW2: tl.constexpr, BLOCK_M: tl.constexpr,
                               BLOCK_N: tl.constexpr):
    """dx = (prob * valid - onehot(label)) * g, one pass."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < M
    roff = offsets(rows, rin, rso, rsi, ROW2)[:, None]
    target = tl.load(label + rows, mask=rmask, other=0).to(tl.int64)
    valid = target != ignore_index
    gv = tl.load(g + rows, mask=rmask, other=0).to(ACC)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N).to(tl.int64)
        mask = rmask[:, None] & (cols < N)[None, :]
        offs = roff + cols[None, :] * sn
        p = tl.load(prob + offs, mask=mask, other=0).to(ACC)
        hit = (cols[None, :] == target[:, None]) & valid[:, None]
        r = (tl.where(valid[:, None], p, 0) - tl.where(hit, 1.0, 0.0)) * gv[:, None]
        tl.store(dx + offs, r.to(dx.dtype.element_ty), mask=mask)


@triton.jit
def _nll_loss_kernel(x, label, out, n, C, D, ignore_index, ACC: tl.constexpr, BLOCK: tl.constexpr):
    """out[i] = -x[i // D, label[i], i % D] (x contiguous [N, C, D]), 0 where ignored."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    target = tl.load(label + offs, mask=mask, other=0).to(tl.int64)
    valid = target != ignore_index
    in_range = (target >= 0) & (target < C)
    where = (offs // D) * (C * D) + tl.where(in_range, target, 0) * D + offs % D
    v = tl.load(x + where, mask=mask & valid & in_range, other=0).to(ACC)
    r = tl.where(valid, tl.where(in_range, -v, float("nan")), 0.0)
    tl.store(out + offs, r.to(out.dtype.element_ty), mask=mask)


# -- host side ------------------------------------------------------------------------------------
def _require_float(op: str, name: str, a: DeviceArray) -> None:
    if not is_float(a.dtype):
        raise DTypeError(f"{op}: {name} must be a floating tensor, got {a.dtype} of shape {list(a.shape)}")


def _along(op: str, x: DeviceArray, axis) -> tuple[Layout, int, int]:
    """``x`` (contiguous) seen as rows along ``axis``, and its block sizes."""
    axes = reduce_axes(op, x, axis) if x.ndim else ()
    layout = Layout(x, axes)
    block_m, block_n = layout.blocks()
    return layout, block_m, block_n


def _row_args(layout: Layout) -> tuple:
    (rin, rso, rsi, _, _, csi), row2, _ = layout.geometry()
    return (layout.M, layout.N, rin, rso, rsi, csi), row2


def softmax(x: DeviceArray, axis=-1) -> DeviceArray:
    return _softmax("softmax", x, axis, log=False)


def log_softmax(x: DeviceArray, axis=-1) -> DeviceArray:
    return _softmax("log_softmax", x, axis, log=True)


def _softmax(op: str, x: DeviceArray, axis, log: bool) -> DeviceArray:
    _require_float(op, "x", x)
    x = contiguous(x)
    out = empty(x.shape, x.dtype)
    if x.size == 0:
        return out
    layout, block_m, block_n = _along(op, x, axis)
    args, row2 = _row_args(layout)
    launch(_softmax_kernel, (triton.cdiv(layout.M, block_m),), x, out, *args, LOG=log, ONE_BLOCK=layout.N <= block_n,
           ACC=compute_dtype(x.dtype), ROW2=row2, BLOCK_M=block_m, BLOCK_N=block_n)
    return out


def _softmax_grad(op: str, log: bool):
    def kernel(out: DeviceArray, g: DeviceArray, axis=-1) -> DeviceArray:
        _require_float(op, "out", out)
        if out.dtype != g.dtype:
            raise DTypeError(f"{op}: out and the gradient must have one dtype, got {out.dtype} and {g.dtype}")
        if out.shape != g.shape:
            raise ShapeError(f"{op}: the gradient has shape {list(g.shape)}, expected {list(out.shape)}")
        out, g = contiguous(out), contiguous(g)
        dx = empty(g.shape, g.dtype)
        if g.size == 0:
            return dx
        layout, block_m, block_n = _along(op, out, axis)
        args, row2 = _row_args(layout)
        launch(_softmax_grad_kernel, (triton.cdiv(layout.M, block_m),), out, g, dx, *args, LOG=log,
               ACC=compute_dtype(g.dtype), ROW2=row2, BLOCK_M=block_m, BLOCK_N=block_n)
        return dx

    kernel.__name__ = f"{op}_gpu"
    return kernel


def _check_hard_label(op: str, name: str, label: DeviceArray, rows: int, expected) -> None:
    if label.dtype.kind not in "iu":
        raise DTypeError(f"{op}: {name} must be an integer tensor, got {label.dtype}")
    if label.size != rows:
        raise ShapeError(f"{op}: {name} shape {list(label.shape)} must be {list(expected)}")


def softmax_with_cross_entropy(logits: DeviceArray, label: DeviceArray, soft_label=False, use_softmax=True,
                               ignore_index=-100, axis=-1) -> tuple[DeviceArray, DeviceArray]:
    op = "softmax_with_cross_entropy"
    _require_float(op, "logits", logits)
    if logits.ndim == 0:
        raise ShapeError(f"{op}: logits must have a class axis, got a 0-d tensor")
    (axis,) = reduce_axes(op, logits, int(axis))
    loss_shape = tuple(1 if d == axis else n for d, n in enumerate(logits.shape))
    if soft_label:
        _require_float(op, "soft label", label)
        if label.shape != logits.shape:
            raise ShapeError(f"{op}: soft label shape {list(label.shape)} must equal the logits' shape "
                             f"{list(logits.shape)}")
        if label.dtype != logits.dtype:
            label = label.astype(logits.dtype)
    else:
        _check_hard_label(op, "label", label, int(np.prod(loss_shape)), loss_shape)
    logits, label = contiguous(logits), contiguous(label)
    loss, prob = empty(loss_shape, logits.dtype), empty(logits.shape, logits.dtype)
    if logits.size == 0:
        return loss, prob
    layout, block_m, block_n = _along(op, logits, axis)
    args, row2 = _row_args(layout)
    launch(_cross_entropy_kernel, (triton.cdiv(layout.M, block_m),), logits, label, loss, prob, *args,
           int(ignore_index), SOFT=bool(soft_label), USE_SOFTMAX=bool(use_softmax), ACC=compute_dtype(logits.dtype),
           ROW2=row2, BLOCK_M=block_m, BLOCK_N=block_n)
    return loss, prob


def softmax_with_cross_entropy_grad(prob: DeviceArray, label: DeviceArray, g_loss: DeviceArray, ignore_index=-100,
                                    axis=-1) -> DeviceArray:
    op = "softmax_with_cross_entropy_grad"
    _require_float(op, "prob", prob)
    (axis,) = reduce_axes(op, prob, int(axis))
    loss_shape = tuple(1 if d == axis else n for d, n in enumerate(prob.shape))
    rows = int(np.prod(loss_shape))
    _check_hard_label(op, "label", label, rows, loss_shape)
    if g_loss.size != rows or g_loss.dtype != prob.dtype:
        raise ShapeError(f"{op}: the loss gradient must be {prob.dtype}{list(loss_shape)}, got "
                         f"{g_loss.dtype}{list(g_loss.shape)}")
    prob, label, g_loss = contiguous(prob), contiguous(label), contiguous(g_loss)
    dx = empty(prob.shape, prob.dtype)
    if prob.size == 0:
        return dx
    layout, block_m, block_n = _along(op, prob, axis)
    args, row2 = _row_args(layout)
    launch(_cross_entropy_grad_kernel, (triton.cdiv(layout.M, block_m),), prob, label, g_loss, dx, *args,
           int(ignore_index), ACC=compute_dtype(prob.dtype), ROW2=row2, BLOCK_M=block_m, BLOCK_N=block_n)
    return dx


def nll_loss(input: DeviceArray, label: DeviceArray, ignore_index=-100) -> DeviceArray:
    op = "nll_loss"
    _require_float(op, "input", input)
    expected = input.shape[:1] + input.shape[2:]
    if input.ndim < 2:
        raise ShapeError(f"{op}: input must be [N, C] or [N, C, d1, ...], got shape {list(input.shape)}")
    _check_hard_label(op, "label", label, int(np.prod(expected)), expected)
    input, label = contiguous(input), contiguous(label)
    out = empty(label.shape, input.dtype)
    if out.size == 0:
        return out
    classes = input.shape[1]
    inner = int(np.prod(input.shape[2:]))
    launch(_nll_loss_kernel, (triton.cdiv(out.size, BLOCK),), input, label, out, out.size, classes, inner,
           int(ignore_index), ACC=compute_dtype(input.dtype), BLOCK=BLOCK)
    return out


KERNELS = {
    "softmax": softmax,
    "log_softmax": log_softmax,
    "softmax_grad": _softmax_grad("softmax_grad", log=False),
    "log_softmax_grad": _softmax_grad("log_softmax_grad", log=True),
    "softmax_with_cross_entropy": softmax_with_cross_entropy,
    "softmax_with_cross_entropy_grad": softmax_with_cross_entropy_grad,
    "nll_loss": nll_loss,
}


# -- ahead-of-time compilation (oar_triton.aot) ---------------------------------------------------
def aot_configs() -> list[tuple]:
    """Each kernel in float32 and bfloat16 along the last axis (a long row tile, one group of rows),
    and in float32 along an inner axis (a tile across rows, two groups of rows)."""
    from oar_triton.aot import POINTER_TYPES  # (aot imports the kernel modules)

    found = []
    rows = {"M": "i64", "N": "i64", "rin": "i64", "rso": "i64", "rsi": "i64", "sn": "i64"}
    for dtype in ("float32", "bfloat16"):
        ptr = POINTER_TYPES[dtype]
        tilings = {"last": (4, 1024, False), "inner": (128, 32, True)}
        for tiling, (block_m, block_n, two) in tilings.items() if dtype == "float32" else [("last", tilings["last"])]:
            shared = {"ACC": tl.float32, "ROW2": two, "BLOCK_M": block_m, "BLOCK_N": block_n}
            configs = [
                ("softmax", _softmax_kernel, {"x": ptr, "out": ptr}, {"LOG": False, "ONE_BLOCK": two}),
                ("log_softmax", _softmax_kernel, {"x": ptr, "out": ptr}, {"LOG": True, "ONE_BLOCK": not two}),
                ("softmax_grad", _softmax_grad_kernel, {"y": ptr, "g": ptr, "dx": ptr}, {"LOG": False}),
                ("log_softmax_grad", _softmax_grad_kernel, {"y": ptr, "g": ptr, "dx": ptr}, {"LOG": True}),
                ("softmax_with_cross_entropy", _cross_entropy_kernel,
                 {"x": ptr, "label": "*i64", "loss": ptr, "prob": ptr}, {"SOFT": False, "USE_SOFTMAX": True}),
                ("softmax_with_cross_entropy_soft", _cross_entropy_kernel,
                 {"x": ptr, "label": ptr, "loss": ptr, "prob": ptr}, {"SOFT": True, "USE_SOFTMAX": True}),
                ("softmax_with_cross_entropy_grad", _cross_entropy_grad_kernel,
                 {"prob": ptr, "label": "*i64", "g": ptr, "dx": ptr}, {}),
            ]
            for name, kernel, pointers, constexprs in configs:
                signature = {**pointers, **rows}
                if kernel in (_cross_entropy_kernel, _cross_entropy_grad_kernel):
                    signature["ignore_index"] = "i64"
                found.append(aot_config(f"softmax.{name}[{dtype}:{tiling}]", kernel, signature,
                                        {**constexprs, **shared}))
        found.append(aot_config(f"softmax.nll_loss[{dtype}]", _nll_loss_kernel,
                                {"x": ptr, "label": "*i64", "out": ptr, "n": "i64", "C": "i64", "D": "i64",
                                 "ignore_index": "i64"}, {"ACC": tl.float32, "BLOCK": BLOCK}))
    return found


__all__ = ["KERNELS", "aot_configs"]
