"""Reverse-mode autograd on a tape of ``Node``s.

Each op call that needs a gradient records one ``Node``: the op, its attributes, its input
tensors and its output arrays. ``backward`` walks the nodes reachable from the loss in
topological order with an explicit queue (no recursion, so a 10,000-op chain is fine), calls each
op's gradient rule -- itself written with oar ops, so ``create_graph=True`` differentiates it
again -- and frees each node's saved values as soon as it has run.

In-place ops bump a tensor's version counter; a gradient rule that reads a saved tensor whose
version changed raises ``GradientError`` instead of computing a wrong gradient.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from oar._core import dispatch as _dispatch
from oar.errors import GradientError


class Node:
    """The record of one op call, and the ``ctx`` its gradient rule receives."""

    __slots__ = (
        "op", "attrs", "_inputs", "_in_versions", "_out_data", "_out_vcs", "out_meta",
        "hooks", "retained", "released", "needs_input_grad", "backend",
    )

    def __init__(self, op, attrs, inputs, out_data, out_vcs, backend):
        self.op = op
        self.attrs = attrs
        self._inputs = inputs
        self._in_versions = tuple(_version_of(t) for t in inputs)
        self._out_data = out_data
        self._out_vcs = out_vcs
        self.out_meta = tuple((o.shape, o.dtype) for o in out_data)
        self.hooks = None  # {output index: [hook, ...]} for non-leaf tensors
        self.retained = None  # {output index: tensor} for retain_grads()
        self.released = False
        self.needs_input_grad = tuple(not t.stop_gradient for t in inputs)
        self.backend = backend

    # -- what a gradient rule reads --------------------------------------------------------
    @property
    def inputs(self) -> tuple:
        """The input tensors, checked not to have been modified in place since the forward."""
        self._check_alive()
        for i, (t, saved) in enumerate(zip(self._inputs, self._in_versions)):
            if t._vc is not None and t._vc[0] != saved:
                raise GradientError(
                    f"op {self.op.name!r} needs its input {i} (shape {list(t._data.shape)}, "
                    f"{t.dtype.name}) for the backward pass, but that tensor was modified in place "
                    f"after the forward (version {saved} -> {t._vc[0]}); call .clone() before the "
                    f"in-place op"
                )
        return self._inputs

    @property
    def in_shapes(self) -> tuple:
        """Input shapes as tuples (readable even after an in-place change, no check)."""
        return tuple(tuple(t._data.shape) for t in self._inputs)

    @property
    def outputs(self) -> tuple:
        """The outputs as tensors attached to this node (so ``create_graph`` can go through them)."""
        self._check_alive()
        from oar._core.tensor import Tensor

        outs = []
        for i, (data, vc) in enumerate(zip(self._out_data, self._out_vcs)):
            if vc[0] != 0:
                raise GradientError(
                    f"op {self.op.name!r} needs its output {i} for the backward pass, but that "
                    f"tensor was modified in place after the forward; call .clone() before the "
                    f"in-place op"
                )
            outs.append(Tensor._wrap(data, self.backend, False, self, i, vc))
        return tuple(outs)

    @property
    def out(self):
        return self.outputs[0]

    def _check_alive(self) -> None:
        if self.released:
            raise GradientError(
                f"trying to run backward through op {self.op.name!r} a second time, but its saved "
                f"values were freed after the first backward; pass retain_graph=True to the first "
                f"backward() if you need to backward twice"
            )

    def release(self) -> None:
        self._inputs = tuple(_Released(t) for t in self._inputs)
        self._out_data = ()
        self.released = True

    def __repr__(self) -> str:
        return f"<Node {self.op.name}>"


class _Released:
    """Stands in for an input after its node ran: keeps the graph edge, frees the data."""

    __slots__ = ("_node", "_out_index", "stop_gradient")

    def __init__(self, t):
        self._node = t._node
        self._out_index = t._out_index
        self.stop_gradient = t.stop_gradient


def _version_of(t) -> int:
    if t._vc is None:
        t._vc = [0]
    return t._vc[0]


# ------------------------------------------------------------------------------------------
# grad mode
# ------------------------------------------------------------------------------------------
def is_grad_enabled() -> bool:
    """Whether ops record the tape (``True`` unless inside ``no_grad``)."""
    return _dispatch.grad_enabled


def _set_grad_enabled(mode: bool) -> bool:
    previous = _dispatch.grad_enabled
    _dispatch.grad_enabled = bool(mode)
    return previous


class _GradModeContext:
    """Base of ``no_grad``/``enable_grad``/``set_grad_enabled``: context manager and decorator."""

    _mode = True

    def __enter__(self):
        self._previous = _set_grad_enabled(self._mode)
        return self

    def __exit__(self, *exc):
        _set_grad_enabled(self._previous)
        return False

    def __call__(self, fn):
        mode = self._mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            previous = _set_grad_enabled(mode)
            try:
                return fn(*args, **kwargs)
            finally:
                _set_grad_enabled(previous)

        return wrapper


class no_grad(_GradModeContext):
    """Run without recording the tape; a context manager and a decorator.

    >>> import oar
    >>> x = oar.ones([2], stop_gradient=False)
    >>> with oar.no_grad():
    ...     y = x * 2
    >>> y.stop_gradient
    True
    """

    _mode = False


class enable_grad(_GradModeContext):
    """Record the tape again inside a ``no_grad`` block; a context manager and a decorator."""

    _mode = True


class set_grad_enabled(_GradModeContext):
    """``with oar.set_grad_enabled(False): ...`` turns recording on or off."""

    def __init__(self, mode: bool):
        self._mode = bool(mode)
        self._previous = _set_grad_enabled(self._mode)  # also works as a plain function call

    def __enter__(self):
        return self


# ------------------------------------------------------------------------------------------
# the engine
# ------------------------------------------------------------------------------------------
def _accumulate(a, b):
    return b if a is None else a + b


def _apply_hooks(hooks, grad):
    for hook in hooks:
        result = hook(grad)
        if result is not None:
            grad = result
    return grad


def run_backward(
    roots: Sequence,
    root_grads: Sequence,
    *,
    retain_graph: bool = False,
    create_graph: bool = False,
    capture: Sequence | None = None,
):
    """Propagate ``root_grads`` from ``roots`` back through the tape.

    Without ``capture``, gradients accumulate into the ``.grad`` of leaf tensors (``backward``).
    With ``capture`` (a list of tensors), their gradients are returned instead and no ``.grad``
    changes (``oar.grad``).
    """
    from oar._core.tensor import Tensor

    # Which (node, output) or leaf each captured tensor is.
    capture_slots = {}
    if capture is not None:
        for i, t in enumerate(capture):
            key = (id(t._node), t._out_index) if t._node is not None else ("leaf", id(t))
            capture_slots.setdefault(key, []).append(i)
    captured = [None] * (len(capture) if capture is not None else 0)

    # 1. Reachable nodes and how many consumers each has among them (iterative DFS).
    deps: dict[int, int] = {}
    nodes: dict[int, Node] = {}
    stack = [t._node for t in roots if t._node is not None]
    for n in stack:
        nodes[id(n)] = n
    while stack:
        node = stack.pop()
        if node.released:
            node._check_alive()
        for t in node._inputs:
            child = t._node
            if child is None or t.stop_gradient:
                continue
            key = id(child)
            deps[key] = deps.get(key, 0) + 1
            if key not in nodes:
                nodes[key] = child
                stack.append(child)

    # 2. Seed the output gradients.
    buffers: dict[int, list] = {}
    leaf_grads: dict[int, list] = {}  # id -> [tensor, grad]

    def send(t, g):
        node = t._node
        if node is None:
            slot = leaf_grads.get(id(t))
            if slot is None:
                leaf_grads[id(t)] = [t, g]
            else:
                slot[1] = slot[1] + g
            return
        buf = buffers.get(id(node))
        if buf is None:
            buf = buffers[id(node)] = [None] * len(node.out_meta)
        buf[t._out_index] = _accumulate(buf[t._out_index], g)

    previous_mode = _set_grad_enabled(create_graph)
    try:
        for t, g in zip(roots, root_grads):
            send(t, g)
        ready = [n for n in (t._node for t in roots if t._node is not None) if deps.get(id(n), 0) == 0]
        seen_ready = set()

        # 3. Run gradient rules in topological order.
        while ready:
            node = ready.pop()
            if id(node) in seen_ready:
                continue
            seen_ready.add(id(node))
            grads = buffers.pop(id(node), None)
            if grads is None:
                grads = [None] * len(node.out_meta)
            for i in range(len(grads)):
                if grads[i] is not None and node.hooks and i in node.hooks:
                    grads[i] = _apply_hooks(node.hooks[i], grads[i])
                if grads[i] is not None and node.retained and i in node.retained:
                    kept = node.retained[i]()
                    if kept is not None:
                        kept._grad = _accumulate(kept._grad, grads[i].detach())
                if capture_slots and grads[i] is not None:
                    for j in capture_slots.get((id(node), i), ()):
                        captured[j] = grads[i]
            inputs = node._inputs
            if any(g is not None for g in grads) and any(node.needs_input_grad):
                full = tuple(
                    g if g is not None else _zeros(node, i) for i, g in enumerate(grads)
                )
                in_grads = node.op.grad(node, *full)
                if not isinstance(in_grads, (tuple, list)):
                    in_grads = (in_grads,)
                if len(in_grads) != len(inputs):
                    raise GradientError(
                        f"the gradient rule of op {node.op.name!r} returned {len(in_grads)} "
                        f"gradients for {len(inputs)} inputs"
                    )
            else:
                in_grads = (None,) * len(inputs)
            for t, g, needed in zip(inputs, in_grads, node.needs_input_grad):
                if t.stop_gradient:
                    continue
                if g is not None and needed:
                    if not isinstance(g, Tensor):
                        raise GradientError(
                            f"the gradient rule of op {node.op.name!r} returned a "
                            f"{type(g).__name__}, expected an oar Tensor"
                        )
                    send(t, g)
                child = t._node
                if child is not None:
                    deps[id(child)] -= 1
                    if deps[id(child)] == 0:
                        ready.append(child)
            if not retain_graph:
                node.release()

        # 4. Leaves: hooks, then accumulate or capture.
        for t, g in leaf_grads.values():
            if t._hooks:
                g = _apply_hooks(t._hooks, g)
            if capture is not None:
                for j in capture_slots.get(("leaf", id(t)), ()):
                    captured[j] = g
            else:
                if not create_graph:
                    g = g.detach()
                t._grad = g if t._grad is None else (t._grad + g)
    finally:
        _set_grad_enabled(previous_mode)
    return captured


def _zeros(node: Node, i: int):
    from oar._core.tensor import Tensor

    shape, dtype = node.out_meta[i]
    from oar._core.dispatch import BACKENDS

    return Tensor._wrap(BACKENDS.get(node.backend).zeros(shape, dtype), node.backend, True, None, 0, None)


def backward(tensors, grad_tensors=None, retain_graph: bool = False) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves (``paddle.autograd.backward``)."""
    from oar._core.tensor import Tensor

    if isinstance(tensors, Tensor):
        tensors = [tensors]
    if grad_tensors is None or isinstance(grad_tensors, Tensor):
        grad_tensors = [grad_tensors] * len(tensors) if grad_tensors is None else [grad_tensors]
    roots, grads = [], []
    for t, g in zip(tensors, grad_tensors):
        if t.stop_gradient:
            raise GradientError(
                "backward: the tensor has stop_gradient=True, so no gradient flows from it; set "
                "stop_gradient=False on the inputs that need gradients"
            )
        if g is None:
            g = _ones_like(t)
        elif list(g.shape) != list(t.shape):
            raise GradientError(f"backward: grad_tensor has shape {g.shape}, expected {t.shape}")
        roots.append(t)
        grads.append(g)
    run_backward(roots, grads, retain_graph=retain_graph)


def _ones_like(t):
    from oar._core.dispatch import BACKENDS
    from oar._core.tensor import Tensor

    b = BACKENDS.get(t._backend)
    return Tensor._wrap(b.full(tuple(t._data.shape), 1, t._data.dtype), t._backend, True, None, 0, None)


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool = False,
    no_grad_vars=None,
):
    """Gradients of ``outputs`` with respect to ``inputs``, without touching ``.grad``.

    As ``paddle.grad``: returns a list with one tensor per input. With ``create_graph=True`` the
    result is itself differentiable (higher-order gradients).

    >>> import oar
    >>> x = oar.to_tensor([3.0], stop_gradient=False)
    >>> (dx,) = oar.grad(x * x * x, x, create_graph=True)
    >>> (ddx,) = oar.grad(dx, x)
    >>> float(dx), float(ddx)
    (27.0, 18.0)
    """
    from oar._core.tensor import Tensor

    single = isinstance(inputs, Tensor)
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    inputs = [inputs] if single else list(inputs)
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs]
    if len(grad_outputs) != len(outputs):
        raise GradientError(f"grad: got {len(grad_outputs)} grad_outputs for {len(outputs)} outputs")
    if retain_graph is None:
        retain_graph = create_graph
    for i, t in enumerate(inputs):
        if t.stop_gradient:
            raise GradientError(f"grad: inputs[{i}] has stop_gradient=True; no gradient can flow to it")
    roots, seeds = [], []
    for t, g in zip(outputs, grad_outputs):
        if t.stop_gradient:
            continue
        roots.append(t)
        seeds.append(_ones_like(t) if g is None else g)
    result = run_backward(roots, seeds, retain_graph=retain_graph, create_graph=create_graph, capture=inputs)
    for i, g in enumerate(result):
        if g is None and not allow_unused:
            raise GradientError(
                f"grad: inputs[{i}] is not reachable from the outputs (unused); pass "
                f"allow_unused=True to get None for it"
            )
        if g is not None and not create_graph:
            result[i] = g.detach()
    return result
