"""Activation recomputation (Paddle's ``fleet.utils.recompute``): trade compute for memory.

``recompute(function, *args)`` runs ``function`` inside a ``PyLayer`` whose forward records no
tape, so none of ``function``'s intermediate activations stay alive; it keeps only the inputs
(and the RNG state). Its backward runs ``function`` again from those inputs with gradients on
(the RNG state restored, so dropout drops the same units) and differentiates that.

How the gradients leave the recomputation decides how it meets ``DataParallel``:

- when the parameters of ``function`` can be found -- it is a ``Layer``, a bound method of one, or
  has a ``parameters()`` method -- they are inputs of the ``PyLayer`` and the recomputed
  gradients come back through ``oar.grad`` as that layer's input gradients. The outer backward
  then accumulates them like any other gradient, so ``DataParallel`` reduces each parameter's
  complete gradient once, with no ``no_sync`` needed (the property Paddle gets from
  ``use_reentrant=False``);
- otherwise (a plain function closing over layers) the recomputation runs a nested
  ``oar.autograd.backward``, which accumulates into every leaf it reaches, as Paddle's reentrant
  recompute does. Such a function needs an input with ``stop_gradient=False`` (else no backward
  reaches it) and, under ``DataParallel``, ``no_sync`` -- as in Paddle.

Only tensors passed directly as positional or keyword arguments are differentiated; tensors
nested in lists are treated as constants.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import oar
import oar.nn as nn
from oar.autograd import PyLayer
from oar.errors import ArgumentError


def _parameters_of(function: Callable) -> list | None:
    """The trainable parameters ``function`` uses, when they can be known; None otherwise."""
    owner = function
    if inspect.ismethod(function) and isinstance(function.__self__, nn.Layer):
        owner = function.__self__
    parameters = getattr(owner, "parameters", None)
    if not callable(parameters):
        return None
    return [p for p in parameters() if not p.stop_gradient]


class _Call:
    """One recomputed call: the function, its arguments with tensors taken out, and the RNG state."""

    def __init__(self, function: Callable, args: tuple, kwargs: dict, preserve_rng_state: bool):
        self.function = function
        self.preserve_rng_state = preserve_rng_state
        self.rng_state = oar.get_rng_state() if preserve_rng_state else None
        self.args = list(args)
        self.kwargs = dict(kwargs)
        # Where each tensor sits: ("a", index) or ("k", name).
        self.slots = [("a", i) for i, v in enumerate(args) if isinstance(v, oar.Tensor)]
        self.slots += [("k", k) for k, v in kwargs.items() if isinstance(v, oar.Tensor)]

    def tensors(self) -> list:
        return [self.args[i] if kind == "a" else self.kwargs[i] for kind, i in self.slots]

    def run(self, tensors=None):
        args, kwargs = list(self.args), dict(self.kwargs)
        for (kind, i), t in zip(self.slots, tensors if tensors is not None else self.tensors()):
            if kind == "a":
                args[i] = t
            else:
                kwargs[i] = t
        return self.function(*args, **kwargs)

    def rerun(self, tensors: list):
        """``function`` again, with gradients on and the forward's RNG state."""
        now = oar.get_rng_state() if self.preserve_rng_state else None
        if self.preserve_rng_state:
            oar.set_rng_state(self.rng_state)
        try:
            with oar.enable_grad():
                return self.run(tensors)
        finally:
            if self.preserve_rng_state:
                oar.set_rng_state(now)


def _as_list(outputs) -> list:
    return [outputs] if isinstance(outputs, oar.Tensor) else list(outputs)


class _Recompute(PyLayer):
    """``forward(ctx, call, parameters, *tensors)``: the tensors are the call's inputs, then its
    parameters (inputs of the layer so that their gradients come back through it)."""

    @staticmethod
    def forward(ctx, call: _Call, n_inputs: int, *tensors):
        ctx.call = call
        ctx.n_inputs = n_inputs
        ctx.parameters = tensors[n_inputs:]
        ctx.save_for_backward(*tensors[:n_inputs])
        return call.run(tensors[:n_inputs])

    @staticmethod
    def backward(ctx, *grads):
        inputs = ctx.saved_tensor()
        detached = []
        for t in inputs:
            d = t.detach()
            d.stop_gradient = t.stop_gradient
            detached.append(d)
        outputs = _as_list(ctx.call.rerun(detached))
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if isinstance(o, oar.Tensor) and not o.stop_gradient and g is not None]
        wanted = [d for d in detached if not d.stop_gradient]
        input_grads: dict[int, Any] = {}
        parameter_grads: list = [None] * len(ctx.parameters)
        if pairs and ctx.parameters:
            found = oar.grad([o for o, _ in pairs], wanted + list(ctx.parameters), [g for _, g in pairs],
                             allow_unused=True)
            input_grads = {id(d): g for d, g in zip(wanted, found)}
            parameter_grads = found[len(wanted):]
        elif pairs:
            # Parameters unknown: Paddle's reentrant way, accumulating into every leaf reached.
            oar.autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
            input_grads = {id(d): d.grad for d in wanted}
        return tuple([input_grads.get(id(d)) for d in detached] + list(parameter_grads))


def recompute(function: Callable, *args: Any, preserve_rng_state: bool = True, use_reentrant: bool = True,
              **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` without keeping its activations; backward recomputes them.

    As ``paddle.distributed.fleet.utils.recompute``. ``preserve_rng_state`` restores the forward's
    RNG state for the recomputation (dropout matches). ``use_reentrant`` is accepted for Paddle's
    scripts: oar has one implementation, which routes the gradients of a ``Layer``'s parameters
    through the outer backward (see the module notes), so it combines with ``DataParallel``
    without ``no_sync`` either way.

    >>> import oar
    >>> from oar.distributed.fleet.utils import recompute
    >>> block = oar.nn.Sequential(oar.nn.Linear(4, 4), oar.nn.ReLU(), oar.nn.Linear(4, 4))
    >>> x = oar.ones([2, 4])
    >>> y = recompute(block, x)
    >>> y.sum().backward()
    >>> block[0].weight.grad.shape
    [4, 4]
    """
    if not callable(function):
        raise ArgumentError(f"recompute: function must be callable (a Layer or a function), got "
                            f"{type(function).__name__}")
    for name, value in (("preserve_rng_state", preserve_rng_state), ("use_reentrant", use_reentrant)):
        if not isinstance(value, bool):
            raise ArgumentError(f"recompute: {name} must be a bool, got {value!r}")
    if not oar.is_grad_enabled():
        return function(*args, **kwargs)  # nothing will be differentiated: nothing to save
    call = _Call(function, args, kwargs, preserve_rng_state)
    parameters = _parameters_of(function) or []
    inputs = call.tensors()
    return _Recompute.apply(call, len(inputs), *inputs, *parameters)


class _Segment:
    """Layers ``functions[begin:end]`` run in order, with their parameters known to ``recompute``."""

    def __init__(self, functions: list, begin: int, end: int):
        self.functions = functions[begin:end]

    def __call__(self, x):
        for f in self.functions:
            x = f(x)
        return x

    def parameters(self) -> list:
        seen: dict[int, Any] = {}
        for f in self.functions:
            for p in _parameters_of(f) or []:
                seen.setdefault(id(p), p)
        return list(seen.values())


def recompute_sequential(ctx: dict, functions, *args: Any, **kwargs: Any) -> Any:
    """Run a sequence of layers in ``ctx['segments']`` segments, recomputing all but the last.

    As ``paddle.distributed.fleet.utils.recompute_sequential``: ``ctx`` holds ``segments``
    (default 1, which recomputes nothing, as Paddle) and ``preserve_rng_state`` (default True);
    ``functions`` is an ``oar.nn.Sequential`` or a list of layers, each taking the previous one's
    output.

    >>> import oar
    >>> from oar.distributed.fleet.utils import recompute_sequential
    >>> model = oar.nn.Sequential(oar.nn.Linear(4, 4), oar.nn.ReLU(), oar.nn.Linear(4, 4), oar.nn.ReLU())
    >>> y = recompute_sequential({"segments": 2}, model, oar.ones([2, 4]))
    >>> y.shape
    [2, 4]
    """
    if not isinstance(ctx, dict):
        raise ArgumentError(f"recompute_sequential: ctx must be a dict like {{'segments': 2}}, got {type(ctx).__name__}")
    unknown = set(ctx) - {"segments", "preserve_rng_state"}
    if unknown:
        raise ArgumentError(f"recompute_sequential: unknown ctx key(s) {sorted(unknown)}; "
                            f"known: 'segments', 'preserve_rng_state'")
    segments = ctx.get("segments", 1)
    preserve_rng_state = ctx.get("preserve_rng_state", True)
    functions = list(functions.children()) if isinstance(functions, nn.Sequential) else list(functions)
    if not isinstance(segments, int) or isinstance(segments, bool) or not 1 <= segments <= max(len(functions), 1):
        raise ArgumentError(f"recompute_sequential: ctx['segments'] must be an int in [1, {len(functions)}], "
                            f"got {segments!r}")
    size = len(functions) // segments
    end = 0
    for begin in range(0, size * (segments - 1), size):
        end = begin + size
        args = (recompute(_Segment(functions, begin, end), *args, preserve_rng_state=preserve_rng_state, **kwargs),)
    return _Segment(functions, end, len(functions))(*args)
