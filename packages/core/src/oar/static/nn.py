"""``oar.static.nn``: tensor-dependent control flow that a captured program keeps, as in Paddle.

``cond(pred, true_fn, false_fn)`` and ``while_loop(cond, body, loop_vars)`` run as plain Python
eagerly; under ``oar.jit.to_static`` they become one ``cond`` / ``while`` node of the program
whose blocks hold the branches (the loop's condition and body), so one captured program is right
for every input: the branch and the number of iterations are chosen when the program runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from oar._engine.tensor import Tensor
from oar._graph.control_flow import (
    active_tracer,
    check_pred,
    eager_cond,
    eager_while,
    traced_cond,
    traced_while,
)
from oar.errors import ArgumentError


def cond(pred, true_fn: Callable[[], Any] | None = None, false_fn: Callable[[], Any] | None = None,
         name: str | None = None, return_names=None):
    """``true_fn()`` if ``pred`` is true, else ``false_fn()``, as ``paddle.static.nn.cond``.

    ``pred`` is a bool tensor of one element (shape ``[]`` or ``[1]``), or a Python bool, which
    simply picks the branch. Each branch takes no arguments and returns a tensor, a nested
    list / tuple / dict of tensors, or None (a missing branch returns None). Under
    ``oar.jit.to_static`` both branches are captured and must return the same structure, with
    each tensor's dtype and number of dims agreeing between the branches (a dim whose size
    differs becomes dynamic); the program then picks the branch on every run.

    >>> import oar
    >>> from oar.static.nn import cond
    >>> @oar.jit.to_static
    ... def f(x):
    ...     return cond(x.sum() > 0, lambda: x * 2.0, lambda: -x)
    >>> f(oar.to_tensor([1.0, 2.0])).tolist(), f(oar.to_tensor([-1.0, -2.0])).tolist()
    ([2.0, 4.0], [1.0, 2.0])
    """
    for what, fn in (("true_fn", true_fn), ("false_fn", false_fn)):
        if fn is not None and not callable(fn):
            raise ArgumentError(f"cond: {what} must be a callable taking no arguments (or None), got "
                                f"{type(fn).__name__}")
    if not isinstance(pred, Tensor):
        if hasattr(pred, "__bool__") or isinstance(pred, (int, float)):
            return eager_cond(bool(pred), true_fn, false_fn)  # a Python value: a Python if
        raise ArgumentError(f"cond: pred must be a bool tensor or a Python bool, got {type(pred).__name__}")
    tracer = active_tracer()
    if tracer is None:
        return eager_cond(check_pred(pred, "cond"), true_fn, false_fn)
    return traced_cond(tracer, pred, true_fn, false_fn)


def while_loop(cond: Callable[..., Any], body: Callable[..., Any], loop_vars, is_test: bool = False,
               name: str | None = None) -> list:
    """Run ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)`` is true; the final loop
    variables as a list, as ``paddle.static.nn.while_loop``.

    ``cond`` returns a bool tensor of one element (shape ``[]`` or ``[1]``); ``body`` returns the
    new loop variables (a list or tuple, or one tensor when there is one loop variable) with the
    same structure, dtypes and number of dims (a dim whose size changes becomes dynamic). Under
    ``oar.jit.to_static`` the loop is one ``while`` node: the program runs as many iterations as
    each input needs. Python numbers among ``loop_vars`` are carried as tensors there. ``body``
    gets the loop's own copies of the loop variables, so an in-place update (``i += 1``) never
    changes the caller's tensors.

    >>> import oar
    >>> from oar.static.nn import while_loop
    >>> @oar.jit.to_static
    ... def f(x, n):
    ...     i = oar.zeros([], "int64")
    ...     _, y = while_loop(lambda i, y: i < n, lambda i, y: [i + 1, y * 2.0], [i, x])
    ...     return y
    >>> f(oar.ones([2]), oar.to_tensor(3)).tolist(), f(oar.ones([2]), oar.to_tensor(1)).tolist()
    ([8.0, 8.0], [2.0, 2.0])
    """
    if not callable(cond):
        raise ArgumentError(f"while_loop: cond must be callable, got {type(cond).__name__}")
    if not callable(body):
        raise ArgumentError(f"while_loop: body must be callable, got {type(body).__name__}")
    if not isinstance(loop_vars, (list, tuple)):
        raise ArgumentError(f"while_loop: loop_vars must be a list or tuple, got {type(loop_vars).__name__}")
    if len(loop_vars) == 0:
        raise ArgumentError("while_loop: loop_vars must not be empty")
    tracer = active_tracer()
    if tracer is None:
        return eager_while(cond, body, list(loop_vars))
    return traced_while(tracer, cond, body, list(loop_vars))


__all__ = ["cond", "while_loop"]
