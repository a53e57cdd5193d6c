"""Optimizer updates in one pass: Adam (and AdamW) and heavy-ball momentum.

oar-nn's numpy rules (``oar.optimizer.adam.adam_update``, ``momentum_update``) make one pass over
the parameter per operation, about ten for Adam; these read the parameter, the gradient and the
accumulators once and write them once, in parallel over elements for large parameters. Each
element goes through the numpy rule's operations in the same order, in the parameter's dtype (the
constants are cast to it first, and no fast-math contraction), so the results are the same
floats. Cases the kernels do not cover (AMSGrad, Nesterov, a rescaled or L2-decayed gradient,
non-contiguous or mixed-dtype arrays) go to the numpy rules.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from oar_numba._jit import SERIAL_BELOW, cache_variant

# Compiled without fast-math: contracting ``a * b + c`` into a fused multiply-add would round
# differently from the numpy rule. numpy's error model (x / 0 is inf, no ZeroDivisionError check)
# lets LLVM vectorise the division, several times faster than the numpy rule (docs/numba.md).
_FLAGS = {"cache": True, "nogil": True, "error_model": "numpy"}
_parallel = numba.njit(parallel=True, **_FLAGS)
_serial = numba.njit(**_FLAGS)


def _adam_loop(param, grad, m1, m2, beta1, beta2, one_minus_beta1, one_minus_beta2, eps, lr_t, coeff):
    for i in prange(param.size):
        g = grad[i]
        p = param[i]
        if coeff != 0:
            p = p - coeff * p
        m = m1[i] * beta1 + g * one_minus_beta1
        v = m2[i] * beta2 + g * one_minus_beta2 * g
        m1[i] = m
        m2[i] = v
        param[i] = p - m / (np.sqrt(v) + eps) * lr_t


def _momentum_loop(param, grad, velocity, momentum, lr):
    for i in prange(param.size):
        v = velocity[i] * momentum + grad[i]
        velocity[i] = v
        param[i] = param[i] - lr * v


# the serial compilations under names of their own: numba's disk cache does not tell flags apart
_ADAM = (_serial(cache_variant(_adam_loop, "serial")), _parallel(cache_variant(_adam_loop, "parallel")))
_MOMENTUM = (_serial(cache_variant(_momentum_loop, "serial")), _parallel(cache_variant(_momentum_loop, "parallel")))


def _kernel(pair, size: int):
    """The serial kernel for small parameters (waking threads costs more than the work), else the parallel one."""
    return pair[size >= SERIAL_BELOW and numba.get_num_threads() > 1]


def _flat(*arrays):
    """One-dimensional views of ``arrays``, or None unless all are C-contiguous float32/float64 of one dtype and size."""
    first = arrays[0]
    if first.dtype not in (np.float32, np.float64):
        return None
    for a in arrays:
        if type(a) is not np.ndarray or a.dtype != first.dtype or a.size != first.size or not a.flags.c_contiguous:
            return None
    return [a.reshape(-1) for a in arrays]


def make_adam_update(fallback):
    """Adam's update rule (``fallback``'s signature and results), one pass over the arrays."""

    def adam_update(param, grad, lr, state, *, beta1, beta2, epsilon, amsgrad, coeff=0.0) -> None:
        flat = None if amsgrad or not param.flags.writeable else _flat(param, grad, state["moment1"],
                                                                       state["moment2"])
        if flat is None:
            return fallback(param, grad, lr, state, beta1=beta1, beta2=beta2, epsilon=epsilon,
                            amsgrad=amsgrad, coeff=coeff)
        b1p, b2p = state["beta1_pow_acc"], state["beta2_pow_acc"]
        correction = np.sqrt(1 - b2p[0])
        lr_t = lr * correction / (1 - b1p[0])
        cast = param.dtype.type
        _kernel(_ADAM, param.size)(*flat, cast(beta1), cast(beta2), cast(1 - beta1), cast(1 - beta2),
                                   cast(epsilon * correction), cast(lr_t), cast(lr * coeff))
        b1p *= beta1
        b2p *= beta2

    adam_update.__doc__ = fallback.__doc__
    return adam_update


def make_momentum_update(fallback):
    """Momentum's update rule (``fallback``'s signature and results), one pass over the arrays."""

    def momentum_update(param, grad, lr, state, *, momentum, use_nesterov, rescale_grad, l2_coeff) -> None:
        plain = not use_nesterov and rescale_grad == 1.0 and not l2_coeff and param.flags.writeable
        flat = _flat(param, grad, state["velocity"]) if plain else None
        if flat is None:
            return fallback(param, grad, lr, state, momentum=momentum, use_nesterov=use_nesterov,
                            rescale_grad=rescale_grad, l2_coeff=l2_coeff)
        cast = param.dtype.type
        _kernel(_MOMENTUM, param.size)(*flat, cast(momentum), cast(lr))

    momentum_update.__doc__ = fallback.__doc__
    return momentum_update


# (optimizer type, factory): the rules replaced on ``cpu``; adamw shares Adam's rule (its ``coeff``).
_FACTORIES = {"adam": make_adam_update, "adamw": make_adam_update, "momentum": make_momentum_update}
_replaced: dict[str, object] = {}


def register_update_rules() -> None:
    """Put the one-pass rules in front of oar-nn's numpy ones (which they call for the cases they
    do not cover). Importing the optimizers first makes their own registrations run before ours."""
    from oar.optimizer import adam, adamw, momentum  # noqa: F401
    from oar.optimizer.optimizer import UPDATE_RULES, register_update_rule

    for name, factory in _FACTORIES.items():
        if name not in _replaced:
            _replaced[name] = UPDATE_RULES[(name, "cpu")]
            register_update_rule(name, "cpu", factory(_replaced[name]))


def unregister_update_rules() -> None:
    """Hand the updates back to the numpy rules (a forked child, where numba's threads cannot start)."""
    from oar.optimizer.optimizer import register_update_rule

    for name, fallback in _replaced.items():
        register_update_rule(name, "cpu", fallback)
    _replaced.clear()
