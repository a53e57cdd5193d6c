"""Reverse-mode autograd on a tape of ``Node``s.

Each op call that needs a gradient records one ``Node`` (``oar._engine.tape``): the op, its
attributes, its input tensors and its output arrays. ``backward`` walks the nodes reachable from the loss in
topological order with an explicit queue (no recursion, so a 10,000-op chain is fine), calls each
op's gradient rule -- itself written with oar ops, so ``create_graph=True`` differentiates it
again -- and frees each node's saved values as soon as it has run. This module also binds
``Tensor.backward``.
"""

from __future__ import annotations

import functools
import inspect
import weakref
from collections.abc import Sequence

import numpy as np

from oar._engine import eager as _eager
from oar._engine import profiling as _profiling
from oar._engine.registries import BACKENDS
from oar._engine.tape import Node
from oar._engine.tensor import Tensor
from oar.errors import GradientError


# ------------------------------------------------------------------------------------------
# grad mode
# ------------------------------------------------------------------------------------------
def is_grad_enabled() -> bool:
    """Whether ops record the tape (``True`` unless inside ``no_grad``)."""
    return _eager.grad_enabled


def _set_grad_enabled(mode: bool) -> bool:
    previous = _eager.grad_enabled
    _eager.grad_enabled = bool(mode)
    return previous


def _decorate(mode: bool, fn):
    """``fn`` run with grad mode ``mode``; a generator keeps the mode while it runs, as in Paddle."""
    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def generator(*args, **kwargs):
            previous = _set_grad_enabled(mode)
            try:
                return (yield from fn(*args, **kwargs))
            finally:
                _set_grad_enabled(previous)

        return generator

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        previous = _set_grad_enabled(mode)
        try:
            return fn(*args, **kwargs)
        finally:
            _set_grad_enabled(previous)

    return wrapper


class _GradModeContext:
    """Base of ``no_grad`` and ``enable_grad``: a context manager and a decorator.

    One object may be entered again while it is active (a decorated recursive function), so the
    modes to restore are a stack.
    """

    _mode = True

    def __new__(cls, func=None):
        if func is not None:  # used bare: ``@oar.no_grad``
            if not callable(func):
                raise TypeError(f"{cls.__name__}() takes no arguments (got {type(func).__name__})")
            return _decorate(cls._mode, func)
        return super().__new__(cls)

    def __init__(self, func=None):
        self._previous: list[bool] = []

    def __enter__(self):
        self._previous.append(_set_grad_enabled(self._mode))
        return self

    def __exit__(self, *exc):
        _set_grad_enabled(self._previous.pop())
        return False

    def __call__(self, fn):
        return _decorate(self._mode, fn)


class no_grad(_GradModeContext):  # noqa: N801 - Paddle's name
    """Run without recording the tape; a context manager and a decorator.

    >>> import oar
    >>> x = oar.ones([2])
    >>> x.stop_gradient = False
    >>> with oar.no_grad():
    ...     y = x * 2
    >>> y.stop_gradient
    True
    """

    _mode = False


class enable_grad(_GradModeContext):  # noqa: N801 - Paddle's name
    """Record the tape again inside a ``no_grad`` block; a context manager and a decorator."""

    _mode = True


class set_grad_enabled:  # noqa: N801 - Paddle's name
    """Turn recording on or off: at once when called, until the end of a ``with`` block.

    >>> import oar
    >>> with oar.set_grad_enabled(False):
    ...     oar.is_grad_enabled()
    False
    >>> oar.is_grad_enabled()
    True
    """

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._previous = _set_grad_enabled(self.mode)  # also works as a plain function call

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set_grad_enabled(self._previous)
        return False

    def __call__(self, fn):
        # As a decorator it only wraps: undo the switch that construction made.
        _set_grad_enabled(self._previous)
        return _decorate(self.mode, fn)


# ------------------------------------------------------------------------------------------
# the engine
# ------------------------------------------------------------------------------------------
def _accumulate(a, b):
    return b if a is None else a + b


def _apply_hooks(hooks, grad):
    for hook, owner in list(hooks):  # a hook may remove itself
        result = hook(grad)
        if result is None:
            continue
        if not isinstance(result, Tensor) or result._data.shape != grad._data.shape or result.dtype != grad.dtype:
            got = f"a gradient of shape {result.shape} ({result.dtype.name})" if isinstance(result, Tensor) else f"a {type(result).__name__}"
            raise GradientError(f"register_hook: the hook of tensor {getattr(owner(), 'name', '(deleted)')!r} returned {got}; it must "
                                f"return None or a tensor of the gradient's shape {grad.shape} and dtype {grad.dtype.name}")
        grad = result
    return grad


def _key(t):
    """What identifies a tensor in the graph: its (node, output) slot, or the leaf itself."""
    return (id(t._node), t._out_index) if t._node is not None else ("leaf", id(t))


def _nodes_leading_to(nodes: dict, deps: dict, roots_nodes: list, targets: set) -> set:
    """Ids of the nodes whose gradient rule must run for gradients to reach ``targets``."""
    remaining = dict(deps)
    order, queue = [], [n for n in roots_nodes if remaining.get(id(n), 0) == 0]
    seen = set()
    while queue:  # Kahn: a topological order, consumers first
        node = queue.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node)
        for t in node._edges:
            child = t._node
            if child is None or t.stop_gradient:
                continue
            remaining[id(child)] -= 1
            if remaining[id(child)] == 0:
                queue.append(child)
    needed: set = set()
    for node in reversed(order):  # producers first
        for t in node._edges:
            if t.stop_gradient:
                continue
            if _key(t) in targets or (t._node is not None and id(t._node) in needed):
                needed.add(id(node))
                break
    return needed


def run_backward(
    roots: Sequence,
    root_grads: Sequence,
    *,
    retain_graph: bool = False,
    create_graph: bool = False,
    capture: Sequence | None = None,
    blocked: Sequence = (),
):
    """Propagate ``root_grads`` from ``roots`` back through the tape.

    Without ``capture``, gradients accumulate into the ``.grad`` of leaf tensors (``backward``).
    With ``capture`` (a list of tensors), their gradients are returned instead, no ``.grad``
    changes, and only the rules on a path to a captured tensor run (``oar.grad``). No gradient
    flows into the tensors in ``blocked``.
    """
    _BACKWARD_CALLBACKS.append([])
    try:
        if not _profiling.recorders:
            result = _propagate(roots, root_grads, retain_graph, create_graph, capture, blocked)
        else:
            start = _profiling.now_ns()
            try:
                result = _propagate(roots, root_grads, retain_graph, create_graph, capture, blocked)
            finally:
                for recorder in _profiling.recorders:
                    recorder.span("backward", "Backward", start, _profiling.now_ns())
    finally:
        callbacks = _BACKWARD_CALLBACKS.pop()
    for callback in callbacks:
        callback()
    return result


# One list per backward running (a backward inside a hook nests): what queue_callback added.
_BACKWARD_CALLBACKS: list[list] = []


def queue_callback(callback) -> None:
    """Call ``callback()`` once the backward that is running now has finished, after every leaf's
    ``.grad`` is final (PyTorch's ``Variable._execution_engine.queue_callback``). Called from a
    hook during a backward; a data-parallel wrapper waits for its all-reduces there.

    >>> import oar
    >>> from oar.autograd import queue_callback
    >>> w = oar.to_tensor([1.0], stop_gradient=False)
    >>> done = []
    >>> _ = w.register_hook(lambda g: queue_callback(lambda: done.append(w.grad.tolist())))
    >>> (w * 2.0).sum().backward()
    >>> done
    [[2.0]]
    """
    if not _BACKWARD_CALLBACKS:
        raise GradientError("queue_callback: no backward is running; call it from a hook during backward()")
    _BACKWARD_CALLBACKS[-1].append(callback)


def _propagate(roots, root_grads, retain_graph, create_graph, capture, blocked):
    # Which (node, output) or leaf each captured tensor is.
    capture_slots: dict = {}
    if capture is not None:
        for i, t in enumerate(capture):
            capture_slots.setdefault(_key(t), []).append(i)
    captured = [None] * (len(capture) if capture is not None else 0)
    blocked_keys = {_key(t) for t in blocked}

    # 1. Reachable nodes and how many consumers each has among them (iterative DFS); for leaves
    # with a post-accumulate hook, how many edges will bring them a gradient.
    watched = _POST_ACCUMULATE_HOOKS if _POST_ACCUMULATE_HOOKS and capture is None else None
    pending_leaves: dict[int, int] = {}
    deps: dict[int, int] = {}
    nodes: dict[int, Node] = {}
    root_nodes = [t._node for t in roots if t._node is not None]
    stack = list(root_nodes)
    for n in stack:
        nodes[id(n)] = n
    while stack:
        node = stack.pop()
        if node.released:
            node._check_alive()
        for t in node._edges:
            child = t._node
            if child is None or t.stop_gradient:
                if watched is not None and child is None and id(t) in watched and not t.stop_gradient:
                    pending_leaves[id(t)] = pending_leaves.get(id(t), 0) + 1
                continue
            key = id(child)
            deps[key] = deps.get(key, 0) + 1
            if key not in nodes:
                nodes[key] = child
                stack.append(child)
    needed = _nodes_leading_to(nodes, deps, root_nodes, set(capture_slots)) if capture is not None else None

    # 2. Seed the output gradients.
    buffers: dict[int, list] = {}
    leaf_grads: dict[int, list] = {}  # id -> [tensor, grad]

    # Gradients that meet are summed into a buffer this backward owns: the first sum is a new
    # array, later ones add into it in place (a weight used at each of 30 decoder steps: 29 sums
    # of its size, one allocation). What a rule returned is never written to; create_graph sums
    # out of place, so that the sum is differentiable.
    owned: set = set()  # _key of each gradient slot that holds such a sum

    def summed(key, acc, g):
        if acc is None:
            return g
        if key in owned and _accumulate_in_place(acc, g):
            return acc
        total = acc + g
        if not create_graph:
            owned.add(key)
        return total

    def send(t, g):
        if blocked_keys and _key(t) in blocked_keys:
            return
        node = t._node
        if node is None:
            slot = leaf_grads.get(id(t))
            if slot is None:
                leaf_grads[id(t)] = [t, g]
            else:
                slot[1] = summed(("leaf", id(t)), slot[1], g)
            return
        buf = buffers.get(id(node))
        if buf is None:
            buf = buffers[id(node)] = [None] * len(node.out_meta)
        i = t._out_index
        buf[i] = summed((id(node), i), buf[i], g)

    previous_mode = _set_grad_enabled(create_graph)
    try:
        for t, g in zip(roots, root_grads):
            send(t, g)
        ready = [n for n in root_nodes if deps.get(id(n), 0) == 0]
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
            # Output hooks, retained gradients and captures; most nodes have none of them.
            for i in range(len(grads) if node.hooks or node.retained or capture_slots else 0):
                if grads[i] is None:
                    continue
                if node.hooks and i in node.hooks:
                    grads[i] = _apply_hooks(node.hooks[i], grads[i])
                if capture is None:
                    if node.retained and i in node.retained:
                        kept = node.retained[i]()
                        if kept is not None:
                            kept._grad = _accumulate(kept._grad, grads[i].detach())
                elif capture_slots:
                    for j in capture_slots.get((id(node), i), ()):
                        captured[j] = grads[i]
            inputs = node._edges
            run_rule = (
                (needed is None or id(node) in needed)
                and True in node.needs_input_grad
                and (grads[0] is not None or any(g is not None for g in grads))
            )
            if run_rule:
                if _profiling.recorders:  # a profiler times each gradient rule as an op of its own
                    start = _profiling.now_ns()
                    in_grads = node.op.grad(node, *_materialize(node, grads))
                    for recorder in _profiling.recorders:
                        recorder.span(f"{node.op.name}_grad", "Operator", start, _profiling.now_ns())
                else:
                    in_grads = node.op.grad(node, *_materialize(node, grads))
                if not isinstance(in_grads, (tuple, list)):
                    in_grads = (in_grads,)
                if len(in_grads) != len(inputs):
                    raise GradientError(
                        f"the gradient rule of op {node.op.name!r} returned {len(in_grads)} "
                        f"gradients for {len(inputs)} inputs"
                    )
            else:
                in_grads = (None,) * len(inputs)
            for t, g, needs in zip(inputs, in_grads, node.needs_input_grad):
                if t.stop_gradient:
                    continue
                if g is not None and needs:
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
                elif pending_leaves and id(t) in pending_leaves:
                    pending_leaves[id(t)] -= 1
                    if pending_leaves[id(t)] == 0:  # its last gradient came: finish it now, not at the end
                        del pending_leaves[id(t)]
                        slot = leaf_grads.pop(id(t), None)
                        if slot is not None:
                            _finish_leaf(t, slot[1], create_graph, ("leaf", id(t)) in owned)
                            _run_post_accumulate_hooks(t)
            if not retain_graph and (needed is None or id(node) in needed):
                node.release()

        # 4. Leaves: hooks, then accumulate or capture.
        for t, g in leaf_grads.values():
            if capture is not None:
                if t._hooks:
                    g = _apply_hooks(t._hooks, g)
                for j in capture_slots.get(("leaf", id(t)), ()):
                    captured[j] = g
            else:
                _finish_leaf(t, g, create_graph, ("leaf", id(t)) in owned)
                if watched is not None and id(t) in watched:
                    _run_post_accumulate_hooks(t)
    finally:
        _set_grad_enabled(previous_mode)
    return captured


def _finish_leaf(t, g, create_graph: bool, owned: bool = False) -> None:
    """A leaf's whole gradient ``g``: its hooks, then into ``.grad``. ``owned``: ``g`` is a sum
    the backward made (no one else holds it), which ``.grad`` may keep without a copy."""
    if t._hooks:
        g = _apply_hooks(t._hooks, g)
        owned = False  # a hook may have kept the tensor it was given
    if t._grad is None:
        t._grad = g if create_graph or owned else _owned(g)
    elif not create_graph and _accumulate_in_place(t._grad, g):
        pass
    else:
        t._grad = t._grad + (g if create_graph else g.detach())


# id(leaf) -> (weakref to the leaf, its hooks): the leaves whose gradient is watched as it completes.
_POST_ACCUMULATE_HOOKS: dict[int, tuple] = {}


def _run_post_accumulate_hooks(t) -> None:
    entry = _POST_ACCUMULATE_HOOKS.get(id(t))
    if entry is not None and entry[0]() is t:
        for hook in list(entry[1]):
            hook(t)


class _PostAccumulateHandle:
    __slots__ = ("_key", "_hook")

    def __init__(self, key: int, hook):
        self._key, self._hook = key, hook

    def remove(self) -> None:
        entry = _POST_ACCUMULATE_HOOKS.get(self._key)
        if entry is not None:
            entry[1][:] = [h for h in entry[1] if h is not self._hook]
            if not entry[1]:
                del _POST_ACCUMULATE_HOOKS[self._key]


def register_post_accumulate_grad_hook(tensor, hook) -> _PostAccumulateHandle:
    """Call ``hook(tensor)`` during a backward as soon as the leaf ``tensor``'s gradient of this
    backward is complete in ``tensor.grad`` (PyTorch's ``register_post_accumulate_grad_hook``):
    before the rest of the backward runs, so work on finished gradients (a data-parallel
    all-reduce) overlaps what remains. Not called when the leaf got no gradient. Returns a handle
    whose ``remove()`` unregisters it.

    >>> import oar
    >>> w = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    >>> seen = []
    >>> handle = w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    >>> (w * 3.0).sum().backward()
    >>> seen
    [[3.0, 3.0]]
    """
    if tensor._node is not None or tensor.stop_gradient:
        raise GradientError("register_post_accumulate_grad_hook: only a leaf tensor that needs a gradient "
                            f"(stop_gradient=False, not computed by an op) has one; got shape {tensor.shape}")
    key = id(tensor)
    entry = _POST_ACCUMULATE_HOOKS.get(key)
    if entry is None or entry[0]() is not tensor:  # a new tensor at a dead one's address
        entry = _POST_ACCUMULATE_HOOKS[key] = (weakref.ref(tensor, lambda _, key=key: _forget(key)), [])
    entry[1].append(hook)
    return _PostAccumulateHandle(key, hook)


def _forget(key: int) -> None:
    entry = _POST_ACCUMULATE_HOOKS.get(key)
    if entry is not None and entry[0]() is None:
        del _POST_ACCUMULATE_HOOKS[key]


Tensor.register_post_accumulate_grad_hook = register_post_accumulate_grad_hook


def _materialize(node: Node, grads: list) -> list:
    """Zeros for the outputs that got no gradient, unless the op asks for ``None`` (PyLayer)."""
    for g in grads:  # (a loop: ``None in grads`` would compare tensors with ==)
        if g is None:
            break
    else:
        return grads
    if not getattr(node.op, "materialize_grads", True):
        return grads
    return [g if g is not None else _zeros(node, i) for i, g in enumerate(grads)]


def _owned(g):
    """A leaf's ``.grad``: its own writable buffer, never a view shared with another tensor.

    Gradient rules may return their upstream gradient (add), a broadcast view (sum) or one array
    for two inputs (x + y); ``.grad`` is then zeroed and updated in place by optimizers.
    """
    data = g._data
    if type(data) is np.ndarray:
        data = np.array(data)  # a contiguous, writable copy
    else:
        data = BACKENDS.get(g._backend).copy(data)
    return Tensor._wrap(data, g._backend, True, None, 0, None)


def _accumulate_in_place(grad, g) -> bool:
    """Add ``g`` into the leaf's ``.grad`` buffer, as Paddle accumulates (the ``.grad`` tensor
    stays the same object; no op dispatch, no new array). False where that cannot be done: a
    device or read-only buffer, or a shape or dtype that differs, and the caller adds out of place.
    """
    data, new = grad._data, g._data
    if (type(data) is not np.ndarray or type(new) is not np.ndarray or not data.flags.writeable
            or data.shape != new.shape or data.dtype != new.dtype):
        return False
    np.add(data, new, out=data)
    if grad._vc is not None:  # an op that saved this .grad tensor must see the change
        grad._vc[0] += 1
    return True


def _zeros(node: Node, i: int):
    shape, dtype = node.out_meta[i]
    return Tensor._wrap(BACKENDS.get(node.backend).zeros(shape, dtype), node.backend, True, None, 0, None)


def _as_list(tensors, what: str) -> list:
    if isinstance(tensors, Tensor):
        return [tensors]
    if isinstance(tensors, (list, tuple)):
        return list(tensors)
    raise TypeError(f"{what} must be a Tensor or a list of Tensors, got {type(tensors).__name__}")


def _check_seed(fn: str, i: int, t, g) -> None:
    if not isinstance(g, Tensor):
        raise TypeError(f"{fn}: the gradient for output {i} must be a Tensor or None, got {type(g).__name__}")
    if list(g.shape) != list(t.shape):
        raise GradientError(f"{fn}: the gradient for output {i} has shape {g.shape}, but the output has shape {t.shape}")


def backward(tensors, grad_tensors=None, retain_graph: bool = False) -> None:
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of the leaves they depend on.

    As ``paddle.autograd.backward``: ``grad_tensors`` holds one gradient (or None, meaning ones)
    per tensor.

    >>> import oar
    >>> x = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    >>> oar.autograd.backward([(x * x).sum(), x.sum()])
    >>> x.grad.tolist()
    [3.0, 5.0]
    """
    tensors = _as_list(tensors, "backward: tensors")
    if grad_tensors is None:
        grad_tensors = [None] * len(tensors)
    else:
        grad_tensors = _as_list(grad_tensors, "backward: grad_tensors")
    if len(grad_tensors) != len(tensors):
        raise GradientError(f"backward: got {len(grad_tensors)} grad_tensors for {len(tensors)} tensors")
    roots, grads = [], []
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if t.stop_gradient:  # nothing it depends on needs a gradient: Paddle's backward does nothing here
            continue
        if g is None:
            g = _ones_like(t)
        else:
            _check_seed("backward", i, t, g)
        roots.append(t)
        grads.append(g)
    if roots:
        run_backward(roots, grads, retain_graph=retain_graph)


def _ones_like(t):
    if t._backend == "cpu":  # the seed of every backward: skip the registry lookup
        ones = np.empty(t._data.shape, t._data.dtype)
        ones.fill(1)  # cheaper than np.ones' Python wrapper, on every backward's seed
        return Tensor._wrap(ones, "cpu", True, None, 0, None)
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

    As ``paddle.grad``: returns a list with one tensor per input (None for an unused input when
    ``allow_unused=True``). With ``create_graph=True`` the result is itself differentiable
    (higher-order gradients). No gradient flows through the tensors in ``no_grad_vars``.

    >>> import oar
    >>> x = oar.to_tensor([3.0], stop_gradient=False)
    >>> (dx,) = oar.grad(x * x * x, x, create_graph=True)
    >>> (ddx,) = oar.grad(dx, x)
    >>> float(dx), float(ddx)
    (27.0, 18.0)
    """
    outputs = _as_list(outputs, "grad: outputs")
    inputs = _as_list(inputs, "grad: inputs")
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    else:
        grad_outputs = _as_list(grad_outputs, "grad: grad_outputs")
    if len(grad_outputs) != len(outputs):
        raise GradientError(f"grad: got {len(grad_outputs)} grad_outputs for {len(outputs)} outputs")
    blocked = [] if no_grad_vars is None else _as_list(no_grad_vars, "grad: no_grad_vars")
    if retain_graph is None:
        retain_graph = create_graph
    for i, t in enumerate(inputs):
        if t.stop_gradient:
            raise GradientError(f"grad: inputs[{i}] has stop_gradient=True; no gradient can flow to it")
    roots, seeds = [], []
    for i, (t, g) in enumerate(zip(outputs, grad_outputs)):
        if t.stop_gradient:
            continue
        if g is not None:
            _check_seed("grad", i, t, g)
        roots.append(t)
        seeds.append(_ones_like(t) if g is None else g)
    result = run_backward(
        roots, seeds, retain_graph=retain_graph, create_graph=create_graph, capture=inputs, blocked=blocked
    )
    for i, g in enumerate(result):
        if g is None and not allow_unused:
            raise GradientError(
                f"grad: inputs[{i}] (shape {inputs[i].shape}) is not reachable from the outputs "
                f"(unused); pass allow_unused=True to get None for it"
            )
        if g is not None and not create_graph:
            result[i] = g.detach()
    return result


def _tensor_backward(self, grad_tensor: Tensor | None = None, retain_graph: bool = False) -> None:
    """Accumulate d(self)/d(leaf) into every leaf's ``.grad`` (a scalar loss needs no grad_tensor).

    >>> import oar
    >>> x = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    >>> (x * x).sum().backward()
    >>> x.grad.tolist()
    [2.0, 4.0]
    """
    backward([self], None if grad_tensor is None else [grad_tensor], retain_graph=retain_graph)


_tensor_backward.__name__ = _tensor_backward.__qualname__ = "backward"
Tensor.backward = _tensor_backward
