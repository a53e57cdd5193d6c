"""Fused optimizer updates on the gpu: SGD, Momentum (heavy ball and Nesterov), Adam and AdamW.

Each update is one Triton launch per parameter. A program takes a block of ``BLOCK`` elements,
loads the parameter, the gradient and the accumulators once, runs the cpu rule's formula
(``oar.optimizer.adam.adam_update``, ``momentum_update``, ``sgd_update``) in float32, in the same
order of operations, and stores the parameter and the accumulators back into their own buffers,
in place. Square roots and divisions are the correctly rounded ones (``sqrt_rn``, ``div_rn``), as
numpy's; the GPU may still fuse a multiply and an add, so results agree to float32 rounding.

float16 and bfloat16 parameters: oar-nn hands these rules the low-precision parameter itself
(``updates_low_precision``) with its float32 master weights (``master=``) when the optimizer keeps
them (``multi_precision=True``). The kernel then reads and writes the master weights and also
stores them, rounded, into the parameter's buffer; without master weights it reads the parameter,
computes in float32 and stores it rounded. The gradient is read in its own dtype. The accumulators
are float32 in both cases, as on the cpu.

Adam's ``beta1_pow_acc`` and ``beta2_pow_acc`` (``beta**t``, one element each) are read by every
program and must be multiplied by ``beta`` only after all of them have read it: each program takes
a ticket from a counter when it is done reading, and the program with the last ticket writes the
new powers and sets the counter back to zero (the last-block pattern). Launches on the one stream
never overlap, so one counter serves every launch; a lock keeps two host threads from enqueuing
(or, in the interpreter, running) two Adam launches at once. Zero-size parameters still launch one program,
which advances the powers as the cpu rule does.

Refused with a clear error: float64 parameters (Triton passes Python floats as float32, so the
float64 formula could not be kept), non-contiguous parameters, master weights or accumulators
(optimizer state is created contiguous), and a gradient whose shape is not the parameter's.
"""

from __future__ import annotations

import threading

import numpy as np
import triton
import triton.language as tl
from oar_triton.array import DeviceArray
from oar_triton.backend import BACKEND, contiguous
from oar_triton.launch import BFLOAT16, launch

from oar.errors import ArgumentError, DTypeError, ShapeError

BLOCK = 1024  # memory-bound: 1024 elements over 4 warps keep each load 128-bit and the grid large
LOW_PRECISION = (np.dtype(np.float16), BFLOAT16)
PARAM_DTYPES = (np.dtype(np.float32), *LOW_PRECISION)


@triton.jit
def _offsets(n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    return offs, offs < n


@triton.jit
def _load_param(param_ptr, master_ptr, offs, mask, HAS_MASTER: tl.constexpr):
    if HAS_MASTER:
        p = tl.load(master_ptr + offs, mask=mask)
    else:
        p = tl.load(param_ptr + offs, mask=mask).to(tl.float32)
    return p


@triton.jit
def _store_param(param_ptr, master_ptr, offs, mask, p, HAS_MASTER: tl.constexpr):
    if HAS_MASTER:
        tl.store(master_ptr + offs, p, mask=mask)
    tl.store(param_ptr + offs, p.to(param_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _sgd_kernel(param_ptr, master_ptr, grad_ptr, n, lr, HAS_MASTER: tl.constexpr, BLOCK: tl.constexpr):
    offs, mask = _offsets(n, BLOCK)
    p = _load_param(param_ptr, master_ptr, offs, mask, HAS_MASTER)
    g = tl.load(grad_ptr + offs, mask=mask).to(tl.float32)
    _store_param(param_ptr, master_ptr, offs, mask, p - lr * g, HAS_MASTER)


@triton.jit
def _momentum_kernel(param_ptr, master_ptr, grad_ptr, velocity_ptr, n, lr, momentum, rescale_grad, l2_coeff,
                     NESTEROV: tl.constexpr, HAS_MASTER: tl.constexpr, BLOCK: tl.constexpr):
    offs, mask = _offsets(n, BLOCK)
    p = _load_param(param_ptr, master_ptr, offs, mask, HAS_MASTER)
    g = tl.load(grad_ptr + offs, mask=mask).to(tl.float32)
    v = tl.load(velocity_ptr + offs, mask=mask)
    # the cpu rule skips these when they change nothing: 0 * inf would make a NaN there
    if rescale_grad != 1.0:
        g = rescale_grad * g
    if l2_coeff != 0.0:
        g = g + l2_coeff * p
    v = v * momentum + g
    if NESTEROV:
        p = p - (g + momentum * v) * lr
    else:
        p = p - lr * v
    tl.store(velocity_ptr + offs, v, mask=mask)
    _store_param(param_ptr, master_ptr, offs, mask, p, HAS_MASTER)


@triton.jit
def _adam_kernel(param_ptr, master_ptr, grad_ptr, moment1_ptr, moment2_ptr, moment2_max_ptr, beta1_pow_ptr,
                 beta2_pow_ptr, ticket_ptr, n, lr, beta1, beta2, one_minus_beta1, one_minus_beta2, epsilon, decay,
                 AMSGRAD: tl.constexpr, HAS_MASTER: tl.constexpr, BLOCK: tl.constexpr):
    beta1_pow = tl.load(beta1_pow_ptr)
    beta2_pow = tl.load(beta2_pow_ptr)
    correction = tl.sqrt_rn(1.0 - beta2_pow)
    lr_t = tl.div_rn(lr * correction, 1.0 - beta1_pow)
    eps = epsilon * correction
    offs, mask = _offsets(n, BLOCK)
    p = _load_param(param_ptr, master_ptr, offs, mask, HAS_MASTER)
    g = tl.load(grad_ptr + offs, mask=mask).to(tl.float32)
    m1 = tl.load(moment1_ptr + offs, mask=mask)
    m2 = tl.load(moment2_ptr + offs, mask=mask)
    if decay != 0.0:  # AdamW's decoupled decay, lr * coeff (skipped at 0, as the cpu rule: 0 * inf)
        p = p - decay * p
    m1 = m1 * beta1 + g * one_minus_beta1
    m2 = m2 * beta2 + g * one_minus_beta2 * g
    tl.store(moment1_ptr + offs, m1, mask=mask)
    tl.store(moment2_ptr + offs, m2, mask=mask)
    if AMSGRAD:
        m2 = tl.maximum(tl.load(moment2_max_ptr + offs, mask=mask), m2, propagate_nan=tl.PropagateNan.ALL)
        tl.store(moment2_max_ptr + offs, m2, mask=mask)
    p = p - tl.div_rn(m1, tl.sqrt_rn(m2) + eps) * lr_t
    _store_param(param_ptr, master_ptr, offs, mask, p, HAS_MASTER)
    # Every thread of this program has read the powers (the barrier), then the ticket (acq_rel):
    # the last program to take one knows that no program still needs the old powers.
    tl.debug_barrier()
    ticket = tl.atomic_add(ticket_ptr, 1)
    if ticket == tl.num_programs(0) - 1:
        tl.store(beta1_pow_ptr, beta1_pow * beta1)
        tl.store(beta2_pow_ptr, beta2_pow * beta2)
        tl.store(ticket_ptr, 0)


# -- the update rules (oar.optimizer's signature) -------------------------------------------------
_TICKETS: list[DeviceArray] = []  # one int32 counter, made on the first Adam update
_TICKET_LOCK = threading.Lock()


def _ticket() -> DeviceArray:
    if not _TICKETS:
        _TICKETS.append(BACKEND.zeros((1,), np.int32))
    return _TICKETS[0]


def _operands(optimizer: str, param: DeviceArray, grad: DeviceArray, master: DeviceArray | None,
              accumulators: dict[str, DeviceArray]) -> DeviceArray:
    """Check what the kernel indexes flat, element by element; return the gradient, made contiguous."""
    if param.dtype not in PARAM_DTYPES:
        raise DTypeError(
            f"{optimizer} (gpu): the fused update serves float32 parameters (float16/bfloat16 ones through float32 "
            f"math), got a {param.dtype} parameter of shape {list(param.shape)}; keep float64 parameters on the cpu"
        )
    if grad.dtype not in PARAM_DTYPES:
        raise DTypeError(f"{optimizer} (gpu): the gradient must be float32, float16 or bfloat16, got {grad.dtype}")
    if grad.shape != param.shape:
        raise ShapeError(f"{optimizer} (gpu): the gradient has shape {list(grad.shape)} but the parameter has "
                         f"shape {list(param.shape)}")
    named = {"the parameter": param, **({"the master weights": master} if master is not None else {}),
             **{f"the accumulator {k!r}": a for k, a in accumulators.items()}}
    for what, array in named.items():
        if not array.is_contiguous():
            raise ArgumentError(f"{optimizer} (gpu): {what} (shape {list(array.shape)}, strides {list(array.strides)}) "
                                f"is not contiguous; the fused update writes it in place element by element")
        if array is not param and (array.size != param.size or array.dtype != np.float32):
            raise ArgumentError(f"{optimizer} (gpu): {what} must be float32 with the parameter's {param.size} "
                                f"elements, got {array.dtype} of shape {list(array.shape)}")
    return contiguous(grad)


def _grid(n: int) -> tuple[int]:
    return (triton.cdiv(n, BLOCK),)


def sgd_update(param, grad, lr, state, *, master=None) -> None:
    """``param = param - lr * grad``, in place (``oar.optimizer.sgd.sgd_update``)."""
    grad = _operands("sgd", param, grad, master, {})
    if param.size:
        launch(_sgd_kernel, _grid(param.size), param, master if master is not None else param, grad, param.size,
               float(lr), HAS_MASTER=master is not None, BLOCK=BLOCK)


def momentum_update(param, grad, lr, state, *, momentum, use_nesterov, rescale_grad, l2_coeff, master=None) -> None:
    """Heavy-ball or Nesterov momentum, in place (``oar.optimizer.momentum.momentum_update``)."""
    velocity = state["velocity"]
    grad = _operands("momentum", param, grad, master, {"velocity": velocity})
    if param.size:
        launch(_momentum_kernel, _grid(param.size), param, master if master is not None else param, grad, velocity,
               param.size, float(lr), float(momentum), float(rescale_grad), float(l2_coeff),
               NESTEROV=bool(use_nesterov), HAS_MASTER=master is not None, BLOCK=BLOCK)


def adam_update(param, grad, lr, state, *, beta1, beta2, epsilon, amsgrad, coeff=0.0, master=None) -> None:
    """Adam (and AdamW's decoupled decay ``coeff``), in place (``oar.optimizer.adam.adam_update``)."""
    moments = {k: state[k] for k in (("moment1", "moment2", "moment2_max") if amsgrad else ("moment1", "moment2"))}
    grad = _operands("adam", param, grad, master, moments)
    powers = {k: state[k] for k in ("beta1_pow_acc", "beta2_pow_acc")}
    for key, array in powers.items():
        if array.size != 1 or array.dtype != np.float32:
            raise ArgumentError(f"adam (gpu): the accumulator {key!r} must be one float32 element, got {array.dtype} "
                                f"of shape {list(array.shape)}")
    with _TICKET_LOCK:
        launch(_adam_kernel, (max(1, triton.cdiv(param.size, BLOCK)),),  # one program at least: the powers advance
               param, master if master is not None else param, grad, moments["moment1"], moments["moment2"],
               moments.get("moment2_max", moments["moment2"]), powers["beta1_pow_acc"], powers["beta2_pow_acc"],
               _ticket(), param.size, float(lr), float(beta1), float(beta2), 1.0 - float(beta1), 1.0 - float(beta2),
               float(epsilon), float(lr) * float(coeff), AMSGRAD=bool(amsgrad), HAS_MASTER=master is not None,
               BLOCK=BLOCK)


# optimizer type -> rule; AdamW is Adam's rule with its decoupled decay ``coeff``
RULES = {"sgd": sgd_update, "momentum": momentum_update, "adam": adam_update, "adamw": adam_update}
KERNELS: dict = {}  # no ops: optimizer updates are rules (oar_triton.optimizer registers RULES)


# -- ahead-of-time compilation (oar_triton.aot) ---------------------------------------------------
def aot_configs() -> list[tuple]:
    """Each kernel for a float32 parameter and for a bfloat16 one with float32 master weights."""
    from oar_triton.aot import POINTER_TYPES  # (aot imports the kernel modules)

    found = []
    for dtype, has_master in (("float32", False), ("bfloat16", True)):
        ptrs = {"param_ptr": POINTER_TYPES[dtype], "master_ptr": "*fp32", "grad_ptr": POINTER_TYPES[dtype]}
        tail = {"HAS_MASTER": "constexpr", "BLOCK": "constexpr"}
        const = {"HAS_MASTER": has_master, "BLOCK": BLOCK}
        found.append((f"optimizer.sgd[{dtype}]", _sgd_kernel, {**ptrs, "n": "i32", "lr": "fp32", **tail}, const))
        for nesterov in (False, True):
            signature = {**ptrs, "velocity_ptr": "*fp32", "n": "i32", "lr": "fp32", "momentum": "fp32",
                         "rescale_grad": "fp32", "l2_coeff": "fp32", "NESTEROV": "constexpr", **tail}
            label = f"optimizer.momentum{'.nesterov' if nesterov else ''}[{dtype}]"
            found.append((label, _momentum_kernel, signature, {"NESTEROV": nesterov, **const}))
        for amsgrad in (False, True):
            signature = {**ptrs, **{k: "*fp32" for k in ("moment1_ptr", "moment2_ptr", "moment2_max_ptr",
                                                           "beta1_pow_ptr", "beta2_pow_ptr")},
                         "ticket_ptr": "*i32", "n": "i32",
                         **{k: "fp32" for k in ("lr", "beta1", "beta2", "one_minus_beta1", "one_minus_beta2",
                                                "epsilon", "decay")},
                         "AMSGRAD": "constexpr", **tail}
            label = f"optimizer.adam{'.amsgrad' if amsgrad else ''}[{dtype}]"
            found.append((label, _adam_kernel, signature, {"AMSGRAD": amsgrad, **const}))
    return found


__all__ = ["KERNELS", "RULES", "adam_update", "momentum_update", "sgd_update", "aot_configs"]
